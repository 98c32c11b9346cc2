"""Frequency-based and population risk of a release on its categorical key variables.

The attacker of these measures holds a population register, not the original file: a
released record is at risk when its combination of key values is rare in the sample and
in the population. The definitions follow sdcMicro (Templ, Kowarik & Meindl 2015), whose R
and C++ sources they reproduce formula by formula; see ``docs/methods.md``, section
"Frequency and population risk".

**Sample frequency** f_k of a record: the number of records sharing its key pattern.
A missing (suppressed) key value stands for any category, as sdcMicro's ``freqCalc``:

* a complete pattern K counts its own records plus α times the records of every pattern
  with missing values (not all missing) that agrees with K where it is not missing;
* a pattern I with missing values counts its own records, α times the records of every
  other pattern with missing values that agrees with I where both are not missing (the
  all-missing pattern included), and all records of the complete patterns that agree
  with I where I is not missing;
* an all-missing pattern counts every record (f_k = n); with a single key variable the
  complete patterns count α times the missing records as well.

α (``alpha``, default 1) is sdcMicro's weight of such wildcard matches. With sampling
weights w_i the **estimated population frequency** F_k is the same sum over the weights.

**Individual risk** r_k (Benedetti & Franconi 1998; Franconi & Polettini 2004), the
negative-binomial model of sdcMicro's ``indivRisk``/``measure_risk`` with p_k = f_k/F_k:

* ``method="approx"`` (sdcMicro's default): f_k = 1: r = p/(1−p)·log(1/p);
  f_k = 2: r = p/(1−p) − (p/(1−p))²·log(1/p); f_k > 2: r = p/(f_k − (1−p));
* ``method="exact"``: E[1/F_k | f_k] = Σ_{F≥f} (1/F)·C(F−1, f−1)·p^f·(1−p)^{F−f}, the value
  of sdcMicro's closed form (p/(1−p))^f·(A·(1 + Σ_m (−1)^{m+1} Π_i B_i) + (−1)^f·log p),
  which overflows for large f (NaN); linkrisk evaluates p·∫_0^1 u^{f−1}/(p + (1−p)u) du
  by a series or a stable recurrence (:func:`_inverse_mean`), for any f. It needs
  whole-number f_k and F_k ≥ f_k;
* in both, r = 1/f_k where f_k = F_k (the sample is the population there), and r = 0 for a
  non-integer f_k between the cases (α < 1), as sdcMicro. Without weights r = 1/f_k.
  f_k within a relative ``COUNT_TOL`` of a whole number counts as it (α-weighted sums
  such as 2.0000000000000004 are 2), in these branches and in the counts below.

**Global risk**: the expected number of re-identifications ER = Σ_i r_i and the rate ER/n
(a risk that cannot be computed is an error, never dropped from the sum).
**Household risk** (``household=`` column): every member of household h gets
1 − Π_{i∈h}(1 − r_i), the probability that at least one member is re-identified; its
expected number is the sum over records, as sdcMicro's ``measure_risk(hid=)``.
**k-anonymity**: the number of records with f_k < k (k = 2, 3, 5); sample uniques have
f_k = 1.

**SUDA2** (Elliot et al. 2002; Manning, Haglin & Keane 2008): a minimal sample unique (MSU)
of a record is a set of its (variable = value) items that no other record shares, no
proper subset of which is unique (missing values are never part of an MSU and match no
value). The SUDA score of a record is Σ over its MSUs (of at most ``max_size`` variables,
default all M key variables, as sdcMicro) of (M − |MSU|)! (``original_scores=True``,
Elliot's weights, sdcMicro's default) or of (2^{M−|MSU|} − 1)/C(M, |MSU|)
(``original_scores=False``, the IHSN implementation). The DIS-SUDA score of a record with
score s > 0 is 1/(1 + D·(1−π)/(π·s^Q·Σ_j s_j^{−Q})) with π the sampling fraction
(``dis_fraction``, default 0.01), D the number of records whose key pattern occurs exactly
twice, Q = 1 + (8 − M)/20 and the sum over records with a positive score; this is
sdcMicro's U/Dis − U with Dis = U·π/(U·π + D·(1−π)) simplified (U, the number of
sample uniques, cancels). Records with score 0 have DIS 0.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numba as nb
import numpy as np
import pandas as pd

from ..errors import LinkriskError
from ..grouping import (
    COUNT_TOL,
    frequencies_from_codes,
    key_codes,
    key_names,
    row_groups,
    subset_walk,
    whole_counts,
)

#: the k of the reported k-anonymity violations
K_LEVELS = (2, 3, 5)
#: most key variables SUDA2 searches (2^m subset table)
MAX_SUDA_KEYS = 20
#: most variable subsets SUDA2 examines (lower max_size above that)
MAX_SUDA_SUBSETS = 1 << 16
#: largest table of "unique on this subset" bits SUDA2 builds (sample uniques × subsets)
MAX_SUDA_BYTES = 1 << 30


# ---------------------------------------------------------------- inputs
def _weights(df: pd.DataFrame, weights: Any) -> np.ndarray | None:
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights not in df.columns:
            raise LinkriskError(f"weights: no column named {weights!r} in the file")
        w = pd.to_numeric(df[weights], errors="coerce").to_numpy(np.float64)
        what = f"weight column {weights!r}"
    else:
        try:
            w = np.asarray(weights, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise LinkriskError("weights must be a column name or numbers, one per record") from None
        what = "weights"
        if w.size != len(df):
            raise LinkriskError(f"weights has {w.size} values for {len(df)} records")
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LinkriskError(f"{what} must be positive numbers (sampling weights); record {i} "
                            f"has {w[i]!r}")
    return w


def _alpha(alpha: float) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise LinkriskError(f"alpha must be a number in [0, 1], got {alpha!r}") from None
    if not 0.0 <= a <= 1.0:
        raise LinkriskError(f"alpha must be in [0, 1], got {alpha!r}")
    return a


# ---------------------------------------------------------------- f_k and F_k
def sample_frequencies(df: pd.DataFrame, keys: Sequence[str] | str, weights: Any = None,
                       alpha: float = 1.0) -> pd.DataFrame:
    """Per record: ``fk`` (sample frequency of its key pattern) and ``Fk`` (estimated
    population frequency Σ w over the pattern; equal to fk without ``weights``).

    Missing key values match any category (sdcMicro's ``freqCalc``; module docstring);
    ``alpha`` weighs such wildcard matches. ``weights``: a column name or one positive
    number per record. See ``docs/methods.md`` (Frequency and population risk)."""
    codes, size = key_codes(df, keys)
    w = _weights(df, weights)
    fk, Fk = frequencies_from_codes(codes, size, w, _alpha(alpha))
    fk = whole_counts(fk)
    return pd.DataFrame({"fk": fk, "Fk": Fk if w is not None else fk}, index=df.index)


# ---------------------------------------------------------------- individual risk
@nb.njit(cache=True)
def _inverse_mean(f: int, p: float) -> float:
    """E[1/F | f] = Σ_{F≥f} (1/F)·C(F−1, f−1)·p^f·(1−p)^{F−f} for 0 < p < 1, through
    E[1/F | f] = p·I_f with I_f = ∫_0^1 u^{f−1}/(p + (1−p)u) du. Series (p/f)·Σ_j
    j!/((f+1)···(f+j))·(1−p)^j (all terms positive; ratio ≤ min(1−p, (j+1)/(f+j+1))) when
    p ≥ 1/3 or f ≥ 64, at most ~100 terms; otherwise the recurrence
    (1−p)·I_{g+1} + p·I_g = 1/g from I_1 = log(1/p)/(1−p), whose error shrinks by
    p/(1−p) ≤ 1/2 per step (at most 63 steps)."""
    q = 1.0 - p
    if p >= 1.0 / 3.0 or f >= 64:
        s = 1.0
        term = 1.0
        j = 0
        # the remaining terms sum to at most term·(1−p)/p
        while term > 1e-17 * s * min(1.0, p) and j < 1_000_000:
            term *= (j + 1) * q / (f + 1 + j)
            s += term
            j += 1
        return p / f * s
    r = -p * math.log(p) / q
    for g in range(1, f):
        r = p * (1.0 / g - r) / q
    return r


@nb.njit(cache=True)
def _exact_risks(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    out = np.empty(f.shape[0])
    for i in range(f.shape[0]):
        out[i] = _inverse_mean(int(f[i]), p[i])
    return out


def individual_risk(fk: np.ndarray, Fk: np.ndarray | None = None,
                    method: str = "approx") -> np.ndarray:
    """Benedetti–Franconi individual risk r_k per record (module docstring; sdcMicro's
    ``indivRisk``). ``Fk=None`` (no weights): r = 1/f_k. ``method``: ``approx`` (sdcMicro's
    default, used by ``measure_risk``) or ``exact`` (E[1/F_k | f_k], evaluated stably for
    every f_k). f_k within ``COUNT_TOL`` of a whole number counts as that number."""
    fk = whole_counts(fk)
    if Fk is None:
        return 1.0 / fk
    if method not in ("approx", "exact"):
        raise LinkriskError(f"method must be 'approx' or 'exact', got {method!r}")
    Fk = np.asarray(Fk, np.float64)
    p = fk / Fk
    eq = np.abs(fk - Fk) <= COUNT_TOL * fk      # the sample is the population: 1/f_k
    r = np.zeros_like(p)
    one, two, big = fk == 1, fk == 2, fk > 2
    if method == "approx":
        with np.errstate(divide="ignore", invalid="ignore"):
            o = p / (1 - p)
            r[one] = (o * np.log(1 / p))[one]
            r[two] = (o - o ** 2 * np.log(1 / p))[two]
            r[big] = (p / (fk - (1 - p)))[big]
    else:
        if np.any(big & (fk != np.rint(fk))):
            raise LinkriskError("method='exact' needs integer sample frequencies "
                                "(alpha = 1)")
        sel = (one | two | big) & ~eq
        if np.any(sel & (p > 1)):
            i = int(np.flatnonzero(sel & (p > 1))[0])
            raise LinkriskError(f"method='exact': record {i} has F_k = {Fk[i]!r} < f_k = "
                                f"{fk[i]!r} (weights below 1); the negative-binomial model "
                                "needs F_k >= f_k")
        r[sel] = _exact_risks(fk[sel].astype(np.int64), p[sel])
    r[eq] = 1.0 / fk[eq]
    return r


def household_risk(risk: np.ndarray, household: np.ndarray | pd.Series) -> np.ndarray:
    """Per record: 1 − Π_{i∈h}(1 − r_i) over the record's household h (sdcMicro's
    ``measure_risk(hid=)``): the probability that at least one member is re-identified."""
    hid = pd.Series(np.asarray(household))
    if hid.isna().any():
        i = int(np.flatnonzero(hid.isna().to_numpy())[0])
        raise LinkriskError(f"household id is missing at record {i}; every record needs one")
    g, _ = pd.factorize(hid)
    risk = np.asarray(risk, np.float64)
    with np.errstate(divide="ignore"):
        # Π(1 − r) through logs, exact zeros (r = 1) counted apart
        one = risk >= 1.0
        logs = np.where(one, 0.0, np.log1p(-np.where(one, 0.0, risk)))
    ng = int(g.max()) + 1
    s = np.bincount(g, weights=logs, minlength=ng)
    z = np.bincount(g, weights=one.astype(np.float64), minlength=ng)
    prod = np.where(z > 0, 0.0, np.exp(s))
    return 1.0 - prod[g]


# ---------------------------------------------------------------- SUDA2
def suda_weights(m: int, original_scores: bool = True) -> np.ndarray:
    """Score of an MSU of size k = 1..m: (m−k)! (Elliot et al.), or the IHSN weight
    (2^{m−k} − 1)/C(m, k) with ``original_scores=False`` (sdcMicro's two options)."""
    ks = range(1, m + 1)
    if original_scores:
        return np.array([float(math.factorial(m - k)) for k in ks])
    return np.array([(2.0 ** (m - k) - 1) / math.comb(m, k) for k in ks])


@nb.njit(cache=True)
def _msu_kernel(bits: np.ndarray, subsets: np.ndarray, sizes: np.ndarray, index: np.ndarray,
                m: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate row: MSU counts by size, SUDA score and raw per-variable score.
    ``bits[r, c >> 3] >> (c & 7) & 1``: row r is unique on subset number c; a unique subset
    is minimal when none of its one-smaller subsets is unique."""
    nc = bits.shape[0]
    counts = np.zeros((nc, m), np.int64)
    score = np.zeros(nc)
    contrib = np.zeros((nc, m))
    for r in range(nc):
        for t in range(subsets.shape[0]):
            c = index[subsets[t]]
            if not (bits[r, c >> 3] >> (c & 7)) & 1:
                continue
            s = subsets[t]
            minimal = True
            if sizes[t] > 1:
                for v in range(m):
                    if (s >> v) & 1:
                        cc = index[s & ~(1 << v)]
                        if (bits[r, cc >> 3] >> (cc & 7)) & 1:
                            minimal = False
                            break
            if minimal:
                k = sizes[t]
                counts[r, k - 1] += 1
                score[r] += w[k - 1]
                for v in range(m):
                    if (s >> v) & 1:
                        contrib[r, v] += w[k - 1]
    return counts, score, contrib


@dataclass
class Suda2:
    """SUDA2 result: per record ``score``, ``dis_score``, ``msu_counts`` (n × M: number of
    MSUs of size 1..M) and ``contribution`` (n × M: share of the record's score from MSUs
    containing each variable); ``attribute_contribution`` (% of the total score from MSUs
    containing each variable, sdcMicro's ``attribute_contributions``)."""

    keys: list[str]
    score: np.ndarray
    dis_score: np.ndarray
    msu_counts: np.ndarray
    contribution: np.ndarray
    attribute_contribution: dict[str, float]
    max_size: int
    dis_fraction: float
    original_scores: bool

    def to_dict(self) -> dict[str, Any]:
        pos = self.score > 0
        return {
            "max_size": self.max_size, "dis_fraction": self.dis_fraction,
            "original_scores": self.original_scores,
            "records_with_msu": int(pos.sum()),
            "msus_by_size": {str(k + 1): int(v) for k, v in
                             enumerate(self.msu_counts.sum(axis=0))},
            "max_score": float(self.score.max()) if self.score.size else 0.0,
            "max_dis_score": float(self.dis_score.max()) if self.dis_score.size else 0.0,
            "mean_dis_score": float(self.dis_score.mean()) if self.dis_score.size else 0.0,
            "attribute_contribution": self.attribute_contribution,
        }


def suda2_from_codes(codes: np.ndarray, size: np.ndarray, keys: list[str],
                     max_size: int | None = None, dis_fraction: float = 0.01,
                     original_scores: bool = True) -> Suda2:
    """SUDA2 on key codes (−1 = missing); see :func:`suda2`."""
    n, m = codes.shape
    if m > MAX_SUDA_KEYS:
        raise LinkriskError(f"SUDA2 searches at most {MAX_SUDA_KEYS} key variables, got {m}; "
                            "use fewer keys (or suda=False in frequency_risk)")
    ms = m if max_size is None else max_size
    if isinstance(ms, bool) or not isinstance(ms, (int, np.integer)) or not 1 <= ms <= m:
        raise LinkriskError(f"max_size must be an integer between 1 and {m} (the number of "
                            f"key variables), got {max_size!r}")
    ms = int(ms)
    n_sub = sum(math.comb(m, k) for k in range(1, ms + 1))
    if n_sub > MAX_SUDA_SUBSETS:
        raise LinkriskError(f"SUDA2 would examine {n_sub} variable subsets (at most "
                            f"{MAX_SUDA_SUBSETS}); lower max_size")
    if not 0.0 < dis_fraction < 1.0:
        raise LinkriskError(f"dis_fraction (the sampling fraction) must be in (0, 1), got "
                            f"{dis_fraction!r}")
    w = suda_weights(m, original_scores)
    shifted = codes + 1                       # missing = own value 0, never part of an MSU
    ids, d = row_groups(shifted, size + 1)
    mult = np.bincount(ids, minlength=d)
    first = np.full(d, n, np.int64)
    np.minimum.at(first, ids, np.arange(n))
    rows = shifted[first]                     # distinct patterns
    miss = ((rows == 0).astype(np.int64) << np.arange(m)).sum(axis=1)
    cand = np.flatnonzero(mult == 1)          # only sample uniques can have an MSU
    index = np.full(1 << m, -1, np.int64)
    order: list[int] = []
    nbytes = (n_sub + 7) // 8
    if cand.size * nbytes > MAX_SUDA_BYTES:
        raise LinkriskError(f"SUDA2 would need {cand.size * nbytes / 2**30:.1f} GiB for "
                            f"{cand.size} sample uniques × {n_sub} variable subsets; lower "
                            "max_size")
    bits = np.zeros((cand.size, nbytes), np.uint8)
    cmiss = miss[cand]

    def visit(s: int, g_ids: np.ndarray, g: int) -> None:
        if s == 0:
            return
        c = len(order)
        index[s] = c
        order.append(s)
        cnt = np.bincount(g_ids, weights=mult, minlength=g)
        uniq = (cnt[g_ids[cand]] == 1) & ((cmiss & s) == 0)
        bits[:, c >> 3] |= uniq.astype(np.uint8) << np.uint8(c & 7)

    if cand.size:
        subset_walk(rows, size + 1, visit, max_size=ms)
        subsets = np.array(order, np.int64)
        sizes = np.array([bin(s).count("1") for s in order], np.int64)
        counts, sc, contrib = _msu_kernel(bits, subsets, sizes, index, m, w)
    else:
        counts, sc, contrib = (np.zeros((0, m), np.int64), np.zeros(0), np.zeros((0, m)))
    # back to records
    rec_of = np.full(d, -1, np.int64)
    rec_of[cand] = np.arange(cand.size)
    pos = rec_of[ids]
    has = pos >= 0
    score = np.zeros(n)
    score[has] = sc[pos[has]]
    msu = np.zeros((n, m), np.int64)
    msu[has] = counts[pos[has]]
    raw = np.zeros((n, m))
    raw[has] = contrib[pos[has]]
    share = np.zeros((n, m))
    nz = score > 0
    share[nz] = raw[nz] / score[nz, None]
    total = score.sum()
    attr = {str(k): (float(100.0 * raw[:, j].sum() / total) if total > 0 else 0.0)
            for j, k in enumerate(keys)}
    # DIS-SUDA
    pairs = float((mult[ids] == 2).sum())
    q = float(np.float32(1.0) + (np.float32(8.0) - np.float32(m)) / np.float32(20.0))
    dis = np.zeros(n)
    if nz.any():
        sq = score[nz] ** q
        adj = float((1.0 / sq).sum())
        dis[nz] = 1.0 / (1.0 + pairs * (1.0 - dis_fraction) / dis_fraction / (sq * adj))
    return Suda2(list(keys), score, dis, msu, share, attr, ms, float(dis_fraction),
                 bool(original_scores))


def suda2(df: pd.DataFrame, keys: Sequence[str] | str, max_size: int | None = None,
          dis_fraction: float = 0.01, original_scores: bool = True) -> Suda2:
    """SUDA2 special-uniques scores (Elliot et al. 2002; Manning et al. 2008), as sdcMicro's
    ``suda2``.

    Minimal sample uniques (MSUs) of at most ``max_size`` key variables (default all, as
    sdcMicro), SUDA score Σ_MSU (M−|MSU|)! (``original_scores=False``:
    (2^{M−|MSU|} − 1)/C(M,|MSU|)) and DIS-SUDA score (module docstring, docs/methods.md,
    "Frequency and population risk"). Every subset of the keys is grouped once over the
    distinct key patterns; a compiled pass then keeps, per sample unique, the unique subsets
    none of whose one-smaller subsets is unique.

    Parameters
    ----------
    df : pandas.DataFrame
        The released file.
    keys : sequence of str or str
        The categorical key variables (at most ``MAX_SUDA_KEYS``); missing values are never
        part of an MSU.
    max_size : int, optional
        The largest MSU searched for (default: all keys).
    dis_fraction : float
        The sampling fraction π of the DIS-SUDA score.
    original_scores : bool
        Elliot's weights (M−k)! (sdcMicro's default) or, when False, the IHSN weights.

    Returns
    -------
    Suda2
        Per record ``score``, ``dis_score``, ``msu_counts`` and ``contribution``; per key
        ``attribute_contribution``.

    References
    ----------
    Elliot, M. J., Manning, A. M. & Ford, R. W. (2002). A computational algorithm for
    handling the special uniques problem. *Int. J. Uncertainty, Fuzziness and
    Knowledge-Based Systems* 10(5), 493–509.

    Manning, A. M., Haglin, D. J. & Keane, J. A. (2008). A recursive search algorithm for
    statistical disclosure assessment. *Data Mining and Knowledge Discovery* 16(2), 165–196.
    """
    codes, size = key_codes(df, keys)
    return suda2_from_codes(codes, size, key_names(df, keys), max_size, float(dis_fraction),
                            bool(original_scores))


# ---------------------------------------------------------------- everything at once
@dataclass
class FrequencyRisk:
    """Frequency and population risk of a release (:func:`frequency_risk`).

    ``per_record``: one row per record with ``fk``, and with weights ``Fk``; ``risk``
    (individual risk, 1/fk without weights), ``household_risk`` with a household column,
    ``suda_score``/``dis_score`` when SUDA2 ran. ``summary``: the file-level figures."""

    keys: list[str]
    n: int
    weights: str | None
    household: str | None
    per_record: pd.DataFrame
    summary: dict[str, Any]
    suda: Suda2 | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {"keys": self.keys, "n": self.n, "weights": self.weights,
               "household": self.household, **self.summary}
        if self.suda is not None:
            out["suda2"] = self.suda.to_dict()
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def to_html(self) -> str:
        """A self-contained report section (``<section>`` fragment)."""
        s = self.summary
        e = html.escape
        rows = [("records", f"{self.n}"),
                ("key variables", e(", ".join(self.keys))),
                ("sample uniques (f<sub>k</sub> = 1)",
                 f"{s['sample_uniques']} ({100 * s['sample_uniques'] / self.n:.2f} %)")]
        for k, v in s["k_anonymity_violations"].items():
            rows.append((f"records violating {k}-anonymity (f<sub>k</sub> &lt; {k})",
                         f"{v} ({100 * v / self.n:.2f} %)"))
        what = ("negative-binomial individual risk, weights " + e(str(self.weights))
                if self.weights else "1/f<sub>k</sub> (no sampling weights: sample = population)")
        rows.append(("risk model", what))
        rows.append(("expected re-identifications Σ r<sub>k</sub>",
                     f"{s['global_risk_ER']:.2f} ({s['global_risk_pct']:.3f} %)"))
        rows.append(("largest individual risk", f"{s['max_risk']:.4f}"))
        if self.household:
            rows.append((f"household risk (households: {e(self.household)}), expected "
                         "re-identifications", f"{s['hier_risk_ER']:.2f} "
                         f"({s['hier_risk_pct']:.3f} %)"))
        if self.suda is not None:
            d = self.suda.to_dict()
            rows.append((f"SUDA2 (MSUs of at most {d['max_size']} keys): records with a "
                         "minimal sample unique", f"{d['records_with_msu']}"))
            rows.append(("largest DIS-SUDA score", f"{d['max_dis_score']:.4f}"))
            contrib = ", ".join(f"{e(str(k))} {v:.1f} %"
                                for k, v in sorted(d["attribute_contribution"].items(),
                                                   key=lambda kv: -kv[1]))
            rows.append(("SUDA score by key variable", contrib))
        body = "\n".join(f"<tr><th>{a}</th><td>{b}</td></tr>" for a, b in rows)
        tops = s.get("top_patterns") or []
        if tops:
            cols = list(tops[0])
            head = "".join(f"<th>{e(str(c))}</th>" for c in cols)
            cells = "\n".join(
                "<tr>" + "".join(f"<td>{e(_fmt(r[c]))}</td>" for c in cols) + "</tr>"
                for r in tops)
            body_top = (f"<h3>Key patterns with the highest risk</h3>\n<table>\n<tr>{head}</tr>"
                        f"\n{cells}\n</table>\n")
        else:
            body_top = ""
        notes = "".join(f"<p class=\"note\">{e(x)}</p>" for x in self.notes)
        return ("<section class=\"frequency-risk\">\n<h2>Frequency and population risk</h2>\n"
                "<p>Threat model: an intruder holding a population register matches the "
                "released key variables; the risk of a record grows as its key pattern is "
                "rare in the sample (f<sub>k</sub>) and in the population (F<sub>k</sub>).</p>\n"
                f"<table>\n{body}\n</table>\n{body_top}{notes}</section>\n")


def _plain_value(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    return v.item() if isinstance(v, np.generic) else v


def _fmt(v: Any) -> str:
    if v is None:
        return "NA"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:,.1f}"
    return str(v)


def _top_patterns(df: pd.DataFrame, keys: list[str], rec: pd.DataFrame,
                  top: int = 10) -> list[dict[str, Any]]:
    """The ``top`` key patterns with the highest individual risk (one row per pattern, as
    sdcMicro's report lists them): key values, risk, fk (and Fk, household risk)."""
    order = np.argsort(-rec["risk"].to_numpy(), kind="stable")
    vals = df[keys].iloc[order]
    first = ~vals.astype(object).where(vals.notna(), None).duplicated().to_numpy()
    rows = []
    for i in order[first][:top]:
        row = {k: _plain_value(df[k].iloc[i]) for k in keys}
        for c in ("risk", "fk", "Fk", "household_risk"):
            if c in rec:
                row[c] = float(rec[c].iloc[i])
        rows.append(row)
    return rows


def frequency_risk(df: pd.DataFrame, keys: Sequence[str] | str, weights: Any = None,
                   household: str | Sequence | None = None, max_size: int | None = None,
                   *, suda: bool = True, method: str = "approx", alpha: float = 1.0,
                   dis_fraction: float = 0.01, original_scores: bool = True) -> FrequencyRisk:
    """All frequency-based and population risk measures of a release on its categorical
    ``keys`` (sdcMicro's ``freqCalc``, ``measure_risk``, ``indivRisk`` and ``suda2``; the
    formulas are in this module's docstring and docs/methods.md, "Frequency and population
    risk").

    Parameters
    ----------
    df : pandas.DataFrame
        The released file.
    keys : sequence of str or str
        The categorical key variables; a missing value matches any category.
    weights : str or array-like, optional
        Sampling-weight column (or one positive weight per record) for F_k and the
        negative-binomial risk; without it the risk is 1/f_k.
    household : str or sequence, optional
        Household-id column (or values) for the household risk.
    max_size : int, optional
        Largest MSU SUDA2 looks for (default: all keys, as sdcMicro).
    suda : bool
        False skips SUDA2.
    method : {"approx", "exact"}
        The individual-risk formula (sdcMicro's ``indivRisk``).
    alpha : float
        Weight of wildcard matches of missing key values in f_k (sdcMicro's α).
    dis_fraction, original_scores
        As in :func:`suda2`.

    Returns
    -------
    FrequencyRisk
        ``per_record`` (fk, Fk, risk, household_risk, suda_score, dis_score),
        ``summary`` (sample uniques, k-anonymity violations, global risk as expected
        re-identifications and in %, maximum risk, missing key values, top patterns),
        ``suda`` (the SUDA2 result) and ``notes``.

    References
    ----------
    Benedetti, R. & Franconi, L. (1998). Statistical and technological solutions for
    controlled data dissemination. *Pre-proceedings of NTTS*.

    Franconi, L. & Polettini, S. (2004). Individual risk estimation in μ-Argus: a review.
    *Privacy in Statistical Databases*, LNCS 3050.

    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. *Journal of Statistical Software* 67(4).
    """
    codes, size = key_codes(df, keys)
    keys = key_names(df, keys)
    w = _weights(df, weights)
    fk, Fk = frequencies_from_codes(codes, size, w, _alpha(alpha))
    fk = whole_counts(fk)
    n = len(df)
    rec = pd.DataFrame({"fk": fk}, index=df.index)
    if w is not None:
        rec["Fk"] = Fk
        risk = individual_risk(fk, Fk, method)
    else:
        risk = individual_risk(fk)
    rec["risk"] = risk
    if not np.isfinite(risk).all():     # never dropped from the global risk in silence
        i = int(np.flatnonzero(~np.isfinite(risk))[0])
        raise LinkriskError(f"individual risk of record {i} could not be computed (f_k = "
                            f"{fk[i]!r}" + (f", F_k = {Fk[i]!r})" if w is not None else ")"))
    er = float(np.sum(risk))
    summary: dict[str, Any] = {
        "sample_uniques": int((fk == 1).sum()),
        "k_anonymity_violations": {str(k): int((fk < k).sum()) for k in K_LEVELS},
        "global_risk_ER": er, "global_risk": er / n, "global_risk_pct": 100.0 * er / n,
        "max_risk": float(np.max(risk)) if n else 0.0, "risk_method": method if w is not None else "1/fk",
        "missing_key_values": int((codes < 0).sum()),
    }
    hname = None
    if household is not None:
        if isinstance(household, str):
            if household not in df.columns:
                raise LinkriskError(f"household: no column named {household!r} in the file")
            hvals, hname = df[household].to_numpy(), household
        else:
            hvals, hname = np.asarray(household), "household"
            if hvals.shape[0] != n:
                raise LinkriskError(f"household has {hvals.shape[0]} values for {n} records")
        hr = household_risk(risk, hvals)
        rec["household_risk"] = hr
        her = float(hr.sum())
        summary.update(hier_risk_ER=her, hier_risk=her / n, hier_risk_pct=100.0 * her / n)
    res = None
    notes = []
    if suda:
        res = suda2_from_codes(codes, size, keys, max_size, float(dis_fraction),
                               bool(original_scores))
        rec["suda_score"] = res.score
        rec["dis_score"] = res.dis_score
    summary["top_patterns"] = _top_patterns(df, keys, rec)
    if summary["missing_key_values"]:
        notes.append(f"{summary['missing_key_values']} key values are missing (suppressed); "
                     "they match every category in f_k and F_k, as in sdcMicro.")
    return FrequencyRisk(keys, n, weights if isinstance(weights, str) else
                         (None if weights is None else "weights"), hname, rec, summary, res,
                         notes)
