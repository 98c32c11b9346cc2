"""Global record linkage (gdbrl): our certified sparse solver vs scipy's dense assignment.

Data: ``linkrisk.datasets.synthetic(n, 13, seed)`` masked with independent additive noise
y_ij = x_ij + e_ij, e_ij ~ N(0, (0.25·σ_j)²). Cost: Euclidean distance on per-file
standardized values (the gdbrl default).

* ours  — ``linkrisk.attack(..., method="gdbrl", solver="sparse")``: blocked k-NN graph,
          sparse Jonker–Volgenant, LP-duality certificate for the complete graph;
* dense — the n×n cost matrix (scipy ``cdist``) and ``scipy.optimize.linear_sum_assignment``.

Every case runs in its own subprocess; time is wall clock around the solve (data
generation and numba compilation excluded), memory is the subprocess's peak RSS (and the
increase over its RSS just before the solve). Usage::

    python benchmarks/global_matching.py                 # 1080, 4092, 20000 (+ dense), 1e5
    python benchmarks/global_matching.py --big           # also 1e6 (ours only)
    python benchmarks/global_matching.py --skip-dense-above 5000
    python benchmarks/global_matching.py --sizes 1080,4092
    python benchmarks/global_matching.py --memory-budget 4294967296   # longer k-NN lists
    python benchmarks/global_matching.py --sizes 1000000 --skip-dense-above 0 --progress
    python benchmarks/global_matching.py --sizes 100000,200000 --skip-dense-above 0 --stages
    python benchmarks/global_matching.py --sizes 100000 --skip-dense-above 0 --stages --repeat 5

``--stages --repeat R`` times faiss k = 1 and gdbrl R times each, alternating, and prints
every run's ratio and their median (the stage table is the run of median gdbrl time).

``--stages`` also runs faiss's exact flat k = 1 search (``IndexFlatL2``, float32) of the
same standardized data in its own subprocess of the same run, prints ours / faiss, and a
table per size: each stage (the k-NN pass, then each solve + certificate round) with its
seconds and the process's peak RSS at its end (a running maximum, so a stage's own peak
is the first row where the figure rises). ``--k`` / ``--k-list`` set the solver's graph
degree and list length (default: the attack's defaults). ``--faiss-k 2,24`` also times
faiss's search for those list widths (its k = 1 search has a fused kernel of its own;
from k = 2 on it scores by BLAS and keeps per-query heaps, which is what gdbrl's k-NN
lists are compared with there).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time


def _data(n: int, seed: int):
    import numpy as np

    from linkrisk.datasets import synthetic

    x = synthetic(n, 13, seed)
    rng = np.random.default_rng(seed + 1)
    sd = x.std(ddof=1).to_numpy()
    y = x + rng.standard_normal(x.shape) * (0.25 * sd)
    return x, y


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _progress():
    """A progress callback printing elapsed time, per-mille done and peak RSS to stderr."""
    t0, last = time.perf_counter(), [-100]

    def cb(done: int, total: int) -> None:
        if abs(done - last[0]) >= 10 or done == total:  # a repair round goes back
            last[0] = done
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"  {time.perf_counter() - t0:8.1f} s  {done:4d}/{total}  peak {peak:.0f} MB",
                  file=sys.stderr, flush=True)

    return cb


class _StageLog:
    """A logging handler that keeps (seconds since start, peak RSS MB, message) of each
    solver log line: the k-NN pass and every certificate round."""

    def __init__(self) -> None:
        import logging

        self.rows: list[tuple[float, float, str]] = []
        self.t0 = time.perf_counter()
        self.handler = logging.Handler()
        self.handler.emit = self._emit  # type: ignore[method-assign]

    def _emit(self, rec) -> None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.rows.append((time.perf_counter() - self.t0, peak, rec.getMessage()))


def _faiss_child(n: int, seed: int, k: int = 1) -> dict:
    import faiss
    import numpy as np

    from linkrisk.engine import standardize

    x, y = _data(n, seed)
    a = standardize(x.to_numpy()).astype(np.float32)
    b = standardize(y.to_numpy()).astype(np.float32)
    base = _rss_mb()
    t0 = time.perf_counter()
    ix = faiss.IndexFlatL2(a.shape[1])
    ix.add(b)
    ix.search(a, k)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"method": "faiss", "n": n, "k": k, "seconds": secs, "peak_mb": peak,
            "delta_mb": peak - base}


def _child(method: str, n: int, seed: int, budget: int, progress: bool = False,
           stages: bool = False, kw: dict | None = None, faiss_k: int = 1) -> None:
    import numpy as np

    import linkrisk

    if method == "faiss":
        print(json.dumps(_faiss_child(n, seed, faiss_k)))
        return
    x, y = _data(n, seed)
    log = None
    if stages:
        import logging

        log = _StageLog()
        lg = logging.getLogger("linkrisk.engine.matching.solver")
        lg.addHandler(log.handler)
        lg.setLevel(logging.INFO)
    if progress:
        import logging

        # the solver's per-round log lines (k-NN, each certificate round), as they happen
        logging.basicConfig(level=logging.INFO, format="  %(asctime)s %(message)s",
                            stream=sys.stderr)
    if method == "ours":
        # compile (or load the cache of) the kernels outside the timing; a 300-record
        # problem may certify without scanning a row, so the scan kernel is called directly
        linkrisk.attack(x.iloc[:300], y.iloc[:300], method="gdbrl", solver="sparse")
        from linkrisk.engine.matching.knn import scan_gated
        from linkrisk.engine.nearest import Pairwise

        pw = Pairwise.build(x.to_numpy()[:50], y.to_numpy()[:50], root=True)
        for screened in (False, True):
            scan_gated(pw, np.arange(5), np.zeros(50), np.zeros(50), np.ones(5),
                       np.full(5, -1.0), screened=screened)
        # the float32-screened lists, which only files of more than ~7,000 records reach
        # (as scale.py's warm-up; without it the timing included ~0.5 s of loading their
        # cached kernels)
        from linkrisk.engine import min_cost_matching, standardize

        min_cost_matching(standardize(x.to_numpy()[:500]), standardize(y.to_numpy()[:500]),
                          root=True, solver="sparse", screen=True)
        base = _rss_mb()
        if log is not None:
            log.rows.clear()
            log.t0 = time.perf_counter()
        t0 = time.perf_counter()
        r = linkrisk.attack(x, y, method="gdbrl", solver="sparse", memory_budget=budget,
                            progress=_progress() if progress else None, **(kw or {}))
        secs = time.perf_counter() - t0
        out = {"total_cost": r.extra["total_cost"], "certified": r.extra["certified"],
               "rate": r.rate, "k": r.extra["k"], "k_list": r.extra.get("k_list"),
               "rounds": r.extra.get("rounds"),
               "scanned": r.extra.get("scanned_rows"), "n_edges": r.extra["n_edges"],
               "t_knn": r.extra.get("seconds_knn"), "t_solve": r.extra.get("seconds_solve"),
               "t_cert": r.extra.get("seconds_certify"),
               "round_log": r.extra.get("round_log"), "knn_passes": r.extra.get("knn_passes")}
        if log is not None:
            out["stages"] = log.rows
        if progress:
            print("rounds (cumulative s solve, s certify, rows scanned, columns scanned, "
                  f"edges added, rows freed): {r.extra.get('round_log')}", file=sys.stderr,
                  flush=True)
    else:
        from scipy.optimize import linear_sum_assignment
        from scipy.spatial.distance import cdist

        from linkrisk.engine import standardize

        base = _rss_mb()
        t0 = time.perf_counter()
        a, b = standardize(x.to_numpy()), standardize(y.to_numpy())
        c = cdist(a, b)
        ri, ci = linear_sum_assignment(c)
        secs = time.perf_counter() - t0
        out = {"total_cost": float(c[ri, ci].sum()), "certified": True,
               "rate": float(np.mean(ci[np.argsort(ri)] == np.arange(n)))}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(method=method, n=n, seconds=secs, peak_mb=peak, delta_mb=peak - base)
    print(json.dumps(out))


def _run(method: str, n: int, seed: int, timeout: float | None, budget: int,
         progress: bool = False, extra: list[str] | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", method, "--n", str(n), "--seed", str(seed),
           "--memory-budget", str(budget)] + (["--progress"] if progress else []) \
        + (extra or [])
    try:
        # with --progress the child's stderr (its progress lines) goes to the terminal
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=None if progress else subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"method": method, "n": n, "error": f"timeout after {timeout:.0f} s"}
    if p.returncode != 0:
        # a killed child (time limit, out of memory) may print nothing
        return {"method": method, "n": n,
                "error": ((p.stderr or "").strip().splitlines()
                          or [f"exit code {p.returncode}"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1080,4092,20000,100000")
    ap.add_argument("--big", action="store_true", help="also n = 1,000,000 (ours only)")
    ap.add_argument("--skip-dense-above", type=int, default=20000,
                    help="run dense scipy only up to this n (default 20000)")
    ap.add_argument("--dense-timeout", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory-budget", type=int, default=2**30,
                    help="linkrisk's working-memory budget in bytes (default 1 GiB); it "
                         "bounds the k-NN list length of the certificate")
    ap.add_argument("--progress", action="store_true",
                    help="print the solver's progress (elapsed s, per-mille, peak MB)")
    ap.add_argument("--stages", action="store_true",
                    help="per-stage seconds and peak RSS, and faiss k = 1 in the same run")
    ap.add_argument("--k", type=int, help="the candidate graph's initial degree")
    ap.add_argument("--k-list", type=int, help="the k-NN lists' length")
    ap.add_argument("--faiss-k", default="1",
                    help="with --stages: faiss list widths to time (comma-separated; "
                         "default 1, always included)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --stages: time faiss k = 1 and gdbrl R times each, "
                         "alternating, each run in a fresh process; prints every run's ratio "
                         "and their median (timings here move by 10-30 %% between runs)")
    ap.add_argument("--child", choices=["ours", "dense", "faiss"], help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kw = {k: v for k, v in (("k", args.k), ("k_list", args.k_list)) if v is not None}
        _child(args.child, args.n, args.seed, args.memory_budget, args.progress, args.stages,
               kw, int(args.faiss_k))
        return
    faiss_ks = sorted({1, *(int(v) for v in args.faiss_k.split(",") if v)})
    extra = (["--stages"] if args.stages else []) + sum(
        ([f"--{o}", str(v)] for o, v in (("k", args.k), ("k-list", args.k_list))
         if v is not None), [])

    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    print(f"gdbrl, synthetic(n, 13) + 0.25·σ noise, Euclidean on standardized values; "
          f"seed {args.seed}; memory budget {args.memory_budget / 2**20:.0f} MiB", flush=True)
    head = (f"{'n':>9} | {'ours s':>8} {'peak MB':>8} {'+MB':>7} {'cert':>5} {'rate':>6} "
            f"{'knn/solve/cert s':>18} | {'dense s':>8} {'peak MB':>8} {'+MB':>7} | "
            f"{'speed-up':>8} {'same cost':>9}")
    print(head)
    print("-" * len(head), flush=True)
    stage_rows: list[tuple[int, list[dict], dict]] = []
    repeats: list[tuple[int, list[tuple[dict, dict]]]] = []
    for n in sizes:
        runs = []
        for _ in range(max(1, args.repeat) if args.stages else 1):
            fa = ([_run("faiss", n, args.seed, None, args.memory_budget,
                        extra=["--faiss-k", str(k)]) for k in faiss_ks]
                  if args.stages else None)
            ours = _run("ours", n, args.seed, None, args.memory_budget, args.progress, extra)
            runs.append((fa, ours))
        if len(runs) > 1:
            repeats.append((n, [(fa[0], o) for fa, o in runs]))
        # the run of median gdbrl time stands for the size in the tables
        fa, ours = sorted(runs, key=lambda r: r[1].get("seconds", float("inf")))[len(runs) // 2]
        dense = (_run("dense", n, args.seed, args.dense_timeout, args.memory_budget)
                 if n <= min(args.skip_dense_above, 20000) else None)
        print(_row(n, ours, dense), flush=True)
        if fa is not None:
            stage_rows.append((n, fa, ours))
    for n, fa, ours in stage_rows:
        _print_stages(n, fa, ours)
    for n, runs in repeats:
        _print_repeats(n, runs)


def _print_repeats(n: int, runs: list[tuple[dict, dict]]) -> None:
    """Every alternating run's faiss k = 1 and gdbrl seconds and their ratio, and the
    median ratio: on a machine whose timings move between runs, the figure to quote."""
    ok = [(f, o) for f, o in runs if "error" not in f and "error" not in o]
    print(f"\nn = {n:,}: {len(runs)} alternating runs (faiss k = 1, then gdbrl; each in a "
          f"fresh process)")
    print(f"  {'run':>4} {'faiss s':>8} {'gdbrl s':>8} {'ratio':>7}  total cost")
    for i, (f, o) in enumerate(runs, 1):
        if (f, o) not in ok:
            print(f"  {i:>4} error: {f.get('error') or o.get('error')}")
            continue
        print(f"  {i:>4} {f['seconds']:8.2f} {o['seconds']:8.2f} "
              f"{o['seconds'] / f['seconds']:6.2f}x  {o['total_cost']!r}")
    if ok:
        ratios = sorted(o["seconds"] / f["seconds"] for f, o in ok)
        med = statistics.median(ratios)
        same = len({o["total_cost"] for _, o in ok}) == 1
        print(f"  median ratio {med:.2f}x (range {ratios[0]:.2f}-{ratios[-1]:.2f}x); "
              f"same total cost in every run: {same}")


def _print_stages(n: int, fas: list[dict], o: dict) -> None:
    """Per-stage table of one size (see --stages) and the ratio to faiss k = 1 (and to
    faiss's other list widths of ``--faiss-k``)."""
    fa = fas[0]
    if "error" in fa or "error" in o:
        print(f"n = {n}: {fa.get('error') or o.get('error')}")
        return
    print(f"\nn = {n:,}: faiss k=1 {fa['seconds']:.2f} s (peak {fa['peak_mb']:.0f} MB); "
          f"gdbrl {o['seconds']:.2f} s (peak {o['peak_mb']:.0f} MB, +{o['delta_mb']:.0f}) = "
          f"{o['seconds'] / fa['seconds']:.2f}x faiss; k = {o['k']}, k_list = {o['k_list']}, "
          f"k-NN passes {o.get('knn_passes')}, total cost {o['total_cost']!r}, "
          f"certified {o['certified']}")
    for f in fas[1:]:
        if "error" in f:
            print(f"  faiss k={f.get('k')}: {f['error']}")
        else:
            print(f"  faiss k={f['k']} {f['seconds']:.2f} s (peak {f['peak_mb']:.0f} MB): "
                  f"{f['seconds'] / fa['seconds']:.2f}x its k = 1; gdbrl = "
                  f"{o['seconds'] / f['seconds']:.2f}x it")
    print(f"  {'stage':<58} {'s':>8} {'at s':>8} {'peak MB':>8}")
    prev = 0.0
    for t, peak, msg in o.get("stages", []):
        print(f"  {msg[:58]:<58} {t - prev:8.2f} {t:8.2f} {peak:8.0f}")
        if len(msg) > 58:  # the solver's phases (auction, row reduction, augment, flatten)
            print(f"    {msg[58:]}")
        prev = t


def _row(n: int, o: dict, d: dict | None) -> str:
    if "error" in o:
        left = f"{'error: ' + o['error']:>67}"
    else:
        parts = "/".join(f"{o.get(k) or 0:.1f}" for k in ("t_knn", "t_solve", "t_cert"))
        left = (f"{o['seconds']:8.2f} {o['peak_mb']:8.0f} {o['delta_mb']:7.0f} "
                f"{str(o['certified']):>5} {o['rate']:6.3f} {parts:>18}")
    if d is None:
        right = f"{'—':>8} {'':>8} {'':>7} | {'':>8} {'':>9}"
    elif "error" in d:
        right = f"{d['error']:>25} | {'':>8} {'':>9}"
    else:
        same = "error" not in o and abs(o["total_cost"] - d["total_cost"]) <= 1e-9 * d["total_cost"]
        ratio = d["seconds"] / o["seconds"] if "error" not in o else float("nan")
        right = (f"{d['seconds']:8.2f} {d['peak_mb']:8.0f} {d['delta_mb']:7.0f} | "
                 f"{ratio:7.1f}x {str(same):>9}")
    return f"{n:>9} | {left} | {right}"


if __name__ == "__main__":
    main()
