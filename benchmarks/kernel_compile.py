"""Compile time of the nearest-set kernels on a cold numba cache (issue 43).

Each case runs in a fresh process with a new empty ``NUMBA_CACHE_DIR`` and calls one
kernel on a small problem; a ``numba:compile`` event listener adds up the top-level
compilations (callees included). ``rank_*`` cases call the rank kernels for L1 and L∞
in one process, as ``assess`` does (rbrl_sum and rbrl_max).

    python benchmarks/kernel_compile.py                  # every case, --repeat 1
    python benchmarks/kernel_compile.py --cases screen_rank,hamming --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = ("screen_rank", "nearest_block_rank", "nearest_block_int", "hamming",
         "nearest_block", "recount_rows")

_CHILD = r"""
import json, sys, time
import numpy as np
from numba.core import event

case = sys.argv[1]
spans, depth = [], [0]

class Top(event.Listener):
    def on_start(self, ev):
        if depth[0] == 0:
            self.t = time.perf_counter()
        depth[0] += 1

    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            spans.append(time.perf_counter() - self.t)

from linkrisk.engine.nearest import hamming, intkernels, kernels
from linkrisk.engine.nearest.rules import RTOL

rng = np.random.default_rng(0)
n, m = 300, 5
ai = rng.integers(0, 40, (n, m)).astype(np.int32)
bti = np.ascontiguousarray(rng.integers(0, 40, (m, n)).astype(np.int32))
rid = np.arange(n, dtype=np.int64)
truth = np.arange(n, dtype=np.int64)

def outs():
    return (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))

event.register("numba:compile", Top())
if case == "screen_rank":
    for ic in (intkernels.I_L1, intkernels.I_LINF):
        intkernels.rank_kernel(ai, bti, ic, RTOL)(ai, rid, bti, ic, 1, truth, RTOL, 32, 0,
                                                  256, 16, *outs())
elif case == "nearest_block_rank":
    for ic in (intkernels.I_L1, intkernels.I_LINF):
        intkernels.nearest_block_rank(ai, rid, bti, ic, 1, truth, RTOL, 32, 0, 256, 16,
                                      *outs())
elif case == "nearest_block_int":
    intkernels.nearest_block_int(ai, rid, bti, intkernels.I_L1, 1, truth, RTOL, 32, 0, 256,
                                 16, *outs())
elif case == "hamming":
    ac, bt = hamming.hamming_codes(ai % 4 * 1.0, bti.T % 4 * 1.0)
    hamming.nearest_block_hamming(ac, rid, bt, np.empty(0, np.uint8), truth, RTOL, 32, 0,
                                  256, 16, *outs())
else:
    a = rng.standard_normal((n, m))
    pw = kernels.Pairwise.build(a, a + 0.1)
    o = outs()
    if case == "nearest_block":
        kernels.nearest_block(pw.x, rid, pw.cols, *pw.args[:2], pw.kxx, pw.kyy, *pw.tabs,
                              truth, RTOL, 32, 0, 256, 16, *o)
    else:
        kernels.recount_rows(rid, rid, pw.x, pw.cols, *pw.args, np.zeros(n), 0, 256, o[1],
                             o[3])
print(json.dumps(sum(spans)))
"""


def compile_seconds(case: str) -> float:
    """Seconds of top-level numba compilation of ``case`` in a fresh process, cold cache."""
    with tempfile.TemporaryDirectory(prefix="linkrisk-compile-") as cache:
        src = str(Path(__file__).resolve().parents[1] / "src")
        path = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=path)
        p = subprocess.run([sys.executable, "-c", _CHILD, case], env=env,
                           capture_output=True, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print("| case | compile s (median) | runs |")
    print("|---|---:|---|")
    for case in args.cases.split(","):
        runs = [compile_seconds(case) for _ in range(args.repeat)]
        print(f"| `{case}` | {statistics.median(runs):.1f} | "
              f"{' / '.join(f'{r:.1f}' for r in runs)} |", flush=True)


if __name__ == "__main__":
    main()
