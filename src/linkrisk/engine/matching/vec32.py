"""Register-blocked float32 scores for the screened k-NN pass (:mod:`.screen32`), written
as explicit LLVM vector code.

The threshold pass scores every pair of a row chunk and a column block in float32 and logs
the pairs below the row's or the column's threshold. The loop kernel of :mod:`.tiles32`
keeps its partial sums in memory (four attributes per pass over a tile) and reaches
6.3–6.9 G pairs/s on two threads here; LLVM does not keep a block of the release in
registers when the same loop is written for it in numba (1.2–2.3 G pairs/s). Here the
kernel is built as LLVM IR (a numba ``intrinsic``): one block of ``32`` columns of the
release — ``M`` attributes × 2 vectors of 16 float32 — is loaded into registers once, and
every row of a chunk is scored against it with ``M`` fused multiply-adds per vector,
starting from ‖y‖² + ‖x‖² (rows come pre-scaled by −2): 13 G pairs/s at m = 13 on the
same two threads (benchmarks/README.md, "Register-blocked pass"). Files with fewer
attributes are padded with zero attributes up to the kernel's ``M`` (a zero term adds
nothing and no rounding), so three kernels (M = 8, 13, 16) cover m ≤ 16; wider files keep
the loop kernel.

The scores are the same sum as the loop kernel's, in another order (each attribute in
turn after the norms): the screen's error bound holds for any order of the m + 2 terms,
with or without fused multiply-adds (:mod:`.screen32`).
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
        sig = types.int64(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)

        def codegen(context, builder, signature, args):
            x_, nx_, tf_, r0_, r1_, yt_, ny_, tb_, j0_, rows_, fm_, bm_ = args
            f32, i32, i64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)
            vty = ir.VectorType(f32, _LANES)
            arr = [context.make_array(t)(context, builder, a)
                   if isinstance(t, types.Array) else None
                   for t, a in zip(signature.args, args, strict=True)]
            ax, anx, atf, _, _, ayt, any_, atb, _, arows, afm, abm = arr
            ncol = builder.extract_value(ayt.shape, 1)
            fma = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vty, [vty, vty, vty]), "llvm.fma.v16f32")

            def vload(ptr, idx):
                p = builder.bitcast(builder.gep(ptr, [idx]), vty.as_pointer())
                return builder.load(p, align=4)

            def bcast(val):
                und = ir.Constant(vty, ir.Undefined)
                v0 = builder.insert_element(und, val, ir.Constant(i32, 0))
                return builder.shuffle_vector(v0, und,
                                              ir.Constant(ir.VectorType(i32, _LANES),
                                                          [0] * _LANES))

            def off(v):
                return builder.add(j0_, ir.Constant(i64, v * _LANES))

            # the release's block, its norms and thresholds: loaded once, kept in registers
            yv = [[vload(ayt.data, builder.add(builder.mul(ir.Constant(i64, k), ncol), off(v)))
                   for v in range(_NV)] for k in range(M)]
            nyv = [vload(any_.data, off(v)) for v in range(_NV)]
            tbv = [vload(atb.data, off(v)) for v in range(_NV)]
            entry = builder.block
            loop = builder.append_basic_block("row")
            done = builder.append_basic_block("done")
            builder.cbranch(builder.icmp_signed("<", r0_, r1_), loop, done)
            builder.position_at_end(loop)
            i = builder.phi(i64)
            cnt = builder.phi(i64)
            i.add_incoming(r0_, entry)
            cnt.add_incoming(ir.Constant(i64, 0), entry)
            nxi = bcast(builder.load(builder.gep(anx.data, [i])))
            ti = bcast(builder.load(builder.gep(atf.data, [i])))
            base = builder.mul(i, ir.Constant(i64, M))
            acc = [builder.fadd(nyv[v], nxi) for v in range(_NV)]
            for k in range(M):
                xk = bcast(builder.load(builder.gep(ax.data,
                                                    [builder.add(base, ir.Constant(i64, k))])))
                for v in range(_NV):
                    acc[v] = builder.call(fma, [xk, yv[k][v], acc[v]])
            fmask = ir.Constant(i64, 0)
            bmask = ir.Constant(i64, 0)
            for v in range(_NV):
                fb = builder.zext(builder.bitcast(builder.fcmp_ordered("<", acc[v], ti),
                                                  ir.IntType(_LANES)), i64)
                bb = builder.zext(builder.bitcast(builder.fcmp_ordered("<", acc[v], tbv[v]),
                                                  ir.IntType(_LANES)), i64)
                sh = ir.Constant(i64, v * _LANES)
                fmask = builder.or_(fmask, builder.shl(fb, sh))
                bmask = builder.or_(bmask, builder.shl(bb, sh))
            # branch-free append: written at slot cnt, kept only if some bit is set
            rty = arows.data.type.pointee
            builder.store(i if rty.width == 64 else builder.trunc(i, rty),
                          builder.gep(arows.data, [cnt]))
            builder.store(builder.trunc(fmask, i32), builder.gep(afm.data, [cnt]))
            builder.store(builder.trunc(bmask, i32), builder.gep(abm.data, [cnt]))
            hit = builder.icmp_unsigned("!=", builder.or_(fmask, bmask), ir.Constant(i64, 0))
            cnt_next = builder.add(cnt, builder.zext(hit, i64))
            i_next = builder.add(i, ir.Constant(i64, 1))
            i.add_incoming(i_next, builder.block)
            cnt.add_incoming(cnt_next, builder.block)
            builder.cbranch(builder.icmp_signed("<", i_next, r1_), loop, done)
            builder.position_at_end(done)
            res = builder.phi(i64)
            res.add_incoming(ir.Constant(i64, 0), entry)
            res.add_incoming(cnt_next, loop)
            return res

        return sig, codegen

    return block_hits


block_hits8 = _make(8)
block_hits13 = _make(13)
block_hits16 = _make(16)


@nb.njit(inline="always")
def block_hits(M, x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm):
    """:func:`_make`'s kernel for ``M`` attributes (one of :data:`WIDTHS`)."""
    if M == 8:
        return block_hits8(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)
    if M == 13:
        return block_hits13(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)
    return block_hits16(x, nx, tau_f, r0, r1, yt, ny, tau_b, j0, rows, fm, bm)


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
