"""anonymeter vs linkrisk: the linkability attack over every record (issue 41).

    python benchmarks/anonymeter.py [--sizes 10000 100000] [--anonymeter-python PY]
                                    [--sample 500]

Files of n records × 8 numeric attributes (training, holdout and synthetic, each n rows);
aux column sets of 4 attributes each. linkrisk attacks every training and holdout record
(2 × 2 nearest-neighbour passes of n × n). anonymeter's brute force
(``MixedTypeKNeighbors``, the search its ``LinkabilityEvaluator`` runs) is timed on
``--sample`` query records in a separate Python (anonymeter 1.1 pins numpy < 1.27) and
scaled linearly to the same work (its cost is linear in the number of queries: each query
scans and argsorts all n candidates). Prints one row per size and the ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from linkrisk.synthetic import linkability

REF = Path(__file__).resolve().parents[1] / "tests" / "measures" / "anonymeter_ref.py"


def files(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    cov = 0.5 * np.eye(8) + 0.5
    mk = lambda: pd.DataFrame(rng.multivariate_normal(np.zeros(8), cov, n),  # noqa: E731
                              columns=[f"v{j}" for j in range(8)])
    tr, ho = mk(), mk()
    syn = tr.iloc[rng.choice(n, n)].reset_index(drop=True) + 0.3 * rng.standard_normal((n, 8))
    return tr, ho, syn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--anonymeter-python", default=sys.executable)
    ap.add_argument("--sample", type=int, default=500)
    args = ap.parse_args()
    aux = ([f"v{j}" for j in range(4)], [f"v{j}" for j in range(4, 8)])
    linkability(*files(500)[:2], aux)          # compile outside the timings
    print("| n | linkrisk s (all 2n targets) | anonymeter s/query | anonymeter s (same work, "
          "scaled) | ratio |\n|---|---|---|---|---|")
    for n in args.sizes:
        tr, ho, syn = files(n)
        t = time.perf_counter()
        r = linkability(tr, syn, aux, control=ho)
        ours = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as d:
            dd = Path(d)
            tr.to_csv(dd / "ori.csv", index=False)
            ho.to_csv(dd / "control.csv", index=False)
            syn.to_csv(dd / "syn.csv", index=False)
            (dd / "spec.json").write_text(json.dumps({"timing_only": True, "aux_cols": aux,
                                                      "timing_rows": args.sample}))
            out = subprocess.run([args.anonymeter_python, str(REF), d], capture_output=True,
                                 text=True, check=True).stdout
        per_q = json.loads(out)["seconds"] / args.sample
        theirs = per_q * 2 * n          # training and control targets, one search per aux set
        print(f"| {n:,} | {ours:.2f} | {per_q * 1e3:.3f} ms (2 aux sets) | {theirs:.1f} | "
              f"{theirs / ours:.1f}x |   risk {r.risk:.4f}", flush=True)


if __name__ == "__main__":
    main()
