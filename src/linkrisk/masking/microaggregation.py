"""Microaggregation: records are grouped into groups of at least k and released as group means.

* ``microaggregation_ir`` — individual ranking (Defays & Nanopoulos 1993, "Panels of
  enterprises and confidentiality: the small aggregates method"): per attribute, sort
  ascending (stable), cut into ⌊n/k⌋ groups of k consecutive values, the last group taking
  the remainder (k..2k−1 values), replace each value by its group mean. Deterministic.
* ``mdav`` — Maximum Distance to Average Vector (Domingo-Ferrer & Mateo-Sanz 2002,
  "Practical data-oriented microaggregation for statistical disclosure control"), on the
  attributes standardized with their mean and std (ddof=1):
  while ≥ 3k records remain: c = centroid of the remaining records, r = the record farthest
  from c, s = the record farthest from r; form a group of r and its k−1 nearest remaining
  records, then one of s and its k−1 nearest. If 2k..3k−1 records remain: one more group of
  the record farthest from the centroid and its k−1 nearest, the rest (k..2k−1) form the
  last group; fewer than 2k remaining form one group. Every group has k..2k−1 records; each
  record is replaced by its group's centroid in original units. Deterministic (ties go to the
  first record in the kernel's internal order).
* ``micdp`` — microaggregation plus ε-differential privacy (Soria-Comas, Domingo-Ferrer,
  Sánchez & Martínez 2014, "Enhancing data utility in differential privacy via
  microaggregation-based k-anonymity"): MDAV with k, then Laplace noise on every centroid
  attribute j with scale m·Δ_j/(k·ε), Δ_j the range (max − min) of attribute j, m the number
  of masked attributes (ε split evenly over them). All records of a group get the same noisy
  centroid. (The paper uses an insensitive microaggregation; linkrisk uses MDAV.)

Strength parameter: ``k`` (2/3 mild … 20+ strong); for ``micdp`` also ``epsilon`` (large
mild … small strong).

MDAV cost is O(n²·m/k) arithmetic with O(n·m) memory: no distance matrix; each step is one
numba pass of squared distances from the remaining records to a point, the remaining records
are kept compact by moving the last one into each freed slot, and the centroid is a running
sum.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..errors import LinkriskError
from ._base import check_k, frame_like


def individual_ranking(x: np.ndarray, k: int) -> np.ndarray:
    """Individual-ranking microaggregation of each column of ``x`` (n×m)."""
    n, m = x.shape
    groups = n // k
    gid = np.minimum(np.arange(n) // k, groups - 1)  # group of each sorted position
    sizes = np.bincount(gid, minlength=groups).astype(np.float64)
    out = np.empty_like(x, dtype=np.float64)
    for j in range(m):
        order = np.argsort(x[:, j], kind="stable")
        means = np.bincount(gid, weights=x[order, j], minlength=groups) / sizes
        out[order, j] = means[gid]
    return out


# ---------------------------------------------------------------- MDAV kernel


@nb.njit(cache=True)
def _sqdist(zt, R, point, d):
    """d[i] = ||z_i − point||² for the R remaining records (zt is attribute-major)."""
    m = zt.shape[0]
    for i in range(R):
        d[i] = 0.0
    for j in range(m):
        pj = point[j]
        row = zt[j]
        for i in range(R):
            t = row[i] - pj
            d[i] += t * t


@nb.njit(cache=True)
def _argmax(d, R):
    best = 0
    for i in range(1, R):
        if d[i] > d[best]:
            best = i
    return best


@nb.njit(cache=True)
def _heap_offer(hd, hp, cnt, di, i):
    """Offer record i at distance di to the bounded max-heap ``hd``/``hp`` holding ``cnt``
    of its ``len(hd)`` places (large k: O(log k) a record); returns the new count."""
    if cnt < hd.shape[0]:
        c = _sift_up(hd, hp, cnt, di)
        cnt += 1
    elif di < hd[0]:
        c = _sift_down(hd, hp, di)
    else:
        return cnt
    hd[c] = di
    hp[c] = i
    return cnt


@nb.njit(cache=True)
def _sift_up(hd, hp, c, di):
    """Move the parents of free slot c that are nearer than di down; returns di's slot."""
    while c > 0:
        par = (c - 1) // 2
        if hd[par] >= di:
            break
        hd[c] = hd[par]
        hp[c] = hp[par]
        c = par
    return c


@nb.njit(cache=True)
def _sift_down(hd, hp, di):
    """Replace the root (the farthest kept) by di: move the farther children up; returns
    di's slot."""
    need = hd.shape[0]
    c = 0
    while True:
        ch = 2 * c + 1
        if ch >= need:
            break
        if ch + 1 < need and hd[ch + 1] > hd[ch]:
            ch += 1
        if hd[ch] <= di:
            break
        hd[c] = hd[ch]
        hp[c] = hp[ch]
        c = ch
    return c


@nb.njit(cache=True)
def _buffer_offer(bd, bp, cnt, di, i):
    """Offer record i at distance di to the sorted buffer ``bd``/``bp`` holding the best
    ``cnt`` so far (small k: most records fail the first test); returns the new count."""
    need = bd.shape[0]
    if cnt == need and di >= bd[need - 1]:
        return cnt
    t = cnt if cnt < need else need - 1
    while t > 0 and bd[t - 1] > di:
        if t < need:
            bd[t] = bd[t - 1]
            bp[t] = bp[t - 1]
        t -= 1
    bd[t] = di
    bp[t] = i
    return cnt + 1 if cnt < need else cnt


@nb.njit(cache=True)
def _nearest(d, R, k, center):
    """Positions of ``center`` and its k−1 nearest remaining records: a bounded max-heap
    above 32 neighbours, a sorted buffer below."""
    out = np.empty(k, dtype=np.int64)
    out[0] = center
    need = k - 1
    if need == 0:
        return out
    best_d = np.empty(need)
    best_p = np.empty(need, dtype=np.int64)
    cnt = 0
    if need > 32:
        for i in range(R):  # the test inline: most records do not enter the heap
            if i != center and (cnt < need or d[i] < best_d[0]):
                cnt = _heap_offer(best_d, best_p, cnt, d[i], i)
    else:
        for i in range(R):
            if i != center:
                cnt = _buffer_offer(best_d, best_p, cnt, d[i], i)
    out[1:] = best_p
    return out


@nb.njit(cache=True)
def _take_group(zt, ids, where, sums, labels, R, positions, g):
    """Label the records at ``positions`` as group g and remove them (move-last-in)."""
    m = zt.shape[0]
    # descending order, so the record moved in from the end is never a later target
    pos = positions.copy()
    for a in range(1, pos.shape[0]):  # insertion sort (k is small; np.sort compiles slowly)
        v = pos[a]
        b = a
        while b > 0 and pos[b - 1] < v:
            pos[b] = pos[b - 1]
            b -= 1
        pos[b] = v
    for t in range(pos.shape[0]):
        p = pos[t]
        labels[ids[p]] = g
        last = R - 1
        for j in range(m):
            sums[j] -= zt[j, p]
            zt[j, p] = zt[j, last]
        ids[p] = ids[last]
        where[ids[p]] = p
        R -= 1
    return R


@nb.njit(cache=True)
def _mdav_kernel(zt, k):
    m, n = zt.shape
    ids = np.arange(n)
    where = np.arange(n)
    labels = np.full(n, -1, dtype=np.int64)
    d = np.empty(n)
    sums = np.empty(m)
    c = np.empty(m)
    R = n
    g = 0
    refresh = 0
    while R >= 2 * k:
        if R <= refresh or g == 0:  # recompute the running sum now and then (no drift)
            for j in range(m):
                sums[j] = zt[j, :R].sum()
            refresh = R // 2
        for j in range(m):
            c[j] = sums[j] / R
        _sqdist(zt, R, c, d)
        r_pos = _argmax(d, R)
        r_point = zt[:, r_pos].copy()
        _sqdist(zt, R, r_point, d)
        s_id = ids[_argmax(d, R)]
        three = R >= 3 * k
        R = _take_group(zt, ids, where, sums, labels, R, _nearest(d, R, k, r_pos), g)
        g += 1
        if not three:
            break
        if labels[s_id] >= 0:  # degenerate (all distances tied): take the farthest left
            _sqdist(zt, R, r_point, d)
            s_id = ids[_argmax(d, R)]
        s_pos = where[s_id]
        _sqdist(zt, R, zt[:, s_pos].copy(), d)
        R = _take_group(zt, ids, where, sums, labels, R, _nearest(d, R, k, s_pos), g)
        g += 1
    for i in range(R):
        labels[ids[i]] = g
    return labels


def standardize(x: np.ndarray) -> np.ndarray:
    """(x − mean)/std per column (ddof=1); constant columns get std 1."""
    sd = x.std(axis=0, ddof=1) if len(x) > 1 else np.ones(x.shape[1])
    return (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def mdav_groups(x: np.ndarray, k: int) -> np.ndarray:
    """MDAV group label of each record.

    Parameters
    ----------
    x : numpy.ndarray
        n×m values in original units (standardized internally); a 1-d array is one
        attribute.
    k : int
        The minimum group size.

    Returns
    -------
    numpy.ndarray
        The group (0..G−1) of each row; every group has k..2k−1 rows.

    References
    ----------
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented microaggregation
    for statistical disclosure control. *IEEE TKDE* 14(1), 189–201. See docs/methods.md,
    ``mdav``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n = len(x)
    if k == 1:
        return np.arange(n, dtype=np.int64)
    if n < 2 * k:
        return np.zeros(n, dtype=np.int64)
    zt = np.ascontiguousarray(standardize(x).T)
    return _mdav_kernel(zt, int(k))


def group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each row of ``x`` replaced by the mean of its group (G×m means indexed by label)."""
    g = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=g).astype(np.float64)
    means = np.column_stack([np.bincount(labels, weights=x[:, j], minlength=g) / sizes
                             for j in range(x.shape[1])])
    return means


def _k_param(method: str, k: int | None, n: int) -> int:
    if k is None:
        raise LinkriskError(f"{method} needs k (minimum group size, e.g. k=3)")
    check_k(method, k, n)
    return k


def apply_microaggregation_ir(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                              k: int | None = None) -> pd.DataFrame:
    x = numeric_matrix(df, columns, method="microaggregation_ir")
    k = _k_param("microaggregation_ir", k, len(x))
    return frame_like(df, columns, individual_ranking(x, k))


def apply_mdav(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
               k: int | None = None) -> pd.DataFrame:
    x = numeric_matrix(df, columns, method="mdav")
    k = _k_param("mdav", k, len(x))
    labels = mdav_groups(x, k)
    return frame_like(df, columns, group_means(x, labels)[labels])


def apply_micdp(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                k: int | None = None, epsilon: float | None = None) -> pd.DataFrame:
    x = numeric_matrix(df, columns, method="micdp")
    k = _k_param("micdp", k, len(x))
    if epsilon is None:
        raise LinkriskError("micdp needs epsilon (privacy budget, e.g. epsilon=1)")
    if not (epsilon > 0) or not np.isfinite(epsilon):
        raise LinkriskError(f"micdp: epsilon={epsilon} must be a positive finite number")
    labels = mdav_groups(x, k)
    means = group_means(x, labels)
    m = x.shape[1]
    scale = m * (x.max(axis=0) - x.min(axis=0)) / (k * epsilon)
    noisy = means + rng.laplace(0.0, 1.0, size=means.shape) * scale
    return frame_like(df, columns, noisy[labels])
