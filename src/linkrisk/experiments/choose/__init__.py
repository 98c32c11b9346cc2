"""Choose a protection: sweep masking methods × parameters, measure each point's information
loss and worst-case re-identification risk over seeded replications, and recommend the
release that loses least information under a risk limit (``linkrisk choose``).

The sweep is a study (:mod:`linkrisk.experiments`): the same grid expansion, seeds,
worker processes and resumable cache. Per point (one method with one setting) and per
replication r it records

* **IL** — information loss in %: numeric files IL of Domingo-Ferrer & Torra (2001)
  (mean of IL1..IL5 × 100); categorical files the entropy-based loss
  100·mean_j H(X_j | Y_j)/H(X_j) (:func:`linkrisk.measures.categorical_information_loss`);
* **risk** — the worst-case re-identification rate in %: max over the risk attacks of the
  attack's correct-link rate (docs/methods.md, Measures: "Worst-case and per-record
  risk");
* **DR** — numeric: 0.25·DLD + 0.25·PLD + 0.5·ID, or (RSLD + DLD + PLD)/6 + 0.5·ID for rank
  swaps (Domingo-Ferrer & Torra 2001; Nin, Herranz & Torra 2008); categorical:
  (DLD + PLD)/2 with DLD the Hamming-distance linkage rate;
* **Score** = (IL + DR)/2;

and summarizes each over the R replications by its mean, standard deviation (ddof = 1) and
95 % Student-t interval mean ± t₀.₉₇₅,R−1·sd/√R, clipped to the measure's range (rates
within [0, 100] %, the others ≥ 0); deterministic methods run once: their interval is
the value itself. See docs/methods.md.

Recommendation (:func:`recommend`), deterministic:

1. *feasible* points: upper 95 % bound of worst-case risk ≤ ``max_risk``;
2. among them the least mean IL, IL*; its *near ties* are the feasible points whose mean
   IL is ≤ the upper 95 % bound of IL* (indistinguishable from it at R replications);
3. among the near ties: the least mean worst-case risk, then the least mean Score, then a
   deterministic method before a random one, then the earlier point of the sweep (method
   order, then parameter order as given).

Without ``max_risk`` the same rule runs on Score instead of IL (every point feasible):
least mean Score, near ties up to its upper bound, then least risk, then least IL, then
deterministic, then sweep order. If no point is feasible there is no recommendation; the
*closest* point is the one with the least upper risk bound (ties: least mean risk, then
least IL, then sweep order).

Grid syntax (:func:`parse_method`): ``METHOD:PARAM=GRID[/PARAM=GRID…]``, several
parameters giving their Cartesian product; GRID is a comma list of items, each a value
(``3``, ``0.5``, ``B``), ``a..b`` (:data:`DEFAULT_STEPS` evenly spaced values from a to b
inclusive) or ``a..b:step`` (a, a + step, … up to b). Values are rounded to integers
when the parameter is an integer or both ends are written as integers; duplicates are
dropped, order kept. ``METHOD`` alone uses the method's default grid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ...errors import LinkriskError
from .choice import Choice, reproduce_command, sidecar_path
from .grid import (
    CATEGORICAL_DEFAULTS,
    DEFAULT_REPLICATIONS,
    DEFAULT_STEPS,
    NOMINAL_RECODING,
    NUMERIC_DEFAULTS,
    MethodGrid,
    choose_grids,
    default_methods,
    parse_grid,
    parse_method,
    parse_percent,
)
from .recommend import RULE_SCORE, RULE_WITH_LIMIT, recommend, verdicts
from .run import (
    DEFAULT_CACHE,
    RANK_SWAPS,
    RISKS,
    cache_data,
    cache_folder,
    coded_as_categories,
    data_kind,
    failure_notes,
    frame_hash,
    load_original,
    points_table,
    prepare,
    risk_attack_names,
    run_sweep,
    sweep_specs,
    user_cache_dir,
)

__all__ = ["CATEGORICAL_DEFAULTS", "DEFAULT_CACHE", "DEFAULT_REPLICATIONS", "DEFAULT_STEPS",
           "NOMINAL_RECODING", "NUMERIC_DEFAULTS", "RANK_SWAPS", "RISKS", "RULE_SCORE",
           "RULE_WITH_LIMIT", "Choice", "MethodGrid", "coded_as_categories", "frame_hash",
           "cache_folder", "choose", "data_kind", "default_methods", "load_original",
           "parse_grid", "parse_method", "parse_percent", "recommend", "reproduce_command",
           "sidecar_path", "user_cache_dir"]


def choose(
    original: str | Path | pd.DataFrame,
    methods: Sequence[str | MethodGrid] | None = None,
    *,
    max_risk: float | str | None = None,
    risk_attacks: str | Sequence[str] | None = None,
    replications: int = DEFAULT_REPLICATIONS,
    qi: str | Sequence[str] | None = None,
    confidential: str | Sequence[str] | None = None,
    ordered: bool = False,
    seed: int = 0,
    processes: int | None = None,
    cache_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    risk: str = "identity",
    sensitive: str | Sequence[str] | None = None,
    block: str | Sequence[str] | None = None,
) -> Choice:
    """Sweep masking methods × parameters on ``original`` and recommend a release.

    ``original``: a DataFrame, a CSV/Parquet path or a reference dataset name.
    ``methods``: grid specs such as ``"rank_swap:p=2..20"``, ``"noise:a=0.05..1"``,
    ``"microaggregation_ir:k=3,5,10"`` (module docstring), default: the defaults of the
    data kind (numeric: noise, rank swapping, IR and MDAV microaggregation, and IPSO when
    ``confidential`` columns are named; categorical: PRAM, global recoding, local
    suppression and, with ``ordered``, top/bottom coding). ``max_risk``: the limit on worst-case
    re-identification in % (``"5%"`` or ``5``); without it the least Score is chosen.
    ``risk_attacks``: the attacks whose maximum is the worst-case risk (default: every
    attack that applies to the QI kinds, as in :func:`linkrisk.assess`, with ``rsrl`` and
    ``rsrl_union`` for rank swaps at their known p). ``qi``: the QIs the attacker knows
    and that are masked (default: every column but the ``confidential`` ones, leaving out
    id-like and weight-like columns as :func:`linkrisk.assess` does; other columns are
    released unchanged).
    ``ordered``: take categorical attributes as ordered. ``replications``: R seeded
    replications per point of a random method (deterministic methods run once).
    ``cache_dir``: completed replications are kept there and reused (default
    ``.linkrisk-cache`` in the working directory); ``processes``: worker processes
    (default 2; they are spawned, so a script calling ``choose`` needs the usual
    ``if __name__ == "__main__":`` guard, or pass ``processes=1``); ``progress(done, total)``.

    ``risk``: the risk axis. ``"identity"`` (default): worst-case re-identification;
    ``"attribute"``: worst-case attribute disclosure, the largest share of records whose
    ``sensitive`` value (columns not masked, not known to the attacker) is inferred
    through a risk attack's links (:func:`linkrisk.measures.attribute.linked_inference`,
    max over the risk attacks and the sensitive columns); ``"both"``: the larger of the two
    per replication.

    ``block``: blocking keys (``"region,sex"`` or a list) of every risk attack: records are
    compared only within blocks of equal keys (docs/methods.md, "Blocking"); the keys are
    known to the attacker exactly, so they are neither QIs nor masked (released as they
    are); the settings (report, JSON, sidecar, command) name them.

    Returns a :class:`Choice`; the rule is :func:`recommend`. See docs/methods.md."""
    from ..._version import __version__

    lim = parse_percent(max_risk)
    if int(replications) < 1:
        raise LinkriskError("replications must be at least 1")
    notes: list[str] = []
    orig = prepare(original, data_dir, qi=qi, confidential=confidential, ordered=ordered,
                   risk=risk, sensitive=sensitive, notes=notes, block=block)
    grids = choose_grids(methods, orig.kind, ordered, orig.conf, notes)
    chosen_base = risk_attack_names(orig, risk_attacks)
    cache, data_name, digest = cache_data(orig.df, cache_dir)
    masking, risk_by_label = sweep_specs(grids, chosen_base, orig.kind,
                                         default_risk=risk_attacks is None, notes=notes,
                                         risk=risk, sensitive=orig.sens)
    rows, cached, tasks = run_sweep(orig, masking, cache, data_name, seed=seed,
                                    replications=replications, processes=processes,
                                    progress=progress)
    points = points_table(rows, masking, risk_by_label, tasks)
    settings = {"original": orig.name, "rows": len(orig.df), "kind": orig.kind,
                "qi": orig.qis, "qi_given": orig.qi_given, "confidential": orig.conf,
                "ordered": ordered, "max_risk": lim,
                "risk_attacks": "default" if risk_attacks is None else ",".join(chosen_base),
                "replications": int(replications), "seed": int(seed),
                "methods": [g.label() for g in grids], "data_sha1": digest,
                "risk": risk, "sensitive": orig.sens, "block": orig.block or None,
                "rule": RULE_WITH_LIMIT if lim is not None else RULE_SCORE,
                "linkrisk": __version__}
    settings["command"] = reproduce_command(settings)
    rec, closest, reasons, suggestion = recommend(points, lim)
    points = verdicts(points, rec, closest, lim)
    notes += failure_notes(rows)
    return Choice(points, rec, closest, reasons, suggestion, rows, settings, notes, cached,
                  len(tasks), orig.df)
