"""Float32-screened k-NN lists for the global attack (Euclidean).

The certified matching (:mod:`.matching`) needs one full pass over A × B: the k-NN lists
that make the candidate graph and bound every pair outside it (the certificate then
looks only at the pairs those bounds cannot clear). In float64 that pass dominates the
whole solve at large n (10¹² pairs at n = 10⁶). The lists do not need float64 for every
pair, only valid *bounds*: the graph may be any set of pairs with exact costs, and a pair
outside i's list only needs a lower bound α_i on its cost. A fused float32 kernel (13
inner products per pair, vectorized over a cache-resident tile of B, the score
‖b‖² + ‖a‖² + Σ_k (−2a_k)·b_k accumulated from the norms) keeps each row's K smallest float32 scores in both directions; the
list entries are then re-scored in float64 with the engine's arithmetic
(:func:`~.knn.pair_costs`) and sorted by (exact cost, index). Every pair left out of i's
list had a float32 score ≥ the final K-th one D_i, so its exact squared distance is
≥ L(D_i) (:func:`~..nearest.faiss_screen.lower_bound`: |float32 − exact| ≤ c(‖a‖² + ‖b‖²), c = 4(m+3)·2⁻²³)
and α_i = √L(D_i). The bound holds for this summation order as for faiss's, with or without fused
multiply-adds: rounding the
inputs costs ≤ 2·2⁻²⁴ relative per product and 2⁻²⁴·m per norm, and summing the m + 2
terms ≤ γ_{m+2}·Σ|terms| ≤ (m+2)·2⁻²³(‖a‖² + ‖b‖²), since 2Σ|a_k b_k| ≤ ‖a‖² + ‖b‖²;
in all ≈ (1.5m + 4)·2⁻²³(‖a‖² + ‖b‖²) < c(‖a‖² + ‖b‖²).

The threshold pass and its samples score with the register-blocked kernels of
:mod:`.vec32` (the same float32 values, twice the pairs per second) when the files have at
most 16 attributes.

The solver uses :func:`knn_thresholds`, the same scores without sorted lists: each record
gets a threshold from the minima of its scores over groups of a sample of the other file,
one pass logs every pair below its row's or its column's threshold, and the logs become
the lists (re-scored exactly, sorted, cut to the width); the same bound applies to the
pairs never logged.

Nothing of size n_a × n_b is stored. Only the ``sqeuclidean`` metric with ``root`` (the
Euclidean cost of gdbrl) is screened; other metrics use the exact kernels of :mod:`.knn`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numba as nb
import numpy as np

from .. import tuning
from ..nearest.faiss_screen import error_constant, lower_bound
from ..nearest.kernels import Pairwise
from ..nearest.rules import Progress
from . import band, vec32
from .knn import (
    KNN,
    merge_threads,
    offer,
    pair_costs,
    prefetch_row,
    reset_lists,
    row_blocks,
    store_lists,
    thread_rows,
)
from .tiles32 import FMA as _FMA
from .tiles32 import scores32x2 as _scores32x2

# B columns per tile and attacker rows per tile: :func:`~..tuning.matching` (``tile``,
# ``chunk``), from this processor's L1 and L2 (a tile's float32 attribute rows and the
# rows' accumulators stay in L1; more rows per tile: the release is re-read less often)
_F32 = np.float32
#: index type of the screened lists (files of up to 2³¹ − 1 records)
IDX = np.int32
#: list entries re-scored and sorted per block of rows (bounds the temporaries)
SORT_BLOCK = 1 << 20
#: columns per sub-block searched for log entries in a tile with a hit
SUB = 64


def applicable(pw: Pairwise) -> bool:
    """The screen covers the Euclidean cost (squared-Euclidean scores, square-rooted)."""
    return pw.code == 0 and pw.root


@nb.njit(parallel=True, cache=True, fastmath=_FMA)
def _knn32_pass(x, nx, lo, hi, yt, ny, tile, chunk, f_idx, f_sc, b_idx, b_sc, b_thr):
    """Rows lo..hi of x (pre-scaled by −2) against all of y in float32; forward lists for
    these rows, backward lists per thread (merged afterwards): :func:`~.knn._knn_pass`
    with float32 scores, two rows per load of a tile."""
    n_y = yt.shape[1]
    k = f_idx.shape[1]
    T = b_idx.shape[0]
    for t in nb.prange(T):
        r0, r1 = thread_rows(lo, hi, t, T)
        acc = np.empty(tile, np.float32)
        acc2 = np.empty(tile, np.float32)
        fi = np.empty((chunk, k), np.int32)
        fs = np.empty((chunk, k), np.float32)
        bi, bs, bth = b_idx[t], b_sc[t], b_thr[t]
        for c0 in range(r0, r1, chunk):
            nr = min(chunk, r1 - c0)
            reset_lists(fi, fs, nr)
            for t0 in range(0, n_y, tile):
                w = min(tile, n_y - t0)
                for r in range(0, nr, 2):
                    i = c0 + r
                    r2 = min(r + 1, nr - 1)  # an odd last row pairs with itself
                    hi_, hj = _scores32x2(acc[:w], acc2[:w], x[i], x[c0 + r2], nx[i],
                                          nx[c0 + r2], ny[t0:t0 + w], yt, t0, w,
                                          fs[r, k - 1], fs[r2, k - 1], bth[t0:t0 + w])
                    if hi_:
                        offer(acc, i, t0, w, fs[r], fi[r], bs, bi, bth)
                    if hj and r2 > r:
                        offer(acc2, i + 1, t0, w, fs[r2], fi[r2], bs, bi, bth)
            store_lists(fi, fs, f_idx, f_sc, c0, nr)


def _norms32(z32: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", z32, z32).astype(np.float32)


def _exact_sorted(pw: Pairwise, idx: np.ndarray, flip: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of list entries (row r, idx[r, q]), each list sorted by (score, index);
    missing entries (−1) get +inf and stay last. Row blocks of ``SORT_BLOCK`` entries keep
    the temporaries small (each list is sorted on its own, so the result is the same)."""
    n, k = idx.shape
    out_i = np.empty_like(idx)
    out_s = np.empty((n, k))
    if k == 0:
        return out_i, out_s
    pwf = pw.swapped() if flip else pw
    step = max(1, SORT_BLOCK // k)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        blk = idx[lo:hi]
        ia = np.repeat(np.arange(lo, hi), k)
        sc = pair_costs(pwf, ia, blk.ravel()).reshape(hi - lo, k)
        order = np.lexsort((np.where(blk < 0, np.iinfo(np.int64).max, blk), sc), axis=1)
        out_i[lo:hi] = np.take_along_axis(blk, order, 1)
        out_s[lo:hi] = np.take_along_axis(sc, order, 1)
    return out_i, out_s


def knn_screened(pw: Pairwise, k: int, kb: int | None = None, *,
                 progress: Progress | None = None, threads: int | None = None) -> KNN:
    """k-NN lists (both directions) for the squared-Euclidean score, screened in float32
    and re-scored exactly. The lists are sorted by (exact score, index) but are the k
    smallest *float32* scores, so they may differ from the exact k-NN lists at near ties;
    ``fwd_bound``/``bwd_bound`` are rigorous lower bounds of the exact score of every pair
    outside a list (+inf when the list holds every pair)."""
    n_x, n_y = pw.x.shape[0], pw.y.shape[0]
    k = int(min(max(k, 1), n_y))
    kb = int(min(k if kb is None else kb, n_x))
    T = int(threads or nb.get_num_threads())
    x32 = np.ascontiguousarray(pw.x, dtype=_F32)
    y32 = np.ascontiguousarray(pw.y, dtype=_F32)
    yt32 = np.ascontiguousarray(y32.T)
    nx, ny = _norms32(x32), _norms32(y32)
    xm2 = -2.0 * x32  # exact: a power-of-two scaling
    # int32 indices (IDX): half the memory of the lists and of their cache traffic
    f_idx = np.empty((n_x, k), IDX)
    f_sc = np.empty((n_x, k), _F32)
    b_idx = np.full((T, n_y, max(kb, 0)), -1, IDX)
    b_sc = np.full((T, n_y, max(kb, 0)), np.inf, _F32)
    b_thr = np.full((T, n_y), np.inf if kb > 0 else -np.inf, _F32)
    tune = tuning.matching(pw.x.shape[1])
    rows = row_blocks(n_x)
    for lo in range(0, n_x, rows):
        hi = min(lo + rows, n_x)
        _knn32_pass(xm2, nx, lo, hi, yt32, ny, tune.tile, tune.chunk, f_idx, f_sc, b_idx,
                    b_sc, b_thr)
        if progress is not None:
            progress(hi, n_x)
    if kb > 0:
        bi = np.empty((n_y, kb), IDX)
        bs32 = np.empty((n_y, kb), _F32)
        merge_threads(b_idx, b_sc, bi, bs32)
    else:
        bi, bs32 = np.empty((n_y, 0), IDX), np.empty((n_y, 0), _F32)
    del b_idx, b_sc
    sq = dataclasses.replace(pw, root=False)  # exact scores, not costs
    fi, fs = _exact_sorted(sq, f_idx, False)
    bi_, bs_ = _exact_sorted(sq, bi, True) if kb > 0 else (bi, np.empty((n_y, 0)))
    return KNN(fi, fs, bi_, bs_, _list_bound(f_idx, f_sc, pw.x, n_y),
               _list_bound(bi, bs32, pw.y, n_x) if kb > 0 else np.full(n_y, -np.inf))


def _list_bound(idx: np.ndarray, sc32: np.ndarray, z: np.ndarray, n_other: int
                ) -> np.ndarray:
    """Lower bound of the exact score of any pair outside the lists: L(K-th float32
    score), +inf when a list holds every pair (not full, or as long as the other file)."""
    if idx.shape[1] >= n_other:
        return np.full(idx.shape[0], np.inf)
    b = np.maximum(lower_bound(sc32[:, -1], z), 0.0)
    return np.where(idx[:, -1] < 0, np.inf, b)


# ---------------------------------------------------------------------------------------
# threshold lists: thresholds from a sample, one float32 pass, hits appended
# ---------------------------------------------------------------------------------------
#: a record's threshold is an order statistic of its smallest float32 scores against NG
#: disjoint groups of the other file's sample (group minima cost one vectorized min, where
#: a sorted k-best list re-scans every tile it enters); the QR-th smallest of NG minima
#: of groups of G records has on average about n/G·Σ_{q<QR} 1/(NG − q) records below it
NG = 8
QR = 4
#: log capacity per row of a block: LOG_FACTOR × the mean list length + LOG_FLOOR (a block
#: whose logs overflow is scored again with room for what it counted)
LOG_FACTOR = 3
LOG_FLOOR = 64
#: a record with fewer than this many partners below its threshold (the sample put it
#: low) gets its list from a full scan of its own: union graphs of the 8 nearest in both
#: directions have had perfect matchings, thinner ones not always
MIN_LIST = 8


@nb.njit(inline="always")
def _min_bits(a):
    """The smallest float32 of ``a`` compared as int32 bit patterns: the same order for
    non-negative floats, and a running integer minimum vectorizes where a float one does
    not here (a negative score, possible by rounding, gives some negative value)."""
    m = np.int32(2147483647)
    for q in range(a.shape[0]):
        v = a[q]
        m = v if v < m else m
    return m


@nb.njit(cache=True, fastmath=_FMA)
def _group_min_loop(x, nx, yt, ny, c0, nr, j0, j1, scratch):
    """mins[r] = min(itself, the smallest float32 score (as int32 bits, :func:`_min_bits`)
    of row c0 + r of x against columns j0..j1 of yt) for r < nr, with the loop kernel
    (:func:`~.tiles32.scores32x2`, two rows per load, in tiles). Not inlined: only these
    float32 scores are contracted."""
    acc, acc2, never, mins = scratch
    tile = acc.shape[0]
    ai = acc.view(np.int32)
    bi = acc2.view(np.int32)
    for t0 in range(j0, j1, tile):
        w = min(tile, j1 - t0)
        for r in range(0, nr, 2):
            i = c0 + r
            r2 = min(r + 1, nr - 1)  # an odd last row pairs with itself
            _scores32x2(acc[:w], acc2[:w], x[i], x[c0 + r2], nx[i], nx[c0 + r2],
                        ny[t0:t0 + w], yt, t0, w, -np.inf, -np.inf, never[:w])
            mins[r] = min(mins[r], _min_bits(ai[:w]))
            mins[r2] = min(mins[r2], _min_bits(bi[:w]))


@nb.njit(parallel=True, cache=True)
def _group_min_pass(M, x, nx, yt, ny, sizes, G, T, out):
    """out[i, g] = the smallest float32 score of row i of x (pre-scaled by −2) against
    columns g·G .. (g+1)·G − 1 of yt (the scores of :func:`_knn32_pass`) as int32 bits
    (:func:`_min_bits`), rows split among T threads, ``sizes`` = (tile, chunk). With M > 0
    the register-blocked kernel of :mod:`.vec32` scores (``x`` padded to M attributes;
    group g of ``yt`` (M, ng·G) is its records followed by padding columns of norm +inf,
    :func:`_sample_columns`), else the loop kernel: the same minima, bit for bit (the same
    float32 scores)."""
    tile, chunk = sizes
    n = x.shape[0]
    ng = out.shape[1]
    for t in nb.prange(T):
        r0, r1 = thread_rows(0, n, t, T)
        mins = np.empty(chunk, np.int32)
        # no column threshold (never): no hits
        scratch = (np.empty(tile, np.float32), np.empty(tile, np.float32),
                   np.full(tile, -np.inf, np.float32), mins)
        for c0 in range(r0, r1, chunk):
            nr = min(chunk, r1 - c0)
            for g in range(ng):
                mins[:nr] = 2147483647
                if M > 0:
                    for j0 in range(g * G, (g + 1) * G, vec32.BLOCK):
                        vec32.block_min_bits(M, x, nx, c0, c0 + nr, yt, ny, j0, mins)
                else:
                    _group_min_loop(x, nx, yt, ny, c0, nr, g * G, (g + 1) * G, scratch)
                for r in range(nr):
                    out[c0 + r, g] = mins[r]


def _sample_columns(st: np.ndarray, no: np.ndarray, G: int, ng: int, M: int
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """The sample's ng groups of G columns (``st`` (m, G·ng) transposed, norms ``no``) for
    the register kernel: M attributes (zeros added), each group padded to a whole number
    of 32-column blocks with columns of norm +inf (never a minimum). Returns (columns,
    norms, padded group width)."""
    B = vec32.BLOCK
    Gp = -(-G // B) * B
    yt = np.zeros((M, ng * Gp), np.float32)
    ny = np.full(ng * Gp, np.inf, np.float32)
    for g in range(ng):
        yt[:st.shape[0], g * Gp:g * Gp + G] = st[:, g * G:(g + 1) * G]
        ny[g * Gp:g * Gp + G] = no[g * G:(g + 1) * G]
    return yt, ny, Gp


@nb.njit(inline="always")
def _append(ii, jj, n, i, j):
    """Log (i, j) at slot n of (ii, jj) when it fits (past the capacity it is only
    counted: the caller re-runs with room); returns the next count."""
    if n < ii.shape[0]:
        ii[n] = i
        jj[n] = j
    return n + 1


@nb.njit(inline="always")
def _offer_thr(a, i, t0, btt, tau_i, logs, nf, nl):
    """Row i's float32 scores ``a`` against the tile of columns from t0 (some below a
    threshold): appended to the forward log (logs[0], logs[1]) when below i's threshold
    ``tau_i``, to the backward log (logs[2], logs[3]) when below the column's threshold
    ``btt[q]``. Hits are sparse: counted SUB columns at a time (a sum of comparisons over
    slices vectorizes) and looked for only where there are some. Returns the two log
    counts."""
    fi_, fj_, li_, lj_ = logs
    for q0 in range(0, a.shape[0], SUB):
        q1 = min(q0 + SUB, a.shape[0])
        aa = a[q0:q1]
        bb = btt[q0:q1]
        c = np.int32(0)
        for q in range(aa.shape[0]):
            c += (aa[q] < tau_i) + (aa[q] < bb[q])
        q = 0
        while c > 0:
            s = aa[q]
            if s < tau_i:
                nf = _append(fi_, fj_, nf, i, t0 + q0 + q)
                c -= 1
            if s < bb[q]:
                nl = _append(li_, lj_, nl, i, t0 + q0 + q)
                c -= 1
            q += 1
    return nf, nl


@nb.njit(inline="always")
def _chunk_band(px, tau_f, nx, c0, nr):
    """A chunk of rows' band summary (:func:`_band`): the interval of their projections,
    their largest threshold and their largest squared norm."""
    clo = np.inf
    chi = -np.inf
    ctm = -np.inf
    cn = 0.0
    for r in range(nr):
        clo = min(clo, px[c0 + r])
        chi = max(chi, px[c0 + r])
        ctm = max(ctm, np.float64(tau_f[c0 + r]))
        cn = max(cn, np.float64(nx[c0 + r]))
    return clo, chi, ctm, cn


@nb.njit(inline="always")
def _skips(tq, summary, bounds, cerr):
    """Whether rows with band ``summary`` (:func:`_chunk_band`) skip tile (or block) tq
    of ``bounds`` = (low, high, largest threshold, largest squared norm) per tile: their
    projections are g away from the tile's and g² − cerr·(the largest squared norms of
    both) exceeds every threshold of both (see :func:`_thr_pass`)."""
    clo, chi, ctm, cn = summary
    tlo, thi, ttm, tnm = bounds
    g = max(tlo[tq] - chi, clo - thi[tq])
    return g > 0.0 and g * g - cerr * (cn + tnm[tq]) > max(ctm, ttm[tq])


@nb.njit(inline="always")
def _rows_in_band(c0, nr, bq, rows_a, band_):
    """The rows ra..rb of the chunk c0..c0 + nr that block bq does not rule out: rows are
    in band order, so the far ones lie at the ends; one row skips a block when its
    projection is g away from the block's and g² − cerr·(both squared norms) exceeds its
    threshold and the block's largest (:func:`_skips`)."""
    _, nx, tau_f = rows_a
    px, blocks, cerr = band_
    ra = c0
    rb = c0 + nr
    while ra < rb and _skips(bq, (px[ra], px[ra], np.float64(tau_f[ra]),
                                  np.float64(nx[ra])), blocks, cerr):
        ra += 1
    while rb > ra and _skips(bq, (px[rb - 1], px[rb - 1], np.float64(tau_f[rb - 1]),
                                  np.float64(nx[rb - 1])), blocks, cerr):
        rb -= 1
    return ra, rb


@nb.njit(cache=True, fastmath=_FMA)
def _tile_loop(rows_a, cols_b, c0, nr, t0, w, scratch, logs, nf, nl):
    """The loop kernel (:func:`~.tiles32.scores32x2`, two rows per load of the tile) for
    rows c0..c0 + nr against the tile of w columns from t0, the hits logged
    (:func:`_offer_thr`). Not inlined: only these float32 scores are contracted.
    Returns the two log counts."""
    x, nx, tau_f = rows_a
    yt, ny, tau_b = cols_b
    a = scratch[0][:w]
    b = scratch[1][:w]
    nyt = ny[t0:t0 + w]
    btt = tau_b[t0:t0 + w]
    for r in range(0, nr, 2):
        i = c0 + r
        r2 = min(r + 1, nr - 1)  # an odd last row pairs with itself
        ki = tau_f[i]
        kj = tau_f[c0 + r2]
        hi_, hj = _scores32x2(a, b, x[i], x[c0 + r2], nx[i], nx[c0 + r2], nyt, yt, t0, w, ki,
                              kj, btt)
        if hi_:
            nf, nl = _offer_thr(a, i, t0, btt, ki, logs, nf, nl)
        if hj and r2 > r:
            nf, nl = _offer_thr(b, i + 1, t0, btt, kj, logs, nf, nl)
    return nf, nl


@nb.njit(cache=True)
def _tile_register(M, rows_a, cols_b, c0, nr, t0, w, bq0, band_, scratch, logs, counts):
    """The register-blocked kernel (:func:`.vec32.block_hits`, ``M`` attributes) for rows
    c0..c0 + nr against the tile of w columns from t0: each block of 32 columns is held
    in registers while the rows the band leaves (:func:`_rows_in_band`; ``bq0``: the
    tile's first block number) are scored against it; the rows with a hit come back with
    their masks, logged bit by bit (columns in increasing order). Returns the counts
    (forward log, backward log, pairs skipped). ``band_`` = (px, block bounds, cerr)."""
    x, nx, tau_f = rows_a
    yt, ny, tau_b = cols_b
    hit_rows, fm, bm = scratch[2], scratch[3], scratch[4]
    fi_, fj_, li_, lj_ = logs
    nf, nl, sk = counts
    B = vec32.BLOCK
    for j0 in range(t0, t0 + w, B):
        qmax = min(B, t0 + w - j0)  # a block past the tile's end: the next tile's
        ra, rb = _rows_in_band(c0, nr, bq0 + (j0 - t0) // B, rows_a, band_)
        sk += (nr - (rb - ra)) * qmax
        if ra == rb:
            continue
        nh = vec32.block_hits(M, x, nx, tau_f, ra, rb, yt, ny, tau_b, j0, hit_rows, fm, bm)
        for h in range(nh):
            i = np.int64(hit_rows[h])
            for q in range(qmax):
                if (fm[h] >> q) & 1:
                    nf = _append(fi_, fj_, nf, i, j0 + q)
                if (bm[h] >> q) & 1:
                    nl = _append(li_, lj_, nl, i, j0 + q)
    return nf, nl, sk


@nb.njit(parallel=True, cache=True)
def _thr_pass(M, rows_a, cols_b, lo, hi, n_y, sizes, band_, f_i, f_j, l_i, l_j, f_n, l_n,
              skipped):
    """Rows lo..hi of x against the n_y columns of y in float32 (the scores of
    :func:`_knn32_pass`): every score below its row's threshold is logged, every score
    below its column's threshold too. ``rows_a`` = (x pre-scaled by −2, float32 norms,
    thresholds τ_f); ``cols_b`` = (yᵀ, norms, thresholds τ_b); ``sizes`` = (tile, chunk);
    the logs (f_i, f_j), (l_i, l_j) and their counts f_n, l_n and the pairs skipped, per
    thread (arrays the kernel writes are arguments of their own: numba loses a parallel
    loop's writes to arrays unpacked from a tuple argument). A thread meets its rows in increasing order. With M > 0 the register kernel
    of :mod:`.vec32` scores (``x``, ``yt`` padded by :func:`.vec32.pad_rows` and
    :func:`.vec32.pad_columns`, ``ny`` and ``τ_b`` with them), else the loop kernel: the
    same logs in the same order for each row.
    Band (:func:`_band`; ``band_`` = (px, tile bounds, block bounds, cerr)): ``px`` = the
    rows' projections on a unit direction, and per tile of columns (and per block of 32
    of them) the interval of theirs, their largest threshold and largest squared norm. A
    chunk of rows whose interval is g away from a tile's skips that tile when g² −
    cerr·(the largest squared norms of both) exceeds every threshold of both: each pair's
    exact squared distance is ≥ g², its float32 score ≥ that − cerr·(‖x‖² + ‖y‖²) (the
    screen's error bound), so neither threshold would log it: the logs are the same
    (pairs skipped counted). The register kernel also skips the rows at a chunk's ends
    that a block rules out (:func:`_rows_in_band`)."""
    # a parfor takes arrays and scalars, not tuples holding arrays: unpacked here, and
    # packed again in the loop
    tile, chunk = sizes
    x, nx, tau_f = rows_a
    yt, ny, tau_b = cols_b
    px, (tlo, thi, ttm, tnm), (blo, bhi, btm, bnm), cerr = band_
    T = f_n.shape[0]
    nbt = -(-tile // vec32.BLOCK)  # blocks per tile (see _band)
    for t in nb.prange(T):
        r0, r1 = thread_rows(lo, hi, t, T)
        scratch = (np.empty(tile, np.float32), np.empty(tile, np.float32),
                   np.empty(chunk, np.int32), np.empty(chunk, np.uint32),
                   np.empty(chunk, np.uint32))
        mine = (f_i[t], f_j[t], l_i[t], l_j[t])
        ra, cb = (x, nx, tau_f), (yt, ny, tau_b)
        nf = nl = sk = 0
        for c0 in range(r0, r1, chunk):
            nr = min(chunk, r1 - c0)
            summary = _chunk_band(px, tau_f, nx, c0, nr)
            for t0 in range(0, n_y, tile):
                w = min(tile, n_y - t0)
                if _skips(t0 // tile, summary, (tlo, thi, ttm, tnm), cerr):
                    sk += nr * w
                elif M > 0:
                    nf, nl, sk = _tile_register(M, ra, cb, c0, nr, t0, w, (t0 // tile) * nbt,
                                                (px, (blo, bhi, btm, bnm), cerr), scratch,
                                                mine, (nf, nl, sk))
                else:
                    nf, nl = _tile_loop(ra, cb, c0, nr, t0, w, scratch, mine, nf, nl)
        f_n[t] = nf
        l_n[t] = nl
        skipped[t] = sk


@nb.njit(cache=True)
def _group(keys, vals, lo, n):
    """Counting sort of the entries by key (keys in lo..lo+n): (indptr, vals grouped),
    stable, so each group keeps the entries' order."""
    ptr = np.zeros(n + 1, np.int64)
    for p in range(keys.shape[0]):
        ptr[keys[p] - lo + 1] += 1
    for r in range(n):
        ptr[r + 1] += ptr[r]
    out = np.empty(keys.shape[0], vals.dtype)
    pos = ptr[:-1].copy()
    for p in range(keys.shape[0]):
        r = keys[p] - lo
        out[pos[r]] = vals[p]
        pos[r] += 1
    return ptr, out


@nb.njit(parallel=True, cache=True)
def _truncate(ptr, idx, x, y, yflat, out_i, out_s, nxt, dest, ahead):
    """Each group scored exactly (the squared Euclidean score of x[dest[r]] and y[idx[p]]:
    :func:`~.knn.pair_costs`' sum, the same bits), sorted by (score, index), cut to the
    width of ``out_i`` (missing entries −1, +inf) and written to row ``dest[r]``; ``nxt`` =
    the first score cut off (+inf: none). Insertion into the row of ``out_i``/``out_s``
    itself: groups are about twice the width, so this costs less than sorting each group
    (two argsorts and their temporaries per row). Scoring here instead of into an array
    first saves that array and its row index (and their page faults). The partner row
    ``ahead`` entries on is prefetched (:func:`~..tuning.matching`; 0: none)."""
    W = out_i.shape[1]
    m = x.shape[1]
    for r in nb.prange(ptr.shape[0] - 1):
        d = dest[r]
        oi = out_i[d]
        os_ = out_s[d]
        xi = x[d]
        cut = np.inf
        h = 0  # entries held, sorted by (score, index)
        end = ptr[r + 1]
        for p in range(ptr[r], end):
            if ahead > 0 and p + ahead < end:
                prefetch_row(yflat, idx[p + ahead], m)
            j = idx[p]
            s = 0.0
            for k in range(m):
                dk = xi[k] - y[j, k]
                s += dk * dk
            if h == W:
                # full: the entry joins only if it precedes the last one, which is cut
                if s > os_[W - 1] or (s == os_[W - 1] and j > oi[W - 1]):
                    cut = min(cut, s)
                    continue
                cut = min(cut, os_[W - 1])
                q = W - 1
            else:
                q = h
                h += 1
            while q > 0 and (os_[q - 1] > s or (os_[q - 1] == s and oi[q - 1] > j)):
                os_[q] = os_[q - 1]
                oi[q] = oi[q - 1]
                q -= 1
            os_[q] = s
            oi[q] = j
        for q in range(h, W):
            oi[q] = -1
            os_[q] = np.inf
        nxt[r] = cut


def _finish_lists(pw: Pairwise, ptr: np.ndarray, part: np.ndarray, lo: int, n: int,
                  tau: np.ndarray, rec: np.ndarray, out_i: np.ndarray, out_s: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Logged pairs (key in lo..lo+n, partner), grouped by key (:func:`_group`: ``ptr``,
    ``part``; the caller frees the log before this), as exact lists: re-scored exactly
    with ``pw`` (squared Euclidean; key k is its row ``rec[k]``, partners are its
    columns), sorted by (score, index), cut to the lists' width and written to rows
    ``rec[k]`` of ``out_i``, ``out_s``. Returns, per key, the list's bound: L(τ) for the
    pairs never logged (float32 score ≥ τ, or never scored by the band, see
    :func:`_band`), or the first exact score cut off when lower, and the number of pairs
    logged."""
    nxt = np.empty(n)
    _truncate(ptr, part, pw.x, pw.y, pw.y.reshape(-1), out_i, out_s, nxt,
              np.ascontiguousarray(rec[lo:lo + n]), tuning.matching(pw.x.shape[1]).ahead)
    with np.errstate(invalid="ignore"):
        lb = np.maximum(lower_bound(tau.astype(np.float64), pw.x[rec[lo:lo + n]]), 0.0)
    lb[~np.isfinite(tau)] = np.inf
    return np.minimum(lb, nxt), np.diff(ptr)


def _refill_short(pw: Pairwise, short: np.ndarray, out_i: np.ndarray, out_s: np.ndarray,
                  out_b: np.ndarray) -> None:
    """The lists of records ``short`` (rows of ``pw``), whose thresholds logged too few
    partners, replaced by :func:`knn_screened`'s forward lists for those rows: their
    ``width`` smallest float32 scores over the whole other file, re-scored and sorted;
    bound L(the last float32 score)."""
    nn = knn_screened(dataclasses.replace(pw, x=pw.x[short]), out_i.shape[1], 0)
    k = nn.fwd_idx.shape[1]
    out_i[short] = -1
    out_s[short] = np.inf
    out_i[short, :k] = nn.fwd_idx
    out_s[short, :k] = nn.fwd_score
    out_b[short] = nn.fwd_bound


def _group_size(n_other: int, mean: float) -> tuple[int, int, int]:
    """(G, ng, qr): groups of G records of the other file, ng of them, and the order
    statistic qr of their minima that has about ``mean`` records of the other file below
    it (the fraction below the minimum of G random records is Beta(1, G), mean 1/(G+1));
    (0, 0, 0) when that would take most of the file (then every pair is logged)."""
    c = sum(1.0 / (NG - q) for q in range(QR))
    G = int(round(n_other * c / max(mean, 1.0) - 1.0))
    if G < 2 or NG * G > n_other // 2:
        return 0, 0, 0
    return G, NG, QR


#: score the threshold pass and its samples with the register-blocked kernels of
#: :mod:`.vec32` when the files have at most 16 attributes (the loop kernel of
#: :mod:`.tiles32` otherwise)
REGISTER_KERNEL = True
#: order both files along their principal direction (:func:`_band`), so that the pass
#: skips the tiles too far from a chunk of rows to hold a pair below a threshold
BAND = True
#: ... in classes of records by threshold (these quantiles): a chunk's or tile's largest
#: threshold then stays near its class's, instead of the few widest records'
BAND_CLASSES = (0.5, 0.75, 0.9, 0.97)


def _band(x: np.ndarray, y: np.ndarray, tau_f: np.ndarray, tau_b: np.ndarray, tile: int,
          block: int = 0) -> tuple[np.ndarray, ...]:
    """The pass's order of rows and columns and its tile bounds. Records are projected on
    the unit principal direction v of both files pooled, p = x·v; each file is sorted by
    (threshold class, p), and per tile of ``tile`` sorted columns the interval of their p
    and their largest threshold are kept. For any pair ‖x − y‖² ≥ (p_x − p_y)²
    (Cauchy–Schwarz, ‖v‖ = 1; :mod:`.band`), so a chunk of rows whose p are more than g
    from a tile's has exact squared distances ≥ g² with all of it; the intervals are
    widened by :func:`.band.margin`, far more than the rounding of p. Returns (row order,
    column order, the sorted rows' p, tile low, tile high, tile largest threshold, tile
    largest squared norm); without ``BAND`` the files' own order and intervals that never
    skip. With ``block``, the same four follow per block of ``block`` sorted columns, the
    blocks starting afresh in each tile as the register pass visits them (block q of tile
    t is number t·⌈tile/block⌉ + q)."""
    n_x, n_y = x.shape[0], y.shape[0]
    tiles = np.arange(0, n_y, tile)
    starts = (tiles,) + ((np.concatenate([np.arange(t0, min(t0 + tile, n_y), block)
                                          for t0 in tiles]),) if block else ())
    if not BAND or x.shape[1] < 2:
        never = tuple(a for st in starts
                      for a in (np.full(st.shape[0], -np.inf), np.full(st.shape[0], np.inf),
                                np.full(st.shape[0], np.inf), np.zeros(st.shape[0])))
        return (np.arange(n_x, dtype=IDX), np.arange(n_y, dtype=IDX), np.zeros(n_x), *never)
    v = band.direction(x, y)
    px, py = x @ v, y @ v
    y2 = np.einsum("ij,ij->i", y, y)
    eps = band.margin(max(float(np.einsum("ij,ij->i", x, x).max()), float(y2.max())))

    def order(p: np.ndarray, tau: np.ndarray) -> np.ndarray:
        t = tau.astype(np.float64)
        cls = np.searchsorted(np.quantile(t, BAND_CLASSES, method="inverted_cdf"), t)
        return np.lexsort((p, cls)).astype(IDX)

    ox, oy = order(px, tau_f), order(py, tau_b)
    ps, ts, ns = py[oy], tau_b[oy].astype(np.float64), y2[oy]

    def per(st: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.minimum.reduceat(ps, st) - eps, np.maximum.reduceat(ps, st) + eps,
                np.maximum.reduceat(ts, st), np.maximum.reduceat(ns, st))

    return (ox, oy, px[ox], *(a for st in starts for a in per(st)))


def _sample_thresholds(z32: np.ndarray, nz: np.ndarray, other32: np.ndarray,
                       no: np.ndarray, mean: float, T: int, progress: Progress | None = None
                       ) -> np.ndarray:
    """Per row of ``z32``: a float32 score with about ``mean`` rows of ``other32`` below
    it, the ``qr``-th smallest of its minima over ``ng`` groups of ``G`` rows of
    ``other32`` (:func:`_group_size`; the first rows: the solver has permuted both files
    at random); +inf when the groups would cover most of the file."""
    n = z32.shape[0]
    G, ng, qr = _group_size(other32.shape[0], mean)
    if ng == 0:
        return np.full(n, np.inf, _F32)
    tune = tuning.matching(z32.shape[1])
    st = np.ascontiguousarray(other32[:G * ng].T)
    zm2 = -2.0 * z32
    M = vec32.width_for(z32.shape[1]) if REGISTER_KERNEL else 0
    cols_p, norms_p, Gp = st, np.ascontiguousarray(no[:G * ng]), G
    if M:
        zm2 = vec32.pad_rows(zm2, M)
        cols_p, norms_p, Gp = _sample_columns(st, no, G, ng, M)
    mins = np.empty((n, ng), np.int32)  # float32 bits (see _min_bits)
    step = row_blocks(n, 8)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        _group_min_pass(M, zm2[lo:hi], nz[lo:hi], cols_p, norms_p, (tune.tile, tune.chunk),
                        Gp, T, mins[lo:hi])
        if progress is not None:
            progress(hi, n)
    return np.ascontiguousarray(np.partition(mins, qr - 1, axis=1)[:, qr - 1]).view(_F32)


@dataclasses.dataclass
class _Pass:
    """The threshold pass's inputs in band order (:func:`_band`): ``ox``, ``oy`` the
    records' numbers of the sorted rows and columns; ``rows_a``, ``cols_b``, ``band_``,
    ``M`` the arguments of :func:`_thr_pass`; ``tau_b`` the columns' thresholds
    (unpadded); ``sizes`` (tile, chunk)."""

    ox: np.ndarray
    oy: np.ndarray
    rows_a: tuple
    cols_b: tuple
    band_: tuple
    M: int
    tau_b: np.ndarray
    sizes: tuple[int, int]


def _pass_inputs(pw: Pairwise, x32: np.ndarray, nx: np.ndarray, y32: np.ndarray,
                 ny: np.ndarray, tau_f: np.ndarray, tau_b: np.ndarray) -> _Pass:
    """Both files in band order (:func:`_band`, the logged pairs are mapped back to the
    records' own numbers by ``ox``, ``oy``), rows pre-scaled by −2, and for the register
    kernel (files of up to 16 attributes) padded with zeros (:mod:`.vec32`)."""
    tune = tuning.matching(pw.x.shape[1])
    ox, oy, px, *bounds = _band(pw.x, pw.y, tau_f, tau_b, tune.tile, vec32.BLOCK)
    # the float32 scores' error constant (lower_bound's c), with room for the float32 norms
    cerr = error_constant(pw.x.shape[1]) * 1.01
    xm2, yt32 = -2.0 * x32[ox], np.take(np.ascontiguousarray(y32.T), oy, axis=1)
    ny_s, tau_bs = ny[oy], tau_b[oy]
    M = vec32.width_for(pw.x.shape[1]) if REGISTER_KERNEL else 0
    cols_b = (yt32, ny_s, tau_bs)
    if M:
        xm2 = vec32.pad_rows(xm2, M)
        cols_b = vec32.pad_columns(yt32, ny_s, tau_bs, M)
    return _Pass(ox, oy, (np.ascontiguousarray(xm2), nx[ox], tau_f[ox]), cols_b,
                 (px, tuple(bounds[:4]), tuple(bounds[4:]), cerr), M, tau_bs,
                 (tune.tile, tune.chunk))


def _run_pass(ps: _Pass, lo: int, hi: int, n_y: int, cap: int, T: int
              ) -> tuple[tuple, tuple, int]:
    """:func:`_thr_pass` for rows lo..hi with ``cap`` log entries per thread, run again
    with more room while a log overflowed. Returns (logs, counts, re-runs)."""
    counts = (np.zeros(T, np.int64), np.zeros(T, np.int64), np.zeros(T, np.int64))
    reruns = 0
    while True:
        logs = tuple(np.empty((T, cap), IDX) for _ in range(4))
        _thr_pass(ps.M, ps.rows_a, ps.cols_b, lo, hi, n_y, ps.sizes, ps.band_, *logs, *counts)
        most = max(counts[0].max(), counts[1].max())
        if most <= cap:
            return logs, counts, reruns
        reruns += 1
        cap = int(most * 1.25) + 64


def _logged(ii: np.ndarray, jj: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-thread logs (ii, jj) cut to their counts, concatenated."""
    T = n.shape[0]
    return (np.concatenate([ii[t, :n[t]] for t in range(T)]),
            np.concatenate([jj[t, :n[t]] for t in range(T)]))


class _BackLog:
    """The backward log of the whole pass, in one buffer (8 bytes an entry; grown when
    full): (column, row) pairs in the records' own numbers."""

    def __init__(self, size: int) -> None:
        self.buf = np.empty((2, size), IDX)
        self.n = 0

    def add(self, cols: np.ndarray, rows: np.ndarray) -> None:
        k = cols.shape[0]
        if self.n + k > self.buf.shape[1]:
            grow = np.empty((2, max(k, self.n // 2)), IDX)
            self.buf = np.concatenate([self.buf[:, :self.n], grow], 1)
        self.buf[0, self.n:self.n + k] = cols
        self.buf[1, self.n:self.n + k] = rows
        self.n += k


@dataclasses.dataclass
class _Lists:
    """Lists of one direction being filled: indices, exact scores, bounds, and the
    records whose lists came out short (to refill)."""

    idx: np.ndarray
    score: np.ndarray
    bound: np.ndarray
    short: list[np.ndarray] = dataclasses.field(default_factory=list)

    @classmethod
    def empty(cls, n: int, width: int) -> _Lists:
        return cls(np.empty((n, width), IDX), np.empty((n, width)), np.empty(n))


def _add_lists(sq: Pairwise, lists: _Lists, grouped: tuple[np.ndarray, np.ndarray],
               lo: int, n: int, tau: np.ndarray, rec: np.ndarray, k_min: int) -> None:
    """Logged pairs of keys lo..lo + n (sorted positions; ``rec`` their records), grouped
    by key (:func:`_group`), as exact lists (:func:`_finish_lists` with ``sq``, the
    squared Euclidean scores), their bounds, and the records with fewer than ``k_min``
    pairs logged noted as short."""
    b, cnt = _finish_lists(sq, *grouped, lo, n, tau, rec, lists.idx, lists.score)
    lists.bound[rec[lo:lo + n]] = b
    lists.short.append(rec[lo + np.flatnonzero(cnt < k_min)])


def _refill(pw: Pairwise, lists: _Lists) -> int:
    """Refill the short lists (:func:`_refill_short`); returns how many."""
    short = np.concatenate(lists.short)
    if short.size:
        _refill_short(pw, short, lists.idx, lists.score, lists.bound)
    return int(short.size)


def knn_thresholds(pw: Pairwise, width: int, *, mean: float | None = None,
                   progress: Progress | None = None, threads: int | None = None,
                   stats: dict | None = None) -> KNN:
    """Screened lists in both directions from one float32 pass, without keeping sorted
    k-best lists over the whole file (whose random-access inserts dominate
    :func:`knn_screened`): each record gets a threshold τ with about ``mean`` (default
    ``width``) records of the other file below it, estimated from the minima over
    disjoint groups of a sample (:func:`_sample_thresholds`); the full pass logs every
    pair below its row's or its column's threshold. Logged pairs are re-scored exactly,
    sorted by (exact score, index) and cut to ``width``. Bounds: a pair never logged has
    float32 score ≥ τ, so exact score ≥ L(τ) (:func:`~..nearest.faiss_screen.lower_bound`); a
    pair cut off is ≥ the first exact score cut. List lengths vary with the sample (a
    list shorter than ``width`` is padded with −1 / +inf and still has a finite
    bound)."""
    n_x, n_y = pw.x.shape[0], pw.y.shape[0]
    W = int(max(1, width))
    L = float(mean if mean is not None else W)
    T = int(threads or nb.get_num_threads())
    x32 = np.ascontiguousarray(pw.x, dtype=_F32)
    y32 = np.ascontiguousarray(pw.y, dtype=_F32)
    nx, ny = _norms32(x32), _norms32(y32)
    # the samples: groups of the first columns (for the rows' thresholds) and of the first
    # rows (for the columns'); progress in pairs scored, the two samples then the pass
    S = np.prod(_group_size(n_y, L)[:2])
    R = np.prod(_group_size(n_x, L)[:2])
    total = float(n_x) * S + float(n_y) * R + float(n_x) * n_y

    def report(done: float) -> None:
        if progress is not None:
            progress(int(1000 * done / total), 1000)

    st: dict = {"sample_cols": int(S), "sample_rows": int(R), "reruns": 0}
    t0 = time.perf_counter()
    tau_f = _sample_thresholds(x32, nx, y32, ny, L, T, lambda d, n: report(float(d) * S))
    tau_b = _sample_thresholds(y32, ny, x32, nx, L, T,
                               lambda d, n: report(float(n_x) * S + float(d) * R))
    st["seconds_sample"] = time.perf_counter() - t0
    ps = _pass_inputs(pw, x32, nx, y32, ny, tau_f, tau_b)
    del x32, y32
    fwd = _Lists.empty(n_x, W)
    back = _BackLog(int(n_y * L * 1.1) + 1024)
    # lists shorter than this are refilled (union graphs of short lists can lack a
    # perfect matching)
    k_min = int(min(W, MIN_LIST))
    _forward_pass(pw, ps, fwd, back, (L, T, k_min), st,
                  lambda hi: report(float(n_x) * S + float(n_y) * R + float(n_y) * hi))
    ps.rows_a = ps.cols_b = ()  # the pass's copies
    t1 = time.perf_counter()
    # grouped, the log is freed before the lists are made (the k-NN pass's peak at 10⁶)
    grouped = _group(back.buf[0, :back.n], back.buf[1, :back.n], 0, n_y)
    st["bwd_logged"] = back.n
    del back
    bwd = _Lists.empty(n_y, W)
    pw_t = pw.swapped()
    _add_lists(dataclasses.replace(pw_t, root=False), bwd, grouped, 0, n_y, ps.tau_b, ps.oy,
               k_min)
    del grouped
    st["seconds_lists"] += time.perf_counter() - t1
    # lists whose sample threshold came out low: the smallest scores over the whole file
    t1 = time.perf_counter()
    st["short_rows"], st["short_cols"] = _refill(pw, fwd), _refill(pw_t, bwd)
    st["seconds_short"] = time.perf_counter() - t1
    if stats is not None:
        stats.update(st, fwd_logged=int(np.isfinite(fwd.score).sum()),
                     band_skipped=st.pop("skipped") / (float(n_x) * n_y))
    return KNN(fwd.idx, fwd.score, bwd.idx, bwd.score, fwd.bound, bwd.bound)


def _forward_pass(pw: Pairwise, ps: _Pass, fwd: _Lists, back: _BackLog, params: tuple,
                  st: dict, report: Callable[[int], None]) -> None:
    """The threshold pass (:func:`_thr_pass`) in blocks of rows: each block's forward
    log made into its rows' lists (``fwd``) at once, its backward log appended to
    ``back``. ``params`` = (mean list length, threads, shortest list kept); time, re-runs
    and pairs skipped go to ``st``."""
    L, T, k_min = params
    n_x, n_y = pw.x.shape[0], pw.y.shape[0]
    sq = dataclasses.replace(pw, root=False)
    edges = list(range(0, n_x, row_blocks(n_x))) + [n_x]
    per_row = int(LOG_FACTOR * L + LOG_FLOOR)
    st.update(seconds_rest=0.0, seconds_lists=0.0, skipped=0)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        t0 = time.perf_counter()
        logs, (f_n, l_n, sk), reruns = _run_pass(ps, lo, hi, n_y,
                                                 per_row * (-(-(hi - lo) // T)), T)
        st["reruns"] += reruns
        st["skipped"] += int(sk.sum())
        t1 = time.perf_counter()
        st["seconds_rest"] += t1 - t0
        keys, partners = _logged(logs[0], logs[1], f_n)
        grouped = _group(keys, ps.oy[partners], lo, hi - lo)
        del keys, partners
        _add_lists(sq, fwd, grouped, lo, hi - lo, ps.rows_a[2][lo:hi], ps.ox, k_min)
        del grouped
        cols, rows = _logged(logs[3], logs[2], l_n)
        back.add(cols, ps.ox[rows])
        del logs, cols, rows
        st["seconds_lists"] += time.perf_counter() - t1
        report(hi)
