"""A software prefetch for the compiled loops whose next memory access is known early.

The auction (:func:`.assignment._auction`) bids in queue order (in a phase's tail row by
row, before it in batches whose bids run in parallel): each bid reads
a random row of the graph (its ``indptr`` entry, then its edges' columns and costs), and
a bid's own work (a few hundred instructions) is too long for the processor to start the
next row's loads out of order. So every bid waited on memory for the row it reads, far
longer than the gathers themselves take. The queue holds the next rows, and a prefetch
instruction (unlike a plain load, which the processor has to wait for before it retires)
asks for their memory while the current bid runs. The shortest-path searches (:func:`.assignment._augment`,
:func:`.assignment._flatten`) prefetch the row on top of their heap in the same way: it is
the next one they scan unless the current row's edges put another above it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the cache to load ``arr[idx]`` (a 1-D contiguous array, an integer index) for
    reading soon: LLVM's ``llvm.prefetch`` (read, high temporal locality, data cache). A
    hint only: it never faults and changes no value, so the caller's results do not
    depend on it."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
            and isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [i]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        # rw = 0 (read), locality = 3 (keep in all cache levels), cache type = 1 (data)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
