"""Blocked dbrl and gdbrl on national-size files (issue 43, docs/methods.md "Blocking").

Data: ``n`` records, 13 numeric attributes (``linkrisk.datasets.synthetic(n, 13, seed)``)
released with additive noise (a = 0.25), plus 3 categorical blocking keys known exactly
(region 10, sex 2, age band 25: ~500 blocks). Each attack runs in its own subprocess through
the public ``linkrisk.attack(..., block="region,sex,ageband")``: wall time, the
subprocess's peak RSS, the rate, and gdbrl's certificate. ``--dask``: dbrl again on a
Dask LocalCluster of this machine, compared record by record with the local result.

    python benchmarks/blocking.py --n 1000000 --dask
    nohup python benchmarks/blocking.py --n 10000000 > benchmarks/results/blocking_1e7.txt &
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time

import numpy as np
import pandas as pd

KEYS = "region,sex,ageband"


def files(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The original file and its noise-masked release with 3 exact blocking keys."""
    import linkrisk

    orig = linkrisk.datasets.synthetic(n, 13, seed)
    rng = np.random.default_rng(seed + 1)
    rel = orig + 0.25 * orig.std().to_numpy() * rng.standard_normal(orig.shape)
    for df in (orig, rel):
        df["region"] = pd.Categorical(rng.integers(0, 10, n)) if df is orig else orig["region"]
        df["sex"] = rng.integers(0, 2, n) if df is orig else orig["sex"]
        df["ageband"] = rng.integers(0, 25, n) if df is orig else orig["ageband"]
    return orig, rel


def _case(n: int, method: str, backend: str, out: dict) -> None:
    import warnings

    import linkrisk

    warnings.simplefilter("ignore")
    a, b = files(2000)
    linkrisk.attack(a, b, method, block=KEYS, assume_row_order=True)  # compile the kernels
    a, b = files(n)
    t0 = time.perf_counter()
    r = linkrisk.attack(a, b, method, block=KEYS, assume_row_order=True, backend=backend)
    out.update(seconds=time.perf_counter() - t0, rate=r.rate, blocks=r.extra["blocks"],
               certified=r.extra.get("certified"), gap=r.extra.get("gap_bound"),
               solver=r.extra.get("solver"),
               peak_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
               links=r.per_record["link"].to_numpy(), correct=r.per_record["correct"].sum())


def run(n: int, method: str, backend: str = "local") -> dict:
    """One attack in a fresh subprocess; its figures."""
    with mp.Manager() as m:
        out = m.dict()
        p = mp.get_context("spawn").Process(target=_case, args=(n, method, backend, out))
        p.start()
        p.join()
        return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--methods", default="dbrl,gdbrl")
    ap.add_argument("--dask", action="store_true", help="dbrl on a Dask LocalCluster too")
    args = ap.parse_args()
    print(f"n = {args.n:,}, 13 numeric QIs, blocking keys {KEYS}")
    local = {}
    for method in args.methods.split(","):
        r = run(args.n, method)
        local[method] = r
        print(f"{method:6s} local: {r['seconds']:8.1f} s  peak {r['peak_gib']:.2f} GiB  "
              f"rate {100 * r['rate']:.3f} %  blocks {r['blocks']}"
              + (f"  certified {r['certified']} gap {r['gap']:.3g} solver {r['solver']}"
                 if method == "gdbrl" else ""), flush=True)
    if args.dask:
        r = run(args.n, "dbrl", "dask")
        same = np.array_equal(r["links"], local["dbrl"]["links"]) if "dbrl" in local else None
        print(f"dbrl   dask : {r['seconds']:8.1f} s  peak {r['peak_gib']:.2f} GiB (client "
              f"process)  rate {100 * r['rate']:.3f} %  same links as local: {same}",
              flush=True)


if __name__ == "__main__":
    main()
