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
    """Interval disclosure ID, in %: how often an original value lies in a small rank interval
    around its masked value.

    For p in ``ps`` (% of n), attribute j and record i, the interval around the masked value
    y_ij spans the masked values of attribute j whose ranks lie within ±⌊p·n/200⌋ of y_ij's
    rank; ID = % of original values x_ij inside their interval, averaged over attributes,
    records and p. A tied masked value's rank is the range of positions its value occupies,
    so the interval is the same for every tied record. See docs/methods.md, Measures.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record (row i of ``masked`` is the image of row i of
        ``original``).
    columns : sequence of str, optional
        The numeric attributes; ``None`` takes every column numeric in both files.
    ps : sequence of int
        The interval widths p, in % of n (default 1, 2, …, 10).

    Returns
    -------
    float
        ID in % (0–100).

    References
    ----------
    Domingo-Ferrer, J., Mateo-Sanz, J. M. & Torra, V. (2001). Comparing SDC methods for
    microdata on the basis of information loss and disclosure risk. ETK-NTTS.
    """
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
    """The disclosure risk DR of a release: DR = 0.25·DLD + 0.25·PLD + 0.5·ID, or with the
    rank-swap attack DR = (RSLD + DLD + PLD)/6 + 0.5·ID (all in %; docs/methods.md, Measures).

    Parameters
    ----------
    dld, pld : float
        Rates in % of the distance-based (``dbrl``) and probabilistic (``prl``) attacks.
    id_ : float
        Interval disclosure in % (:func:`interval_disclosure`).
    rsld : float, optional
        Rate in % of the rank-swapping attack (``rsrl``), when it ran.

    Returns
    -------
    float
        DR in %.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata. In *Confidentiality, Disclosure and Data Access*. With RSLD:
    Nin, J., Herranz, J. & Torra, V. (2008). Rethinking rank swapping to decrease disclosure
    risk. *Data & Knowledge Engineering* 64(1).
    """
    if rsld is None:
        return 0.25 * dld + 0.25 * pld + 0.5 * id_
    return (rsld + dld + pld) / 6.0 + 0.5 * id_


def score(il: float, dr: float) -> float:
    """Score = (IL + DR) / 2 (lower is better for the data owner; docs/methods.md, Measures).

    Parameters
    ----------
    il : float
        Information loss in % (:func:`linkrisk.measures.information_loss`, ``.il``).
    dr : float
        Disclosure risk in % (:func:`disclosure_risk`).

    Returns
    -------
    float
        The score in %.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata. In *Confidentiality, Disclosure and Data Access*.
    """
    return (il + dr) / 2.0


def _results(results: Sequence[AttackResult] | Mapping[str, AttackResult]) -> list[AttackResult]:
    res = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not res:
        raise LinkriskError("no attack results given")
    return res


def worst_case(results: Sequence[AttackResult] | Mapping[str, AttackResult]) -> AttackResult:
    """The attack with the highest rate: the release's worst-case risk (docs/methods.md).

    Parameters
    ----------
    results : sequence or mapping of AttackResult
        The results of the attacks run (a mapping's values are used).

    Returns
    -------
    AttackResult
        The result with the highest ``rate`` (the first one on ties).
    """
    return max(_results(results), key=lambda r: r.rate)


def per_record_risk(results: Sequence[AttackResult] | Mapping[str, AttackResult]
                    ) -> pd.DataFrame:
    """The re-identification risk of each attacker record over several attacks.

    Parameters
    ----------
    results : sequence or mapping of AttackResult
        Results of attacks on the same attacker file (a mapping's values are used).

    Returns
    -------
    pandas.DataFrame
        One row per attacker record: ``max_risk`` (best attack's probability χ/|C| of
        re-identifying it), ``best_attack`` (on ties the attack with the higher overall rate;
        empty when no attack links it), ``share`` (fraction of attacks whose link is the true
        record with probability > 0.5) and ``mean_risk`` (mean probability over attacks).
    """
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


def records_at_risk(records: pd.DataFrame, top: int = 20) -> pd.DataFrame:
    """The ``top`` most exposed records: highest best-attack probability, then share.

    Parameters
    ----------
    records : pandas.DataFrame
        The per-record risk table (:func:`linkrisk.measures.per_record_risk`, an
        assessment's ``records``).
    top : int
        How many records.

    Returns
    -------
    pandas.DataFrame
        The ``top`` rows of ``records``, most exposed first.
    """
    order = np.lexsort((-records["share"].to_numpy(), -records["max_risk"].to_numpy()))
    return records.iloc[order[:top]]
