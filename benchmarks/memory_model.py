"""Peak memory of dbrl and gdbrl against the working-memory budget (issue 44).

Data as ``global_matching.py``: ``synthetic(n, m)`` and a copy with independent noise of
0.25 σ. Every case runs in its own subprocess, which

1. imports linkrisk and runs the same attack on 8,000 records (compiles or loads the
   kernels, the float32-screened ones included): its RSS then is the *fixed part*;
2. makes the two n × m input files (their bytes: *inputs*);
3. runs the attack with ``memory_budget``; *peak* is the process's peak RSS.

*engine* = peak − fixed − inputs is what the attack itself held at its peak; the
table compares it with the budget and with the model of docs/methods.md, "Working
memory" (``model`` below). Usage::

    python benchmarks/memory_model.py                          # 10^5 x 13, 256MiB and 1GiB
    python benchmarks/memory_model.py --sizes 100000,200000 --budgets 64MiB,1GiB
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

MiB = 2**20


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _data(n: int, m: int, seed: int = 0):
    import numpy as np

    from linkrisk.datasets import synthetic

    x = synthetic(n, m, seed)
    rng = np.random.default_rng(seed + 1)
    y = x + rng.standard_normal(x.shape) * (0.25 * x.std(ddof=1).to_numpy())
    return x, y


def model(method: str, n: int, m: int, budget: int, k_list: int | None,
          n_edges: int | None) -> int:
    """Predicted engine bytes at the peak (beyond the fixed part and the inputs), the model
    of docs/methods.md, "Working memory": the engine's float64 copies of both files
    (16·n·m) and per-record arrays (PER_RECORD); dbrl: one block of the screened search
    (rows × bytes per row, the rows set by the budget within [1,024, 262,144]); gdbrl: the
    k-NN lists (K × bytes per list entry) and the candidate graph (GRAPH_BYTES an edge)."""
    import numba as nb
    import numpy as np

    from linkrisk.engine import budget as bm
    from linkrisk.engine.matching.solver import LIST_MEAN

    fixed = 16 * n * m + PER_RECORD[method] * n
    if method == "dbrl":
        rows = min(n, int(np.clip(budget // bm.screen_row_bytes(m), 1024, 262_144)))
        return fixed + rows * bm.screen_row_bytes(m)
    lists = (k_list or 0) * bm.knn_entry_bytes(n, n, True, nb.get_num_threads(), LIST_MEAN)
    return fixed + lists + GRAPH_BYTES * (n_edges or 0)


#: bytes per record of the per-record arrays (outputs, ranks, duals, permutations):
#: fitted at 10^5 x 13 (docs/methods.md)
PER_RECORD = {"dbrl": 200, "gdbrl": 40}
#: bytes per candidate-graph edge of gdbrl (int64 column + float64 cost): fitted at 10^5
GRAPH_BYTES = 16


def _child(method: str, n: int, m: int, budget: int) -> dict:
    import linkrisk

    kw = {"solver": "sparse"} if method == "gdbrl" else {}
    x, y = _data(8000, m, 1)
    linkrisk.attack(x, y, method=method, **kw)
    del x, y
    fixed = _rss()
    x, y = _data(n, m)
    inputs = int(x.memory_usage(deep=True).sum() + y.memory_usage(deep=True).sum())
    t0 = time.perf_counter()
    r = linkrisk.attack(x, y, method=method, memory_budget=budget, **kw)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    extra = r.extra or {}
    return {"method": method, "n": n, "m": m, "budget": budget, "seconds": secs,
            "fixed": fixed, "inputs": inputs, "peak": peak,
            "k_list": extra.get("k_list"), "n_edges": extra.get("n_edges"), "rate": r.rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--m", type=int, default=13)
    ap.add_argument("--budgets", default="256MiB,1GiB")
    ap.add_argument("--methods", default="dbrl,gdbrl")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        method, n, m, b = args.child.split(":")
        print(json.dumps(_child(method, int(n), int(m), int(b))))
        return
    from linkrisk.options import parse_size

    print("| method | n | m | budget MiB | s | fixed MiB | inputs MiB | peak MiB | "
          "engine MiB | K | edges | model MiB | engine − budget MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        for n in (int(float(s)) for s in args.sizes.split(",")):
            for b in (parse_size(s) for s in args.budgets.split(",")):
                out = subprocess.run([sys.executable, __file__, "--child",
                                      f"{method}:{n}:{args.m}:{b}"],
                                     capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                eng = r["peak"] - r["fixed"] - r["inputs"]
                pred = model(method, n, args.m, b, r["k_list"], r["n_edges"])
                print(f"| {method} | {n:,} | {args.m} | {b // MiB} | {r['seconds']:.1f} | "
                      f"{r['fixed'] / MiB:.0f} | {r['inputs'] / MiB:.0f} | "
                      f"{r['peak'] / MiB:.0f} | {eng / MiB:.0f} | {r['k_list'] or '–'} | "
                      f"{r['n_edges'] or '–'} | {pred / MiB:.0f} | {(eng - b) / MiB:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
