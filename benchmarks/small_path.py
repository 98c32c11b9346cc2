"""The small-problem path against the compiled kernels, warm (issue 43, "Start-up").

For n × n problems of m attributes, the seconds of :func:`~linkrisk.engine.nearest.search.
nearest_sets` through the numpy small path (``engine/nearest/small.py``) and through the
compiled kernels (compiled before timing, so this is the *warm* cost), alternately in one
process, best of ``--repeat``; and gdbrl's dense cost matrix both ways. The threshold
``small.MAX_PAIRS`` trades the warm difference against the compilation it saves.

    python benchmarks/small_path.py                   # n = 250 500 1080 1500 2000, m = 13
    python benchmarks/small_path.py --sizes 1080 --repeat 7
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from linkrisk.engine.matching import dense
from linkrisk.engine.matching.knn import dense_costs as kernel_dense_costs
from linkrisk.engine.nearest import small
from linkrisk.engine.nearest.kernels import Pairwise, Tables
from linkrisk.engine.nearest.search import nearest_sets


def problems(n: int, m: int, rng: np.random.Generator) -> dict:
    """Census-like problems of each metric the per-record attacks use."""
    a = rng.normal(size=(n, m))
    b = a + rng.normal(scale=0.3, size=(n, m))
    ra = np.argsort(np.argsort(a, axis=0), axis=0).astype(float)
    rb = np.argsort(np.argsort(b, axis=0), axis=0).astype(float)
    ca, cb = rng.integers(0, 5, (n, m)).astype(float), rng.integers(0, 5, (n, m)).astype(float)
    unit = Tables.from_list([1.0 - np.eye(5)] * m)
    return {"sqeuclidean": (a, b, {}), "l1 (ranks)": (ra, rb, {"metric": "l1"}),
            "linf (ranks)": (ra, rb, {"metric": "linf"}), "kernel": (a, b, {"metric": "kernel"}),
            "mixed (Hamming)": (ca, cb, {"metric": "mixed", "tables": unit})}


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="250,500,1080,1500,2000")
    ap.add_argument("--m", type=int, default=13)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    small.MAX_PAIRS = 1 << 62  # time the small path at every size
    print("| n | problem | small path s | kernel (warm) s | ratio |")
    print("|---:|---|---:|---:|---:|")
    for n in map(int, args.sizes.split(",")):
        truth = np.arange(n)
        for name, (a, b, kw) in problems(n, args.m, rng).items():
            def fast(a=a, b=b, kw=kw, truth=truth):
                with small.mode("always"):
                    nearest_sets(a, b, truth=truth, screen="none", **kw)

            def kern(a=a, b=b, kw=kw, truth=truth):
                with small.mode("off"):
                    nearest_sets(a, b, truth=truth, screen="none", **kw)
            kern()  # compile
            ts, tk = best(fast, args.repeat), best(kern, args.repeat)
            print(f"| {n} | {name} | {ts:.4f} | {tk:.4f} | {ts / tk:.1f}× |")
        pw = Pairwise.build(*problems(n, args.m, rng)["sqeuclidean"][:2], root=True)
        kernel_dense_costs(pw)
        ts = best(lambda pw=pw: dense.dense_costs(pw), args.repeat)
        tk = best(lambda pw=pw: kernel_dense_costs(pw), args.repeat)
        print(f"| {n} | gdbrl dense costs | {ts:.4f} | {tk:.4f} | {ts / tk:.1f}× |")


if __name__ == "__main__":
    main()
