"""Blocked engine vs the naive dense numpy computation for exact DBRL.

For each n: the synthetic generator's file (13 attributes) masked with additive noise
(a = 0.25), linked with `dbrl` (squared Euclidean on standardized attributes, the tie rule of docs/methods.md)
by (1) linkrisk's engine and (2) the obvious dense alternative: the full n×n distance matrix
by the GEMM identity |a|²+|b|²−2abᵀ, then row minima and tie counts. Each case runs in a
fresh subprocess so its peak RSS is its own. Prints a Markdown table.

    python benchmarks/engine.py                      # n = 1080 4092 20000 100000
    python benchmarks/engine.py --sizes 1080,4092 --dense-max 4092
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def make(n: int, m: int = 13, a: float = 0.25, seed: int = 0):
    from linkrisk.datasets import synthetic

    x = synthetic(n, m, seed=seed).to_numpy()
    rng = np.random.default_rng(seed + 1)
    y = x + rng.standard_normal(x.shape) * (a * x.std(axis=0, ddof=1))
    return x, y


def std(x):
    return (x - x.mean(0)) / x.std(0, ddof=1)


def case(kind: str, n: int) -> dict:
    x, y = make(n)
    if kind == "engine":
        from linkrisk.engine import nearest_sets

        nearest_sets(x[:64], y[:64])  # load the compiled kernel before timing
        t = time.perf_counter()
        r = nearest_sets(std(x), std(y), truth=np.arange(n))
        secs = time.perf_counter() - t
        links = float(r.correct.sum())
    else:
        t = time.perf_counter()
        a, b = std(x), std(y)
        d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
        mn = d.min(1)
        c = d <= (mn + 1e-9 * np.abs(mn))[:, None]
        cnt = c.sum(1)
        hit = c[np.arange(n), np.arange(n)]
        links = float((hit / cnt).sum())
        secs = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"kind": kind, "n": n, "seconds": secs, "peak_rss": rss, "correct_links": links}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1080,4092,20000,100000")
    ap.add_argument("--dense-max", type=int, default=20000,
                    help="largest n for the dense computation (it needs 8·n² bytes per matrix)")
    ap.add_argument("--case", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(case(args.case[0], int(args.case[1]))))
        return
    rows = []
    for n in map(int, args.sizes.split(",")):
        res = {}
        for kind in ("engine", "dense"):
            if kind == "dense" and n > args.dense_max:
                continue
            p = subprocess.run([sys.executable, __file__, "--case", kind, str(n)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                continue
            res[kind] = json.loads(p.stdout)
            print(f"  n={n} {kind}: {res[kind]['seconds']:.2f} s", file=sys.stderr)
        rows.append((n, res))
    print("| n | engine s | engine peak RSS | dense s | dense peak RSS | speed-up | memory ratio | same links |")
    print("|---:|---:|---:|---:|---:|---:|---:|:---:|")
    gib = 2**30
    for n, res in rows:
        e, d = res.get("engine"), res.get("dense")
        if d:
            dense = (f"{d['seconds']:.2f} | {d['peak_rss'] / gib:.2f} GiB | "
                     f"{d['seconds'] / e['seconds']:.1f}× | {d['peak_rss'] / e['peak_rss']:.1f}× | "
                     f"{'yes' if abs(d['correct_links'] - e['correct_links']) < 1e-6 else 'NO'}")
        else:
            dense = f"not run (needs {3 * 8 * n * n / gib:.0f} GiB) | – | – | – | –"
        print(f"| {n:,} | {e['seconds']:.2f} | {e['peak_rss'] / gib:.2f} GiB | {dense} |")


if __name__ == "__main__":
    main()
