"""One-call assessment of a release: every applicable attack, the measures of docs/methods.md,
per-record risk and an HTML report (:func:`assess`)."""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .attacks import make_context, resolve_methods, run_attack
from .attacks.base import AttackResult, _plain
from .engine.nearest import DEFAULT_MEMORY_BUDGET, Progress
from .errors import LinkriskError
from .measures import (
    disclosure_risk,
    information_loss,
    interval_disclosure,
    per_record_risk,
    pil,
    score,
    worst_case,
)

#: attacks of ``attacks="all"`` by the kinds of the QIs
NUMERIC_ATTACKS = ("dbrl", "dbrl2", "dbrl_l1", "mahalanobis", "mahalanobis0", "kernel",
                   "rbrl_sum", "rbrl_max", "prl")
CATEGORICAL_ATTACKS = ("dbrl_hamming", "prl")
MIXED_ATTACKS = ("dbrl_mixed", "prl")
#: ``attacks="all"`` adds the global attack up to this many records (it is O(n log n)
#: in practice but minutes at 10⁵; ask for it by name to run it on larger files)
GLOBAL_MAX_N = 20_000


@dataclass
class Assessment:
    """What :func:`assess` found. ``results``: attack name → :class:`AttackResult`;
    ``skipped``: attack name → why it could not run; ``measures``: DLD, PLD, RSLD, ID, IL
    (and IL1..IL5), PIL, DR, Score (numeric files); ``records``: per-record risk joined with
    the attacker's QI values; ``settings``: what was run."""

    results: dict[str, AttackResult]
    skipped: dict[str, str]
    measures: dict[str, Any]
    records: pd.DataFrame
    settings: dict[str, Any]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def worst(self) -> AttackResult:
        """The attack that re-identifies the most records."""
        return worst_case(self.results)

    def to_dict(self) -> dict[str, Any]:
        w = self.worst
        return {"worst_case": {"attack": w.method, "rate": w.rate,
                               "correct_links": w.correct_links},
                "attacks": [r.to_dict() for r in self.results.values()],
                "skipped": dict(self.skipped),
                "measures": {k: _plain(v) for k, v in self.measures.items()},
                "records_at_risk": {f"max_risk>={t}": int((self.records["max_risk"] >= t).sum())
                                    for t in (0.5, 1.0)},
                "settings": {k: _plain(v) for k, v in self.settings.items()},
                "notes": list(self.notes), "seconds": round(self.seconds, 3)}

    def to_html(self, title: str | None = None) -> str:
        """A self-contained HTML report (see :mod:`linkrisk.report`)."""
        from .report import render_html

        return render_html(self, title=title)


def applicable_attacks(kinds: Mapping[str, str], n_a: int, n_b: int,
                       rank_swap_p: float | None = None,
                       global_max_n: int = GLOBAL_MAX_N) -> list[str]:
    """The attacks ``attacks="all"`` runs for QIs of these kinds and these file sizes."""
    vals = set(kinds.values())
    if vals == {"numeric"}:
        names = list(NUMERIC_ATTACKS)
        if rank_swap_p is not None:
            names += ["rsrl", "rsrl_union"]
    elif "numeric" in vals:
        names = list(MIXED_ATTACKS)
    else:
        names = list(CATEGORICAL_ATTACKS)
    if n_a == n_b and n_a <= global_max_n:
        names.append("gdbrl")
    return names


def _global_metric(kinds: Mapping[str, str]) -> str:
    vals = set(kinds.values())
    return "euclidean" if vals == {"numeric"} else "hamming" if "numeric" not in vals else "mixed"


def assess(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    qi: str | Sequence[str] | None = None,
    attacks: str | Sequence[str] = "all",
    *,
    ids: str | Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    rank_swap_p: float | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    global_max_n: int = GLOBAL_MAX_N,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    seed: int = 0,
    progress: Callable[[str], Progress | None] | None = None,
) -> Assessment:
    """Run the attacks and measures a data owner needs before releasing ``masked``.

    ``attacks``: ``"all"`` (every attack applicable to the QI kinds: distance, rank,
    Mahalanobis, kernel, probabilistic, the global attack when the files have equal sizes
    up to ``global_max_n`` records, and the rank-swap attacks when ``rank_swap_p`` is
    given) or a list of names. ``params``: per-attack parameters, e.g.
    ``{"prl": {"q": 20}}``. ``progress(label)`` returns a ``(done, total)`` callback for
    each attack (or None).

    Measures (docs/methods.md, Measures), for numeric QIs with records in the same order: DLD (dbrl rate, %),
    PLD (prl), RSLD (rsrl), ID (interval disclosure), IL (Domingo-Ferrer & Torra 2001) and
    PIL (Mateo-Sanz et al. 2005), DR = 0.25·DLD + 0.25·PLD + 0.5·ID (with RSLD:
    (RSLD+DLD+PLD)/6 + 0.5·ID), Score = (IL + DR)/2. Per-record risk: each record's best
    attack probability of re-identification and the share of attacks that link it."""
    t0 = time.perf_counter()
    ctx, direction = make_context(original, masked, qi, ids=ids, kinds=kinds,
                                  memory_budget=memory_budget, seed=seed)
    if rank_swap_p is not None and not 0 < float(rank_swap_p) <= 100:
        raise LinkriskError(f"rank_swap_p must be in (0, 100], got {rank_swap_p}")
    if isinstance(attacks, str) and attacks == "all":
        names = applicable_attacks(ctx.kinds, ctx.n_a, ctx.n_b, rank_swap_p, global_max_n)
    else:
        names = resolve_methods(attacks)
    params = {k: dict(v) for k, v in (params or {}).items()}
    unknown = [k for k in params if k not in names]
    if unknown:
        raise LinkriskError(f"parameters given for {unknown[0]!r}, which is not among the "
                            f"attacks run ({', '.join(names)})")
    for rs in ("rsrl", "rsrl_union"):
        if rs in names and "p" not in params.get(rs, {}):
            if rank_swap_p is None:
                raise LinkriskError(f"{rs} needs the swapping parameter: pass rank_swap_p "
                                    "(--rank-swap-p) or p in its parameters")
            params.setdefault(rs, {})["p"] = float(rank_swap_p)
    if "gdbrl" in names and "metric" not in params.get("gdbrl", {}):
        params.setdefault("gdbrl", {})["metric"] = _global_metric(ctx.kinds)

    results: dict[str, AttackResult] = {}
    skipped: dict[str, str] = {}
    for name in names:
        ctx.progress = progress(name) if progress is not None else None
        try:
            results[name] = run_attack(ctx, name, direction, **params.get(name, {}))
        except LinkriskError as exc:
            skipped[name] = str(exc)
    ctx.progress = None
    if not results:
        raise LinkriskError("no attack could run: " + "; ".join(f"{k}: {v}"
                                                               for k, v in skipped.items()))

    measures, notes = _measures(original, masked, ctx.qi, ctx.kinds, ids, results)
    per = per_record_risk(results)
    records = pd.concat([per, ctx.a_df.reset_index(drop=True).set_axis(per.index)], axis=1)
    settings = {"qi": list(ctx.qi), "kinds": dict(ctx.kinds), "direction": direction,
                "n_attacker": ctx.n_a, "n_released": ctx.n_b,
                "truth": "id columns " + ", ".join(ids) if isinstance(ids, (list, tuple))
                else f"id column {ids}" if ids else "row order",
                "attacks": names, "params": params, "rank_swap_p": rank_swap_p,
                "memory_budget": memory_budget, "seed": seed,
                "linkrisk": _version(), "date": _dt.datetime.now().isoformat(timespec="seconds")}
    return Assessment(results, skipped, measures, records, settings,
                      time.perf_counter() - t0, notes)


def _measures(original: pd.DataFrame, masked: pd.DataFrame, qi: list[str],
              kinds: Mapping[str, str], ids: Any, results: Mapping[str, AttackResult]
              ) -> tuple[dict[str, Any], list[str]]:
    rate = {k: 100.0 * r.rate for k, r in results.items()}
    out: dict[str, Any] = {"worst_case_%": max(rate.values())}
    for key, name in (("DLD", "dbrl"), ("PLD", "prl"), ("RSLD", "rsrl")):
        if name in rate:
            out[key] = rate[name]
    notes: list[str] = []
    if set(kinds[c] for c in qi) != {"numeric"}:
        notes.append("information loss, interval disclosure, DR and Score are defined for "
                     "numeric attributes only (docs/methods.md, Measures); not computed")
        return out, notes
    if ids is not None or len(original) != len(masked):
        notes.append("IL, PIL and ID compare records one to one in file order; not computed "
                     "for files of different sizes or linked by id columns")
        return out, notes
    il = information_loss(original, masked, qi)
    out.update({k: v for k, v in il.to_dict().items() if k != "skipped"})
    if il.skipped:
        notes.append("IL: " + "; ".join(il.skipped))
    out.update(pil(original, masked, qi))
    out["ID"] = interval_disclosure(original, masked, qi)
    if "DLD" in out and "PLD" in out:
        out["DR"] = disclosure_risk(out["DLD"], out["PLD"], out["ID"], out.get("RSLD"))
        out["Score"] = score(out["IL"], out["DR"])
    else:
        notes.append("DR and Score need both dbrl and prl; not computed")
    return out, notes


def _version() -> str:
    from . import __version__

    return __version__


def records_at_risk(records: pd.DataFrame, top: int = 20) -> pd.DataFrame:
    """The ``top`` most exposed records: highest best-attack probability, then share."""
    order = np.lexsort((-records["share"].to_numpy(), -records["max_risk"].to_numpy()))
    return records.iloc[order[:top]]
