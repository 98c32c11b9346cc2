"""The Hamming kernel of categorical linkage on narrow integer codes.

Distance-based linkage on categorical attributes under the unit (nominal) table scores a
pair by the number of attributes whose categories differ, d(a, b) = Σ_j [a_j ≠ b_j]
(the distance of Herranz, Nin, Rodríguez & Tassa 2015; ``docs/methods.md``, attack
``dbrl_hamming``). The scores are the whole numbers 0..m, so the int32 kernel of
:mod:`.intkernels` computes them exactly; this kernel computes the *same* scores with
the codes stored in the narrowest unsigned type that holds them (uint8 when every
attribute has at most 256 categories, uint16 up to 65,536, else uint32) and the mismatch
counts in the narrowest type that holds m (uint8 for m ≤ 255): a vector register then
holds four times as many pairs (uint8) as in int32.
Attacker rows are scored two at a time (each code of B loaded once for both) and
attributes four at a time, so the running counts are loaded and stored once per group
of attributes instead of once per attribute (a lone last row: eight at a time).

Everything after the scores is the integer kernel's rule, unchanged: the tie threshold is
⌊t(cur)⌋ with t of :mod:`.rules` (integer scores, scale 1), candidates are buffered in B
order with the same cap and overflow flag, tiles whose minimum lies above the threshold
are skipped (no record of such a tile can enter the buffer), and the link is the seeded
pick of :mod:`.rules`. Tiling does not change any result: each row sees B in file order.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import (
    chunk_count,
    chunk_span,
    finish_int_rows,
    int_chunk_state,
    settle_tile,
)
from .transforms import BLOCK_ROWS

#: bytes of codes per tile of B (m × tile codes, attribute-major) kept in cache
TILE_BYTES = 2**15


def code_dtype(max_code: int) -> np.dtype:
    """The narrowest unsigned integer type holding the codes 0..max_code."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if max_code <= np.iinfo(dt).max:
            return np.dtype(dt)
    raise ValueError("category codes beyond 2³² − 1")


def count_dtype(m: int) -> np.dtype:
    """The narrowest unsigned integer type holding mismatch counts 0..m."""
    return code_dtype(m)


def hamming_codes(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, bᵀ) as category codes of :func:`code_dtype` (bᵀ attribute-major), converted
    block by block. The codes must be whole numbers ≥ 0 (checked by the engine)."""
    hi = int(max(a.max(initial=0), b.max(initial=0)))
    dt = code_dtype(hi)
    ac = np.empty(a.shape, dt)
    bt = np.empty((b.shape[1], b.shape[0]), dt)
    for r0 in range(0, a.shape[0], BLOCK_ROWS):
        ac[r0:r0 + BLOCK_ROWS] = a[r0:r0 + BLOCK_ROWS]
    for r0 in range(0, b.shape[0], BLOCK_ROWS):
        bt[:, r0:r0 + BLOCK_ROWS] = b[r0:r0 + BLOCK_ROWS].T
    return ac, bt


def hamming_tile(m: int, itemsize: int) -> int:
    """Columns of B per tile: m × tile codes within :data:`TILE_BYTES`, a multiple of 64."""
    t = TILE_BYTES // max(m * itemsize, 1)
    return int(np.clip(t - t % 64, 256, 16384))


@nb.njit(inline="always")
def _tile_hamming(acc, a, bt, t0, w):
    """acc[k] = Σ_j [a_j ≠ B[t0+k]_j] for k < w; returns min_k acc[k]. Attributes go
    eight, then four, then one at a time (one load and store of acc per group); the
    narrow types are kept by the stores (sums stay ≤ m, which fits acc's type)."""
    m = a.shape[0]
    for k in range(w):
        acc[k] = 0
    j = 0
    while j + 8 <= m:
        a0, a1, a2, a3 = a[j], a[j + 1], a[j + 2], a[j + 3]
        a4, a5, a6, a7 = a[j + 4], a[j + 5], a[j + 6], a[j + 7]
        r0, r1 = bt[j, t0:t0 + w], bt[j + 1, t0:t0 + w]
        r2, r3 = bt[j + 2, t0:t0 + w], bt[j + 3, t0:t0 + w]
        r4, r5 = bt[j + 4, t0:t0 + w], bt[j + 5, t0:t0 + w]
        r6, r7 = bt[j + 6, t0:t0 + w], bt[j + 7, t0:t0 + w]
        for k in range(w):
            acc[k] += ((a0 != r0[k]) + (a1 != r1[k]) + (a2 != r2[k]) + (a3 != r3[k])
                       + (a4 != r4[k]) + (a5 != r5[k]) + (a6 != r6[k]) + (a7 != r7[k]))
        j += 8
    while j + 4 <= m:
        a0, a1, a2, a3 = a[j], a[j + 1], a[j + 2], a[j + 3]
        r0, r1 = bt[j, t0:t0 + w], bt[j + 1, t0:t0 + w]
        r2, r3 = bt[j + 2, t0:t0 + w], bt[j + 3, t0:t0 + w]
        for k in range(w):
            acc[k] += (a0 != r0[k]) + (a1 != r1[k]) + (a2 != r2[k]) + (a3 != r3[k])
        j += 4
    while j < m:
        aj = a[j]
        row = bt[j, t0:t0 + w]
        for k in range(w):
            acc[k] += aj != row[k]
        j += 1
    mn = acc[0]
    for k in range(w):
        mn = min(mn, acc[k])
    return mn


@nb.njit(inline="always")
def _tile_hamming2(acc, acc2, a, a2, bt, t0, w):
    """:func:`_tile_hamming` for two attacker rows a, a2 at once (each code of the tile is
    loaded once for both); attributes go four, then one at a time. Returns both minima."""
    m = a.shape[0]
    for k in range(w):
        acc[k] = 0
        acc2[k] = 0
    j = 0
    while j + 4 <= m:
        p0, p1, p2, p3 = a[j], a[j + 1], a[j + 2], a[j + 3]
        q0, q1, q2, q3 = a2[j], a2[j + 1], a2[j + 2], a2[j + 3]
        r0, r1 = bt[j, t0:t0 + w], bt[j + 1, t0:t0 + w]
        r2, r3 = bt[j + 2, t0:t0 + w], bt[j + 3, t0:t0 + w]
        for k in range(w):
            x0, x1, x2, x3 = r0[k], r1[k], r2[k], r3[k]
            acc[k] += (p0 != x0) + (p1 != x1) + (p2 != x2) + (p3 != x3)
            acc2[k] += (q0 != x0) + (q1 != x1) + (q2 != x2) + (q3 != x3)
        j += 4
    while j < m:
        p0, q0 = a[j], a2[j]
        row = bt[j, t0:t0 + w]
        for k in range(w):
            x0 = row[k]
            acc[k] += p0 != x0
            acc2[k] += q0 != x0
        j += 1
    mn, mn2 = acc[0], acc2[0]
    for k in range(w):
        mn = min(mn, acc[k])
        mn2 = min(mn2, acc2[k])
    return mn, mn2


@nb.njit(inline="always")
def _scan_hamming(a, bt, lo, nr, tile, proto, truth, rtol, tscore, best, thr, buf_i, buf_s,
                  nbuf, over):
    """Rows lo … lo+nr−1 of ``a`` against every tile of ``bt``, in pairs (one load of the
    tile for both), then a lone last row, each row settled by
    :func:`~.kernels.settle_tile` (scale 1, the exact tie rule) into the chunk state
    after ``truth``. Counts in ``proto``'s type."""
    n_b = bt.shape[1]
    acc = np.empty(tile, proto.dtype)
    acc2 = np.empty(tile, proto.dtype)
    for t0 in range(0, n_b, tile):
        w = min(tile, n_b - t0)
        for r in range(0, nr, 2):
            i = lo + r
            pair = r + 1 < nr
            if pair:
                mn, mn2 = _tile_hamming2(acc, acc2, a[i], a[i + 1], bt, t0, w)
            else:
                mn = mn2 = _tile_hamming(acc, a[i], bt, t0, w)
            settle_tile(acc, mn, r, truth[i], t0, w, 0, rtol, 1, tscore, best, thr, buf_i,
                        buf_s, nbuf, over)
            if pair:
                settle_tile(acc2, mn2, r + 1, truth[i + 1], t0, w, 0, rtol, 1, tscore, best,
                            thr, buf_i, buf_s, nbuf, over)


@nb.njit(parallel=True, cache=True)
def nearest_block_hamming(a_blk, rid, bt, acc_type, truth, rtol, cap, seed, tile, chunk,
                          out_min, out_count, out_true_score, out_link, out_overflow):
    """:func:`~.intkernels.nearest_block_int` with the Hamming score (``icode`` 2, scale 1)
    on narrow codes (see the module): the same minimum, tie count, true score, link and
    overflow flags. ``acc_type`` is an empty array of the count type
    (:func:`count_dtype` of m)."""
    n_a = a_blk.shape[0]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        best, thr, tscore, buf_i, buf_s, nbuf, over = int_chunk_state(nr, cap)
        _scan_hamming(a_blk, bt, lo, nr, tile, acc_type, truth, rtol, tscore, best, thr,
                      buf_i, buf_s, nbuf, over)
        finish_int_rows(lo, nr, 1, seed, rid, best, tscore, buf_i, nbuf, over, out_min,
                        out_count, out_true_score, out_link, out_overflow)
