"""Integer kernels for the attacks whose scores are whole numbers.

Rank-based linkage (RBRL-Sum/Max, Nin, Herranz & Torra 2008) scores Σ_j |r_aj − s_bj| or
max_j |r_aj − s_bj| on average ranks, which are multiples of ½; the Hamming distance of
categorical linkage counts differing categories. In float64 the engine computes these
exactly, but a vector register holds half as many float64 values as int32 ones. In
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
from .kernels import (
    INT_NONE,
    L1,
    LINF,
    MIXED,
    Tables,
    chunk_count,
    chunk_span,
    finish_int_rows,
    int_chunk_state,
    int_threshold,
    settle_tile,
)
from .rules import pick
from .transforms import BLOCK_ROWS

#: integer score codes
I_L1, I_LINF, I_HAMMING = 0, 1, 2
_INT_MAX = INT_NONE


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
    # the vector width
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
def _scan_int(a, bt, lo, nr, icode, scale, tile, truth, rtol, tscore, best, thr, buf_i, buf_s,
              nbuf, over):
    """Rows lo … lo+nr−1 of ``a`` against every tile of ``bt``, one row per pass
    (:func:`_tile_int`), each settled by :func:`~.kernels.settle_tile` (the exact tie
    rule) into the chunk state after ``truth``."""
    n_b = bt.shape[1]
    acc = np.empty(tile, np.int32)
    for t0 in range(0, n_b, tile):
        w = min(tile, n_b - t0)
        for r in range(nr):
            mn = _tile_int(acc, a[lo + r], bt, t0, w, icode)
            settle_tile(acc, mn, r, truth[lo + r], t0, w, 0, rtol, scale, tscore, best, thr,
                        buf_i, buf_s, nbuf, over)


@nb.njit(parallel=True, cache=True)
def nearest_block_int(a_blk, rid, bt, icode, scale, truth, rtol, cap, seed, tile, chunk,
                      out_min, out_count, out_true_score, out_link, out_overflow):
    """:func:`~.kernels.nearest_block` on integer scores (see the module): the same minimum,
    tie count, true score, link and overflow flags."""
    n_a = a_blk.shape[0]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        best, thr, tscore, buf_i, buf_s, nbuf, over = int_chunk_state(nr, cap)
        _scan_int(a_blk, bt, lo, nr, icode, scale, tile, truth, rtol, tscore, best, thr,
                  buf_i, buf_s, nbuf, over)
        finish_int_rows(lo, nr, scale, seed, rid, best, tscore, buf_i, nbuf, over, out_min,
                        out_count, out_true_score, out_link, out_overflow)


# ---------------------------------------------------------------- rank kernel, row-blocked
# RBRL-Sum/Max (I_L1, I_LINF) score two attacker rows per pass over a tile of B and four
# attributes per pass over the accumulators: each loaded b value serves two rows, and each
# accumulator is loaded and stored once per four attributes instead of once per attribute.
# The scores are the same whole numbers as :func:`_tile_int`'s (the partial sums are
# bounded by the full score, which :func:`integer_form` checked to fit int32), and the tie
# bookkeeping is :func:`nearest_block_int`'s, row by row in B order.

@nb.njit(inline="always")
def _absdiff(x, y, cast):
    """|x − y| in the accumulator type ``cast`` (np.int32 or np.int16; numba would widen
    it to int64)."""
    d = cast(x - y)
    return max(d, cast(-d))


@nb.njit(inline="always")
def _comb(u, v, icode, cast):
    """Combine two partial scores: sum (L1) or maximum (L∞), in the type ``cast``."""
    if icode == I_L1:
        return cast(u + v)
    return max(u, v)


@nb.njit(inline="always")
def _four(x0, x1, x2, x3, v0, v1, v2, v3, icode, cast):
    """Partial score of four attributes: |x_q − v_q| combined over q."""
    return _comb(_comb(_absdiff(x0, v0, cast), _absdiff(x1, v1, cast), icode, cast),
                 _comb(_absdiff(x2, v2, cast), _absdiff(x3, v3, cast), icode, cast),
                 icode, cast)


@nb.njit(inline="always")
def _tile_rank2(acc0, acc1, a0, a1, bt, t0, w, icode, cast):
    """acc0[k], acc1[k] = L1 (``icode`` I_L1) or L∞ score of rows a0, a1 against B[t0+k],
    k < w, in the type ``cast`` of the arrays; returns the minimum over both rows' first w
    entries (a lower bound of each row's tile minimum)."""
    m = a0.shape[0]
    j = 0
    first = True
    while j + 4 <= m:
        b0 = bt[j, t0:t0 + w]
        b1 = bt[j + 1, t0:t0 + w]
        b2 = bt[j + 2, t0:t0 + w]
        b3 = bt[j + 3, t0:t0 + w]
        x0, x1, x2, x3 = a0[j], a0[j + 1], a0[j + 2], a0[j + 3]
        y0, y1, y2, y3 = a1[j], a1[j + 1], a1[j + 2], a1[j + 3]
        if first:
            for k in range(w):
                v0, v1, v2, v3 = b0[k], b1[k], b2[k], b3[k]
                acc0[k] = _four(x0, x1, x2, x3, v0, v1, v2, v3, icode, cast)
                acc1[k] = _four(y0, y1, y2, y3, v0, v1, v2, v3, icode, cast)
        else:
            for k in range(w):
                v0, v1, v2, v3 = b0[k], b1[k], b2[k], b3[k]
                acc0[k] = _comb(acc0[k], _four(x0, x1, x2, x3, v0, v1, v2, v3, icode, cast),
                                icode, cast)
                acc1[k] = _comb(acc1[k], _four(y0, y1, y2, y3, v0, v1, v2, v3, icode, cast),
                                icode, cast)
        first = False
        j += 4
    while j < m:
        b0 = bt[j, t0:t0 + w]
        x0, y0 = a0[j], a1[j]
        if first:
            for k in range(w):
                acc0[k] = _absdiff(x0, b0[k], cast)
                acc1[k] = _absdiff(y0, b0[k], cast)
        else:
            for k in range(w):
                v0 = b0[k]
                acc0[k] = _comb(acc0[k], _absdiff(x0, v0, cast), icode, cast)
                acc1[k] = _comb(acc1[k], _absdiff(y0, v0, cast), icode, cast)
        first = False
        j += 1
    mn = acc0[0]
    for k in range(w):
        mn = min(mn, min(acc0[k], acc1[k]))
    return mn


@nb.njit(inline="always")
def _scan_rank(a, bt, lo, nr, icode, cast, scale, band, tile, truth, rtol, tscore, best, thr,
               buf_i, buf_s, nbuf, over):
    """Rows lo … lo+nr−1 of ``a`` against every tile of ``bt``, two rows per pass
    (:func:`_tile_rank2`, scores in the type ``cast`` of ``a``), each row settled by
    :func:`~.kernels.settle_tile` with threshold band ``band`` into the chunk state after
    ``truth``. Shared by :func:`nearest_block_rank` (int32, band 0) and the int16 screen
    :func:`screen_block_rank`."""
    n_b = bt.shape[1]
    acc = np.empty((2, tile), a.dtype)
    for t0 in range(0, n_b, tile):
        w = min(tile, n_b - t0)
        for r in range(0, nr, 2):
            # an odd last row is scored twice (its copy is discarded)
            r1 = min(r + 1, nr - 1)
            mn = _tile_rank2(acc[0], acc[1], a[lo + r], a[lo + r1], bt, t0, w, icode, cast)
            for q in range(r, r1 + 1):
                settle_tile(acc[q - r], mn, q, truth[lo + q], t0, w, band, rtol, scale,
                            tscore, best, thr, buf_i, buf_s, nbuf, over)


@nb.njit(parallel=True, cache=True)
def nearest_block_rank(a_blk, rid, bt, icode, scale, truth, rtol, cap, seed, tile, chunk,
                       out_min, out_count, out_true_score, out_link, out_overflow):
    """:func:`nearest_block_int` for the rank scores (``icode`` I_L1 or I_LINF), two
    attacker rows per pass over a tile of B: the same minimum, tie count, true score, link
    and overflow flags."""
    n_a = a_blk.shape[0]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        best, thr, tscore, buf_i, buf_s, nbuf, over = int_chunk_state(nr, cap)
        _scan_rank(a_blk, bt, lo, nr, icode, np.int32, scale, 0, tile, truth, rtol, tscore,
                   best, thr, buf_i, buf_s, nbuf, over)
        finish_int_rows(lo, nr, scale, seed, rid, best, tscore, buf_i, nbuf, over, out_min,
                        out_count, out_true_score, out_link, out_overflow)


# ---------------------------------------------------------------- rank screen, int16
# When ties are exact equalities (rtol·max score < ½ in integer units, so the tie
# threshold of an integer minimum s is s itself), the rank kernels first score quantized
# ranks q = r >> h in int16 (twice the lanes of int32). With r = 2^h·q + f, 0 ≤ f < 2^h,
# each attribute's |Δr| lies within 2^h·|Δq| ± (2^h − 1), so the exact score S and the
# quantized one Q (sum or maximum of |Δq|) satisfy |S − 2^h·Q| ≤ k·(2^h − 1), k = m (L1)
# or 1 (L∞). Every record tied with the exact minimum then has
# Q ≤ Q_min + ⌊2k·(2^h − 1) / 2^h⌋ (the band; h is the smallest shift with
# k·max q ≤ 2^15 − 1, so Q fits int16): the screen keeps those records (in B order), and
# the exact pass rescores them in integers. With ties exact equalities the reference
# kernel ends with: the exact minimum s*; in its buffer the first ``cap`` records scoring
# s* in B order (reaching s* drops every earlier entry, all scored more, and clears the
# overflow flag); the flag set iff more than ``cap`` records score s*; the pick among the
# buffered ones. The exact pass rebuilds exactly these. Rows whose screen buffer
# overflows are rescanned by :func:`nearest_block_rank`.

_I16_MAX = 2**15 - 1


def rank_screen(a: np.ndarray, bt: np.ndarray, icode: int, rtol: float
                ) -> tuple[np.ndarray, int, int] | None:
    """(B quantized to int16, shift h, band) for the int16 screen of the rank scores over
    the integer forms ``a`` (rows) and ``bt`` (attribute-major), or None when the screen
    does not apply: ties are not exact equalities at this rtol, or negative values."""
    if icode not in (I_L1, I_LINF) or a.size == 0 or bt.size == 0:
        return None
    if min(a.min(), bt.min()) < 0:
        return None
    k = bt.shape[0] if icode == I_L1 else 1
    span = int(max(a.max(), bt.max()))
    if span * k * rtol >= 0.5:
        return None
    h = 0
    while k * (span >> h) > _I16_MAX:
        h += 1
    band = (2 * k * ((1 << h) - 1)) >> h
    return (bt >> h).astype(np.int16), h, band


@nb.njit(inline="always")
def _pair_int(a, bt, j, icode):
    """Exact integer score of (a, B[j]) (the same whole number as the tile kernels')."""
    s = np.int64(0)
    for q in range(a.shape[0]):
        d = np.int64(a[q]) - np.int64(bt[q, j])
        d = max(d, -d)
        s = s + d if icode == I_L1 else max(s, d)
    return s


@nb.njit(cache=True)
def _rescore_rows(a_blk, bt, lo, nr, icode, scale, truth, rtol, cap, seed, rid, buf_i, buf_s,
                  nbuf, over, out_min, out_count, out_true_score, out_link, out_overflow,
                  out_redo):
    """The exact pass of :func:`screen_block_rank` over a chunk's screen buffers: each
    row's kept records rescored exactly (:func:`_pair_int`), then the reference kernel's
    minimum, tie count, overflow flag and pick (see above); rows whose screen buffer
    overflowed are only flagged in ``out_redo``."""
    n_b = bt.shape[1]
    keep = np.empty(cap, np.int64)
    for r in range(nr):
        i = lo + r
        out_redo[i] = over[r]
        if over[r]:
            continue
        smin = np.int64(_INT_MAX)
        for p in range(nbuf[r]):
            buf_s[r, p] = _pair_int(a_blk[i], bt, buf_i[r, p], icode)
            smin = min(smin, buf_s[r, p])
        th = int_threshold(smin, rtol, scale)
        cnt = 0
        flow = False
        for p in range(nbuf[r]):
            if buf_s[r, p] <= th:
                if cnt < cap:
                    keep[cnt] = buf_i[r, p]
                    cnt += 1
                else:
                    flow = True
        ti = truth[i]
        out_min[i] = np.inf if smin == _INT_MAX else smin / scale
        out_true_score[i] = (_pair_int(a_blk[i], bt, ti, icode) / scale
                             if ti >= 0 and ti < n_b else np.inf)
        out_overflow[i] = flow
        out_count[i] = cnt
        out_link[i] = -1 if cnt == 0 else keep[pick(seed, rid[i], cnt)]


@nb.njit(parallel=True, cache=True)
def screen_block_rank(a_blk, aq_blk, rid, bt, btq, icode, scale, band, truth, rtol, cap,
                      ccap, seed, tile, chunk, out_min, out_count, out_true_score, out_link,
                      out_overflow, out_redo):
    """:func:`nearest_block_rank` through the int16 screen (see above): ``aq_blk``/``btq``
    the quantized ranks, ``band`` the screen's band, ``ccap`` the screen buffer per row.
    Rows whose screen buffer overflowed are flagged in ``out_redo`` (their other outputs
    are not set)."""
    n_a = a_blk.shape[0]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        # the screen's true scores (quantized) are not used: the exact pass recomputes them
        best, thr, tscore, buf_i, buf_s, nbuf, over = int_chunk_state(nr, ccap)
        _scan_rank(aq_blk, btq, lo, nr, icode, np.int16, scale, band, tile, truth, rtol,
                   tscore, best, thr, buf_i, buf_s, nbuf, over)
        _rescore_rows(a_blk, bt, lo, nr, icode, scale, truth, rtol, cap, seed, rid, buf_i,
                      buf_s, nbuf, over, out_min, out_count, out_true_score, out_link,
                      out_overflow, out_redo)


def rank_kernel(a: np.ndarray, bt: np.ndarray, icode: int, rtol: float):
    """The kernel for the rank scores over the integer forms ``a`` and ``bt``: a function
    with :func:`nearest_block_rank`'s arguments and results (for blocks of rows of ``a``),
    through the int16 screen when it applies (:func:`rank_screen`), else
    :func:`nearest_block_rank` itself."""
    screen = rank_screen(a, bt, icode, rtol)
    if screen is None:
        return nearest_block_rank
    btq, h, band = screen

    def run(a_blk, rid, bt, icode, scale, truth, rtol, cap, seed, tile, chunk, *outs):
        redo = np.empty(a_blk.shape[0], np.bool_)
        aq = (a_blk >> h).astype(np.int16)
        screen_block_rank(a_blk, aq, rid, bt, btq, icode, scale, band, truth, rtol, cap,
                          4 * cap + 64, seed, tile, chunk, *outs, redo)
        rows = np.flatnonzero(redo)
        if rows.size:
            sub = tuple(np.empty(rows.size, o.dtype) for o in outs)
            nearest_block_rank(np.ascontiguousarray(a_blk[rows]), rid[rows], bt, icode, scale,
                               truth[rows], rtol, cap, seed, tile, chunk, *sub)
            for o, v in zip(outs, sub, strict=True):
                o[rows] = v

    return run
