"""Compiled (numba) pairwise kernels.

One fused kernel serves every distance attack: for each attacker record it scans the
released file tile by tile (a tile of B, stored attribute-major, stays in L2 cache while a
chunk of attacker rows is scored against it), computes scores on the fly and keeps only
the running minimum and the records tied with it. Nothing of size n×n' is ever stored.

Scores are computed directly from differences (not with the GEMM identity), in float64,
summing attributes in a fixed order, so the same pair always gets the same bits: this is
what makes the tie rule (relative tolerance on the minimum) exact and reproducible.
"""

from __future__ import annotations

import numba as nb
import numpy as np

SQEUCLIDEAN, L1, LINF, KERNEL, MIXED = 0, 1, 2, 3, 4
METRIC_CODES = {"sqeuclidean": SQEUCLIDEAN, "l1": L1, "linf": LINF, "kernel": KERNEL,
                "mixed": MIXED}


class Tables:
    """Per-attribute lookup tables for the ``mixed`` metric (categorical and mixed files).

    Attribute j with ``size[j] == 0`` is numeric and contributes (a_j − b_j)²; otherwise a_j
    and b_j are integer category codes in 0..size[j]−1 stored as floats and the attribute
    contributes ``flat[off[j] + a_j·size[j] + b_j]`` (nominal 0/1, ordinal, weighted,
    or ∞ for category pairs a masking method cannot produce)."""

    def __init__(self, flat: np.ndarray, off: np.ndarray, size: np.ndarray):
        self.flat = np.ascontiguousarray(flat, dtype=np.float64)
        self.off = np.ascontiguousarray(off, dtype=np.int64)
        self.size = np.ascontiguousarray(size, dtype=np.int64)

    @classmethod
    def empty(cls, m: int) -> Tables:
        return cls(np.zeros(1), np.zeros(m, np.int64), np.zeros(m, np.int64))

    @classmethod
    def from_list(cls, tables: list[np.ndarray | None]) -> Tables:
        """One entry per attribute: an L×L table, or None for a numeric attribute."""
        flat, off, size, pos = [], [], [], 0
        for t in tables:
            if t is None:
                off.append(0)
                size.append(0)
                continue
            t = np.asarray(t, dtype=np.float64)
            if t.ndim != 2 or t.shape[0] != t.shape[1]:
                raise ValueError("a category distance table must be square")
            off.append(pos)
            size.append(t.shape[0])
            flat.append(t.ravel())
            pos += t.size
        return cls(np.concatenate(flat) if flat else np.zeros(1), np.array(off), np.array(size))


@nb.njit(inline="always")
def _tile_scores(acc, a, bt, t0, w, metric, degree, kaa_i, kbb, tflat, toff, tsize):
    """acc[k] = score(a, B[t0+k]) for k < w. bt is B transposed (m × n')."""
    m = a.shape[0]
    for k in range(w):
        acc[k] = 0.0
    if metric == 0:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                d = aj - row[t0 + k]
                acc[k] += d * d
    elif metric == 1:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                acc[k] += abs(aj - row[t0 + k])
    elif metric == 2:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                d = abs(aj - row[t0 + k])
                if d > acc[k]:
                    acc[k] = d
    elif metric == 3:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                acc[k] += aj * row[t0 + k]
        for k in range(w):
            acc[k] = kaa_i + kbb[t0 + k] - 2.0 * (1.0 + acc[k]) ** degree
    else:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            L = tsize[j]
            if L == 0:
                for k in range(w):
                    d = aj - row[t0 + k]
                    acc[k] += d * d
            else:
                base = toff[j] + np.int64(aj) * L
                for k in range(w):
                    acc[k] += tflat[base + np.int64(row[t0 + k])]


@nb.njit(inline="always")
def _mix(seed, i):
    """splitmix64 of (seed, i): a reproducible per-record random number for tie breaking
    that does not depend on thread scheduling."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(i) + np.uint64(1)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(inline="always")
def _new_minimum(buf_i, buf_s, nbuf, over, r, old, thr):
    """Row r has a new minimum (was ``old``), tie threshold ``thr``: drop the buffered
    candidates above it; records lost to an overflow scored ≥ old: gone if old > thr."""
    q = 0
    for p in range(nbuf[r]):
        if buf_s[r, p] <= thr:
            buf_i[r, q] = buf_i[r, p]
            buf_s[r, q] = buf_s[r, p]
            q += 1
    nbuf[r] = q
    if over[r] and old > thr:
        over[r] = False


@nb.njit(inline="always")
def _buffer(buf_i, buf_s, nbuf, over, r, j, s):
    """Keep candidate j (score s) of row r, or flag the row's overflow when its buffer is
    full."""
    if nbuf[r] < buf_i.shape[1]:
        buf_i[r, nbuf[r]] = j
        buf_s[r, nbuf[r]] = s
        nbuf[r] += 1
    else:
        over[r] = True


@nb.njit(inline="always")
def _pick(buf_i, nbuf, r, seed, rid_i):
    """A candidate of row r drawn with the record's own generator (−1: none); the buffer
    is in B order, so the pick does not depend on tiling."""
    cnt = nbuf[r]
    if cnt == 0:
        return -1
    return buf_i[r, np.int64(_mix(seed, rid_i) % np.uint64(cnt))]


@nb.njit(parallel=True, cache=True)
def nearest_block(a_blk, rid, bt, metric, degree, kaa, kbb, tflat, toff, tsize, truth, rtol, cap,
                  seed, tile, chunk, out_min, out_count, out_true_score, out_link, out_overflow):
    """Minimum score, tie count, the true image's score and a tie-broken link for each row
    of ``a_blk`` against all of B. ``rid``, ``kaa`` and ``truth`` are per row of ``a_blk``;
    ``rid`` (the row's id in the whole attacker file) seeds its tie breaking.

    Ties: C(a) = {b : s(a,b) ≤ s_min + rtol·|s_min|}. Each row keeps a buffer of at most
    ``cap`` tied candidates; a row whose tie set overflows is flagged (``out_overflow``) and
    finished by :func:`recount_rows`."""
    n_a = a_blk.shape[0]
    n_b = bt.shape[1]
    n_chunks = (n_a + chunk - 1) // chunk
    for c in nb.prange(n_chunks):
        lo = c * chunk
        hi = min(lo + chunk, n_a)
        nr = hi - lo
        acc = np.empty(tile)
        best = np.full(nr, np.inf)
        tscore = np.full(nr, np.inf)
        buf_i = np.empty((nr, cap), np.int64)
        buf_s = np.empty((nr, cap))
        nbuf = np.zeros(nr, np.int64)
        over = np.zeros(nr, np.bool_)
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            for r in range(nr):
                i = lo + r
                _tile_scores(acc, a_blk[i], bt, t0, w, metric, degree, kaa[i], kbb,
                             tflat, toff, tsize)
                ti = truth[i]
                if ti >= t0 and ti < t0 + w:
                    tscore[r] = acc[ti - t0]
                cur = best[r]
                thr = cur + rtol * abs(cur)
                for k in range(w):
                    s = acc[k]
                    if s <= thr:
                        if s < cur:
                            old = cur
                            cur = s
                            thr = cur + rtol * abs(cur)
                            _new_minimum(buf_i, buf_s, nbuf, over, r, old, thr)
                        _buffer(buf_i, buf_s, nbuf, over, r, t0 + k, s)
                best[r] = cur
        for r in range(nr):
            i = lo + r
            out_min[i] = best[r]
            out_true_score[i] = tscore[r]
            out_overflow[i] = over[r]
            out_count[i] = nbuf[r]
            out_link[i] = _pick(buf_i, nbuf, r, seed, rid[i])


@nb.njit(parallel=True, cache=True)
def recount_rows(rows, rid, a, bt, metric, degree, kaa, kbb, tflat, toff, tsize, thr, seed, tile,
                 out_count, out_link):
    """Exact tie count and a uniformly chosen tied record (reservoir sampling with the
    per-record generator) for rows whose tie buffer overflowed; thresholds are known."""
    n_b = bt.shape[1]
    for p in nb.prange(rows.shape[0]):
        i = rows[p]
        acc = np.empty(tile)
        cnt = 0
        link = -1
        state = _mix(seed, rid[i])
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            _tile_scores(acc, a[i], bt, t0, w, metric, degree, kaa[i], kbb, tflat, toff, tsize)
            for k in range(w):
                if acc[k] <= thr[p]:
                    cnt += 1
                    state = _mix(state, cnt)
                    if state % np.uint64(cnt) == 0:
                        link = t0 + k
        out_count[p] = cnt
        out_link[p] = link


@nb.njit(parallel=True, cache=True)
def pair_scores(a, b, ia, ib, metric, degree, kaa, kbb, tflat, toff, tsize, out):
    """Scores of the listed pairs (a[ia[p]], b[ib[p]]) with exactly the arithmetic of
    :func:`_tile_scores` (same bits), for re-checking screened candidates."""
    m = a.shape[1]
    for p in nb.prange(ia.shape[0]):
        i = ia[p]
        j = ib[p]
        if j < 0:
            out[p] = np.inf
            continue
        acc = 0.0
        if metric == 0:
            for q in range(m):
                d = a[i, q] - b[j, q]
                acc += d * d
        elif metric == 1:
            for q in range(m):
                acc += abs(a[i, q] - b[j, q])
        elif metric == 2:
            for q in range(m):
                d = abs(a[i, q] - b[j, q])
                if d > acc:
                    acc = d
        elif metric == 3:
            for q in range(m):
                acc += a[i, q] * b[j, q]
            acc = kaa[i] + kbb[j] - 2.0 * (1.0 + acc) ** degree
        else:
            for q in range(m):
                L = tsize[q]
                if L == 0:
                    d = a[i, q] - b[j, q]
                    acc += d * d
                else:
                    acc += tflat[toff[q] + np.int64(a[i, q]) * L + np.int64(b[j, q])]
        out[p] = acc
