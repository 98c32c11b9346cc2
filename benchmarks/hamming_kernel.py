"""The Hamming kernel of dbrl_hamming: the int32 kernel (``intkernels.nearest_block_int``,
score code 2) against the narrow-code kernel (``hamming.nearest_block_hamming``) in the same
process, alternating, on the categorical data of ``scale.py`` (13 attributes cut into
4–12 quantile categories, 10 % of the values replaced at random).

A sample of ``--rows`` attacker records is scanned against all n released records (the
kernels' cost is linear in the attacker rows, so ns/pair carries over to the full n × n
run); the outputs of the two kernels are compared element by element. Wall-clock and CPU
time (summed over the threads: steadier than wall time on a loaded machine) per pair.

    python benchmarks/hamming_kernel.py --sizes 100000,200000 --rows 4000
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def _outs(n: int):
    return (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))


def compare(n: int, rows: int, repeats: int) -> str:
    """One line: both kernels' ns/pair on ``rows`` attacker records × n released ones."""
    from scale import _data

    from linkrisk.engine.nearest.hamming import (
        count_dtype,
        hamming_codes,
        hamming_tile,
        nearest_block_hamming,
    )
    from linkrisk.engine.nearest.intkernels import I_HAMMING, nearest_block_int
    from linkrisk.engine.nearest.rules import RTOL, tile_width

    x, y = _data(n, 0, True)
    a = np.column_stack([x[c].cat.codes for c in x.columns]).astype(float)
    b = np.column_stack([y[c].cat.codes for c in y.columns]).astype(float)
    na = min(rows, n)
    pick = np.random.default_rng(1).choice(n, na, replace=False)
    a = a[pick]
    m = a.shape[1]
    rid = truth = pick.astype(np.int64)
    a32, bt32 = np.ascontiguousarray(a, np.int32), np.ascontiguousarray(b.T, np.int32)
    a8, bt8 = hamming_codes(a, b)
    proto = np.empty(0, count_dtype(m))

    def old(k, o):
        nearest_block_int(a32[:k], rid[:k], bt32, I_HAMMING, 1, truth[:k], RTOL, 32, 0,
                          tile_width(m), 16, *(z[:k] for z in o))

    def new(k, o):
        nearest_block_hamming(a8[:k], rid[:k], bt8, proto, truth[:k], RTOL, 32, 0,
                              hamming_tile(m, bt8.itemsize), 16, *(z[:k] for z in o))

    o_old, o_new = _outs(na), _outs(na)
    old(32, o_old)  # compile
    new(32, o_new)
    wall = {old: [], new: []}
    cpu = {old: [], new: []}
    for _ in range(repeats):
        for f, o in ((old, o_old), (new, o_new)):
            t0, c0 = time.perf_counter(), time.process_time()
            f(na, o)
            wall[f].append(time.perf_counter() - t0)
            cpu[f].append(time.process_time() - c0)
    same = all(np.array_equal(p, q) for p, q in zip(o_old, o_new, strict=True))
    w_old, w_new, c_old, c_new = (min(t) * 1e9 / (na * n) for t in
                                  (wall[old], wall[new], cpu[old], cpu[new]))
    return (f"n = {n:>8,} ({na:,} × {n:,}, m = {m}): wall int32 {w_old:.3f}, narrow "
            f"{w_new:.3f} ns/pair ({w_old / w_new:.2f}×); CPU (all threads) int32 {c_old:.3f}, "
            f"narrow {c_new:.3f} ns/pair ({c_old / c_new:.2f}×); identical outputs: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,200000")
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        print(compare(n, args.rows, args.repeats), flush=True)


if __name__ == "__main__":
    main()
