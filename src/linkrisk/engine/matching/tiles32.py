"""Float32 tile kernels shared by the screened k-NN pass (:mod:`.screened_knn`) and the
certificate's gated scan (:func:`~.knn.scan_gated`): scores of two rows against a tile of
columns per load of the tile. Callers compile with ``fastmath=FMA``; the error bound of
:mod:`.screened_knn` holds with or without fused multiply-adds."""

from __future__ import annotations

import numba as nb

#: the float32 passes may contract a·b + c into one fused multiply-add (one rounding
#: instead of two: the error bound of :mod:`.screened_knn` holds for any order, contracted or not)
FMA = {"contract"}


@nb.njit(inline="always")
def scores32x2(a, b, xi, xj, nxi, nxj, nyt, yt, t0, w, kth_i, kth_j, btt):
    """a[q], b[q] = float32 scores of rows i and j against tile column t0+q,
    ‖y‖² + ‖x‖² + Σ_k (−2x_k)·y_k (rows come pre-scaled by −2, exact in binary), vectorized
    over q, four attributes per pass, each added in turn (so that the callers' fastmath
    ``contract`` makes one fused multiply-add of each); the last attribute is fused with
    the list check.
    Returns, per row, whether some score is below its forward threshold (``kth_i``,
    ``kth_j``) or the column's backward threshold ``btt[q]``. (Flagging each block of SUB
    columns here instead splits this loop, which is slower.) Two rows at once: each tile
    load of y serves both (an odd last row is passed twice). The loops run over slices:
    indexing ``yt[k, t0 + q]`` directly keeps LLVM from vectorizing; starting from the
    norms and checking in the last pass saves two passes over the scores."""
    m = xi.shape[0]
    for q in range(w):
        a[q] = nyt[q] + nxi
        b[q] = nyt[q] + nxj
    last = m - (m % 4 if m % 4 else 4)
    k = 0
    while k < last:
        x0, x1, x2, x3 = xi[k], xi[k + 1], xi[k + 2], xi[k + 3]
        z0, z1, z2, z3 = xj[k], xj[k + 1], xj[k + 2], xj[k + 3]
        r0 = yt[k, t0:t0 + w]
        r1 = yt[k + 1, t0:t0 + w]
        r2 = yt[k + 2, t0:t0 + w]
        r3 = yt[k + 3, t0:t0 + w]
        for q in range(w):
            y0, y1, y2, y3 = r0[q], r1[q], r2[q], r3[q]
            a[q] = a[q] + x0 * y0 + x1 * y1 + x2 * y2 + x3 * y3
            b[q] = b[q] + z0 * y0 + z1 * y1 + z2 * y2 + z3 * y3
        k += 4
    while k < m - 1:
        xv = xi[k]
        zv = xj[k]
        r0 = yt[k, t0:t0 + w]
        for q in range(w):
            a[q] += xv * r0[q]
            b[q] += zv * r0[q]
        k += 1
    xv = xi[k]
    zv = xj[k]
    r0 = yt[k, t0:t0 + w]
    hit_i = False
    hit_j = False
    for q in range(w):
        y0 = r0[q]
        s = a[q] + xv * y0
        t = b[q] + zv * y0
        a[q] = s
        b[q] = t
        bt = btt[q]
        hit_i |= (s < kth_i) | (s < bt)
        hit_j |= (t < kth_j) | (t < bt)
    return hit_i, hit_j
