#!/usr/bin/env python
"""Readings of the ambiguous settings of the replicated papers, measured side by side.

For the settings the papers leave open, mask Census under every reading and record the
correct-link rates next to the published cells, so that docs/replication.md can say which
reading fits:

* p-distribution rank swapping: ``variant`` DRAW/SCALE/RULE (8 readings) against the
  rank-based paper's Table 3 and the global paper's Table 2 (dbrl, rbrl_sum, rbrl_max);
* additive noise "σ = s %": ``scale`` sd / variance / range / mean, and correlated noise
  with a = (s/100)², each with standardized and raw (``standardize=False``) distances,
  against the global paper's DBRL and GDBRL cells;
* rank shuffling "window q": q positions, q % of n, n / q positions (slide = window);
* IPSO-C and data shuffling "blocks 1–6 and 7–13 modelled on each other": both blocks
  synthesized (``mutual=True``), or only one block synthesized from the other.

    python scripts/replication_readings.py [--data-dir DIR] [-R 5] [--only pdist]

Writes ``docs/studies/replicate/readings.csv`` (one row per reading × setting × attack: mean
and std of % correctly linked over R seeded replications, the published value in %).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

PDIST = ["max/half/free", "max/p/free", "distance/half/free", "distance/p/free",
         "max/half/nofree", "max/p/nofree", "distance/half/nofree", "distance/p/nofree"]


def _rate(df: pd.DataFrame, rel: pd.DataFrame, attack: str, seed: int, **params) -> float:
    from linkrisk.attacks import make_context, run_attack

    ctx, d = make_context(df, rel, None, seed=seed)
    return 100.0 * run_attack(ctx, attack, d, **params).rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("LINKRISK_DATA"))
    ap.add_argument("-R", type=int, default=5, help="replications per reading and setting")
    ap.add_argument("--only", default="pdist,noise,shuffle,ipso")
    ap.add_argument("--out", default="docs/studies/replicate/readings.csv")
    args = ap.parse_args()
    from linkrisk import datasets
    from linkrisk.experiments.published import load_published
    from linkrisk.masking import mask

    df = datasets.load("census", args.data_dir)
    n = len(df)
    pub = load_published()
    look = {(r.masking_label, r.value_key, r.attack_label): r.published_pct
            for r in pub.drop_duplicates(["masking_label", "value_key",
                                          "attack_label"]).itertuples()}
    rows = []
    t0 = time.time()

    def record(experiment, reading, setting, attack, vals, label, vkey):
        rows.append({"experiment": experiment, "reading": reading, "setting": setting,
                     "attack": attack, "n": len(vals), "mean": float(np.mean(vals)),
                     "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                     "published": look.get((label, vkey, attack), np.nan)})
        print(f"[{time.time() - t0:6.0f}s] {experiment} {reading} {setting} {attack}: "
              f"{np.mean(vals):.1f}", file=sys.stderr, flush=True)

    only = set(args.only.split(","))
    if "pdist" in only:
        for v in PDIST:
            for p in (1, 2, 5, 10, 25, 50, 100):
                res = {a: [] for a in ("dbrl", "rbrl_sum", "rbrl_max")}
                for r in range(args.R):
                    rel = mask(df, "rank_swap_pdist", seed=7000 + r, p=p, variant=v)
                    for a in res:
                        res[a].append(_rate(df, rel, a, r))
                for a, vals in res.items():
                    if p != 2:
                        record("rank_swap_pdist (rbrl T3)", v, f"p={p}", a, vals,
                               "rbrl-t3 rank_swap_pdist", f"{p:g}")
                    if p in (2, 5, 10) and a == "dbrl":
                        record("rank_swap_pdist (global T2)", v, f"p={p}", a, vals,
                               "gdbrl rank_swap_pdist", f"{p:g}")
    if "noise" in only:
        readings = [(f"noise scale={s}", "noise", {"scale": s}) for s in
                    ("sd", "variance", "range", "mean")]
        readings.append(("correlated_noise a=(s/100)^2", "correlated_noise", {}))
        for name, method, extra in readings:
            for std in (True, False):
                for s in (15, 20, 25, 30):
                    a = (s / 100.0) ** 2 if method == "correlated_noise" else s / 100.0
                    res = {"dbrl": [], "gdbrl": []}
                    for r in range(args.R):
                        rel = mask(df, method, seed=8000 + r, a=a, **extra)
                        res["dbrl"].append(_rate(df, rel, "dbrl", r, standardize=std))
                        res["gdbrl"].append(_rate(df, rel, "gdbrl", r, standardize=std))
                    for att, vals in res.items():
                        record("noise (global T2)", f"{name}, "
                               f"{'standardized' if std else 'raw'} distance", f"sigma={s}",
                               att, vals, "gdbrl noise", f"{s / 100:g}")
    if "shuffle" in only:
        for name, win in (("window q", lambda q: q), ("window q % of n", lambda q: q * n // 100),
                          ("window n/q", lambda q: n // q)):
            for q in (2, 3, 4):
                res = {"dbrl": [], "gdbrl": []}
                for r in range(args.R):
                    rel = mask(df, "rank_shuffle", seed=9000 + r, q=win(q), s=win(q))
                    for att in res:
                        res[att].append(_rate(df, rel, att, r))
                for att, vals in res.items():
                    record("rank_shuffle (global T2)", f"{name} (= {win(q)}), slide = window",
                           f"q={q}", att, vals, "gdbrl rank_shuffle", f"{q:g}")
    if "ipso" in only:
        b1, b2 = list(df.columns[:6]), list(df.columns[6:])
        for method, kw in (("ipso", {"variant": "C"}), ("data_shuffle", {})):
            for name, cols, conf, mutual in (("both blocks (mutual)", b1, b2, True),
                                             ("block 1-6 from 7-13", b1, b2, False),
                                             ("block 7-13 from 1-6", b2, b1, False)):
                res = {"dbrl": [], "dbrl_l1": [], "gdbrl": [], "gdbrl_l1": []}
                for r in range(args.R):
                    rel = mask(df, method, columns=cols, confidential=conf, mutual=mutual,
                               seed=9500 + r, **kw)
                    for att in res:
                        base, _, metric = att.partition("_")
                        if base == "dbrl":
                            res[att].append(_rate(df, rel, att, r))
                        else:
                            res[att].append(_rate(df, rel, "gdbrl", r,
                                                  **({"metric": metric} if metric else {})))
                label = "gdbrl ipso C" if method == "ipso" else "gdbrl data_shuffle"
                for att, vals in res.items():
                    record(f"{method} (global T2/T6)", name, "", att, vals, label, "")
    out = pd.DataFrame(rows)
    if os.path.exists(args.out):
        old = pd.read_csv(args.out)
        out = pd.concat([old[~old["experiment"].isin(set(out["experiment"]))], out])
    tmp = args.out + ".tmp"
    out.to_csv(tmp, index=False)
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({len(out)} rows) in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
