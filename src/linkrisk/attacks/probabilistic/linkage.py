"""The ``prl`` attack: compare, count, fit, classify and link (see
:mod:`linkrisk.attacks.probabilistic` for the method and its modules).

:func:`run_prl` chains the steps: comparison vectors (:mod:`.comparison`), pattern counts
(:mod:`.counts`), EM (:mod:`.em`), weights and thresholds (:mod:`.classification`), then
the candidate sets (:mod:`.candidates`, or the one-to-one assignment); files with a
missing value take :func:`_run_prl_missing`. ``Outcome.extra`` reports m, u, p, the
weights, the thresholds, the achieved error bounds and the number of pairs in each class
(from the pattern counts).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...engine.nearest import RTOL, NearestSets
from ...errors import LinkriskError
from ...params import Param
from ..base import LinkContext, Outcome, register
from ..categorical import MAX_CATEGORIES
from ..orbit import orbit_probabilities
from .blocked import (
    Layout,
    blocked_assignment,
    blocked_counts,
    blocked_missing_counts,
    blocked_missing_sets,
    blocked_sets,
    layout,
)
from .candidates import engine_sets, group_sets, missing_sets, pair_sets
from .classification import (
    Thresholds,
    agreement_weights,
    assignment_sets,
    fs_thresholds,
    grid_scores,
    missing_thresholds,
    pattern_probs,
    pattern_table,
)
from .comparison import Comparison, compare
from .counts import missing_pattern_counts, pair_cost, pattern_counts, walk_cost
from .em import EMFit, em, em_missing

#: most attributes prl compares (2^m patterns)
MAX_ATTRIBUTES = 20


def _path(cmp: Comparison, wa: np.ndarray, wd: np.ndarray, score: np.ndarray,
          n: tuple[int, int] | None = None) -> str:
    """How to find the maximal-weight sets: ``groups`` (subset walk), ``engine`` or
    ``pairs`` (tolerances). Attributes with equal agreement and disagreement weights
    (m_j = u_j) are left out of the walk. ``n``: the sizes (n, n') of one block (default
    the whole files)."""
    # the engine needs an L×L table per attribute: many categories go to the pair kernel
    slow = "engine" if cmp.size.max(initial=0) <= MAX_CATEGORIES else "pairs"
    if not cmp.coded:
        return "pairs"
    window = 4 * RTOL * float(np.abs(score).max())
    gain = (wa - wd)[wa != wd]
    if (gain <= window).any():
        return slow
    # two subset walks against one pass of the engine's kernel over all pairs
    return "groups" if 2 * walk_cost(cmp, int(gain.size), n) < pair_cost(cmp, n) else slow


def _fixed_p(value: Any, known: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) and value == "known":
        return known
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = -1.0
    if not 0 < v < 1:
        raise LinkriskError(f"match_proportion must be None (estimate), 'known' or a number in "
                            f"(0, 1), got {value!r}")
    return v


def run_prl(ctx: LinkContext, q: int = 10, tol: Any = None, max_fp: float = 0.01,
            max_fn: float = 0.01, one_to_one: bool = False, max_iter: int = 1000,
            match_proportion: Any = "known", path: str = "auto") -> Outcome:
    """The ``prl`` attack; ``path`` (``auto``, ``groups``, ``engine``, ``pairs``) forces how
    the candidate sets are found (tests)."""
    m = len(ctx.qi)
    if m > MAX_ATTRIBUTES:
        raise LinkriskError(f"prl compares at most {MAX_ATTRIBUTES} attributes (2^m agreement "
                            f"patterns); got {m}: choose fewer QIs with --qi (qi=)")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise LinkriskError(f"max_iter must be a positive integer, got {max_iter!r}")
    cmp = compare(ctx, q, tol)
    lay = None if ctx.blocks is None else layout(ctx)  # pairs within blocks (.blocked)
    n_pairs = ctx.n_a * ctx.n_b if lay is None else lay.pairs
    known = min(ctx.n_a, ctx.n_b) / n_pairs if lay is None else lay.known
    if cmp.missing:  # a comparison with a missing value weighs 0 (docs/methods.md)
        return _run_prl_missing(ctx, cmp, known, max_fp, max_fn, one_to_one, max_iter,
                                match_proportion, path, lay)
    counts = pattern_counts(cmp, ctx.progress) if lay is None else blocked_counts(cmp, lay)
    fit = em(counts, m, known, max_iter, fixed_p=_fixed_p(match_proportion, known))
    wa, wd = agreement_weights(fit.m, fit.u)
    w = pattern_table(wa, wd)
    score = pattern_table(-wa, -wd)
    th = fs_thresholds(w, pattern_probs(fit.m), pattern_probs(fit.u), max_fp, max_fn)
    if one_to_one:
        chosen = "assignment"
        sets = (assignment_sets(ctx, cmp, score, grid_scores(wa, wd)) if lay is None
                else blocked_assignment(ctx, cmp, lay, score, grid_scores(wa, wd)))
    elif lay is not None:
        sets, chosen = blocked_sets(ctx, cmp, lay, wa, wd, score, path,
                                    lambda n: _path(cmp, wa, wd, score, n))
    else:
        chosen = _path(cmp, wa, wd, score) if path == "auto" else path
        if chosen == "groups":
            sets = group_sets(cmp, score, ctx.truth, ctx.seed, keep=np.flatnonzero(wa != wd))
        elif chosen == "engine":
            sets = engine_sets(ctx, cmp, wa, wd)
        elif chosen == "pairs":
            sets = pair_sets(ctx, cmp, score)
        else:
            raise LinkriskError(f"unknown path {path!r}")
    return _outcome(ctx, cmp, fit, wa, wd, th, counts, th.cls, chosen, sets, n_pairs)


def _run_prl_missing(ctx: LinkContext, cmp: Comparison, known: float, max_fp: float,
                     max_fn: float, one_to_one: bool, max_iter: int, match_proportion: Any,
                     path: str, lay: Layout | None = None) -> Outcome:
    """:func:`run_prl` on files with missing values: three-state comparisons (a missing
    one weighs 0), EM over the observed comparisons, the engine's pattern-pair search or
    the pair kernel for the sets, the assignment on per-pair grid costs; ``lay``: the
    blocks (:mod:`.blocked`)."""
    m = cmp.a.shape[1]
    obs, agree, counts = (missing_pattern_counts(cmp, ctx.progress) if lay is None
                          else blocked_missing_counts(cmp, lay))
    fit = em_missing(agree, obs, counts, m, known, max_iter,
                     fixed_p=_fixed_p(match_proportion, known))
    wa, wd = agreement_weights(fit.m, fit.u)
    th, cls = missing_thresholds(obs, agree, counts, fit, wa, wd, max_fp, max_fn)
    if one_to_one:
        chosen = "assignment"
        sets = (assignment_sets(ctx, cmp, None, weights=(wa, wd)) if lay is None
                else blocked_assignment(ctx, cmp, lay, None, weights=(wa, wd)))
    else:
        chosen = path
        if path == "auto":
            small = cmp.size.max(initial=0) <= MAX_CATEGORIES
            chosen = "engine" if cmp.coded and small else "pairs"
        sets = (missing_sets(ctx, cmp, wa, wd, chosen) if lay is None
                else blocked_missing_sets(ctx, cmp, lay, wa, wd, chosen))
    out = _outcome(ctx, cmp, fit, wa, wd, th, counts, cls, chosen, sets,
                   ctx.n_a * ctx.n_b if lay is None else lay.pairs)
    compared = ((obs[:, None] >> np.arange(m)) & 1).sum(axis=1)
    out.extra["missing_values"] = True
    share = float(counts @ (m - compared)) / float(counts.sum() * m)
    out.extra["missing_comparisons"] = share
    return out


def _outcome(ctx: LinkContext, cmp: Comparison, fit: EMFit, wa: np.ndarray, wd: np.ndarray,
             th: Thresholds, counts: np.ndarray, cls: np.ndarray, chosen: str,
             sets: NearestSets, n_pairs: int) -> Outcome:
    m = len(ctx.qi)

    def per_col(v: np.ndarray) -> dict[str, float]:
        return {c: float(x) for c, x in zip(ctx.qi, v, strict=True)}

    extra = {
        "comparison": dict(zip(ctx.qi, cmp.rule, strict=True)),
        "m": per_col(fit.m), "u": per_col(fit.u), "match_proportion": fit.p,
        "em_iterations": fit.iterations, "em_converged": fit.converged,
        "weight_agree": per_col(wa), "weight_disagree": per_col(wd),
        "upper_threshold": th.upper, "lower_threshold": th.lower,
        "fp_probability": th.fp, "fn_probability": th.fn,
        "linked_pairs": int(counts[cls == 2].sum()),
        "clerical_pairs": int(counts[cls == 1].sum()),
        "nonlinked_pairs": int(counts[cls == 0].sum()),
        "pairs": int(n_pairs), "candidate_search": chosen,
    }
    zero = [c for c, a, d in zip(ctx.qi, wa, wd, strict=True) if a == d]
    if len(zero) > 1:
        # EM collapsed several attributes (m_j = u_j): they no longer count in the weight
        extra["warnings"] = [
            f"EM gave {len(zero)} of {m} attributes zero weight (m = u): "
            f"{', '.join(map(str, zero))}; the Fellegi-Sunter weight ignores them, so the "
            "linkage rate understates what these attributes reveal (compare dbrl_hamming)"]
    if not fit.converged:
        warnings.warn(f"prl: EM stopped after {fit.iterations} cycles without converging; "
                      "raise max_iter", RuntimeWarning, stacklevel=3)
    if chosen == "assignment":
        # the assignment's correct links averaged over its identical records (the
        # solver's choice among them is a seeded draw): linkrisk.attacks.orbit
        p = orbit_probabilities(ctx, sets.link, ctx.truth)
        if p is not None:
            sets.prob = p
            extra["fixed_points"] = int(sets.true_in_set.sum())
    return Outcome(sets, extra)


@register("prl", "Fellegi-Sunter probabilistic linkage: EM-estimated m/u agreement weights",
          kinds=("numeric", "ordinal", "nominal"), params=(
              Param("q", int, 10, help="numeric attributes agree when both values fall in the "
                                       "same of q quantile bins of the attacker's file (≥ 2)"),
              Param("tol", object, type_name="number or {column: number}",
                    help="numeric attributes agree when |a−b| ≤ tol instead (attribute units)"),
              Param("max_fp", float, 0.01, help="largest P(link | non-match): sets the upper "
                                                "threshold"),
              Param("max_fn", float, 0.01, help="largest P(non-link | match): sets the lower "
                                                "threshold"),
              Param("one_to_one", bool, False, help="link by a one-to-one assignment on the "
                                                    "weights instead of each record's best set"),
              Param("max_iter", int, 1000, help="most EM cycles"),
              Param("match_proportion", object, "known", type_name="'known', None or number",
                    help="share of matches among the compared pairs: 'known' fixes "
                         "min(n,n')/(n·n') (with blocking Σ min(n_k,n'_k)/Σ n_k·n'_k over "
                         "the blocks), None estimates it by EM, a number fixes it")))
def prl(ctx: LinkContext, q: int = 10, tol: Any = None, max_fp: float = 0.01,
        max_fn: float = 0.01, one_to_one: bool = False, max_iter: int = 1000,
        match_proportion: Any = "known") -> Outcome:
    """Fellegi–Sunter probabilistic record linkage (see :mod:`.probabilistic`): agreement
    patterns (categories equal; numeric in the same of ``q`` quantile bins of A, or within
    ``tol``), m/u by EM, weights in bits, LP/CP/NP thresholds from ``max_fp`` (P(link |
    non-match)) and ``max_fn`` (P(non-link | match)); each a linked to its maximal-weight
    candidate set, or by a one-to-one assignment (``one_to_one=True``). ``match_proportion``
    of the n·n' pairs: ``"known"`` (default) fixes it at min(n,n')/(n·n') — each record of
    the smaller file has its source in the other, as in a release; None estimates it by EM
    (Jaro); a number fixes it at that value. With blocking (``block=``) the pairs are the
    same-block pairs and ``"known"`` is Σ_k min(n_k, n'_k) / Σ_k n_k·n'_k
    (:mod:`.blocked`)."""
    return run_prl(ctx, q=q, tol=tol, max_fp=max_fp, max_fn=max_fn, one_to_one=one_to_one,
                   max_iter=max_iter, match_proportion=match_proportion)
