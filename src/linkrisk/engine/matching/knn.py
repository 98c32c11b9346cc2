"""Exact blocked k-nearest-neighbour search and the other full scans of the global attack.

Every kernel here walks A × B with the engine's tiling (a tile of B, attribute-major, stays
in cache while a chunk of A rows is scored against it) and computes each score with the
shared :func:`~.kernels.tile_scores` (squared Euclidean through a register-blocked copy
with the same summation order, :func:`_sq_tile`), so a pair always gets the same bits as in
the DBRL engine. Nothing of size n_a × n_b is stored, except by :func:`dense_costs`, which
exists for the small-n dense assignment.

*Costs* are scores mapped by ``root``: the cost is √max(s, 0) when ``root`` (Euclidean from
the engine's squared Euclidean), else the score itself. √ is monotone, so order statistics
of scores and of costs agree; every comparison against a cost threshold (Δ, a row limit, a
dual offset) is made in cost units with the same arithmetic everywhere.

Tie rule of the k-NN lists: order by (score, index) — equal scores keep the lower index, as
a stable argsort of the score row would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ...errors import LinkriskError
from .. import tuning
from ..nearest.faiss_screen import error_constant
from ..nearest.kernels import SQEUCLIDEAN, Pairwise, tile_scores
from ..nearest.rules import Progress
from . import vec32
from .prefetch import prefetch
from .tiles32 import FMA, scores32x2


# ---------------------------------------------------------------------------------------
# metric set-up (what every kernel needs besides the two matrices)
# ---------------------------------------------------------------------------------------
@nb.njit(inline="always")
def _cost(s, root):
    if root:
        return np.sqrt(s) if s > 0.0 else 0.0
    return s


@nb.njit(inline="always")
def _sq_tile(acc, a, bt, t0, w):
    """Squared Euclidean scores of one row against a tile, 8 columns at a time in
    registers. Each score is summed over the attributes in the same order as
    :func:`~.kernels.tile_scores` (no contraction into FMA), so the bits are the same;
    keeping the 8 partial sums in registers avoids re-loading and storing ``acc`` once
    per attribute, as the generic loop does."""
    m = a.shape[0]
    k0 = 0
    while k0 + 8 <= w:
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        b = t0 + k0
        for j in range(m):
            aj = a[j]
            r = bt[j]
            d0 = aj - r[b]
            d1 = aj - r[b + 1]
            d2 = aj - r[b + 2]
            d3 = aj - r[b + 3]
            d4 = aj - r[b + 4]
            d5 = aj - r[b + 5]
            d6 = aj - r[b + 6]
            d7 = aj - r[b + 7]
            s0 += d0 * d0
            s1 += d1 * d1
            s2 += d2 * d2
            s3 += d3 * d3
            s4 += d4 * d4
            s5 += d5 * d5
            s6 += d6 * d6
            s7 += d7 * d7
        acc[k0] = s0
        acc[k0 + 1] = s1
        acc[k0 + 2] = s2
        acc[k0 + 3] = s3
        acc[k0 + 4] = s4
        acc[k0 + 5] = s5
        acc[k0 + 6] = s6
        acc[k0 + 7] = s7
        k0 += 8
    for k in range(k0, w):
        s = 0.0
        for j in range(m):
            d = a[j] - bt[j, t0 + k]
            s += d * d
        acc[k] = s


@nb.njit(inline="always")
def _scores(acc, a, bt, t0, w, metric, degree, kaa_i, kbb, tflat, toff, tsize):
    """:func:`~.kernels.tile_scores` with a register-blocked squared Euclidean path."""
    if metric == 0:
        _sq_tile(acc, a, bt, t0, w)
    else:
        tile_scores(acc, a, bt, t0, w, metric, degree, kaa_i, kbb, tflat, toff, tsize)


@nb.njit(inline="always")
def insert_sorted(vals, idx, s, j):
    """Insert (s, j) into the ascending list ``vals`` (caller checked s < vals[-1]); an
    equal value already present stays first, so ties keep their arrival order."""
    p = vals.shape[0] - 1
    while p > 0 and vals[p - 1] > s:
        vals[p] = vals[p - 1]
        idx[p] = idx[p - 1]
        p -= 1
    vals[p] = s
    idx[p] = j


def row_blocks(n: int, parts: int = 32) -> int:
    """Rows per Python-level block: ~``parts`` progress reports per pass."""
    return int(max(256, -(-n // parts)))


# ---------------------------------------------------------------------------------------
# fused forward + backward k-NN (the float32 pass of :mod:`.screened_knn` shares the
# helpers below: only the scoring of a tile differs)
# ---------------------------------------------------------------------------------------
#: columns per sub-block searched for list entries in a tile with a hit
OFFER_SUB = 64


@nb.njit(inline="always")
def thread_rows(lo, hi, t, T):
    """Thread t's share of rows lo..hi (T equal slices, in order)."""
    n = hi - lo
    return lo + (n * t) // T, lo + (n * (t + 1)) // T


@nb.njit(inline="always")
def reset_lists(fi, fs, nr):
    """Empty the first ``nr`` forward lists of a chunk (index −1, score +inf)."""
    for r in range(nr):
        for q in range(fi.shape[1]):
            fi[r, q] = -1
            fs[r, q] = np.inf


@nb.njit(inline="always")
def store_lists(fi, fs, f_idx, f_sc, c0, nr):
    """Copy a chunk's ``nr`` forward lists to rows c0.. of the outputs."""
    for r in range(nr):
        for q in range(fi.shape[1]):
            f_idx[c0 + r, q] = fi[r, q]
            f_sc[c0 + r, q] = fs[r, q]


@nb.njit(inline="always")
def offer(a, i, t0, w, fsr, fir, bs, bi, bth):
    """Offer row i's scores ``a`` against the tile of columns t0..t0 + w to i's forward
    list (``fsr``, ``fir``) and the columns' backward lists (``bs``, ``bi``, thresholds
    ``bth``: their last scores, −inf when there are none). Hits are sparse: they are found
    OFFER_SUB columns at a time, and each column's list meets its rows in order."""
    k = fsr.shape[0]
    kb = bs.shape[1]
    kth = fsr[k - 1]
    btt = bth[t0:t0 + w]
    for q0 in range(0, w, OFFER_SUB):
        q1 = min(q0 + OFFER_SUB, w)
        sub = False
        for q in range(q0, q1):
            sub |= (a[q] < kth) | (a[q] < btt[q])
        if not sub:
            continue
        for q in range(q0, q1):
            s = a[q]
            if s < kth:
                insert_sorted(fsr, fir, s, t0 + q)
                kth = fsr[k - 1]
            j = t0 + q
            if kb > 0 and s < bth[j]:
                insert_sorted(bs[j], bi[j], s, i)
                bth[j] = bs[j, kb - 1]


@nb.njit(parallel=True, cache=True)
def _knn_pass(x, lo, hi, yt, args, tile, chunk, f_idx, f_sc, b_idx, b_sc, b_thr):
    """Rows lo..hi of x against all of y (``args``: the metric's, :attr:`Pairwise.args`).
    Forward lists f_* (n_x × k) are written for these rows. Backward lists b_* (T × n_y ×
    kb) are per thread (thread t takes the t-th slice of each block of rows, so a list
    meets its rows in increasing order) and merged afterwards."""
    metric, degree, kxx, kyy, tflat, toff, tsize = args
    n_y = yt.shape[1]
    k = f_idx.shape[1]
    T = b_idx.shape[0]
    for t in nb.prange(T):
        r0, r1 = thread_rows(lo, hi, t, T)
        acc = np.empty(tile)
        fi = np.empty((chunk, k), np.int64)
        fs = np.empty((chunk, k))
        for c0 in range(r0, r1, chunk):
            nr = min(chunk, r1 - c0)
            reset_lists(fi, fs, nr)
            for t0 in range(0, n_y, tile):
                w = min(tile, n_y - t0)
                for r in range(nr):
                    i = c0 + r
                    _scores(acc, x[i], yt, t0, w, metric, degree, kxx[i], kyy, tflat, toff,
                            tsize)
                    offer(acc, i, t0, w, fs[r], fi[r], b_sc[t], b_idx[t], b_thr[t])
            store_lists(fi, fs, f_idx, f_sc, c0, nr)


@nb.njit(parallel=True, cache=True)
def merge_threads(b_idx, b_sc, out_idx, out_sc):
    """Merge the per-thread backward lists (each sorted by (score, index), as every thread
    meets its rows in increasing order) by (score, index)."""
    T, n, kb = b_idx.shape
    for j in nb.prange(n):
        pos = np.zeros(T, np.int64)
        for q in range(kb):
            best = -1
            for t in range(T):
                if pos[t] < kb:
                    if best < 0:
                        best = t
                        continue
                    s, sb = b_sc[t, j, pos[t]], b_sc[best, j, pos[best]]
                    it, ib = b_idx[t, j, pos[t]], b_idx[best, j, pos[best]]
                    # missing entries (−1, +inf) sort last
                    if s < sb or (s == sb and it >= 0 and (ib < 0 or it < ib)):
                        best = t
            out_idx[j, q] = b_idx[best, j, pos[best]]
            out_sc[j, q] = b_sc[best, j, pos[best]]
            pos[best] += 1


@dataclass
class KNN:
    """Exact k-nearest-neighbour lists, both directions, sorted by (score, index).

    ``fwd_idx[i]`` are the k rows of y nearest to x_i, ``fwd_score`` their scores (engine
    units); ``bwd_idx[j]`` the kb rows of x nearest to y_j. Missing entries (fewer than k
    finite scores) have index −1 and score +inf. :func:`~.screened_knn.knn_screened` fills
    ``fwd_bound``/``bwd_bound``."""

    fwd_idx: np.ndarray
    fwd_score: np.ndarray
    bwd_idx: np.ndarray
    bwd_score: np.ndarray
    # lower bounds of the score of any pair outside a list (screened lists only; exact
    # lists are bounded by their last score)
    fwd_bound: np.ndarray | None = None
    bwd_bound: np.ndarray | None = None


def knn(pw: Pairwise, k: int, kb: int | None = None, *, progress: Progress | None = None,
        threads: int | None = None) -> KNN:
    """Each x row's ``k`` nearest y rows and each y row's ``kb`` (default k) nearest x rows
    in one pass over x × y: every score is computed once and offered to both lists.
    ``kb=0`` skips the backward lists. Memory O((n_x·k + T·n_y·kb)) with T threads."""
    n_x = pw.x.shape[0]
    n_y = pw.y.shape[0]
    k = int(min(max(k, 1), n_y))
    kb = int(min(k if kb is None else kb, n_x))
    T = int(threads or nb.get_num_threads())
    f_idx = np.empty((n_x, k), np.int64)
    f_sc = np.empty((n_x, k))
    b_idx = np.full((T, n_y, max(kb, 0)), -1, np.int64)
    b_sc = np.full((T, n_y, max(kb, 0)), np.inf)
    b_thr = np.full((T, n_y), np.inf if kb > 0 else -np.inf)
    rows = row_blocks(n_x)
    for lo in range(0, n_x, rows):
        hi = min(lo + rows, n_x)
        _knn_pass(pw.x, lo, hi, pw.cols, pw.args, pw.tile, 16, f_idx, f_sc, b_idx, b_sc, b_thr)
        if progress is not None:
            progress(hi, n_x)
    if kb > 0:
        out_i = np.empty((n_y, kb), np.int64)
        out_s = np.empty((n_y, kb))
        merge_threads(b_idx, b_sc, out_i, out_s)
    else:
        out_i, out_s = np.empty((n_y, 0), np.int64), np.empty((n_y, 0))
    return KNN(f_idx, f_sc, out_i, out_s)


# ---------------------------------------------------------------------------------------
# reduced-cost scan (the certificate) and the other per-row scans
# ---------------------------------------------------------------------------------------
_C32 = np.float32(1.0 + 1e-5)


@nb.njit(inline="always")
def _any_below(acc, off, th, gt, root):
    """Whether some column q of the block may have cost(acc[q]) − off[q] < θ with
    off[q] > gate (``off``: the block's slice). Never False when one does: with root,
    t = fl(θ + off) ≤ 0 means θ + off ≤ 0 ≤ √s; and s ≥ t²(1 + 10⁻⁹) gives
    fl(√s) > t(1 + 4·10⁻¹⁰) ≥ θ + off (t's rounding is ≤ 2⁻⁵³·t), so fl(√s − off) ≥ θ by
    monotone rounding. Branch-free, so that it vectorizes."""
    hit = False
    if root:
        for q in range(off.shape[0]):
            o = off[q]
            t = th + o
            hit |= (acc[q] < t * t * (1.0 + 1e-9)) & (t > 0.0) & (o > gt)
    else:
        for q in range(off.shape[0]):
            o = off[q]
            hit |= (acc[q] - o < th) & (o > gt)
    return hit


@nb.njit(inline="always")
def _maybe32(a, o, th, gt, err):
    """Whether a column may pass (see :func:`_any_below`), from its float32 score ``a``
    (error ≤ ``err``, score units) and float32 offset ``o``, in float32 throughout (8
    lanes): ``th`` comes as fl32(θ) + δ with δ = 2⁻²⁰(|θ| + max |off|), so U =
    fl32(th + o) ≥ θ + off despite the three float32 roundings (each ≤ 2⁻²⁴(|θ| + |off|));
    ``gt`` = fl32(gate) one float32 step down (off > gate implies fl32(off) ≥ fl32(gate));
    ``err`` the float64 error bound rounded up by 10⁻⁴. False means
    a ≥ fl32(fl32(U²)·(1 + 10⁻⁵)) + err, so the exact score is
    s ≥ a − err ≥ U²(1 + 10⁻⁵)(1 − 3·2⁻²⁴) ≥ (θ + off)²(1 + 9·10⁻⁶) where U > 0: then
    fl(√s) > θ + off and r ≥ θ (see :func:`_any_below`); U ≤ 0 means θ + off ≤ 0 ≤ cost."""
    u = th + o
    return (a < u * u * _C32 + err) & (u > 0) & (o > gt)


# The gated scan's arguments travel as tuples (numba passes them by value):
#   exact  = (x, yts, args, root, cmax): the exact scores (``args``: the metric's, with
#            kyy in the scan's column order), costs capped at cmax
#   cols   = (off, gmax, col_of): the offsets in the scan's column order, their largest
#            per block, and each position's column in the caller's numbers
#   rows   = (prow, theta, gate, end, dst): per sorted row, its row of x, θ, the gate,
#            its prefix end and its row of the outputs
#   screen = :func:`_screen_args` (the float32 copies; its first item says whether on)
#   out    = (out_min, out_cnt, out_idx, out_val)
#   bufs   = :func:`_scan_buffers` (one thread's scratch)
@nb.njit(inline="always")
def _exact_scores(exact, acc, i, t0, w):
    """acc[:w] = the exact scores of row i of x against columns t0..t0 + w."""
    x, yts, args, _, _ = exact
    metric, degree, kxx, kyy, tflat, toff, tsize = args
    _scores(acc, x[i], yts, t0, w, metric, degree, kxx[i], kyy, tflat, toff, tsize)


@nb.njit(cache=True, fastmath=FMA)
def _block_hits(screen, rows, bufs, nps, t0, wfull):
    """For the rows p = ps[r] (r < nps) of the gated scan: a32[r, q] = the float32 score of
    row prow[p] against column t0 + q (q < min(wfull, end[p] − t0)), two rows per load of
    the block (:func:`~.tiles32.scores32x2`, fused multiply-adds), and flag[r] = whether
    some column may pass (:func:`_maybe32` with the row's th32, gt32, err; a sum of the
    tests, which vectorizes where a boolean or does not). Not inlined, so that only these
    float32 scores are contracted, never the scan's exact ones. a32 has a spare last row
    (an odd last row is scored twice, into it)."""
    xm2, nx32, yt32, ny32, off32 = screen[1], screen[2], screen[4], screen[5], screen[7]
    prow, end = rows[0], rows[3]
    _, a32, ps, th32, gt32, e32, flag = bufs[:7]
    never = np.full(a32.shape[1], -np.inf, np.float32)
    for r in range(0, nps, 2):
        r2 = r + 1 if r + 1 < nps else a32.shape[0] - 1
        p = ps[r]
        p2 = ps[r + 1] if r + 1 < nps else p
        w = min(wfull, end[p] - t0)
        w2 = min(wfull, end[p2] - t0)
        wm = max(w, w2)
        i, i2 = prow[p], prow[p2]
        scores32x2(a32[r, :wm], a32[r2, :wm], xm2[i], xm2[i2], nx32[i], nx32[i2],
                   ny32[t0:t0 + wm], yt32, t0, wm, -np.inf, -np.inf, never[:wm])
        for rr, ww in ((r, w), (r2, w2)):
            a = a32[rr, :ww]
            ob = off32[t0:t0 + ww]
            th, gt, e = th32[rr], gt32[rr], e32[rr]
            cnt = 0
            for q in range(ww):
                cnt += _maybe32(a[q], ob[q], th, gt, e)
            flag[rr] = cnt > 0


@nb.njit(inline="always")
def _keep(r, th, j, best, cnt, vals, idxs):
    """Count r < θ, keep the minimum and the len(vals) smallest (r, j)."""
    if r < th:
        cnt += 1
        if r < best:
            best = r
        if vals.shape[0] > 0 and r < vals[-1]:
            insert_sorted(vals, idxs, r, j)
    return best, cnt


@nb.njit(inline="always")
def _out_row(p, rows, out):
    """Row p's results so far in the gated scan's outputs (row dst[p]): (dst[p], the
    running minimum, the count, and the kept values and columns, views to fill)."""
    out_min, out_cnt, out_idx, out_val = out
    dp = rows[4][p]
    return dp, out_min[dp], out_cnt[dp], out_val[dp], out_idx[dp]


@nb.njit(inline="always")
def _exact_keep(exact, acc, i, col, o, gt, th, best, cnt, vals, idxs):
    """A column the float32 pre-test let through, checked exactly: when its offset o
    passes the gate and its cost ≤ cmax, r = cost − o is kept (:func:`_keep`). Returns
    (best, cnt)."""
    if o > gt:
        _exact_scores(exact, acc, i, col, 1)
        c_ = _cost(acc[0], exact[3])
        if c_ <= exact[4]:
            best, cnt = _keep(c_ - o, th, col, best, cnt, vals, idxs)
    return best, cnt


@nb.njit(cache=True)
def _register_hits(exact, cols, rows, screen, out, bufs, nps, t0, wfull):
    """The gated scan's block of columns t0..t0 + wfull for its rows ps[0..nps) with the
    register-blocked pre-test (:func:`.vec32.block_maybe`, 32 columns at a time), then the
    exact scores of the columns that may pass, in increasing order per row."""
    M, x_reg, yt_reg, ny_reg, off_reg, nx32 = (screen[10], screen[11], screen[12],
                                               screen[13], screen[14], screen[2])
    acc, _, ps, th32, gt32, e32, _, rr, endc, hr, hm = bufs
    off = cols[0]
    theta, gate = rows[1], rows[2]
    for j0 in range(t0, t0 + wfull, vec32.BLOCK):
        nh = vec32.block_maybe(M, x_reg, nx32, rr, nps, th32, gt32, e32, endc, yt_reg,
                               ny_reg, off_reg, j0, hr, hm)
        for h in range(nh):
            r = hr[h]
            mask = hm[h]
            p = ps[r]
            gt = gate[p]
            th = theta[p]
            dp, best, cnt, vals, idxs = _out_row(p, rows, out)
            for q in range(vec32.BLOCK):
                if (mask >> q) & 1:
                    best, cnt = _exact_keep(exact, acc, rr[r], j0 + q, off[j0 + q], gt, th,
                                            best, cnt, vals, idxs)
            out[0][dp] = best
            out[1][dp] = cnt


@nb.njit(inline="always")
def _loop_hits(exact, cols, rows, screen, out, bufs, nps, t0, wfull, hit_sub):
    """The gated scan's block for its rows ps[0..nps) with the loop kernel's float32
    pre-test (:func:`_block_hits`), then the exact scores of the columns that may pass:
    hits are rare, so those columns are found by counts over sub-blocks of ``hit_sub``
    columns (which vectorize), in increasing order per row."""
    acc, a32, ps, th32, gt32, e32, flag = bufs[:7]
    off32 = screen[7]
    off = cols[0]
    prow, theta, gate, end, _ = rows
    _block_hits(screen, rows, bufs, nps, t0, wfull)
    for r in range(nps):
        if not flag[r]:
            continue
        p = ps[r]
        i = prow[p]
        w = min(wfull, end[p] - t0)
        dp, best, cnt, vals, idxs = _out_row(p, rows, out)
        for q0 in range(0, w, hit_sub):
            q1 = min(q0 + hit_sub, w)
            a = a32[r, q0:q1]
            ob32 = off32[t0 + q0:t0 + q1]
            m = 0
            for q in range(q1 - q0):
                m += _maybe32(a[q], ob32[q], th32[r], gt32[r], e32[r])
            q = q0
            while m > 0:
                if _maybe32(a32[r, q], off32[t0 + q], th32[r], gt32[r], e32[r]):
                    m -= 1
                    best, cnt = _exact_keep(exact, acc, i, t0 + q, off[t0 + q], gate[p],
                                            theta[p], best, cnt, vals, idxs)
                q += 1
        out[0][dp] = best
        out[1][dp] = cnt


@nb.njit(inline="always")
def _pretest_terms(rows, screen, bufs, lo, hi, g, b, t0, wfull):
    """The float32 pre-test's terms of block b (columns from t0) for the rows lo..hi
    whose gate its largest offset ``g`` passes, into ``bufs``: the rows (ps), θ rounded
    up, the gate one float32 step down, the error bound, their rows of x and their ends
    (see :func:`_maybe32`). Returns how many rows."""
    prow, theta, gate, end, _ = rows
    nx64, nymax, omax, cerr = screen[3], screen[6], screen[8], screen[9]
    _, _, ps, th32, gt32, e32, _, rr, endc, _, _ = bufs
    nps = 0
    for p in range(lo, hi):
        if g <= gate[p]:
            continue
        ps[nps] = p
        th32[nps] = np.float32(theta[p] + 2.0**-20 * (abs(theta[p]) + omax[b]))
        gt32[nps] = np.nextafter(np.float32(gate[p]), np.float32(-np.inf))
        e32[nps] = np.float32(cerr * (nx64[prow[p]] + nymax[b]) * (1.0 + 1e-4))
        rr[nps] = prow[p]
        endc[nps] = t0 + min(wfull, end[p] - t0)
        nps += 1
    return nps


@nb.njit(inline="always")
def _block64(exact, cols, rows, out, acc, lo, hi, g, t0, wfull):
    """The gated scan's block of columns from t0 for rows lo..hi in float64: each row
    whose gate the block's largest offset ``g`` passes is scored exactly, tested without
    √ and branches (:func:`_any_below`), and only a block that may hold a pair is kept
    column by column."""
    root = exact[3]
    off = cols[0]
    prow, theta, gate, end, _ = rows
    for p in range(lo, hi):
        gt = gate[p]
        if g <= gt:
            continue
        w = min(wfull, end[p] - t0)
        th = theta[p]
        ob = off[t0:t0 + w]
        dp, best, cnt, vals, idxs = _out_row(p, rows, out)
        _exact_scores(exact, acc, prow[p], t0, w)
        if not _any_below(acc, ob, th, gt, root):
            continue
        for q in range(w):
            o = ob[q]
            c_ = _cost(acc[q], root)
            if o > gt and c_ <= exact[4]:
                best, cnt = _keep(c_ - o, th, t0 + q, best, cnt, vals, idxs)
        out[0][dp] = best
        out[1][dp] = cnt


@nb.njit(inline="always")
def _scan_buffers(chunks, t, T, blk):
    """Thread t's scratch for the gated scan: exact scores of a block, then for the
    rows sharing a block (the most in one of its chunks, and a spare row) their float32
    scores, pre-test terms (:func:`_pretest_terms`), flags and hits."""
    mx = 1
    for c in range(t, chunks.shape[0] - 1, T):
        mx = max(mx, chunks[c + 1] - chunks[c])
    return (np.empty(blk), np.empty((mx + 1, blk), np.float32), np.empty(mx, np.int64),
            np.empty(mx + 1, np.float32), np.empty(mx + 1, np.float32),
            np.empty(mx + 1, np.float32), np.zeros(mx + 1, np.bool_),
            np.empty(mx + 1, np.int64), np.empty(mx + 1, np.int64),
            np.empty(mx + 1, np.int64), np.empty(mx + 1, np.uint32))


@nb.njit(inline="always")
def _scan_chunk(exact, cols, rows, screen, out, bufs, lo, hi, sizes):
    """One chunk of rows lo..hi (sorted by end, descending) of the gated scan: its
    outputs reset, each block of columns scored against every row that needs it
    (float32 pre-test with ``screen``, else float64), then the kept columns mapped to the
    caller's numbers."""
    blk, hit_sub = sizes[0], sizes[1]
    off, gmax, col_of = cols
    theta, end, dst = rows[1], rows[3], rows[4]
    out_min, out_cnt, out_idx, out_val = out
    for p in range(lo, hi):
        dp = dst[p]
        out_val[dp, :] = np.inf
        out_idx[dp, :] = -1
        out_min[dp] = theta[p]
        out_cnt[dp] = 0
    na = hi - lo
    nblk = (end[lo] + blk - 1) // blk if na > 0 else 0
    for b in range(nblk):
        t0 = b * blk
        while na > 0 and end[lo + na - 1] <= t0:
            na -= 1
        if na == 0:
            break
        wfull = min(blk, off.shape[0] - t0)
        if not screen[0]:
            _block64(exact, cols, rows, out, bufs[0], lo, lo + na, gmax[b], t0, wfull)
            continue
        nps = _pretest_terms(rows, screen, bufs, lo, lo + na, gmax[b], b, t0, wfull)
        if nps > 0 and screen[10] > 0:
            _register_hits(exact, cols, rows, screen, out, bufs, nps, t0, wfull)
        elif nps > 0:
            _loop_hits(exact, cols, rows, screen, out, bufs, nps, t0, wfull, hit_sub)
    # the chunk's rows are final: their columns in the caller's numbers
    for p in range(lo, hi):
        dp = dst[p]
        for q in range(out_idx.shape[1]):
            j = out_idx[dp, q]
            if j >= 0:
                out_idx[dp, q] = col_of[j]


@nb.njit(parallel=True, cache=True)
def _scan_gated(exact, cols, rows, screen, chunks, sizes, out_min, out_cnt, out_idx,
                out_val):
    """Columns sorted by key ascending (``yts``, ``kyy``, ``off`` in that order; the
    tuples are described above :func:`_exact_scores`). For each listed row i = prow[p],
    over the columns j < end[p] (those with key_j < θ_p) with off_j > gate_p (minus the
    blocks whose largest off_j fails the gate): r_j = cost(x_i, y_j) − off_j where
    cost ≤ cmax. out_cnt = #{r_j < θ_p}; out_min = min(θ_p, min r_j); out_idx/out_val =
    the smallest r_j < θ_p, ascending. Results go to row dst[p] of the outputs (the
    caller's order), columns as ``col_of[position in the sorted order]`` (the caller's
    numbers): no copies of the outputs afterwards. The outputs are arguments of their own
    (numba loses a parallel loop's writes to arrays unpacked from a tuple argument).

    Tiled: the rows come sorted by end (descending) in chunks ``chunks[c]..chunks[c+1]``;
    a block of columns (``sizes`` = (columns per block, columns per hit sub-block,
    threads): :class:`~..tuning.MatchingTuning`'s gate_block, hit_sub) is scored against
    every row of the chunk that needs it before the next block is read (a gain with the
    float32 screen, none in float64, whose exact scoring is compute-bound). A block is
    first tested without √ and branches (:func:`_any_below`) or, with the screen
    (Euclidean cost), from float32 scores with a rigorous error bound (:func:`_maybe32`;
    ``cerr``·(‖x‖² + max ‖y‖² of the block), the bound of
    :func:`~..nearest.faiss_screen.lower_bound`); only a block that may hold a pair is
    scored exactly (with the screen only its columns that may pass). Hits are rare (a
    few per row), so the pre-test is the cost. Each row sees its columns in increasing
    order, as a row-by-row scan would: the results are the same for any block size.
    With M > 0 (files of up to 16 attributes) the float32 pre-test runs on the
    register-blocked kernel of :mod:`.vec32` (copies padded to M attributes and whole
    blocks), 32 columns at a time: the same float32 scores and tests, so the same
    columns are scored exactly, in the same order per row."""
    # a parfor takes arrays and scalars, not tuples holding arrays: unpacked here, and
    # packed again in the loop
    x, yts, args, root, cmax = exact
    metric, degree, kxx, kyy, tflat, toff, tsize = args
    off, gmax, col_of = cols
    prow, theta, gate, end, dst = rows
    (s32, xm2, nx32, nx64, yt32, ny32, nymax, off32, omax, cerr, M, x_reg, yt_reg, ny_reg,
     off_reg) = screen
    nch = chunks.shape[0] - 1
    T = min(sizes[2], max(nch, 1))
    for t in nb.prange(T):
        bufs = _scan_buffers(chunks, t, T, sizes[0])
        ex = (x, yts, (metric, degree, kxx, kyy, tflat, toff, tsize), root, cmax)
        scr = (s32, xm2, nx32, nx64, yt32, ny32, nymax, off32, omax, cerr, M, x_reg, yt_reg,
               ny_reg, off_reg)
        # chunks are sorted by work: thread t takes every T-th one
        for c in range(t, nch, T):
            _scan_chunk(ex, (off, gmax, col_of), (prow, theta, gate, end, dst), scr,
                        (out_min, out_cnt, out_idx, out_val), bufs, chunks[c], chunks[c + 1],
                        sizes)


@dataclass
class Scan:
    """Result of :func:`scan_gated` for the listed rows."""

    rows: np.ndarray
    min: np.ndarray      # min(θ_i, min_j cost(x_i, y_j) − off_j) over the scanned columns
    count: np.ndarray    # #{scanned j : cost − off_j < θ_i}
    idx: np.ndarray      # (len(rows), cap) the smallest such j, ascending by value (−1: none)
    val: np.ndarray      # their cost − off_j


_F32_2D, _F32_1D = np.empty((0, 0), np.float32), np.empty(0, np.float32)
#: the screen's tuple when it is off (the types of :func:`_screen_args`')
_NO_SCREEN = (False, _F32_2D, _F32_1D, np.empty(0), _F32_2D, _F32_1D, np.empty(0), _F32_1D,
              np.empty(0), 0.0, 0, _F32_2D, _F32_2D, _F32_1D, _F32_1D)
#: the certificate scan's float32 pre-test on the register-blocked kernel of :mod:`.vec32`
#: (files of up to 16 attributes; the loop kernel otherwise)
SCAN_REGISTER = True


def _screen_args(pw: Pairwise, yts: np.ndarray, off: np.ndarray, starts: np.ndarray
                 ) -> tuple:
    """The float32 copies of the scan's screen (columns in the scan's order): rows
    pre-scaled by −2 (exact), float32 norms, float64 norms of the rows and the largest per
    block of columns, the offsets in float32 and the largest |off| per block, the error
    constant c = 4(m+3)·2⁻²³ of :func:`~..nearest.faiss_screen.lower_bound`, and for the
    register kernel M and the copies padded to M attributes (the loop kernel's then
    empty; M = 0: the loop kernel)."""
    x32 = pw.x.astype(np.float32)
    yt32 = yts.astype(np.float32)
    nx32 = np.einsum("ij,ij->i", x32, x32).astype(np.float32)
    ny32 = np.einsum("ij,ij->j", yt32, yt32).astype(np.float32)
    nymax = np.maximum.reduceat(np.einsum("ij,ij->j", yts, yts), starts)
    cerr = error_constant(pw.x.shape[1])
    with np.errstate(over="ignore"):  # |off| beyond float32: inf, a block that always hits
        off32 = off.astype(np.float32)
    omax = np.maximum.reduceat(np.abs(off), starts)
    M = vec32.width_for(pw.x.shape[1]) if SCAN_REGISTER else 0
    xm2 = -2.0 * x32
    x_reg, yt_reg, ny_reg, off_reg = _F32_2D, _F32_2D, _F32_1D, _F32_1D
    if M:
        x_reg = vec32.pad_rows(xm2, M)
        yt_reg, ny_reg, off_reg = vec32.pad_columns(yt32, ny32, off32, M)
        xm2, yt32 = _F32_2D, _F32_2D
    return (True, xm2, nx32, np.einsum("ij,ij->i", pw.x, pw.x), yt32, ny32, nymax,
            off32, omax, cerr, M, x_reg, yt_reg, ny_reg, off_reg)


def _by_prefix(rows: np.ndarray, key: np.ndarray, theta: np.ndarray, gate: np.ndarray
               ) -> tuple[np.ndarray, tuple]:
    """The scan's column order (key ascending, NaN keys — inf − inf, which never pass
    key < θ — last) and its rows tuple (see :func:`_exact_scores`): rows by prefix length
    (key_j < θ_i), longest first, each with its row of the outputs (the caller's order)."""
    key = np.where(np.isnan(key), np.inf, key)
    order = np.argsort(key, kind="stable")
    end = np.searchsorted(np.ascontiguousarray(key[order]), theta)
    order_p = np.argsort(-end, kind="stable")
    return order, (rows[order_p], theta[order_p], gate[order_p],
                   np.ascontiguousarray(end[order_p]),
                   np.ascontiguousarray(order_p, dtype=np.int64))


def _row_parts(s_end: np.ndarray, n: int, rows_per_tile: int, blk: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Chunks of ``rows_per_tile`` sorted rows, and Python-level parts of about equal
    work (a prefix length each) made of whole chunks, for progress reports: (chunk
    starts and n, part bounds as chunk numbers)."""
    chunks = np.append(np.arange(0, n, max(int(rows_per_tile), 1)), n)
    work = np.cumsum(s_end[chunks[:-1]] + blk, dtype=np.float64)
    cut = np.searchsorted(work, np.linspace(0, work[-1], 33)[1:-1]) if n else []
    bounds = np.unique(np.concatenate([[0], cut, [chunks.shape[0] - 1]])).astype(np.int64)
    return chunks, bounds


def scan_gated(pw: Pairwise, rows: np.ndarray, off: np.ndarray, key: np.ndarray,
               theta: np.ndarray, gate: np.ndarray, *, cmax: float = np.inf, cap: int = 8,
               screened: bool = False, rows_per_tile: int | None = None,
               progress: Progress | None = None) -> tuple[Scan, np.ndarray]:
    """The pairs of the listed rows with r_ij = c(x_i, y_j) − off_j < θ_i (cost ≤ ``cmax``),
    looking only at the columns with key_j < θ_i and off_j > gate_i — the caller's proof
    that no other column can have r_ij < θ_i (the certificate: key = β − v, off = v,
    θ_i = u_i − tol, gate_i = α_i − u_i + tol, see :func:`~.solver._suspects`).

    Columns are sorted by key once, so each row scans a prefix in blocks of
    :func:`~..tuning.matching`'s ``gate_block``, skipping blocks where no off_j passes the
    gate: the work is the number of such pairs, not n_rows × n_cols (a fraction of the
    full scan). Rows with similar prefixes share each block while it is in cache, and a
    block is pre-tested before any pair is scored exactly. Returns (scan, nxt):
    ``scan.min`` = min(θ_i, min r_ij) — a lower bound of r_ij over *all* columns under the
    caller's proof — ``scan.count`` and the (up to ``cap``) smallest r_ij < θ_i; ``nxt`` a
    lower bound of r_ij over the columns not in ``scan.idx``. ``screened`` (Euclidean cost
    only): blocks are pre-tested in float32 (same results, see :func:`_scan_gated`);
    ``rows_per_tile``: rows sharing each block (default the tuning's ``scan_rows``;
    1 = row by row; for benchmarks)."""
    if screened and not (pw.code == 0 and pw.root):
        raise LinkriskError("the float32 screen covers the Euclidean cost only")
    tune = tuning.matching(pw.x.shape[1])
    blk = tune.gate_block
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    n, n_y = rows.shape[0], pw.y.shape[0]
    theta = np.ascontiguousarray(np.broadcast_to(theta, (n,)), dtype=np.float64)
    gate = np.ascontiguousarray(np.broadcast_to(gate, (n,)), dtype=np.float64)
    off = np.asarray(off, dtype=np.float64)
    order, srows = _by_prefix(rows, np.asarray(key, dtype=np.float64), theta, gate)
    off_s = np.ascontiguousarray(off[order])
    yts = np.take(pw.cols, order, axis=1)  # a C-ordered copy (faster than yt[:, order])
    args = pw.args[:3] + (np.ascontiguousarray(pw.kyy[order]),) + pw.args[4:]
    starts = np.arange(0, n_y, blk)
    exact = (pw.x, yts, args, pw.root, float(cmax))
    cols = (off_s, np.maximum.reduceat(off_s, starts), order)
    screen = _screen_args(pw, yts, off_s, starts) if screened else _NO_SCREEN
    # in the caller's row order (the kernel writes row order_p[p] for sorted row p)
    mins, cnt = np.empty(n), np.empty(n, np.int64)
    idx, val = np.empty((n, cap + 1), np.int64), np.empty((n, cap + 1))
    out = (mins, cnt, idx, val)
    chunks, bounds = _row_parts(srows[3], n, rows_per_tile or tune.scan_rows, blk)
    sizes = (blk, tune.hit_sub, nb.get_num_threads())
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        ch = chunks[a:b + 1]
        lo, hi = ch[0], ch[-1]
        part = tuple(r[lo:hi] for r in srows)
        _scan_gated(exact, cols, part, screen, ch - lo, sizes, *out)
        if progress is not None:
            progress(int(hi), n)
    nxt = np.where(cnt > cap, val[:, cap], theta)
    return Scan(rows, mins, cnt, idx[:, :cap], val[:, :cap]), nxt


@nb.njit(parallel=True, cache=True)
def _within(x, yt, args, root, thr, strict, sizes, start, out_idx, out_cost):
    """The columns j with cost(x_i, y_j) < thr_i (``strict``) or ≤ thr_i, per row in
    ascending order: counted (start[i] += their number) when ``out_idx`` is empty, else
    written from position start[i] of ``out_idx``/``out_cost`` (the CSR fill, start =
    the row pointers, advanced). ``sizes`` = (tile, chunk)."""
    metric, degree, kxx, kyy, tflat, toff, tsize = args
    tile, chunk = sizes
    fill = out_idx.shape[0] > 0
    n = x.shape[0]
    n_y = yt.shape[1]
    for c in nb.prange((n + chunk - 1) // chunk):
        lo = c * chunk
        hi = min(lo + chunk, n)
        acc = np.empty(tile)
        for t0 in range(0, n_y, tile):
            w = min(tile, n_y - t0)
            for i in range(lo, hi):
                _scores(acc, x[i], yt, t0, w, metric, degree, kxx[i], kyy, tflat, toff,
                        tsize)
                th = thr[i]
                p = start[i]
                for q in range(w):
                    c_ = _cost(acc[q], root)
                    if c_ < th or (not strict and c_ == th):
                        if fill:
                            out_idx[p] = t0 + q
                            out_cost[p] = c_
                        p += 1
                start[i] = p


def count_within(pw: Pairwise, thr: np.ndarray, *, strict: bool = False) -> np.ndarray:
    """Per x row, the number of y rows at cost < thr_i (``strict``) or ≤ thr_i."""
    n = pw.x.shape[0]
    thr = np.ascontiguousarray(np.broadcast_to(thr, (n,)), dtype=np.float64)
    out = np.zeros(n, np.int64)
    _within(pw.x, pw.cols, pw.args, pw.root, thr, bool(strict), (pw.tile, 16), out,
            np.empty(0, np.int64), np.empty(0))
    return out


def within_graph(pw: Pairwise, thr: np.ndarray, *, max_edges: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The explicit graph {(i, j) : cost(x_i, y_j) ≤ thr_i} as CSR (indptr, indices,
    costs), columns ascending. Two passes (count, fill). ``max_edges``: raise instead of
    allocating a larger graph."""
    n = pw.x.shape[0]
    thr = np.ascontiguousarray(np.broadcast_to(thr, (n,)), dtype=np.float64)
    cnt = count_within(pw, thr)
    total = int(cnt.sum())
    if max_edges is not None and total > max_edges:
        raise LinkriskError(f"the restricted graph has {total} edges, more than the memory "
                            f"budget allows ({max_edges}); lower delta, use approx='agdbrl2' "
                            "or raise memory_budget")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(cnt, out=indptr[1:])
    idx = np.empty(total, np.int64)
    cost = np.empty(total)
    _within(pw.x, pw.cols, pw.args, pw.root, thr, False, (pw.tile, 16), indptr[:-1].copy(),
            idx, cost)
    return indptr, idx, cost


@nb.njit(parallel=True, cache=True)
def _kth_cost(x, yt, metric, degree, kxx, kyy, tflat, toff, tsize, root, kk, out):
    """out[i] = the kk[i]-th smallest cost of row i (1-based), by selection on the row."""
    n = x.shape[0]
    n_y = yt.shape[1]
    for i in nb.prange(n):
        row = np.empty(n_y)
        _scores(row, x[i], yt, 0, n_y, metric, degree, kxx[i], kyy, tflat, toff, tsize)
        for q in range(n_y):
            row[q] = _cost(row[q], root)
        out[i] = np.partition(row, kk[i] - 1)[kk[i] - 1]


def kth_cost(pw: Pairwise, kk: np.ndarray) -> np.ndarray:
    """Per x row, its kk_i-th smallest cost among all y (1 ≤ kk_i ≤ n_y)."""
    n, n_y = pw.x.shape[0], pw.y.shape[0]
    kk = np.clip(np.broadcast_to(np.asarray(kk, np.int64), (n,)), 1, n_y)
    out = np.empty(n)
    _kth_cost(pw.x, pw.cols, *pw.args, pw.root, np.ascontiguousarray(kk), out)
    return out


@nb.njit(parallel=True, cache=True)
def _pair_costs(x, yt, metric, degree, kxx, kyy, tflat, toff, tsize, root, ia, ib, out):
    for p in nb.prange(ia.shape[0]):
        acc = np.empty(1)
        i, j = ia[p], ib[p]
        if i < 0 or j < 0:
            out[p] = np.inf
            continue
        _scores(acc, x[i], yt, j, 1, metric, degree, kxx[i], kyy, tflat, toff, tsize)
        out[p] = _cost(acc[0], root)


@nb.njit(inline="always")
def prefetch_row(yflat, j, m):
    """Ask for row j of the row-major (·, m) matrix ``yflat`` (flattened): its first and
    last values, the one or two cache lines it spans (a hint: no value changes)."""
    prefetch(yflat, j * m)
    prefetch(yflat, j * m + m - 1)


@nb.njit(parallel=True, cache=True)
def _pair_costs_sq(x, y, yflat, root, ia, ib, ahead, out):
    """:func:`_pair_costs` for the squared Euclidean score, from the row-major ``y`` (one
    or two cache lines a partner instead of one per attribute in ``yt``), the partner
    ``ahead`` pairs on prefetched (:func:`~..tuning.matching`; 0: none): the same sum in
    the same order (0 + d₀², then + d_k² for k = 1…m−1, no fused multiply-add), so the
    same bits (test)."""
    m = x.shape[1]
    n = ia.shape[0]
    for p in nb.prange(n):
        q = p + ahead
        if ahead > 0 and q < n and ib[q] >= 0:
            prefetch_row(yflat, ib[q], m)
        i, j = ia[p], ib[p]
        if i < 0 or j < 0:
            out[p] = np.inf
            continue
        s = 0.0
        for k in range(m):
            d = x[i, k] - y[j, k]
            s += d * d
        out[p] = _cost(s, root)


def pair_costs(pw: Pairwise, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Costs of the listed pairs (x[ia[p]], y[ib[p]]), same bits as the scans; +inf where an
    index is −1. Squared Euclidean pairs are scored from the row-major ``y``: each pair
    reads one contiguous row instead of one value per attribute row."""
    ia = np.ascontiguousarray(ia, dtype=np.int64)
    ib = np.ascontiguousarray(ib, dtype=np.int64)
    out = np.empty(ia.shape[0])
    if pw.code == SQEUCLIDEAN:
        _pair_costs_sq(pw.x, pw.y, pw.y.reshape(-1), pw.root, ia, ib,
                       tuning.matching(pw.x.shape[1]).ahead, out)
    else:
        _pair_costs(pw.x, pw.cols, *pw.args, pw.root, ia, ib, out)
    return out


@nb.njit(parallel=True, cache=True)
def _dense(x, yt, metric, degree, kxx, kyy, tflat, toff, tsize, root, out):
    n = x.shape[0]
    n_y = yt.shape[1]
    for i in nb.prange(n):
        row = out[i]
        _scores(row, x[i], yt, 0, n_y, metric, degree, kxx[i], kyy, tflat, toff, tsize)
        for q in range(n_y):
            row[q] = _cost(row[q], root)


@nb.njit(parallel=True, cache=True)
def _dense_reference(x, yt, metric, degree, kxx, kyy, tflat, toff, tsize, root, out):
    n = x.shape[0]
    n_y = yt.shape[1]
    for i in nb.prange(n):
        row = out[i]
        tile_scores(row, x[i], yt, 0, n_y, metric, degree, kxx[i], kyy, tflat, toff, tsize)
        for q in range(n_y):
            row[q] = _cost(row[q], root)


def dense_costs(pw: Pairwise, *, reference: bool = False) -> np.ndarray:
    """The full n_x × n_y cost matrix (small problems only). ``reference``: computed with
    the shared :func:`~.kernels.tile_scores` itself (to check that the kernels here give
    the same bits)."""
    out = np.empty((pw.x.shape[0], pw.y.shape[0]))
    (_dense_reference if reference else _dense)(pw.x, pw.cols, *pw.args, pw.root, out)
    return out
