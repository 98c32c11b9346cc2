"""Grouping records into value patterns (shared by the attacks and the measures).

``relabel`` turns integer keys into dense group numbers; ``subset_walk`` visits every
subset S of the attributes with the rows numbered by their value combination on S, each
subset's grouping refining its parent's by one attribute (``prl``'s pattern counts and
SUDA2's minimal sample uniques are both built on it); ``row_groups`` numbers whole rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .data import check_frame
from .errors import LinkriskError


def relabel(key: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Dense group numbers 0..g−1 for integer keys in [0, bound)."""
    if key.size == 0:
        return key.astype(np.int64), 0
    if bound <= 4 * key.size + 1024:
        present = np.zeros(bound, bool)
        present[key] = True
        remap = np.cumsum(present) - 1
        return remap[key], int(remap[-1]) + 1
    ids, uniq = pd.factorize(key)
    return ids.astype(np.int64), len(uniq)


def row_groups(codes: np.ndarray, size: np.ndarray,
               cols: list[int] | None = None) -> tuple[np.ndarray, int]:
    """(ids, g): rows of the integer matrix ``codes`` (column j in [0, size[j])) numbered
    0..g−1 by their value combination on ``cols`` (default all columns)."""
    n = codes.shape[0]
    ids, g = np.zeros(n, np.int64), 1
    for j in (range(codes.shape[1]) if cols is None else cols):
        ids, g = relabel(ids * int(size[j]) + codes[:, j], g * int(size[j]))
    return ids, g


def subset_walk(codes: np.ndarray, size: np.ndarray,
                visit: Callable[[int, np.ndarray, int], None],
                max_size: int | None = None) -> None:
    """Call ``visit(S, ids, g)`` for every subset S ⊆ {0..m−1} (bitmask) of at most
    ``max_size`` attributes (default all), where ``ids`` numbers the rows of ``codes`` by
    their value combination on S (0..g−1). Depth-first: each subset's grouping refines its
    parent's by one attribute."""
    m = codes.shape[1]
    limit = m if max_size is None else max_size

    def rec(s: int, ids: np.ndarray, g: int, last: int, depth: int) -> None:
        visit(s, ids, g)
        if depth >= limit:
            return
        for j in range(last + 1, m):
            child, gc = relabel(ids * int(size[j]) + codes[:, j], g * int(size[j]))
            rec(s | (1 << j), child, gc, j, depth + 1)

    rec(0, np.zeros(codes.shape[0], np.int64), 1, -1, 0)


# ---------------------------------------------------------------- key patterns and f_k
def key_names(df: pd.DataFrame, keys: Sequence[str] | str) -> list[str]:
    if isinstance(keys, str):
        keys = [keys]
    keys = list(keys)
    if not keys:
        raise LinkriskError("keys is empty; name the categorical key variables")
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise LinkriskError(f"key variable(s) {', '.join(map(repr, missing))} not in the file; "
                            f"it has {', '.join(map(str, df.columns))}")
    if len(set(keys)) != len(keys):
        raise LinkriskError("keys names a column twice")
    return keys


def key_codes(df: pd.DataFrame, keys: Sequence[str] | str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, size): the key columns as an n×m int64 matrix of category codes 0..size_j−1,
    −1 where the value is missing (NaN/None/NA: suppressed)."""
    check_frame(df, "the frequency measures", "measure")
    keys = key_names(df, keys)
    codes = np.empty((len(df), len(keys)), np.int64)
    size = np.empty(len(keys), np.int64)
    for j, c in enumerate(keys):
        col = df[c]
        try:
            cj, uniq = pd.factorize(col, sort=False, use_na_sentinel=True)
        except TypeError as exc:
            raise LinkriskError(f"key variable {c!r} has values that cannot be compared "
                                f"({exc}); make it a column of categories") from None
        codes[:, j] = cj
        size[j] = max(len(uniq), 1)
    return codes, size


def _project(rows: np.ndarray, size: np.ndarray, cols: list[int]) -> np.ndarray:
    return row_groups(rows, size, cols)[0]


def frequencies_from_codes(codes: np.ndarray, size: np.ndarray, w: np.ndarray | None = None,
                           alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(f_k, F_k) per record from key codes (−1 = missing), sdcMicro's ``freqCalc``
    rules for missing values (module docstring). F_k is f_k when ``w`` is None."""
    n, m = codes.shape
    shifted = codes + 1                       # 0 = missing, as its own value for grouping
    ids, d = row_groups(shifted, size + 1)
    cnt = np.bincount(ids, minlength=d).astype(np.float64)
    wsum = cnt.copy() if w is None else np.bincount(ids, weights=w, minlength=d)
    first = np.full(d, n, np.int64)
    np.minimum.at(first, ids, np.arange(n))
    keys = codes[first]
    kshift = keys + 1
    na = keys < 0
    if not na.any():
        return cnt[ids], wsum[ids]
    fk, Fk = cnt.copy(), wsum.copy()
    complete = ~na.any(axis=1)
    allna = na.all(axis=1)
    if m == 1:
        fk[complete] += alpha * cnt[~complete].sum()
        Fk[complete] += alpha * wsum[~complete].sum()
    else:
        bits = (na.astype(np.int64) << np.arange(m)).sum(axis=1)   # missing-variable mask
        patterns = np.unique(bits[~complete & ~allna])
        ic = np.flatnonzero(complete)
        ia = np.flatnonzero(allna)
        c_all, w_all = cnt[ia].sum(), wsum[ia].sum()
        by_pat = {int(p): np.flatnonzero(bits == p) for p in patterns}
        # complete patterns <-> patterns with missing values
        for p, ip in by_pat.items():
            cols = [j for j in range(m) if not (p >> j) & 1]
            if ic.size:
                rows = np.concatenate([ic, ip])
                g = _project(kshift[rows], size + 1, cols)
                gc, gp = g[:ic.size], g[ic.size:]
                ng = int(g.max()) + 1
                fk[ip] += np.bincount(gc, weights=cnt[ic], minlength=ng)[gp]
                Fk[ip] += np.bincount(gc, weights=wsum[ic], minlength=ng)[gp]
                fk[ic] += alpha * np.bincount(gp, weights=cnt[ip], minlength=ng)[gc]
                Fk[ic] += alpha * np.bincount(gp, weights=wsum[ip], minlength=ng)[gc]
            # the all-missing patterns are compatible with every pattern
            fk[ip] += alpha * c_all
            Fk[ip] += alpha * w_all
        # patterns with missing values among themselves: compatible where both observed
        if len(by_pat) > 1:
            _add_pattern_pairs(fk, Fk, by_pat, kshift, size, cnt, wsum, alpha)
    fk[allna], Fk[allna] = float(n), float(wsum.sum())
    return fk[ids], Fk[ids]


def _add_pattern_pairs(fk: np.ndarray, Fk: np.ndarray, by_pat: dict[int, np.ndarray],
                       kshift: np.ndarray, size: np.ndarray, cnt: np.ndarray,
                       wsum: np.ndarray, alpha: float) -> None:
    """Add to ``fk``/``Fk`` (in place) the counts of the other patterns with missing
    values that are compatible (equal where both are observed): the keys are grouped
    once per set of observed columns shared by a pair of patterns (``by_pat``: missing
    mask -> its keys)."""
    m = kshift.shape[1]
    ip_all = np.concatenate(list(by_pat.values()))
    pos = {p: np.arange(o, o + ip.size) for p, ip, o in
           zip(by_pat, by_pat.values(),
               np.cumsum([0] + [ip.size for ip in by_pat.values()])[:-1], strict=True)}
    full = (1 << m) - 1
    cache: dict[int, tuple[np.ndarray, int]] = {}
    for a, ia_ in by_pat.items():
        for b, ib_ in by_pat.items():
            if a == b:  # same missing positions: compatible only with itself
                continue
            shared = full & ~(a | b)
            if shared == 0:
                fk[ia_] += alpha * cnt[ib_].sum()
                Fk[ia_] += alpha * wsum[ib_].sum()
                continue
            if shared not in cache:
                cols = [j for j in range(m) if (shared >> j) & 1]
                cache[shared] = row_groups(kshift[ip_all], size + 1, cols)
            g, ng = cache[shared]
            ga, gb = g[pos[a]], g[pos[b]]
            fk[ia_] += alpha * np.bincount(gb, weights=cnt[ib_], minlength=ng)[ga]
            Fk[ia_] += alpha * np.bincount(gb, weights=wsum[ib_], minlength=ng)[ga]


#: relative tolerance within which a frequency is taken to be a whole number (α < 1 sums
#: such as 1 + 0.1·1 + 0.1·7 + 0.1·2 give 2.0000000000000004) and f_k to equal F_k
COUNT_TOL = 1e-9


def whole_counts(fk: np.typing.ArrayLike) -> np.ndarray:
    """f_k with values within ``COUNT_TOL`` (relative) of a whole number set to it, so that
    the tests f_k = 1, f_k = 2, f_k > 2 and f_k < k are not decided by rounding errors of
    the α-weighted sums (other values are returned unchanged)."""
    fk = np.asarray(fk, np.float64)
    r = np.rint(fk)
    return np.where(np.abs(fk - r) <= COUNT_TOL * np.maximum(1.0, np.abs(fk)), r, fk)
