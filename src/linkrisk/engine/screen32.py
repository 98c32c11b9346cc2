"""Float32-screened k-NN lists and reduced-cost scans for the global attack (Euclidean).

The certified matching (:mod:`.matching`) needs two full passes over A × B: the k-NN
lists that make the candidate graph, and the certificate scan of the rows whose bound
fails. In float64 each pair costs ~3.6 ns here, which puts n = 10⁶ (10¹² pairs) at hours.
Neither pass needs float64 for every pair, only valid *bounds*:

* **lists.** The graph may be any set of pairs with exact costs, and a pair outside i's
  list only needs a lower bound α_i on its cost. A fused float32 kernel (13 inner products
  per pair, vectorized over a cache-resident tile of B, ‖a‖² + ‖b‖² − 2a·b as faiss
  computes it) keeps each row's K smallest float32 scores in both directions; the list
  entries are then re-scored in float64 with the engine's arithmetic
  (:func:`~.knn.pair_costs`) and sorted by (exact cost, index). Every pair left out of
  i's list had a float32 score ≥ the final K-th one D_i, so its exact squared distance is
  ≥ L(D_i) (:func:`~.screen._lower`: |float32 − exact| ≤ c(‖a‖² + ‖b‖²), c = 4(m+3)·2⁻²³)
  and α_i = √L(D_i).
* **certificate scan.** A row i passes when c_ij − off_j ≥ θ_i for all j. The kernel flags
  every pair that float32 cannot prove safe — squared-distance score below
  (θ_i + η_i + off_j)²·(1 + 8c) + 6c‖a_i‖², with a slack η_i far above float32's rounding
  of the threshold — and only flagged pairs are re-scored exactly. A row with more flags
  than the buffer holds is scanned by the exact float64 kernel instead.

Nothing of size n_a × n_b is stored. Only the ``sqeuclidean`` metric with ``root`` (the
Euclidean cost of gdbrl) is screened; other metrics use the exact kernels of :mod:`.knn`.
"""

from __future__ import annotations

import dataclasses

import numba as nb
import numpy as np

from .knn import (
    KNN,
    Pairwise,
    Progress,
    Scan,
    _insert,
    _merge_threads,
    _row_blocks,
    pair_costs,
    scan_reduced,
)
from .screen import _lower

#: B columns per tile: 13 float32 attribute rows of 1024 columns (52 KiB) stay in L2 and
#: the row's 4 KiB accumulator in L1
TILE = 1024
#: attacker rows scored against one tile of B before the next tile (128 vs 16: 0.69 vs
#: 0.76 ns/pair at n = 2·10⁵, the release re-streamed from memory 8× less often)
CHUNK = 128
#: flagged pairs kept per scanned row before it falls back to the exact kernel
FLAG_CAP = 64
_F32 = np.float32


def applicable(pw: Pairwise) -> bool:
    """The screen covers the Euclidean cost (squared-Euclidean scores, square-rooted)."""
    return pw.code == 0 and pw.root


@nb.njit(inline="always")
def _dot32(a, xi, yt, t0, w):
    """a[q] = Σ_k x_ik · y_k,t0+q in float32 (``a`` has length w), vectorized over q, four
    attributes per pass over ``a``. The loops run over slices: indexing ``yt[k, t0 + q]``
    directly keeps LLVM from vectorizing (measured 8 ns/pair against 0.5)."""
    m = xi.shape[0]
    a[:] = 0.0
    k = 0
    while k + 4 <= m:
        x0, x1, x2, x3 = xi[k], xi[k + 1], xi[k + 2], xi[k + 3]
        r0 = yt[k, t0:t0 + w]
        r1 = yt[k + 1, t0:t0 + w]
        r2 = yt[k + 2, t0:t0 + w]
        r3 = yt[k + 3, t0:t0 + w]
        for q in range(w):
            a[q] += (x0 * r0[q] + x1 * r1[q]) + (x2 * r2[q] + x3 * r3[q])
        k += 4
    while k < m:
        xv = xi[k]
        r0 = yt[k, t0:t0 + w]
        for q in range(w):
            a[q] += xv * r0[q]
        k += 1


@nb.njit(inline="always")
def _dot32x2(a, b, xi, xj, yt, t0, w):
    """:func:`_dot32` for two rows at once: each tile load of y serves both (~15 % faster)."""
    m = xi.shape[0]
    a[:] = 0.0
    b[:] = 0.0
    k = 0
    while k + 4 <= m:
        x0, x1, x2, x3 = xi[k], xi[k + 1], xi[k + 2], xi[k + 3]
        z0, z1, z2, z3 = xj[k], xj[k + 1], xj[k + 2], xj[k + 3]
        r0 = yt[k, t0:t0 + w]
        r1 = yt[k + 1, t0:t0 + w]
        r2 = yt[k + 2, t0:t0 + w]
        r3 = yt[k + 3, t0:t0 + w]
        for q in range(w):
            y0, y1, y2, y3 = r0[q], r1[q], r2[q], r3[q]
            a[q] += (x0 * y0 + x1 * y1) + (x2 * y2 + x3 * y3)
            b[q] += (z0 * y0 + z1 * y1) + (z2 * y2 + z3 * y3)
        k += 4
    while k < m:
        xv = xi[k]
        zv = xj[k]
        r0 = yt[k, t0:t0 + w]
        for q in range(w):
            a[q] += xv * r0[q]
            b[q] += zv * r0[q]
        k += 1


@nb.njit(inline="always")
def _offer(a, i, nxi, nyt, t0, w, fsr, fir, bs, bi, bth):
    """Turn the dot products of row i against a tile into float32 scores and offer them to
    i's forward list and the tile columns' backward lists."""
    k = fsr.shape[0]
    kb = bs.shape[1]
    two = np.float32(2.0)
    kth = fsr[k - 1]
    btt = bth[t0:t0 + w]
    # vectorized pre-check: most tiles hold no list entry
    hit = 0
    for q in range(w):
        s = (nyt[q] - two * a[q]) + nxi
        a[q] = s
        hit += (s < kth) | (s < btt[q])
    if hit == 0:
        return
    # hits are sparse: find them 64 columns at a time
    for q0 in range(0, w, 64):
        q1 = min(q0 + 64, w)
        sub = 0
        for q in range(q0, q1):
            sub += (a[q] < kth) | (a[q] < btt[q])
        if sub == 0:
            continue
        for q in range(q0, q1):
            s = a[q]
            if s < kth:
                _insert(fsr, fir, s, t0 + q)
                kth = fsr[k - 1]
            j = t0 + q
            if kb > 0 and s < bth[j]:
                _insert(bs[j], bi[j], s, i)
                bth[j] = bs[j, kb - 1]


@nb.njit(parallel=True, cache=True)
def _knn32_pass(x, nx, lo, hi, yt, ny, tile, chunk, f_idx, f_sc, b_idx, b_sc, b_thr):
    """Rows lo..hi of x against all of y in float32; forward lists for these rows, backward
    lists per thread (merged afterwards), as :func:`~.knn._knn_pass`."""
    n_y = yt.shape[1]
    k = f_idx.shape[1]
    T = b_idx.shape[0]
    n = hi - lo
    for t in nb.prange(T):
        r0 = lo + (n * t) // T
        r1 = lo + (n * (t + 1)) // T
        acc = np.empty(tile, np.float32)
        acc2 = np.empty(tile, np.float32)
        fi = np.empty((chunk, k), np.int64)
        fs = np.empty((chunk, k), np.float32)
        bi = b_idx[t]
        bs = b_sc[t]
        bth = b_thr[t]
        for c0 in range(r0, r1, chunk):
            nr = min(chunk, r1 - c0)
            for r in range(nr):
                for q in range(k):
                    fi[r, q] = -1
                    fs[r, q] = np.inf
            for t0 in range(0, n_y, tile):
                w = min(tile, n_y - t0)
                nyt = ny[t0:t0 + w]
                a = acc[:w]
                b = acc2[:w]
                for r in range(0, nr, 2):
                    i = c0 + r
                    if r + 1 < nr:
                        _dot32x2(a, b, x[i], x[i + 1], yt, t0, w)
                        _offer(a, i, nx[i], nyt, t0, w, fs[r], fi[r], bs, bi, bth)
                        _offer(b, i + 1, nx[i + 1], nyt, t0, w, fs[r + 1], fi[r + 1], bs, bi,
                               bth)
                    else:
                        _dot32(a, x[i], yt, t0, w)
                        _offer(a, i, nx[i], nyt, t0, w, fs[r], fi[r], bs, bi, bth)
            for r in range(nr):
                for q in range(k):
                    f_idx[c0 + r, q] = fi[r, q]
                    f_sc[c0 + r, q] = fs[r, q]


def _norms32(z32: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", z32, z32).astype(np.float32)


def _exact_sorted(pw: Pairwise, rows_of: np.ndarray, idx: np.ndarray, flip: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of list entries (row r, idx[r, q]), each list sorted by (score, index);
    missing entries (−1) get +inf and stay last."""
    n, k = idx.shape
    ia = np.repeat(rows_of, k)
    ib = idx.ravel()
    sc = (pair_costs(pw.swapped(), ia, ib) if flip else pair_costs(pw, ia, ib)).reshape(n, k)
    order = np.lexsort((np.where(idx < 0, np.iinfo(np.int64).max, idx), sc), axis=1)
    return np.take_along_axis(idx, order, 1), np.take_along_axis(sc, order, 1)


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
    f_idx = np.empty((n_x, k), np.int64)
    f_sc = np.empty((n_x, k), _F32)
    b_idx = np.full((T, n_y, max(kb, 0)), -1, np.int64)
    b_sc = np.full((T, n_y, max(kb, 0)), np.inf, _F32)
    b_thr = np.full((T, n_y), np.inf if kb > 0 else -np.inf, _F32)
    rows = _row_blocks(n_x)
    for lo in range(0, n_x, rows):
        hi = min(lo + rows, n_x)
        _knn32_pass(x32, nx, lo, hi, yt32, ny, TILE, CHUNK, f_idx, f_sc, b_idx, b_sc, b_thr)
        if progress is not None:
            progress(hi, n_x)
    if kb > 0:
        bi = np.empty((n_y, kb), np.int64)
        bs32 = np.empty((n_y, kb), _F32)
        _merge_threads(b_idx, b_sc, bi, bs32)
    else:
        bi, bs32 = np.empty((n_y, 0), np.int64), np.empty((n_y, 0), _F32)
    del b_idx, b_sc
    sq = dataclasses.replace(pw, root=False)  # exact scores, not costs
    fi, fs = _exact_sorted(sq, np.arange(n_x), f_idx, False)
    bi_, bs_ = (_exact_sorted(sq, np.arange(n_y), bi, True) if kb > 0
                else (bi, np.empty((n_y, 0))))
    return KNN(fi, fs, bi_, bs_, _list_bound(f_idx, f_sc, pw.x, n_y),
               _list_bound(bi, bs32, pw.y, n_x) if kb > 0 else np.full(n_y, -np.inf))


def _list_bound(idx: np.ndarray, sc32: np.ndarray, z: np.ndarray, n_other: int
                ) -> np.ndarray:
    """Lower bound of the exact score of any pair outside the lists: L(K-th float32
    score), +inf when a list holds every pair (not full, or as long as the other file)."""
    if idx.shape[1] >= n_other:
        return np.full(idx.shape[0], np.inf)
    b = np.maximum(_lower(sc32[:, -1], z), 0.0)
    return np.where(idx[:, -1] < 0, np.inf, b)


# ---------------------------------------------------------------------------------------
# screened reduced-cost scan
# ---------------------------------------------------------------------------------------
@nb.njit(parallel=True, cache=True)
def _flag32(rows, x, nx, yt, ny, off, theta, extra, factor, tile, out_idx, out_cnt):
    """For each listed row i of x, the columns j whose float32 score s is below
    max(θ_i + off_j, 0)²·factor + extra_i (pairs that may have c_ij − off_j < θ_i, θ_i
    already including the slack); up to cap of them in out_idx, their number in out_cnt."""
    n_y = yt.shape[1]
    cap = out_idx.shape[1]
    n = rows.shape[0]
    two = np.float32(2.0)
    zero = np.float32(0.0)
    for p in nb.prange(n):
        acc = np.empty(tile, np.float32)
        i = rows[p]
        th = theta[p]
        ex = extra[p]
        nxi = nx[i]
        cnt = 0
        for t0 in range(0, n_y, tile):
            w = min(tile, n_y - t0)
            a = acc[:w]
            _dot32(a, x[i], yt, t0, w)
            nyt = ny[t0:t0 + w]
            oft = off[t0:t0 + w]
            hit = 0
            for q in range(w):
                s = (nyt[q] - two * a[q]) + nxi
                t = max(th + oft[q], zero)
                d = s - (t * t * factor + ex)
                a[q] = d
                hit += d < zero
            if hit == 0:
                continue
            for q in range(w):
                if a[q] < zero:
                    if cnt < cap:
                        out_idx[p, cnt] = t0 + q
                    cnt += 1
        out_cnt[p] = cnt


def scan_screened(pw: Pairwise, rows: np.ndarray, off: np.ndarray, theta: np.ndarray, *,
                  cmax: float = np.inf, cap: int = 8, progress: Progress | None = None
                  ) -> tuple[Scan, np.ndarray]:
    """The pairs of the listed rows with c_ij − off_j < θ_i (cost ≤ ``cmax``), found by a
    float32 screen and exact re-scoring. Returns (scan, nxt): ``scan.idx/val`` the (up to
    ``cap``) smallest such values ascending, ``scan.count`` how many there are, and
    ``scan.min`` = min(θ_i, min_j (c_ij − off_j)) — the exact minimum when it is below
    θ_i, else θ_i, a lower bound; ``nxt`` a lower bound of c_ij − off_j over the columns
    not in ``scan.idx``. Same numbers as :func:`~.knn.scan_reduced` wherever it reports
    them."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    n = rows.shape[0]
    theta = np.ascontiguousarray(np.broadcast_to(theta, (n,)), dtype=np.float64)
    off = np.ascontiguousarray(off, dtype=np.float64)
    m = pw.x.shape[1]
    c = 4.0 * (m + 3) * 2.0**-23
    x32 = np.ascontiguousarray(pw.x, dtype=_F32)
    yt32 = np.ascontiguousarray(pw.yt, dtype=_F32)
    nx, ny = _norms32(x32), _norms32(np.ascontiguousarray(pw.y, dtype=_F32))
    # slack η far above float32 rounding of θ_i + off_j (relative 2⁻²⁴ of the magnitudes)
    mag = np.abs(theta) + (np.abs(off).max(initial=0.0) if off.size else 0.0) + 1.0
    th32 = (theta + 1e-5 * mag).astype(_F32)
    off32 = off.astype(_F32)
    extra = (6.0 * c * np.einsum("ij,ij->i", pw.x[rows], pw.x[rows]) + 1e-30).astype(_F32)
    factor = _F32(1.0 + 8.0 * c)
    out = Scan(rows, np.empty(n), np.zeros(n, np.int64), np.full((n, cap), -1, np.int64),
               np.full((n, cap), np.inf))
    nxt = np.empty(n)
    step = max(512, -(-n // 32))
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        fidx = np.full((hi - lo, FLAG_CAP), -1, np.int64)
        fcnt = np.zeros(hi - lo, np.int64)
        _flag32(rows[lo:hi], x32, nx, yt32, ny, off32, th32[lo:hi], extra[lo:hi], factor,
                TILE, fidx, fcnt)
        _collect(pw, rows[lo:hi], off, theta[lo:hi], cmax, fidx, fcnt, out, nxt, lo)
        if progress is not None:
            progress(hi, n)
    return out, nxt


def _collect(pw, rws, off, theta, cmax, fidx, fcnt, out, nxt, lo):
    """Re-score the flagged pairs exactly; rows that overflowed the flag buffer are
    scanned by the exact kernel."""
    cap = out.idx.shape[1]
    over = fcnt > fidx.shape[1]
    ok = ~over
    r_ok = np.flatnonzero(ok)
    sel = fidx[r_ok] >= 0
    ia = np.repeat(r_ok, fidx.shape[1])[sel.ravel()]
    jb = fidx[r_ok][sel]
    cst = pair_costs(pw, rws[ia], jb)
    val = cst - off[jb]
    keep = (cst <= cmax) & (val < theta[ia])
    ia, jb, val = ia[keep], jb[keep], val[keep]
    order = np.lexsort((jb, val, ia))
    ia, jb, val = ia[order], jb[order], val[order]
    starts = np.searchsorted(ia, np.arange(rws.shape[0]))
    rank = np.arange(ia.shape[0]) - starts[ia]
    cnt = np.bincount(ia, minlength=rws.shape[0])
    g = lo + np.arange(rws.shape[0])
    out.count[g] = cnt
    first = np.full(rws.shape[0], np.inf)
    first[cnt > 0] = val[starts[cnt > 0]]
    out.min[g] = np.minimum(first, theta)
    top = rank < cap
    out.idx[lo + ia[top], rank[top]] = jb[top]
    out.val[lo + ia[top], rank[top]] = val[top]
    # outside the reported ones: the (cap+1)-th value, or θ (unflagged pairs are ≥ θ)
    nx_ = theta.copy()
    more = cnt > cap
    pos = starts[more] + cap
    nx_[more] = np.minimum(val[pos], theta[more])
    nxt[g] = nx_
    if over.any():
        r_over = np.flatnonzero(over)
        # scan_reduced keeps values ≤ its threshold: the largest double below θ gives < θ
        s = scan_reduced(pw, rws[r_over], off, np.nextafter(theta[r_over], -np.inf),
                         cmax=cmax, cap=cap + 1)
        g2 = lo + r_over
        out.count[g2] = s.count
        out.min[g2] = np.minimum(s.min, theta[r_over])
        out.idx[g2] = s.idx[:, :cap]
        out.val[g2] = s.val[:, :cap]
        nxt[g2] = np.where(s.count > cap, s.val[:, cap], theta[r_over])
