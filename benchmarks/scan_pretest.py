"""The certificate scan's float32 pre-test alone: nanoseconds a pair, register kernel
against loop kernel.

gdbrl's certificate (``engine/matching/knn.scan_gated``) tests blocks of columns from float32
scores with a proven error bound before any pair is scored exactly; on the benchmark data
almost every pair is rejected there, so the pre-test is the scan's cost. This script makes
every block of every listed row go through the pre-test and none pass (key −1, off 0, gate
−1, a θ below every distance), and times the scan with the register-blocked kernel of
``engine/matching/vec32.py`` (files of up to 16 attributes) and with the loop kernel
(``SCAN_REGISTER = False``), alternated, in one process. Both must return the same scan.

    python benchmarks/scan_pretest.py                      # 20,000 rows x 300,000 columns
    python benchmarks/scan_pretest.py --rows 5000 --n 100000 --repeat 5

To compare two versions of the kernel, run the script from each tree (``PYTHONPATH=<tree>/src``)
with its own ``NUMBA_CACHE_DIR``: numba's cache of the scan does not notice a change of
``vec32.py`` alone.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

import numpy as np


def main(argv: list[str] | None = None) -> None:
    from linkrisk.engine import standardize
    from linkrisk.engine.nearest import Pairwise

    K = importlib.import_module("linkrisk.engine.matching.knn")  # the module, not knn()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300_000, help="columns (release records)")
    ap.add_argument("--rows", type=int, default=20_000, help="rows scanned")
    ap.add_argument("--m", type=int, default=13, help="attributes")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    x = standardize(rng.standard_normal((args.n, args.m)))
    y = x + 0.25 * rng.standard_normal((args.n, args.m))
    pw = Pairwise.build(x, y, root=True)
    rows = rng.choice(args.n, min(args.rows, args.n), replace=False)
    nr = rows.shape[0]
    scan_args = (pw, rows, np.zeros(args.n), np.full(args.n, -1.0), np.full(nr, 0.05),
                 np.full(nr, -1.0))

    def run(register: bool) -> tuple[float, object]:
        K.SCAN_REGISTER = register
        t0 = time.perf_counter()
        s, _ = K.scan_gated(*scan_args, screened=True)
        return time.perf_counter() - t0, s

    default = K.SCAN_REGISTER
    try:
        run(True), run(False)  # compiled outside the timing
        times: dict[bool, list[float]] = {True: [], False: []}
        scans = {}
        for _ in range(args.repeat):
            for reg in (True, False):
                t, scans[reg] = run(reg)
                times[reg].append(t)
    finally:
        K.SCAN_REGISTER = default
    same = all(np.array_equal(getattr(scans[True], f), getattr(scans[False], f))
               for f in ("min", "count", "idx", "val"))
    pairs = nr * args.n
    print(f"{nr:,} rows x {args.n:,} columns x {args.m} attributes, every block pre-tested, "
          f"{int(scans[True].count.sum())} pairs passed; medians of {args.repeat} alternated "
          "runs")
    print("| pre-test | s | ns a pair | runs s |")
    print("|---|---:|---:|---|")
    for reg, name in ((True, "register kernel (vec32)"), (False, "loop kernel")):
        med = statistics.median(times[reg])
        runs = ", ".join(f"{t:.3f}" for t in times[reg])
        print(f"| {name} | {med:.3f} | {med / pairs * 1e9:.3f} | {runs} |")
    ratio = statistics.median(times[False]) / statistics.median(times[True])
    print(f"loop / register: {ratio:.2f}x; same scans: {same}")


if __name__ == "__main__":
    main()
