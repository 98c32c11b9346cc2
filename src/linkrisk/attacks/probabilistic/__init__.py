"""Probabilistic record linkage, ``prl`` (Fellegi & Sunter 1969; EM as Jaro 1989, Winkler).

A pair (a, b) is compared attribute by attribute into an agreement pattern; EM estimates,
from how many of the n·n' pairs show each pattern, the probability m_j that a match agrees
on attribute j and u_j that a non-match does; each pattern then weighs
w = Σ_j log2(m_j/u_j) or log2((1−m_j)/(1−u_j)), the Fellegi–Sunter thresholds classify the
patterns, and every record of A is linked to its maximal-weight candidate set (or by a
one-to-one assignment). A comparison with a missing value is a third state weighing 0.

The modules, in the order :func:`run_prl` uses them (each one's docstring holds the part
of the method it implements):

* :mod:`.comparison` — comparison vectors: quantile bins, tolerances, categories, the
  missing-value third state, the pattern of one pair;
* :mod:`.counts` — the number of pairs showing each pattern (subset walk and Möbius
  inversion, pair kernel, numpy on small problems, missing-value patterns);
* :mod:`.walk` — the compiled subset walk over the 2^m attribute subsets that the counts
  and the candidate sets share, and its hash stream ``WALK``;
* :mod:`.em` — Fellegi–Sunter EM (SQUAREM, constrained m_j ≥ u_j, missing comparisons);
* :mod:`.classification` — weights, thresholds, the one-to-one grid and assignment;
* :mod:`.candidates` — the maximal-weight candidate sets (walk, engine, pair kernel);
* :mod:`.blocked` — the same within blocks (``block=``): same-block pair counts, each
  record's set among its block's records;
* :mod:`.linkage` — :func:`run_prl` and the registered ``prl`` attack.

This package re-exports the names other modules, tests, benchmarks and docs use, so
``from linkrisk.attacks import probabilistic as P; P.run_prl(...)`` keeps working.
"""

from __future__ import annotations

import numba as nb

from ...engine.nearest import RTOL
from ...engine.nearest.rules import tie_threshold_np
from .candidates import (
    engine_sets,
    group_sets,
    min_walk,
    missing_sets,
    pair_best_kernel,
    pair_sets,
    replay_walk,
    walk_base,
    walk_order,
)
from .classification import (
    GRID_BITS,
    Thresholds,
    agreement_weights,
    assignment_sets,
    fs_thresholds,
    grid_scores,
    grid_weights,
    missing_thresholds,
    observed_table,
    pattern_probs,
    pattern_table,
)
from .comparison import PAIR_PARTS, Comparison, compare, quantile_bins, stack_columns, true_patterns
from .counts import (
    missing_pattern_counts,
    pair_counts,
    pair_counts_kernel,
    pattern_counts,
    superset_mobius,
)
from .em import EPS, EMFit, bits, em, em_missing
from .linkage import MAX_ATTRIBUTES, prl, run_prl
from .walk import (
    COLLECT,
    COUNT,
    MIN,
    SMALL,
    WALK,
    count_kernel,
    fold_finished,
    run_walk,
    walk_kernel,
)

__all__ = [
    "EPS", "GRID_BITS", "MAX_ATTRIBUTES", "PAIR_PARTS", "RTOL", "Comparison", "EMFit",
    "Thresholds", "COLLECT", "COUNT", "MIN", "SMALL", "WALK", "count_kernel",
    "fold_finished", "min_walk", "pair_best_kernel", "pair_counts", "pair_counts_kernel",
    "replay_walk", "run_walk", "stack_columns", "true_patterns", "walk_base", "walk_kernel",
    "walk_order", "agreement_weights", "assignment_sets", "bits", "compare", "em",
    "em_missing", "engine_sets", "fs_thresholds", "grid_scores", "grid_weights",
    "group_sets", "missing_pattern_counts", "missing_sets", "missing_thresholds", "nb",
    "observed_table", "pair_sets", "pattern_counts", "pattern_probs", "pattern_table", "prl",
    "quantile_bins", "run_prl", "superset_mobius", "tie_threshold_np",
]
