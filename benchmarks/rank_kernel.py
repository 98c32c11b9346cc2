"""The rank kernels (RBRL-Sum/Max) old against new, in the same process, alternating.

Data as in ``scale.py``: ``linkrisk.datasets.synthetic(n, 13, seed)`` released with additive
noise (a = 0.25), average ranks of both files (the rank attacks' scores), converted by
``integer_form``. A sample of ``--rows`` attacker records is scored against the whole
release by the reference kernel ``nearest_block_int`` (one row per pass over a tile), by
``nearest_block_rank`` (two rows per pass, four attributes per accumulator pass) and by
``rank_kernel`` (the int16 screen with exact rescoring, the engine's path), with the
engine's tile width, chunk and tie-buffer cap; all use every core. Prints ns per pair of
each and checks that their outputs are identical.

    python benchmarks/rank_kernel.py --n 200000 --rows 8192
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from linkrisk.datasets import synthetic
from linkrisk.engine import Tables, average_ranks
from linkrisk.engine.nearest.intkernels import (
    integer_form,
    nearest_block_int,
    nearest_block_rank,
    rank_kernel,
    rank_screen,
    screen_block_rank,
)
from linkrisk.engine.nearest.kernels import METRIC_CODES
from linkrisk.engine.nearest.rules import RTOL, tile_width


def _outs(n):
    return (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    x = synthetic(args.n, 13, args.seed).to_numpy()
    rng = np.random.default_rng(args.seed + 1)
    y = x + rng.standard_normal(x.shape) * (0.25 * x.std(axis=0, ddof=1))
    a, b = average_ranks(x), average_ranks(y)
    rows = np.sort(rng.choice(args.n, size=min(args.rows, args.n), replace=False))
    m = a.shape[1]
    for metric in ("l1", "linf"):
        ai, bti, icode, scale = integer_form(a, b, METRIC_CODES[metric], Tables.empty(m))
        ai = np.ascontiguousarray(ai[rows])
        rid, truth = rows.astype(np.int64), rows.astype(np.int64)
        kw = (icode, scale, truth, RTOL, 32, 0, tile_width(m), 16)
        _, h, band = rank_screen(ai, bti, icode, RTOL)
        kerns = {"reference": nearest_block_int, "blocked": nearest_block_rank,
                 "screen": rank_kernel(ai, bti, icode, RTOL)}
        for f in kerns.values():  # compile
            f(ai[:4], rid[:4], bti, *kw[:2], truth[:4], *kw[3:], *_outs(4))
        times = {k: [] for k in kerns}
        res = {}
        for _ in range(args.reps):
            for k, f in kerns.items():
                out = _outs(rows.size)
                t0 = time.perf_counter()
                f(ai, rid, bti, *kw, *out)
                times[k].append(time.perf_counter() - t0)
                res[k] = out
        same = all(np.array_equal(u, v) for k in ("blocked", "screen")
                   for u, v in zip(res["reference"], res[k], strict=True))
        pairs = rows.size * args.n
        line = ", ".join(f"{k} {min(v) / pairs * 1e9:.3f}" for k, v in times.items())
        ratio = ", ".join(f"{k} {min(times['reference']) / min(times[k]):.2f}×"
                          for k in ("blocked", "screen"))
        redo = np.zeros(rows.size, np.bool_)
        btq = (bti >> h).astype(np.int16)
        screen_block_rank(ai, (ai >> h).astype(np.int16), rid, bti, btq, *kw[:2], band,
                          *kw[2:5], 4 * 32 + 64, *kw[5:], *_outs(rows.size), redo)
        print(f"{metric}: n = {args.n}, {rows.size} rows, screen shift {h} band {band}: "
              f"ns/pair {line}; speed-up {ratio}; identical outputs: {same}; rows the "
              f"screen rescans exactly: {int(redo.sum())}")


if __name__ == "__main__":
    main()
