"""Frequency and population risk at scale: f_k/F_k/risk, SUDA2 and local suppression.

Adult (32,561 records, 8 categorical keys, the packaged file) and a
synthetic categorical file (default 10^6 records, 8 keys with 2–12 categories and skewed
frequencies, sampling weights in [50, 150], households of 3). Each step is timed once
after a warm-up on a small file (numba compilation excluded):

* ``f_k/F_k/risk``: ``frequency_risk(..., suda=False)`` — sample and population
  frequencies, negative-binomial individual risk, global and household risk;
* ``SUDA2``: minimal sample uniques of any size and the SUDA/DIS scores;
* ``local suppression k=…``: sdcMicro's greedy suppression to k-anonymity.

    python benchmarks/frequency.py [--n 1000000] [--k 2] [--seed 1] [--skip-adult]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import linkrisk
from linkrisk.errors import LinkriskError
from linkrisk.measures.frequency import frequency_risk, sample_frequencies, suda2


def synthetic(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {}
    for j, L in enumerate([2, 3, 4, 5, 6, 8, 10, 12]):
        cols[f"c{j}"] = pd.Categorical(rng.choice(L, n, p=rng.dirichlet(np.ones(L))),
                                       categories=range(L))
    df = pd.DataFrame(cols)
    df["w"] = rng.uniform(50, 150, n)
    df["hid"] = np.arange(n) // 3
    return df


def run(name: str, df: pd.DataFrame, keys: list[str], weights: str | None,
        household: str | None, k: int) -> list[tuple]:
    rows = []
    t = time.perf_counter()
    fr = frequency_risk(df, keys, weights=weights, household=household, suda=False)
    rows.append((name, len(df), "f_k/F_k/risk", time.perf_counter() - t,
                 f"uniques {fr.summary['sample_uniques']}, ER {fr.summary['global_risk_ER']:.1f}"))
    t = time.perf_counter()
    s = suda2(df, keys)
    d = s.to_dict()
    rows.append((name, len(df), "SUDA2", time.perf_counter() - t,
                 f"records with MSU {d['records_with_msu']}, "
                 f"MSUs {sum(d['msus_by_size'].values())}"))
    t = time.perf_counter()
    out = linkrisk.mask(df, "local_suppression", k=k, keys=keys, columns=keys)
    dt = time.perf_counter() - t
    info = out.attrs["local_suppression"]
    assert sample_frequencies(out, keys).fk.min() >= k
    rows.append((name, len(df), f"local suppression k={k}", dt,
                 f"{info['total']} values in {info['passes']} passes"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-adult", action="store_true")
    a = ap.parse_args()
    keys = [f"c{j}" for j in range(8)]
    warm = synthetic(3000, a.seed + 1)
    run("warm-up", warm, keys, "w", "hid", a.k)
    rows = []
    if not a.skip_adult:
        try:
            from linkrisk.datasets import ADULT_QI
            adult = linkrisk.datasets.load("adult")
            rows += run("Adult", adult, ADULT_QI, None, None, a.k)
        except LinkriskError as exc:
            print(f"Adult skipped: {exc}")
    rows += run("synthetic", synthetic(a.n, a.seed), keys, "w", "hid", a.k)
    print(f"{'file':<10} {'records':>9}  {'step':<24} {'seconds':>8}  result")
    for name, n, step, sec, res in rows:
        print(f"{name:<10} {n:>9}  {step:<24} {sec:>8.2f}  {res}")


if __name__ == "__main__":
    main()
