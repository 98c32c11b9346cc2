"""faiss k = 1 over contiguous parts of B against one search over all of B.

dbrl's faiss screen (``engine/nearest/faiss_screen.py``) searches B part by part: the
minimum of every part gives each record its best and the best of the other parts, which
certify most links without a second search. This script measures what the parts cost
against one index over the whole of B, for several part sizes, in one process with the
configurations alternated (single runs on a shared machine move by 5-10 %), and the fused
second-minimum kernel ``_second`` that step 2 runs inside the winning part.

    python benchmarks/faiss_parts.py                       # 10^6 x 13, 262,144 queries
    python benchmarks/faiss_parts.py --n 200000 --queries 200000 --parts 4096,8192

Data: the scale.py files (synthetic 13 attributes, release = original + 0.25 sd noise),
standardized, float32. Queries go in blocks of 131,072 rows (at least faiss's BLAS
threshold, as the screen's blocks do).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> None:
    import faiss
    from scale import _data

    from linkrisk.engine import standardize
    from linkrisk.engine.nearest.faiss_screen import second_in_part

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="released records (B)")
    ap.add_argument("--queries", type=int, default=262_144, help="attacker records searched")
    ap.add_argument("--parts", default="2048,4096,8192", help="part sizes to compare")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--block", type=int, default=131_072, help="queries per faiss call")
    args = ap.parse_args(argv)
    x, y = _data(args.n, 0, False)
    a = standardize(x.to_numpy()).astype(np.float32)[: args.queries]
    b = standardize(y.to_numpy()).astype(np.float32)
    del x, y

    def indexes(p: int) -> list:
        out = []
        for lo in range(0, args.n, p):
            ix = faiss.IndexFlatL2(b.shape[1])
            ix.add(b[lo:lo + p])
            out.append(ix)
        return out

    sizes = [int(s) for s in args.parts.split(",")]
    configs = {"one index": indexes(args.n)} | {f"parts of {p}": indexes(p) for p in sizes}
    times: dict[str, list[float]] = {k: [] for k in configs}
    for rep in range(args.repeat):
        for name, ixs in configs.items():
            t0 = time.perf_counter()
            for r0 in range(0, a.shape[0], args.block):
                q = np.ascontiguousarray(a[r0:r0 + args.block])
                for ix in ixs:
                    ix.search(q, 1)
            times[name].append(time.perf_counter() - t0)
            print(f"  run {rep + 1} {name}: {times[name][-1]:.2f} s", file=sys.stderr, flush=True)
    pairs = float(a.shape[0]) * args.n
    base = statistics.median(times["one index"])
    print(f"faiss-cpu {faiss.__version__}, k = 1, {a.shape[0]:,} queries x {args.n:,} records "
          f"x {b.shape[1]}, medians of {args.repeat} alternated runs")
    print("| search | s | ns/pair | x one index | runs s |")
    print("|---|---:|---:|---:|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.2f} | {med / pairs * 1e9:.3f} | {med / base:.3f} | "
              f"{' / '.join(f'{t:.2f}' for t in ts)} |")
    # step 2's kernel: each part's share of the queries (about n_a / parts rows) against it
    print("\nsecond smallest score inside the winning part (`_second`), all queries:")
    print("| part rows | s (median) | ns/pair |")
    print("|---:|---:|---:|")
    second_in_part(a[:8], b[:64])  # compiled outside the timing
    for p in sizes:
        rows = max(1, round(a.shape[0] * p / args.n))
        ts = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for lo in range(0, a.shape[0], rows):
                second_in_part(a[lo:lo + rows], b[:p])
            ts.append(time.perf_counter() - t0)
        med = statistics.median(ts)
        print(f"| {p} | {med:.3f} | {med / (a.shape[0] * p) * 1e9:.3f} |")


if __name__ == "__main__":
    main()
