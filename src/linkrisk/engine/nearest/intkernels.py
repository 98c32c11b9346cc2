"""Integer kernels for the attacks whose scores are whole numbers.

Rank-based linkage (RBRL-Sum/Max, Nin, Herranz & Torra 2008) scores Σ_j |r_aj − s_bj| or
max_j |r_aj − s_bj| on average ranks, which are multiples of ½; the Hamming distance of
categorical linkage counts differing categories. In float64 the engine computes these
exactly but slowly (each pair costs ~3 ns in the L1 kernel, an hour at 10⁶ × 10⁶). In
int32 the same scores (doubled ranks; category codes) are exact too, and vector
instructions handle 8 pairs at a time: subtract, absolute value, add (or max, or
compare-and-count).

:func:`integer_form` decides whether a problem has such a form: every value times a
scale s ∈ {1, 2} is a whole number, and the largest possible score fits int32. The kernel
then returns *the same* results as :func:`~.kernels.nearest_block`: score_int / s is the
float64 score bit for bit (a sum of multiples of ½ below 2⁵³ is exact in any order), the
tie threshold is the float64 one, cur + rtol·|cur|, compared as s_int ≤ ⌊(cur + rtol·|cur|)·s⌋
(exact, since s_int is whole), buffers fill in B order and the link is drawn with the same
per-record generator. Each tile's minimum (an integer reduction, vectorized) is checked
against the threshold first, so the tie bookkeeping runs only on tiles that can hold a
candidate.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hamming import hamming_codes
from .kernels import L1, LINF, MIXED, Tables, buffer_candidate, new_minimum, pick_buffered
from .rules import tie_threshold
from .transforms import BLOCK_ROWS

#: integer score codes
I_L1, I_LINF, I_HAMMING = 0, 1, 2
_INT_MAX = 2**31 - 1


def integer_form(a: np.ndarray, b: np.ndarray, code: int, tables: Tables
                 ) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """(a_int, bᵀ_int, integer code, scale) such that the engine score of (a_i, b_j) is
    score_int(a_int[i], b_int[j]) / scale exactly, or None when the problem has no such
    form: L1/L∞ on values that are multiples of 1 or ½ (ranks) within int32 range, or the
    ``mixed`` metric with every attribute categorical under the unit Hamming table."""
    m = a.shape[1]
    if code == MIXED:
        if m == 0 or not (tables.size > 0).all():
            return None
        for j in range(m):
            L = int(tables.size[j])
            t = tables.flat[tables.off[j]:tables.off[j] + L * L].reshape(L, L)
            if not np.array_equal(t, 1.0 - np.eye(L)):
                return None
        # codes were checked to be whole numbers in 0..L−1 by the caller; stored narrow
        # (uint8 up to 256 categories) for the Hamming kernel of :mod:`.hamming`
        return (*hamming_codes(a, b), I_HAMMING, 1)
    if code not in (L1, LINF):
        return None
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    for scale in (1, 2):
        if not (_whole(a, scale) and _whole(b, scale)):
            continue
        lo = min(a.min(), b.min()) * scale
        span = max(a.max(), b.max()) * scale - lo
        if span * (m if code == L1 else 1) > _INT_MAX:
            return None
        return (_to_int(a, scale, lo, False), _to_int(b, scale, lo, True),
                I_L1 if code == L1 else I_LINF, scale)
    return None


def _whole(x: np.ndarray, scale: int) -> bool:
    """Whether every x·scale is a whole number (``scale`` a power of two: exact)."""
    for r0 in range(0, x.shape[0], BLOCK_ROWS):
        blk = x[r0:r0 + BLOCK_ROWS] * scale
        if not np.array_equal(blk, np.round(blk)):
            return False
    return True


def _to_int(x: np.ndarray, scale: int, lo: float, transpose: bool) -> np.ndarray:
    """x·scale − lo as int32 (exact: whole numbers within range), attribute-major when
    ``transpose``; converted block by block."""
    n, m = x.shape
    out = np.empty((m, n) if transpose else (n, m), np.int32)
    for r0 in range(0, n, BLOCK_ROWS):
        blk = (x[r0:r0 + BLOCK_ROWS] * scale - lo).astype(np.int32)
        if transpose:
            out[:, r0:r0 + blk.shape[0]] = blk.T
        else:
            out[r0:r0 + blk.shape[0]] = blk
    return out


@nb.njit(inline="always")
def _tile_int(acc, a, bt, t0, w, icode):
    """acc[k] = integer score of (a, B[t0+k]); loops over slices so that LLVM vectorizes."""
    m = a.shape[0]
    for k in range(w):
        acc[k] = np.int32(0)
    # every step cast back to int32: numba widens integer arithmetic to int64, which halves
    # the vector width (measured in benchmarks/README.md, "Integer kernels")
    for j in range(m):
        aj = a[j]
        row = bt[j, t0:t0 + w]
        if icode == 0:
            for k in range(w):
                d = np.int32(aj - row[k])
                acc[k] = np.int32(acc[k] + max(d, np.int32(-d)))
        elif icode == 1:
            for k in range(w):
                d = np.int32(aj - row[k])
                acc[k] = max(acc[k], max(d, np.int32(-d)))
        else:
            for k in range(w):
                acc[k] = np.int32(acc[k] + np.int32(aj != row[k]))
    mn = acc[0]
    for k in range(w):
        mn = min(mn, acc[k])
    return mn


@nb.njit(inline="always")
def _thr_int(cur, rtol, scale):
    """⌊(c + rtol·|c|)·scale⌋ for c = cur / scale (the float kernel's tie threshold)."""
    if cur == _INT_MAX:
        return np.int64(_INT_MAX)
    c = cur / scale
    return np.int64(np.floor(tie_threshold(c, rtol) * scale))


@nb.njit(parallel=True, cache=True)
def nearest_block_int(a_blk, rid, bt, icode, scale, truth, rtol, cap, seed, tile, chunk,
                      out_min, out_count, out_true_score, out_link, out_overflow):
    """:func:`~.kernels.nearest_block` on integer scores (see the module): the same minimum,
    tie count, true score, link and overflow flags."""
    n_a = a_blk.shape[0]
    n_b = bt.shape[1]
    n_chunks = (n_a + chunk - 1) // chunk
    for c in nb.prange(n_chunks):
        lo = c * chunk
        hi = min(lo + chunk, n_a)
        nr = hi - lo
        acc = np.empty(tile, np.int32)
        best = np.full(nr, _INT_MAX, np.int64)
        thr = np.full(nr, _INT_MAX, np.int64)
        tscore = np.full(nr, -1, np.int64)
        buf_i = np.empty((nr, cap), np.int64)
        buf_s = np.empty((nr, cap), np.int64)
        nbuf = np.zeros(nr, np.int64)
        over = np.zeros(nr, np.bool_)
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            for r in range(nr):
                i = lo + r
                mn = _tile_int(acc, a_blk[i], bt, t0, w, icode)
                ti = truth[i]
                if ti >= t0 and ti < t0 + w:
                    tscore[r] = acc[ti - t0]
                if mn > thr[r]:
                    continue
                cur = best[r]
                th = thr[r]
                for k in range(w):
                    s = np.int64(acc[k])
                    if s <= th:
                        if s < cur:
                            old = cur
                            cur = s
                            th = _thr_int(cur, rtol, scale)
                            new_minimum(buf_i, buf_s, nbuf, over, r, old, th)
                        buffer_candidate(buf_i, buf_s, nbuf, over, r, t0 + k, s)
                best[r] = cur
                thr[r] = th
        for r in range(nr):
            i = lo + r
            out_min[i] = np.inf if best[r] == _INT_MAX else best[r] / scale
            out_true_score[i] = np.inf if tscore[r] < 0 else tscore[r] / scale
            out_overflow[i] = over[r]
            out_count[i] = nbuf[r]
            out_link[i] = pick_buffered(buf_i, nbuf, r, seed, rid[i])

