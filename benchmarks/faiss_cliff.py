"""dbrl's faiss screen with a small attacker file against a large release: padded or not.

faiss-cpu 1.15's k = 1 flat search costs ~2 ns a pair with up to ~8,192 queries and
~0.12 ns from 10,000 (benchmarks/README.md, "faiss screen"). The screen therefore pads a
block of ``PAD_MIN`` to ``FAST_QUERIES`` attacker rows with zero rows. This script times
the exact candidate sets (``nearest_sets(..., screen="faiss")``) of a few attacker sizes
against one release, padded and unpadded, alternated, and checks that both give the same
sets and links.

    python benchmarks/faiss_cliff.py                  # release of 10^6 x 13
    python benchmarks/faiss_cliff.py --n 200000 --attackers 700,2000,5000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main(argv: list[str] | None = None) -> None:
    from linkrisk.engine.nearest import faiss_screen as scr
    from linkrisk.engine.nearest import nearest_sets

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="released records")
    ap.add_argument("--attackers", default="1000,5000", help="attacker file sizes")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    b = rng.standard_normal((args.n, 13))
    nearest_sets(b[:700] + 0.1, b[:20_000], screen="faiss")  # compiled outside the timing
    default = scr.PAD_MIN
    print(f"| attacker records | padded s | unpadded s | unpadded / padded | same sets |  "
          f"(release {args.n:,} x 13, medians of {args.repeat} alternated runs)")
    print("|---:|---:|---:|---:|---|")
    for n_a in (int(v) for v in args.attackers.split(",")):
        a = b[rng.integers(0, args.n, n_a)] + 0.25 * rng.standard_normal((n_a, 13))
        times: dict[bool, list[float]] = {True: [], False: []}
        res = {}
        for _ in range(args.repeat):
            for pad in (True, False):
                scr.PAD_MIN = default if pad else 1 << 62
                t0 = time.perf_counter()
                res[pad] = nearest_sets(a, b, screen="faiss")
                times[pad].append(time.perf_counter() - t0)
        scr.PAD_MIN = default
        same = all(np.array_equal(getattr(res[True], f), getattr(res[False], f))
                   for f in ("count", "link", "min_score"))
        tp, tu = statistics.median(times[True]), statistics.median(times[False])
        print(f"| {n_a:,} | {tp:.2f} | {tu:.2f} | {tu / tp:.1f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
