"""Register-blocked float32 scores for the screened k-NN pass (:mod:`.screened_knn`), written
as explicit LLVM vector code.

The threshold pass scores every pair of a row chunk and a column block in float32 and logs
the pairs below the row's or the column's threshold. The loop kernel of :mod:`.tiles32`
keeps its partial sums in memory (four attributes per pass over a tile); LLVM does not
keep a block of the release in registers when the same loop is written for it in numba.
Here the kernel is built as LLVM IR (a numba ``intrinsic``): one block of ``32`` columns
of the release — ``M`` attributes × 2 vectors of 16 float32 — is loaded into registers
once, and every row of a chunk is scored against it with ``M`` fused multiply-adds per
vector, starting from ‖y‖² + ‖x‖² (rows come pre-scaled by −2), with no load or store of
partial sums. Files with fewer
attributes are padded with zero attributes up to the kernel's ``M`` (a zero term adds
nothing and no rounding), so three kernels (M = 8, 13, 16) cover m ≤ 16; wider files keep
the loop kernel.

The scores are the same sum as the loop kernel's, in another order (each attribute in
turn after the norms): the screen's error bound holds for any order of the m + 2 terms,
with or without fused multiply-adds (:mod:`.screened_knn`).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: columns of one register block (two 16-lane vectors)
BLOCK = 32
#: the kernels' attribute counts; a file with m attributes uses the smallest M ≥ m
WIDTHS = (8, 13, 16)
_LANES = 16
_NV = BLOCK // _LANES


def width_for(m: int) -> int:
    """The register kernel's attribute count for a file of ``m`` attributes (0: none, the
    loop kernel is used)."""
    for w in WIDTHS:
        if m <= w:
            return w
    return 0


class _Block:
    """IR helpers of both kernels: a block of 32 columns of the release (``M`` attributes ×
    2 vectors of 16 float32) and its squared norms, loaded once, and the rows' scores
    against it: ‖y‖² + ‖x‖², then one fused multiply-add per attribute in turn (the order
    of :func:`.tiles32.scores32x2`, so the same float32 values)."""

    def __init__(self, builder, M, x, nx, yt, ny, j0):
        self.b, self.M = builder, M
        self.f32, self.i32, self.i64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)
        self.vty = ir.VectorType(self.f32, _LANES)
        self.x, self.nx = x, nx
        self.fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(self.vty, [self.vty] * 3), "llvm.fma.v16f32")
        ncol = builder.extract_value(yt.shape, 1)
        self.yv = [[self.vload(yt.data, builder.add(builder.mul(self.c64(k), ncol),
                                                    self.off(j0, v)))
                    for v in range(_NV)] for k in range(M)]
        self.nyv = [self.vload(ny.data, self.off(j0, v)) for v in range(_NV)]

    def c64(self, v):
        return ir.Constant(self.i64, v)

    def off(self, j0, v):
        return self.b.add(j0, self.c64(v * _LANES))

    def vload(self, ptr, idx):
        p = self.b.bitcast(self.b.gep(ptr, [idx]), self.vty.as_pointer())
        return self.b.load(p, align=4)

    def bcast(self, val):
        b = self.b
        und = ir.Constant(self.vty, ir.Undefined)
        v0 = b.insert_element(und, val, ir.Constant(self.i32, 0))
        return b.shuffle_vector(v0, und, ir.Constant(ir.VectorType(self.i32, _LANES),
                                                     [0] * _LANES))

    def scores(self, i):
        """Row i's float32 scores against the block (two vectors)."""
        b = self.b
        nxi = self.bcast(b.load(b.gep(self.nx.data, [i])))
        base = b.mul(i, self.c64(self.M))
        acc = [b.fadd(self.nyv[v], nxi) for v in range(_NV)]
        for k in range(self.M):
            xk = self.bcast(b.load(b.gep(self.x.data, [b.add(base, self.c64(k))])))
            for v in range(_NV):
                acc[v] = b.call(self.fma, [xk, self.yv[k][v], acc[v]])
        return acc


def _typed(arrays: tuple, dtypes: tuple) -> bool:
    """Whether the kernel's array arguments are what its IR assumes: C-contiguous, of
    these dtypes (the loads are typed, and row i of a 2-D array starts at i × width)."""
    return all(isinstance(a, types.Array) and a.layout == "C" and a.dtype == d
               for a, d in zip(arrays, dtypes, strict=True))


def _arrays(context, builder, signature, args):
    return [context.make_array(t)(context, builder, a) if isinstance(t, types.Array)
            else None for t, a in zip(signature.args, args, strict=True)]


def _row_loop(builder, r0, r1, body, init):
    """for i in r0..r1 with one i64 carried value (``init``; ``body(i, carried)`` returns
    the next); returns the final value (``init`` when r0 ≥ r1)."""
    i64 = ir.IntType(64)
    entry = builder.block
    loop = builder.append_basic_block("row")
    done = builder.append_basic_block("done")
    builder.cbranch(builder.icmp_signed("<", r0, r1), loop, done)
    builder.position_at_end(loop)
    i = builder.phi(i64)
    c = builder.phi(i64)
    i.add_incoming(r0, entry)
    c.add_incoming(init, entry)
    c_next = body(i, c)
    i_next = builder.add(i, ir.Constant(i64, 1))
    i.add_incoming(i_next, builder.block)
    c.add_incoming(c_next, builder.block)
    last = builder.block
    builder.cbranch(builder.icmp_signed("<", i_next, r1), loop, done)
    builder.position_at_end(done)
    res = builder.phi(i64)
    res.add_incoming(init, entry)
    res.add_incoming(c_next, last)
    return res


def _make(M: int):
    """The intrinsic ``block_hits(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)``
    for ``M`` attributes: rows r0..r1 of ``x`` (C-contiguous (n, M) float32, pre-scaled by
    −2) against columns j0..j0+32 of ``yt`` (C-contiguous (M, n_cols) float32). For every
    row with some score below its threshold ``tau_f[i]`` or below a column's ``tau_b[j]``
    it appends the row to ``rows`` and the two 32-bit masks of those columns (bit q:
    column j0 + q) to ``fm`` (row threshold) and ``bm`` (column threshold); returns how
    many rows it appended."""

    @intrinsic
    def block_hits(typingctx, x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm):
        f4, u4 = types.float32, types.uint32
        rows_ok = (isinstance(rows, types.Array) and rows.layout == "C"
                   and rows.dtype in (types.int32, types.int64))
        if not (rows_ok and _typed((x, nx, tau_f, yt, ny, tau_b, fm, bm),
                                   (f4,) * 6 + (u4, u4))):
            return None  # a typing error instead of wrong loads
        sig = types.int64(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)

        def codegen(context, builder, signature, args):
            ax, anx, atf, _, _, ayt, any_, atb, _, arows, afm, abm = _arrays(
                context, builder, signature, args)
            r0_, r1_, j0_ = args[3], args[4], args[8]
            blk = _Block(builder, M, ax, anx, ayt, any_, j0_)
            i32, i64 = blk.i32, blk.i64
            tbv = [blk.vload(atb.data, blk.off(j0_, v)) for v in range(_NV)]

            def body(i, cnt):
                acc = blk.scores(i)
                ti = blk.bcast(builder.load(builder.gep(atf.data, [i])))
                fmask = blk.c64(0)
                bmask = blk.c64(0)
                for v in range(_NV):
                    fb = builder.zext(builder.bitcast(builder.fcmp_ordered("<", acc[v], ti),
                                                      ir.IntType(_LANES)), i64)
                    bb = builder.zext(builder.bitcast(builder.fcmp_ordered("<", acc[v], tbv[v]),
                                                      ir.IntType(_LANES)), i64)
                    sh = blk.c64(v * _LANES)
                    fmask = builder.or_(fmask, builder.shl(fb, sh))
                    bmask = builder.or_(bmask, builder.shl(bb, sh))
                # branch-free append: written at slot cnt, kept only if some bit is set
                rty = arows.data.type.pointee
                builder.store(i if rty.width == 64 else builder.trunc(i, rty),
                              builder.gep(arows.data, [cnt]))
                builder.store(builder.trunc(fmask, i32), builder.gep(afm.data, [cnt]))
                builder.store(builder.trunc(bmask, i32), builder.gep(abm.data, [cnt]))
                hit = builder.icmp_unsigned("!=", builder.or_(fmask, bmask), blk.c64(0))
                return builder.add(cnt, builder.zext(hit, i64))

            return _row_loop(builder, r0_, r1_, body, blk.c64(0))

        return sig, codegen

    return block_hits


def _make_min(M: int):
    """The intrinsic ``block_min_bits(x, nx, r0, r1, yt, ny, j0, mins)`` for ``M``
    attributes: for rows r0..r1 of ``x`` against the 32 columns from j0 of ``yt`` (as in
    :func:`_make`), ``mins[i − r0]`` = min(itself, the smallest score's int32 bits), the
    order of :func:`.screened_knn._min_bits` (that of the floats when they are ≥ 0); returns 0."""

    @intrinsic
    def block_min_bits(typingctx, x, nx, r0, r1, yt, ny, j0, mins):
        if not _typed((x, nx, yt, ny, mins), (types.float32,) * 4 + (types.int32,)):
            return None  # a typing error instead of wrong loads
        sig = types.int64(x, nx, r0, r1, yt, ny, j0, mins)

        def codegen(context, builder, signature, args):
            ax, anx, _, _, ayt, any_, _, amins = _arrays(context, builder, signature, args)
            r0_, r1_, j0_ = args[2], args[3], args[6]
            blk = _Block(builder, M, ax, anx, ayt, any_, j0_)
            ivty = ir.VectorType(blk.i32, _LANES)
            red = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(blk.i32, [ivty]),
                "llvm.vector.reduce.smin.v16i32")

            def body(i, c):
                acc = [builder.bitcast(a, ivty) for a in blk.scores(i)]
                m = acc[0]
                for a in acc[1:]:
                    m = builder.select(builder.icmp_signed("<", a, m), a, m)
                lo = builder.call(red, [m])
                p = builder.gep(amins.data, [builder.sub(i, r0_)])
                old = builder.load(p)
                builder.store(builder.select(builder.icmp_signed("<", lo, old), lo, old), p)
                return c

            _row_loop(builder, r0_, r1_, body, blk.c64(0))
            return blk.c64(0)

        return sig, codegen

    return block_min_bits


def _make_maybe(M: int):
    """The intrinsic ``block_maybe(x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr,
    hm)`` for ``M`` attributes: the certificate scan's float32 pre-test
    (:func:`.knn._maybe32`) for rows rr[0..nr) of ``x`` (as in :func:`_make`) against the
    32 columns from j0 of ``yt``. Column j0 + q may pass for row r when q < endc[r] − j0
    and a < fl(fl(u·u)·(1 + 10⁻⁵)) + err[r], u > 0, off > gt[r], with a the float32
    score and u = th[r] + off (float32, unfused: the rounding the pre-test's proof
    assumes). Rows with some such column are appended as (r, 32-bit mask) to ``hr``,
    ``hm``; returns how many. The tests u > 0 and off > gt[r] are made as one comparison
    with max(gt[r], −th[r]), and q < endc[r] − j0 on the mask's bits: the same tests in
    40 vector operations a row and block instead of 44: 0.197–0.210 → 0.185–0.188 ns a
    pair (``benchmarks/scan_pretest.py``, every block tested, none passing)."""

    @intrinsic
    def block_maybe(typingctx, x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm):
        f4, i8, u4 = types.float32, types.int64, types.uint32
        if not _typed((x, nx, rr, th, gt, err, endc, yt, ny, off, hr, hm),
                      (f4, f4, i8, f4, f4, f4, i8, f4, f4, f4, i8, u4)):
            return None  # a typing error instead of wrong loads
        sig = types.int64(x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm)

        def codegen(context, builder, signature, args):
            (ax, anx, arr, _, ath, agt, aerr, aend, ayt, any_, aoff, _, ahr,
             ahm) = _arrays(context, builder, signature, args)
            nr_, j0_ = args[3], args[11]
            blk = _Block(builder, M, ax, anx, ayt, any_, j0_)
            i32, i64 = blk.i32, blk.i64
            offv = [blk.vload(aoff.data, blk.off(j0_, v)) for v in range(_NV)]
            cst = ir.Constant(blk.vty, [float(np.float32(1.0 + 1e-5))] * _LANES)
            nan = ir.Constant(blk.f32, float("nan"))

            def body(r, cnt):
                acc = blk.scores(builder.load(builder.gep(arr.data, [r])))
                th = builder.load(builder.gep(ath.data, [r]))
                gt = builder.load(builder.gep(agt.data, [r]))
                thv = blk.bcast(th)
                # u > 0 and off > gt as one test: fl(th + off) > 0 iff th + off > 0 iff
                # off > −th (a rounded sum keeps its sign), so both hold iff off > G with
                # G = max(gt, −th), NaN when either is (both tests then fail)
                nth = builder.fneg(th)
                g = builder.select(builder.fcmp_ordered(">", nth, gt), nth, gt)
                g = builder.select(builder.fcmp_unordered("uno", th, th), nan, g)
                gv = blk.bcast(g)
                ev = blk.bcast(builder.load(builder.gep(aerr.data, [r])))
                lim = builder.sub(builder.load(builder.gep(aend.data, [r])), j0_)
                lim = builder.select(builder.icmp_signed("<", lim, blk.c64(0)), blk.c64(0), lim)
                lim = builder.select(builder.icmp_signed(">", lim, blk.c64(BLOCK)),
                                     blk.c64(BLOCK), lim)
                # the row's columns in this block (lanes below lim), as scalar bits
                lanes = builder.sub(builder.shl(blk.c64(1), lim), blk.c64(1))
                mask = blk.c64(0)
                for v in range(_NV):
                    u = builder.fadd(thv, offv[v])
                    t = builder.fadd(builder.fmul(builder.fmul(u, u), cst), ev)
                    ok = builder.and_(builder.fcmp_ordered("<", acc[v], t),
                                      builder.fcmp_ordered(">", offv[v], gv))
                    bits = builder.zext(builder.bitcast(ok, ir.IntType(_LANES)), i64)
                    mask = builder.or_(mask, builder.shl(bits, blk.c64(v * _LANES)))
                mask = builder.and_(mask, lanes)
                # branch-free append: written at slot cnt, kept only if some bit is set
                builder.store(r, builder.gep(ahr.data, [cnt]))
                builder.store(builder.trunc(mask, i32), builder.gep(ahm.data, [cnt]))
                hit = builder.icmp_unsigned("!=", mask, blk.c64(0))
                return builder.add(cnt, builder.zext(hit, i64))

            return _row_loop(builder, blk.c64(0), nr_, body, blk.c64(0))

        return sig, codegen

    return block_maybe


block_hits8, block_hits13, block_hits16 = _make(8), _make(13), _make(16)
block_min8, block_min13, block_min16 = _make_min(8), _make_min(13), _make_min(16)
block_maybe8, block_maybe13, block_maybe16 = (_make_maybe(8), _make_maybe(13),
                                               _make_maybe(16))


@nb.njit(inline="always")
def block_hits(M, x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm):
    """:func:`_make`'s kernel for ``M`` attributes (one of :data:`WIDTHS`)."""
    if M == 8:
        return block_hits8(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)
    if M == 13:
        return block_hits13(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)
    return block_hits16(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)


@nb.njit(inline="always")
def block_min_bits(M, x, nx, r0, r1, yt, ny, j0, mins):
    """:func:`_make_min`'s kernel for ``M`` attributes (one of :data:`WIDTHS`)."""
    if M == 8:
        return block_min8(x, nx, r0, r1, yt, ny, j0, mins)
    if M == 13:
        return block_min13(x, nx, r0, r1, yt, ny, j0, mins)
    return block_min16(x, nx, r0, r1, yt, ny, j0, mins)


@nb.njit(inline="always")
def block_maybe(M, x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm):
    """:func:`_make_maybe`'s kernel for ``M`` attributes (one of :data:`WIDTHS`)."""
    if M == 8:
        return block_maybe8(x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm)
    if M == 13:
        return block_maybe13(x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm)
    return block_maybe16(x, nx, rr, nr, th, gt, err, endc, yt, ny, off, j0, hr, hm)


def pad_rows(z: np.ndarray, M: int) -> np.ndarray:
    """(n, m) float32 → C-contiguous (n, M) with zero attributes appended."""
    out = np.zeros((z.shape[0], M), np.float32)
    out[:, :z.shape[1]] = z
    return out


def pad_columns(yt: np.ndarray, ny: np.ndarray, tau_b: np.ndarray, M: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The release transposed ((m, n) float32), its squared norms and column thresholds,
    padded to M attributes and to a whole number of blocks plus one (a block may start at
    any column of a tile): padded columns have norm +inf and threshold −inf, so no score
    against them is below any threshold."""
    m, n = yt.shape
    nc = (-(-n // BLOCK) + 1) * BLOCK
    out = np.zeros((M, nc), np.float32)
    out[:m, :n] = yt
    nyp = np.full(nc, np.inf, np.float32)
    nyp[:n] = ny
    tbp = np.full(nc, -np.inf, np.float32)
    tbp[:n] = tau_b
    return out, nyp, tbp
