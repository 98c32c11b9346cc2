"""The float32 screen of the L1 and kernel attacks against their exact kernel, in the same
process, alternating.

Data as in ``scale.py``: ``linkrisk.datasets.synthetic(n, 13, seed)`` released with additive
noise (a = 0.25), each file standardized with its own mean and std (ddof = 1), as
``dbrl_l1`` and ``kernel`` do. A sample of ``--rows`` attacker records is linked against the
whole release by ``nearest_sets`` with ``screen="none"`` (the exact float64 kernel) and
``screen="float"`` (:mod:`linkrisk.engine.nearest.l1_kernel_screen`). Prints a table of ns per pair (best of ``--reps``), the speed-up, whether all
outputs (minimum, count, true score, membership, link) are identical, and how many rows
the screen handed to the exact kernel. (faiss k = 1, the yardstick of issue 24, is timed
by ``scale.py`` in its own process: in this one its OpenMP threads would compete with
numba's.)

    python benchmarks/float_screen.py --n 100000 --rows 8192
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from linkrisk.datasets import synthetic
from linkrisk.engine.nearest.search import nearest_sets

FIELDS = ("min_score", "count", "true_in_set", "true_score", "link")


def _std(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    x = synthetic(args.n, 13, args.seed).to_numpy()
    rng = np.random.default_rng(args.seed + 1)
    y = x + rng.standard_normal(x.shape) * (0.25 * x.std(axis=0, ddof=1))
    a, b = _std(x), _std(y)
    rows = np.sort(rng.choice(args.n, size=min(args.rows, args.n), replace=False))
    ar = np.ascontiguousarray(a[rows])
    pairs = rows.size * args.n
    cases = [("l1", {}), ("kernel", {"degree": 2}), ("kernel", {"degree": 3})]

    def run(metric, kw, screen):
        return nearest_sets(ar, b, metric=metric, truth=rows, row_ids=rows, screen=screen,
                            **kw)

    for metric, kw in cases:  # compile outside the timing
        nearest_sets(ar[:64], b[:5000], metric=metric, screen="none", **kw)
        nearest_sets(ar[:64], b[:5000], metric=metric, screen="float", **kw)
    times: dict[str, list[float]] = {}
    same: dict[str, bool] = {}
    redo: dict[str, int] = {}
    for _ in range(args.reps):
        for metric, kw in cases:
            name = metric + (f" d={kw['degree']}" if kw else "")
            res = {}
            for screen in ("none", "float"):
                t0 = time.perf_counter()
                res[screen] = run(metric, kw, screen)
                times.setdefault(f"{name}/{screen}", []).append(time.perf_counter() - t0)
            same[name] = all(np.array_equal(getattr(res["none"], f), getattr(res["float"], f))
                             for f in FIELDS)
            redo[name] = int(getattr(res["float"], "rechecked", -1))
    ns = {k: min(v) / pairs * 1e9 for k, v in times.items()}
    print(f"n = {args.n}, {rows.size} attacker rows, best of {args.reps}")
    print(f"{'attack':<12} {'exact ns/pair':>14} {'screen ns/pair':>15} {'speed-up':>9} "
          f"{'identical':>10} {'rows rescanned':>15}")
    for name in same:
        e, s = ns[f"{name}/none"], ns[f"{name}/float"]
        print(f"{name:<12} {e:>14.3f} {s:>15.3f} {e / s:>8.1f}× {str(same[name]):>10} "
              f"{redo[name]:>15}")


if __name__ == "__main__":
    main()
