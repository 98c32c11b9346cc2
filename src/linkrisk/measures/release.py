"""The measures of one release, computed once for ``assess`` and for the study runner
(docs/methods.md, Measures): information loss, probabilistic information loss, interval
disclosure, the disclosure risk DR that combines them with the attack rates, and the score.

References
----------
Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
methods for microdata. In *Confidentiality, Disclosure and Data Access*, 111–134.

Mateo-Sanz, J. M., Domingo-Ferrer, J. & Sebé, F. (2005). Probabilistic information loss
measures in confidentiality protection of continuous microdata. *DMKD* 11(2), 181–193.

Nin, J., Herranz, J. & Torra, V. (2008). Rethinking rank swapping to decrease disclosure
risk. *Data & Knowledge Engineering* 64(1), 346–364.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from ..errors import LinkriskError
from .risk import disclosure_risk, interval_disclosure, score
from .utility import categorical_information_loss, information_loss, pil

#: the measure names a study may ask for
MEASURES = ("IL", "PIL", "ID", "DR", "Score")


def numeric_measures(original: pd.DataFrame, masked: pd.DataFrame, columns: Sequence[str],
                     rates: Mapping[str, float], want: Collection[str] | None = None, *,
                     notes: list[str] | None = None) -> dict[str, float]:
    """IL, PIL, ID, DR and Score of a release of numeric attributes.

    DR = 0.25·DLD + 0.25·PLD + 0.5·ID, or (RSLD + DLD + PLD)/6 + 0.5·ID when the rank-swap
    attack ran, with DLD, PLD, RSLD the rates (in %) of ``dbrl``, ``prl`` and ``rsrl``;
    Score = (IL + DR)/2 (:func:`~linkrisk.measures.disclosure_risk`,
    :func:`~linkrisk.measures.score`).

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record (row i of ``masked`` is the image of row i of
        ``original``).
    columns : sequence of str
        The numeric attributes measured.
    rates : mapping of str to float
        Attack name → rate in % (``dbrl``, ``prl``, optionally ``rsrl``; others are
        ignored).
    want : collection of str, optional
        The measures to compute (names of :data:`MEASURES`; a measure needed by another is
        computed too). ``None``: all of them, and DR and Score are left out (with a note)
        when ``dbrl`` or ``prl`` did not run; when asked for by name they raise instead.
    notes : list of str, optional
        Receives why a term was left out (IL's zero denominators, DR without its attacks).

    Returns
    -------
    dict of str to float
        In this order, what was computed: IL1–IL5 and IL
        (:func:`~linkrisk.measures.information_loss`), PIL(Q), PIL(m), PIL(v), PIL(c),
        PIL(r) and PIL (:func:`~linkrisk.measures.pil`), ID
        (:func:`~linkrisk.measures.interval_disclosure`), DR, Score.

    References
    ----------
    Domingo-Ferrer & Torra (2001); Mateo-Sanz, Domingo-Ferrer & Sebé (2005); Nin, Herranz
    & Torra (2008). See docs/methods.md, Measures.
    """
    need = set(MEASURES if want is None else want)
    out: dict[str, float] = {}
    if need & {"IL", "Score"}:
        il = information_loss(original, masked, columns)
        out.update({k: v for k, v in il.to_dict().items() if k != "skipped"})
        if il.skipped and notes is not None:
            notes.append("IL: " + "; ".join(il.skipped))
    if "PIL" in need:
        out.update(pil(original, masked, columns))
    if need & {"ID", "DR", "Score"}:
        out["ID"] = interval_disclosure(original, masked, columns)
    if need & {"DR", "Score"}:
        if "dbrl" not in rates or "prl" not in rates:
            if want is not None:
                raise LinkriskError("DR and Score need the dbrl and prl attacks in the study")
            if notes is not None:
                notes.append("DR and Score need both dbrl and prl; not computed")
            return out
        out["DR"] = disclosure_risk(rates["dbrl"], rates["prl"], out["ID"], rates.get("rsrl"))
        if "Score" in need:
            out["Score"] = score(out["IL"], out["DR"])
    return out


def categorical_measures(original: pd.DataFrame, masked: pd.DataFrame, columns: Sequence[str],
                         rates: Mapping[str, float], want: Collection[str]) -> dict[str, float]:
    """IL, DR and Score of a release of categorical attributes (no interval disclosure
    for categories): IL = the entropy-based loss
    (:func:`~linkrisk.measures.categorical_information_loss`), DR = (DLD + PLD)/2 with DLD
    the rate of ``dbrl_hamming`` and PLD that of ``prl`` (in %), Score = (IL + DR)/2.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record.
    columns : sequence of str
        The categorical attributes measured.
    rates : mapping of str to float
        Attack name → rate in % (``dbrl_hamming`` and ``prl`` are read).
    want : collection of str
        The measures to compute (IL, DR, Score; PIL and ID raise: they are defined for
        numeric attributes only).

    Returns
    -------
    dict of str to float
        What was computed: IL (when IL or Score is wanted), DR (DR or Score), Score.

    References
    ----------
    Domingo-Ferrer & Torra (2001) (entropy-based information loss). See docs/methods.md,
    Measures.
    """
    want = set(want)
    if want & {"PIL", "ID"}:
        raise LinkriskError("PIL and ID are defined for numeric attributes only")
    out: dict[str, float] = {}
    if want & {"IL", "Score"}:
        out["IL"] = categorical_information_loss(original, masked, columns)
    if want & {"DR", "Score"}:
        if "dbrl_hamming" not in rates or "prl" not in rates:
            raise LinkriskError("DR and Score of categorical files need the dbrl_hamming and "
                                "prl attacks")
        out["DR"] = 0.5 * (rates["dbrl_hamming"] + rates["prl"])
        if "Score" in want:
            out["Score"] = score(out["IL"], out["DR"])
    return out
