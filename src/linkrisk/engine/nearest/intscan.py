"""The chunk/tile loop of the integer kernels, written once.

The rank kernels (:mod:`.intkernels`: ``nearest_block_rank``, the int16 screen
``screen_block_rank``, the reference ``nearest_block_int``) and the Hamming kernel
(:mod:`.hamming`) all scan B the same way: a chunk of attacker rows per parallel task,
B in tiles, the rows of the chunk scored two at a time against each tile by a *score
pass*, then each row's tie bookkeeping on the tile (:func:`settle_tile`) and, after the
last tile, the row's results (:func:`finish_rows`). Only the score pass differs; it is
given to :func:`scan_chunk` as a compiled function (numba inlines it), with the metric
``code`` as a separate argument so that a kernel compiled for one metric sees it as a
constant.

A score pass has the signature ``(acc0, acc1, x0, x1, bt, t0, w, code, pair)``: it fills
acc0[:w] (and acc1[:w] when ``pair``) with the integer scores of rows x0 (and x1) against
B[t0:t0+w] and returns a lower bound of each row's tile minimum.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import (
    INT_NONE,
    buffer_candidate,
    chunk_span,
    int_chunk_state,
    int_threshold,
    new_minimum,
    store_row,
)


@nb.njit(inline="always")
def settle_tile(acc, mn, r, ti, t0, w, band, rtol, scale, best, thr, tscore, buf_i, buf_s,
                nbuf, over):
    """Row r's bookkeeping after a tile (scores acc[:w] of B[t0:t0+w], lower bound ``mn``
    of their minimum; the chunk state of :func:`~.kernels.int_chunk_state` after): the
    true image's score (``ti``), then — unless ``mn`` is above the running threshold — the
    new minima and the candidates at or below the threshold in B order. The threshold is
    the tie threshold of the running minimum plus ``band`` (0: the exact tie rule; > 0:
    the int16 screen's band)."""
    if ti >= t0 and ti < t0 + w:
        tscore[r] = acc[ti - t0]
    if np.int64(mn) > thr[r]:
        return
    cur = best[r]
    th = thr[r]
    for k in range(w):
        s = np.int64(acc[k])
        if s <= th:
            if s < cur:
                old = cur
                cur = s
                th = int_threshold(cur, rtol, scale) + band
                new_minimum(buf_i, buf_s, nbuf, over, r, old, th)
            buffer_candidate(buf_i, buf_s, nbuf, over, r, t0 + k, s)
    best[r] = cur
    thr[r] = th


@nb.njit(inline="always")
def scan_chunk(score_pass, code, a, bt, lo, nr, acc, truth, band, rtol, scale, tile, best, thr,
               tscore, buf_i, buf_s, nbuf, over):
    """Rows lo … lo+nr−1 of ``a`` against every tile of ``bt`` (attribute-major), two rows
    per ``score_pass`` into the (2, tile) accumulators ``acc`` (an odd last row alone),
    each row settled (:func:`settle_tile`) into the chunk state that follows ``tile``.
    The state goes as separate arrays, not a tuple: numba's parallel loops lose writes to
    arrays passed inside a tuple."""
    n_b = bt.shape[1]
    for t0 in range(0, n_b, tile):
        w = min(tile, n_b - t0)
        for r in range(0, nr, 2):
            r1 = min(r + 1, nr - 1)
            pair = r1 > r
            mn0, mn1 = score_pass(acc[0], acc[1], a[lo + r], a[lo + r1], bt, t0, w, code, pair)
            settle_tile(acc[0], mn0, r, truth[lo + r], t0, w, band, rtol, scale, best, thr,
                        tscore, buf_i, buf_s, nbuf, over)
            if pair:
                settle_tile(acc[1], mn1, r1, truth[lo + r1], t0, w, band, rtol, scale, best,
                            thr, tscore, buf_i, buf_s, nbuf, over)


@nb.njit(inline="always")
def _as_score(s, none, scale):
    """The integer score ``s`` as a float64 score (∞ for ``none``, "not seen")."""
    if s == none:
        return np.inf
    return s / scale


@nb.njit(inline="always")
def finish_rows(lo, nr, scale, seed, rid, best, tscore, buf_i, nbuf, over, out_min, out_count,
                out_true_score, out_link, out_overflow):
    """The results of the chunk's rows from its state: minimum and true score divided by
    ``scale`` (∞ when none), tie count, overflow flag and the seeded pick."""
    for r in range(nr):
        i = lo + r
        store_row(i, r, _as_score(best[r], INT_NONE, scale),
                  _as_score(tscore[r], -1, scale), nbuf, over, buf_i, seed, rid[i], out_min, out_count,
                  out_true_score, out_link, out_overflow)


@nb.njit(inline="always")
def block_chunk(score_pass, code, c, a_blk, rid, bt, proto, scale, truth, rtol, cap, seed,
                tile, chunk, out_min, out_count, out_true_score, out_link, out_overflow):
    """Chunk ``c`` of an integer kernel, start to end: accumulators of ``proto``'s dtype,
    :func:`scan_chunk` with the exact tie rule, :func:`finish_rows`."""
    lo, nr = chunk_span(c, chunk, a_blk.shape[0])
    acc = np.empty((2, tile), proto.dtype)
    best, thr, tscore, buf_i, buf_s, nbuf, over = int_chunk_state(nr, cap)
    scan_chunk(score_pass, code, a_blk, bt, lo, nr, acc, truth, 0, rtol, scale, tile, best, thr,
               tscore, buf_i, buf_s, nbuf, over)
    finish_rows(lo, nr, scale, seed, rid, best, tscore, buf_i, nbuf, over, out_min, out_count,
                out_true_score, out_link, out_overflow)
