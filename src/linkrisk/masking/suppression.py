"""Local suppression to k-anonymity: sdcMicro's greedy ``localSuppression`` (``kAnon``).

Key values are set to missing (NA) until every record's sample frequency f_k, computed
with missing values matching any category as in sdcMicro's ``freqCalc``
(:mod:`linkrisk.measures.frequency`), is at least ``k``. The algorithm is sdcMicro's
(Templ, Kowarik & Meindl 2015; ``suppSubset`` in ``R/localSuppression.R`` and
``cpp_calcSuppInds``), step by step:

1. **Importance.** Each key variable gets an importance 1..m; 1 is suppressed last.
   Default, as documented by sdcMicro: variables with fewer categories are more important
   (rank of the number of distinct non-missing values, ties by column order).
   ``importance=`` gives it (a list aligned with the keys, or {key: rank}).
2. **Reduction.** The records are grouped by key pattern, a missing value being a value
   of its own here, and of every pattern with more than k records only its first k (in
   row order) take part: the others already share their pattern with at least k records
   and are left unchanged. (sdcMicro first "initializes" the missing values with the
   first value of the column, but evaluates ``unique(kV)[1]`` on the records where kV is
   missing, which gives NA: the fill-in changes nothing, and linkrisk does not make it.)
3. **Passes.** f_k is computed on the remaining records; the records with f_k < k are
   taken in order of decreasing risk 1/f_k (ties in row order). For each, in that order and
   with the suppressions made so far: the distance to every record is the number of keys on
   which both are observed and differ; among the records at the smallest positive distance
   (its nearest differing neighbours), the least important key on which one of them
   differs from it is suppressed in it — one value per record and pass. f_k is then
   recomputed and passes repeat until every record has f_k ≥ k. (f_k within
   ``COUNT_TOL`` of a whole number counts as that number, so a sum of α-weighted matches
   such as 1.9999999999999998 is 2.)

Every record suppressed in a pass violated k-anonymity at the start of that pass; a
record is not re-checked within the pass (sdcMicro does the same), so a pass can suppress
a value in a record that an earlier suppression of the same pass has already made safe.
The result is k-anonymous under the missing-value rule above (k is capped at n).
``alpha`` (default 1) is freqCalc's weight of wildcard matches. Deterministic: no seed.
``result.attrs["local_suppression"]`` holds the number of new suppressions per key, the
total, the passes and k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numba as nb
import numpy as np
import pandas as pd

from ..errors import LinkriskError
from ..grouping import frequencies_from_codes, key_codes, row_groups, whole_counts


def default_importance(codes: np.ndarray) -> np.ndarray:
    """Importance 1..m: rank of the number of distinct non-missing values (fewest = 1,
    suppressed last; ties by column order)."""
    m = codes.shape[1]
    ncat = np.array([np.unique(codes[codes[:, j] >= 0, j]).size for j in range(m)])
    imp = np.empty(m, np.int64)
    imp[np.argsort(ncat, kind="stable")] = np.arange(1, m + 1)
    return imp


def _importance(importance: Any, keys: list[str], codes: np.ndarray) -> np.ndarray:
    m = len(keys)
    if importance is None:
        return default_importance(codes)
    if isinstance(importance, Mapping):
        bad = [c for c in importance if c not in keys]
        if bad:
            raise LinkriskError(f"importance names {bad[0]!r}, which is not a key variable")
        if len(importance) != m:
            raise LinkriskError(f"importance must rank all {m} key variables")
        vals = [importance[c] for c in keys]
    else:
        if isinstance(importance, str):
            vals = [v.strip() for v in importance.split(",")]
        else:
            vals = list(importance)
        if len(vals) != m:
            raise LinkriskError(f"importance has {len(vals)} values for {m} key variables")
    try:
        imp = np.array([int(v) for v in vals], np.int64)
    except (TypeError, ValueError):
        raise LinkriskError("importance must be whole numbers 1..m (1 = suppressed last)") from None
    if (imp < 1).any() or (imp > m).any():
        raise LinkriskError(f"importance values must lie between 1 and {m}")
    return imp


def _pattern_table(mat: np.ndarray, size: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct key patterns of ``mat`` (−1 = missing): (table, row_of, count, proj, off).
    ``proj[j, q]``: group of complete pattern q among the complete patterns projected on
    every key but j (−1 for patterns with a missing value); groups of key j are numbered
    from ``off[j]``."""
    n, m = mat.shape
    ids, g = row_groups(mat + 1, size + 1)
    first = np.full(g, n, np.int64)
    np.minimum.at(first, ids, np.arange(n))
    table = np.ascontiguousarray(mat[first])
    count = np.bincount(ids, minlength=g).astype(np.int64)
    comp = np.flatnonzero((table >= 0).all(axis=1))
    proj = np.full((m, g), -1, np.int64)
    off = np.zeros(m + 1, np.int64)
    for j in range(m):
        others = [c for c in range(m) if c != j]
        gj, ngj = row_groups(table[comp] + 1, size + 1, others)
        proj[j, comp] = gj
        off[j + 1] = off[j] + ngj
    return table, ids.astype(np.int64), count, proj, off


@nb.njit(cache=True)
def _pass(mat: np.ndarray, table0: np.ndarray, row_of: np.ndarray, count0: np.ndarray,
          proj: np.ndarray, off: np.ndarray, problems: np.ndarray, col_order: np.ndarray,
          alpha: float, cdtype: Any) -> int:
    """One pass of sdcMicro's greedy suppression over ``problems`` (in order), modifying
    ``mat`` (−1 = missing). Returns the number of suppressions, or −1−i when record i has
    no record at a positive distance (sdcMicro stops there).

    Distances depend on the key pattern only: the scan runs over the table of distinct
    patterns (a suppression moves its record to a new table row). For a record without
    missing values a complete pattern at distance 1 differing on key j exists exactly when
    the complete patterns agreeing with it on every key but j hold more records than its own
    pattern (counts kept per projection); then only the patterns with missing values are
    scanned. Otherwise every pattern is scanned.

    Kept as one compiled loop (issue 42's exception for kernels): each suppression moves a
    record to another table row and updates the pattern counts and projection counts that
    the next record's scan reads, so the steps share that state in place; it has not yet
    been split into compiled helpers and measured, which is the way to shorten it."""
    n, m = mat.shape
    p0 = table0.shape[0]
    cap = p0 + problems.shape[0]
    table = np.empty((cap, m), np.int64)
    table[:p0] = table0
    count = np.zeros(cap, np.int64)
    count[:p0] = count0
    size = p0
    # column-major copy (int16 when the codes fit) for the vectorized full scan; a dead
    # table row (no record left with that pattern) is kept out by a penalty > m
    cols = np.empty((m, cap), cdtype)
    pen = np.full(cap, m + 1, np.int16)
    complete = np.zeros(cap, np.bool_)
    cntp = np.zeros(off[m], np.int64)
    # the patterns with missing values, column-major too (u-th such pattern: na_rows[u])
    na_rows = np.empty(cap, np.int64)
    na_of = np.full(cap, -1, np.int64)
    na_cols = np.empty((m, cap), cdtype)
    na_pen = np.full(cap, m + 1, np.int16)
    n_na = 0
    for q in range(p0):
        pen[q] = 0
        ok = True
        for j in range(m):
            cols[j, q] = table[q, j]
            if table[q, j] < 0:
                ok = False
        complete[q] = ok
        if ok:
            for j in range(m):
                cntp[off[j] + proj[j, q]] += count[q]
        else:
            na_rows[n_na] = q
            na_of[q] = n_na
            na_pen[n_na] = 0
            for j in range(m):
                na_cols[j, n_na] = table[q, j]
            n_na += 1
    dist = np.empty(cap, np.int16)
    nd = np.empty(cap, np.int16)
    done = 0
    for t in range(problems.shape[0]):
        i = problems[t]
        qi = row_of[i]
        flags = np.int64(0)
        min_d = m + 1
        fast = False
        if complete[qi]:
            for j in range(m):
                if cntp[off[j] + proj[j, qi]] - count[qi] > 0:
                    flags |= np.int64(1) << j
            if flags != 0:
                fast = True
                min_d = 1
                # patterns with missing values at distance 1 (vectorized scan)
                for u in range(n_na):
                    nd[u] = na_pen[u]
                for j in range(m):
                    av = cdtype(mat[i, j])
                    cj = na_cols[j]
                    for u in range(n_na):
                        x = cj[u]
                        if x != av and x >= 0:
                            nd[u] += 1
                for u in range(n_na):
                    if nd[u] == 1:
                        for j in range(m):
                            b = na_cols[j, u]
                            if b >= 0 and b != mat[i, j]:
                                flags |= np.int64(1) << j
        if not fast:
            for q in range(size):
                dist[q] = pen[q]
            for j in range(m):
                a = mat[i, j]
                if a < 0:
                    continue
                av = cdtype(a)
                cj = cols[j]
                for q in range(size):
                    x = cj[q]
                    if x != av and x >= 0:
                        dist[q] += 1
            for q in range(size):
                d = dist[q]
                if d > 0 and d < min_d:
                    min_d = d
            if min_d <= m:
                for q in range(size):
                    if dist[q] == min_d:
                        for j in range(m):
                            a, b = mat[i, j], table[q, j]
                            if a >= 0 and b >= 0 and a != b:
                                flags |= np.int64(1) << j
        col = -1
        if min_d > m:          # every record agrees with i where both are observed
            if alpha < 1.0:
                for j in col_order:
                    if mat[i, j] >= 0:
                        col = j
                        break
        else:
            for j in col_order:
                if (flags >> j) & 1:
                    col = j
                    break
        if col < 0:
            return -1 - i
        mat[i, col] = -1
        count[qi] -= 1
        if count[qi] == 0:
            pen[qi] = m + 1
            if na_of[qi] >= 0:
                na_pen[na_of[qi]] = m + 1
        if complete[qi]:
            for j in range(m):
                cntp[off[j] + proj[j, qi]] -= 1
        for j in range(m):
            table[size, j] = mat[i, j]
            cols[j, size] = cdtype(mat[i, j])
        count[size] = 1
        pen[size] = 0
        complete[size] = False
        na_rows[n_na] = size
        na_of[size] = n_na
        na_pen[n_na] = 0
        for j in range(m):
            na_cols[j, n_na] = cdtype(mat[i, j])
        n_na += 1
        row_of[i] = size
        size += 1
        done += 1
    return done


def suppress_codes(codes: np.ndarray, size: np.ndarray, k: int, importance: np.ndarray,
                   alpha: float = 1.0) -> tuple[np.ndarray, int]:
    """sdcMicro's greedy local suppression on key codes (−1 = missing); returns the new
    codes and the number of passes. See the module docstring."""
    n, m = codes.shape
    k = min(int(k), n)
    # 2. reduction: keep the first k records of every pattern, missing = a value of its own
    # (sdcMicro's fill-in of the missing values is a no-op: module docstring)
    ids, g = row_groups(codes + 1, size + 1)
    order = np.argsort(ids, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(ids[order])) + 1]
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    work = np.flatnonzero(rank < k)
    mat = np.ascontiguousarray(codes[work])
    col_order = np.argsort(-importance, kind="stable").astype(np.int64)
    cdtype = np.int16 if int(size.max()) < np.iinfo(np.int16).max else np.int32
    passes = 0
    while True:
        fk = whole_counts(frequencies_from_codes(mat, size, None, alpha)[0])
        bad = np.flatnonzero(fk < k)
        if bad.size == 0:
            break
        passes += 1
        if passes > m + 1:
            raise LinkriskError(f"local suppression did not reach {k}-anonymity after "
                                f"{m + 1} passes; lower k")
        problems = bad[np.argsort(fk[bad], kind="stable")].astype(np.int64)
        table, row_of, count, proj, off = _pattern_table(mat, size)
        res = _pass(mat, table, row_of, count, proj, off, problems, col_order, float(alpha),
                    cdtype)
        if res < 0:
            i = int(work[-1 - res])
            raise LinkriskError(f"local suppression: record {i} has no record that differs "
                                "from it on an observed key, but its f_k is below k; "
                                "lower k or check the key variables")
    out = codes.copy()
    out[work] = mat
    return out, passes


def apply_local_suppression(df: pd.DataFrame, columns: Sequence[str], rng: Any, k: int = 2,
                            keys: Sequence[str] | None = None, importance: Any = None,
                            alpha: float = 1.0) -> pd.DataFrame:
    """``mask(df, "local_suppression", k=…, keys=…)``: suppress key values (set them to
    missing) until the file is k-anonymous on ``keys`` (default: the masked ``columns``);
    sdcMicro's greedy algorithm, see the module docstring."""
    del rng  # deterministic
    keys = list(columns) if keys is None else list(keys)
    if not keys:
        raise LinkriskError("local_suppression: keys is empty; name the key variables")
    outside = [c for c in keys if c not in set(columns)]
    if outside:
        raise LinkriskError(f"local_suppression: key(s) {', '.join(map(repr, outside))} are not "
                            "among the masked columns; pass columns= with the key variables")
    if isinstance(k, bool) or k < 1:
        raise LinkriskError(f"local_suppression: k must be a whole number >= 1, got {k!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise LinkriskError(f"local_suppression: alpha must be in [0, 1], got {alpha!r}")
    codes, size = key_codes(df, keys)
    imp = _importance(importance, keys, codes)
    new, passes = suppress_codes(codes, size, int(k), imp, float(alpha))
    out = df[list(columns)].copy()
    supp = {}
    for j, c in enumerate(keys):
        hit = (new[:, j] < 0) & (codes[:, j] >= 0)
        supp[c] = int(hit.sum())
        if hit.any():
            out[c] = out[c].where(~hit)
    out.attrs["local_suppression"] = {"k": int(min(k, len(df))), "keys": keys,
                                      "suppressions": supp, "total": int(sum(supp.values())),
                                      "passes": passes,
                                      "importance": {c: int(v) for c, v in zip(keys, imp, strict=True)}}
    return out
