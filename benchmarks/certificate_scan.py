"""The gdbrl certificate's gated scan: row by row against tiled, float64 against the float32
pre-test, on the first certificate of the global-matching benchmark problem.

Data as ``benchmarks/global_matching.py`` (``synthetic(n, 13)`` + 0.25·σ noise, Euclidean on
standardized values). The script builds the sparse solver's first state exactly as
:mod:`linkrisk.engine.matching` does (float32-screened k-NN lists, k = 64, sparse JV,
flattened duals), finds the suspect rows and times :func:`linkrisk.engine.matching.knn.scan_gated`
on them in four ways, checking that all return the same result bit for bit:

* float64              — each block of columns scored exactly, then tested without √;
* float32 pre-test     — each block tested from float32 scores with a proven error bound,
                         only the columns that may pass scored in float64 (the default for
                         the Euclidean cost at scale);
* row by row / tiled   — each row streams its prefix of the columns on its own, or 64 rows
                         sorted by prefix length share each block while it is in cache.

Usage::

    python benchmarks/certificate_scan.py                  # n = 200,000 (~2 min)
    python benchmarks/certificate_scan.py --n 1000000      # ~20 min, mostly the k-NN lists
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=64)
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from global_matching import _data

    from linkrisk.engine import standardize
    from linkrisk.engine.matching.assignment import SparseAssignment
    from linkrisk.engine.matching.knn import scan_gated
    from linkrisk.engine.matching.screened_knn import knn_screened
    from linkrisk.engine.matching.solver import (
        RTOL,
        SCAN_CAP,
        SCAN_SLACK,
        _Lists,
        _scale,
        _suspects,
    )
    from linkrisk.engine.nearest import Pairwise

    x, y = _data(args.n, args.seed)
    pw = Pairwise.build(standardize(x.to_numpy()), standardize(y.to_numpy()), "sqeuclidean",
                        root=True)
    t0 = time.perf_counter()
    lists = _Lists(knn_screened(pw, args.k, args.k), True, np.inf)
    t_knn = time.perf_counter() - t0
    g, _ = lists.graph(args.k)
    sa = SparseAssignment(*g, args.n)
    t0 = time.perf_counter()
    sa.solve()
    sa.flatten()
    sa.polish()
    t_solve = time.perf_counter() - t0
    u, v = sa.u, sa.v
    tol = RTOL * _scale(sa.cost)
    rows = _suspects(lists.alpha, lists.beta, u, v, tol)
    theta = u[rows] - tol + SCAN_SLACK * (np.abs(u[rows]) + tol)
    gate = lists.alpha[rows] - theta
    key = lists.beta - v
    print(f"gdbrl first certificate, n = {args.n:,}, k = {args.k}: k-NN lists {t_knn:.1f} s, "
          f"solve {t_solve:.1f} s; {rows.size:,} suspect rows ({rows.size / args.n:.1%})",
          flush=True)
    cases = [("float64, row by row", False, 1), ("float64, tiled", False, 64),
             ("float32 pre-test, row by row", True, 1), ("float32 pre-test, tiled", True, 64)]
    head = f"{'case':<30} {'s':>8} {'speed-up':>9} {'same result':>12}"
    print(head)
    print("-" * len(head), flush=True)
    ref, base = None, None
    for name, screened, tile in cases:
        # compile (or load the cache) outside the timing
        scan_gated(pw, rows[:8], v, key, theta[:8], gate[:8], cap=SCAN_CAP,
                   screened=screened, rows_per_tile=tile)
        t0 = time.perf_counter()
        s, nxt = scan_gated(pw, rows, v, key, theta, gate, cap=SCAN_CAP, screened=screened,
                            rows_per_tile=tile)
        secs = time.perf_counter() - t0
        out = (s.min, s.count, s.idx, s.val, nxt)
        if ref is None:
            ref, base = out, secs
        same = all(np.array_equal(a, b) for a, b in zip(out, ref, strict=True))
        print(f"{name:<30} {secs:8.2f} {base / secs:8.1f}x {str(same):>12}", flush=True)


if __name__ == "__main__":
    main()
