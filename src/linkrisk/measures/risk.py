"""Disclosure-risk measures and the combined score (docs/methods.md, Measures).

* DLD / PLD / RSLD: the rates (in %) of the ``dbrl``, ``prl`` and ``rsrl`` attacks.
* ID, interval disclosure: Domingo-Ferrer, Mateo-Sanz & Torra (2001), "Comparing SDC methods
  for microdata on the basis of information loss and disclosure risk", ETK-NTTS.
* DR and Score: Domingo-Ferrer & Torra (2001); with RSLD: Nin, Herranz & Torra (2008).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..attacks.base import AttackResult
from ..errors import LinkriskError
from .utility import paired_matrices


def interval_disclosure(original: pd.DataFrame, masked: pd.DataFrame,
                        columns: Sequence[str] | None = None,
                        ps: Sequence[int] = tuple(range(1, 11))) -> float:
    """ID in %: for p in ``ps`` (% of n), attribute j and record i, the interval around the
    masked value y_ij spanning the masked values of attribute j whose ranks lie within
    ±⌊p·n/200⌋ of y_ij's rank; ID = % of original values x_ij inside their interval,
    averaged over attributes, records and p. A tied masked value's rank is the range of
    positions its value occupies, so the interval is the same for every tied record."""
    x, y, _ = paired_matrices(original, masked, columns)
    n = x.shape[0]
    hits = []
    for j in range(x.shape[1]):
        s = np.sort(y[:, j])
        lo = np.searchsorted(s, y[:, j], side="left")
        hi = np.searchsorted(s, y[:, j], side="right") - 1
        for p in ps:
            w = int(np.floor(p * n / 200))
            low = s[np.maximum(lo - w, 0)]
            high = s[np.minimum(hi + w, n - 1)]
            hits.append(np.mean((x[:, j] >= low) & (x[:, j] <= high)))
    return 100.0 * float(np.mean(hits))


def disclosure_risk(dld: float, pld: float, id_: float, rsld: float | None = None) -> float:
    """DR = 0.25·DLD + 0.25·PLD + 0.5·ID, or with the rank-swap attack
    DR = (RSLD + DLD + PLD)/6 + 0.5·ID (all in %)."""
    if rsld is None:
        return 0.25 * dld + 0.25 * pld + 0.5 * id_
    return (rsld + dld + pld) / 6.0 + 0.5 * id_


def score(il: float, dr: float) -> float:
    """Score = (IL + DR) / 2 (lower is better for the data owner)."""
    return (il + dr) / 2.0


def _results(results: Sequence[AttackResult] | Mapping[str, AttackResult]) -> list[AttackResult]:
    res = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not res:
        raise LinkriskError("no attack results given")
    return res


def worst_case(results: Sequence[AttackResult] | Mapping[str, AttackResult]) -> AttackResult:
    """The attack with the highest rate: the release's worst-case risk."""
    return max(_results(results), key=lambda r: r.rate)


def per_record_risk(results: Sequence[AttackResult] | Mapping[str, AttackResult]
                    ) -> pd.DataFrame:
    """One row per attacker record: ``max_risk`` (best attack's probability χ/|C| of
    re-identifying it), ``best_attack`` (on ties the attack with the higher overall rate),
    ``share`` (fraction of attacks whose link is the
    true record with probability > 0.5) and ``mean_risk`` (mean probability over attacks)."""
    # ties between attacks go to the attack with the higher overall rate
    res = sorted(_results(results), key=lambda r: -r.rate)
    n = {r.n for r in res}
    if len(n) != 1:
        raise LinkriskError("per-record risk needs attacks on the same attacker file")
    p = np.column_stack([r.per_record["correct"].to_numpy(float) for r in res])
    names = np.array([r.method for r in res])
    out = pd.DataFrame({"max_risk": p.max(1), "best_attack": names[p.argmax(1)],
                        "share": (p > 0.5).mean(1), "mean_risk": p.mean(1)},
                       index=res[0].per_record.index)
    out.loc[out["max_risk"] == 0, "best_attack"] = ""
    return out
