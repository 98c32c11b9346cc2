"""The sparse assignment solver of gdbrl alone, old against new, in one process.

Runs gdbrl once (``linkrisk.attack(..., method="gdbrl", solver="sparse")`` on the data of
``global_matching.py``) and records every call it makes to ``SparseAssignment`` (the graph,
the edges each repair round adds, the solves, flattenings, restarts). Then it replays that
sequence with the ``SparseAssignment`` of this checkout ("new") and with the one in
``--old SRC`` ("old", e.g. the main checkout's ``src``), alternating, and prints the seconds
of each call. The new solver replays a restart as the solver does now (``rewarm`` up to
``REWARM_FREE`` of the rows freed, else a restart from the last prices); the old one
restarts cold. Both must end at the same matched cost. Usage::

    python benchmarks/assignment_replay.py --n 100000 --old /work/main/src
    python benchmarks/assignment_replay.py --n 100000 --k 16 --k-list 16 --old /work/main/src
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from global_matching import _data  # noqa: E402

import linkrisk  # noqa: E402
from linkrisk.engine.matching import assignment as NEW  # noqa: E402
from linkrisk.engine.matching import solver as SOLVER  # noqa: E402

METHODS = ("__init__", "solve", "add_edges", "restart", "rewarm", "flatten", "polish")


def record(n: int, kw: dict) -> list[tuple]:
    """gdbrl at n with the call sequence of SparseAssignment recorded."""
    calls: list[tuple] = []
    orig = {m: getattr(NEW.SparseAssignment, m) for m in METHODS}

    def wrap(name):
        f = orig[name]

        def g(self, *a, **k):
            if name in ("__init__", "add_edges"):
                calls.append((name, tuple(np.array(x) if isinstance(x, np.ndarray) else x
                                          for x in a)))
            elif name in ("restart", "rewarm"):
                calls.append(("restart", ()))
            elif name in ("solve", "flatten", "polish"):
                calls.append((name, ()))
            return f(self, *a, **k)
        return g

    for m in METHODS:
        setattr(NEW.SparseAssignment, m, wrap(m))
    try:
        x, y = _data(n, 0)
        t0 = time.perf_counter()
        r = linkrisk.attack(x, y, method="gdbrl", solver="sparse", **kw)
        print(f"gdbrl {time.perf_counter() - t0:.1f} s, certified {r.extra['certified']}, "
              f"rounds {r.extra.get('round_log')}", flush=True)
    finally:
        for m in METHODS:
            setattr(NEW.SparseAssignment, m, orig[m])
    return calls


def replay(mod, calls: list[tuple], new: bool) -> tuple[list[tuple[str, float]], float]:
    times = []
    sa = None
    for name, args in calls:
        t = time.perf_counter()
        if name == "__init__":
            sa = mod.SparseAssignment(*args)
        elif name == "add_edges":
            sa.add_edges(*args)
        elif name == "restart" and new:
            if (sa.col4row < 0).sum() <= SOLVER.REWARM_FREE * sa.n_rows:
                name = "rewarm"
                sa.rewarm()
            else:
                sa.restart(keep_prices=True)
        else:
            getattr(sa, name)()
        times.append((name, time.perf_counter() - t))
    return times, float(np.nansum(sa.matched_cost()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int)
    ap.add_argument("--k-list", type=int)
    ap.add_argument("--old", required=True, help="src directory of the old checkout")
    ap.add_argument("--reps", type=int, default=2, help="rounds of old, new (the first "
                    "may include numba compilation)")
    args = ap.parse_args()
    kw = {k: v for k, v in (("k", args.k), ("k_list", args.k_list)) if v is not None}
    calls = record(args.n, kw)
    spec = importlib.util.spec_from_file_location(
        "linkrisk.engine.matching._old_assignment",
        Path(args.old) / "linkrisk/engine/matching/assignment.py")
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    print("per call: s (so = solve, fl = flatten, ad = add_edges, re = restart or rewarm, "
          "po = polish; calls under 0.01 s left out)")
    for _ in range(args.reps):
        for lab, mod, new in (("old", old, False), ("new", NEW, True)):
            times, cost = replay(mod, calls, new)
            tot = sum(t for _, t in times)
            solve = sum(t for n, t in times if n == "solve")
            seq = " ".join(f"{n[:2]} {t:.2f}" for n, t in times if t >= 0.01)
            print(f"{lab}: total {tot:.2f} s, solves {solve:.2f} s | {seq} | cost {cost!r}",
                  flush=True)


if __name__ == "__main__":
    main()
