"""Every attack that applies to numeric data, from 10⁴ to 10⁶ records, in one run: time, ratio
to faiss's exact flat k = 1 search of the same run, peak memory, correct-link rate and a
float64 brute-force spot check.

Data: ``linkrisk.datasets.synthetic(n, 13, seed)`` released with additive noise
(a = 0.25); for ``dbrl_hamming`` the 13 attributes are cut into 4–12 quantile categories and
10 % of the values are replaced at random. Every case runs in its own subprocess through the
public ``linkrisk.attack`` (time is wall clock around the attack, after warm-up calls on
500 records that compile the kernels, also those of gdbrl's sparse solver and prl's subset
walks; memory is the subprocess's peak RSS and its increase
during the attack, read before the spot check). In the same run:

* ``faiss k=1`` — faiss ``IndexFlatL2`` nearest neighbour (float32, no ties) of the same
  standardized data: the yardstick (column "× faiss");
* ``sklearn`` — ``NearestNeighbors(algorithm="brute")`` (up to ``--sklearn-max``; not with
  ``--quick``).

Spot check (column "check"): each attack's definition recomputed in float64 numpy for
``--check`` random attacker records against the whole released file, ties within 1e-9
relative; a record mismatches when |C(a)|, the link's membership of C(a) or whether the
true image is in C(a) differ. The distances: dbrl — squared Euclidean on per-file
standardized values (GEMM to find the near-minimal records, then Σ(a−b)² of those);
dbrl_l1 — Σ|a−b| standardized; dbrl2 — Σ((a−b)/σ)², σ² = Var A + Var B; mahalanobis(0) —
squared Euclidean after whitening by S = Var A + Var B − 2·Cov(A, B) (Cov on the true pairs;
0 for mahalanobis0); kernel — K(a,a) − 2K(a,b) + K(b,b), K = (1 + x·y)², standardized;
rbrl_sum/max — Σ/max of |average-rank differences|; dbrl_hamming — number of differing
categories; prl — −Σ_j w_j from the reported weights, with the attributes cut into the 10
quantile bins of A. gdbrl is one assignment, not a set per record: its check is that the
links form a permutation and that Σ‖a − b_link‖ (Euclidean, standardized) recomputed in
float64 equals the reported total cost (relative 1e-9); the "certified" flag (LP-duality
optimality certificate) is shown beside it.

Left out: ``dbrl_mixed`` (on numeric QIs it is dbrl's standardized squared Euclidean
distance through the general mixed kernel; on the categorical version its 0/1 distance is
dbrl_hamming's); rsrl and rsrl_union run (p = 5) but have no spot check (rank-window
definitions; "—").

Cases whose predicted time (from the exponent fitted on the smaller sizes) exceeds
``--max-seconds`` are skipped and their time extrapolated, marked ``~``. The table is
printed in Markdown on stdout when the run ends (progress lines on stderr).

    python benchmarks/scale.py --sizes 1e4,1e5,1e6
    python benchmarks/scale.py --sizes 1e5 --quick           # the whole table, < 20 min
    python benchmarks/scale.py --sizes 1e4,1e5 --attacks dbrl,rbrl_max
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ATTACKS = ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel", "rbrl_sum",
           "rbrl_max", "dbrl_hamming", "rsrl", "rsrl_union", "prl", "gdbrl"]
#: attacks without a brute-force spot check
UNCHECKED = ("rsrl", "rsrl_union")
#: the nearest-neighbour references (not linkrisk attacks)
REFERENCES = ("faiss", "sklearn")


def _data(n: int, seed: int, categorical: bool):
    import pandas as pd

    from linkrisk.datasets import synthetic

    x = synthetic(n, 13, seed)
    rng = np.random.default_rng(seed + 1)
    if not categorical:
        y = x + rng.standard_normal(x.shape) * (0.25 * x.std(ddof=1).to_numpy())
        return x, y
    cats = {}
    for j, c in enumerate(x.columns):
        k = 4 + j % 9
        codes = pd.qcut(x[c].rank(method="first"), k, labels=False).to_numpy()
        noisy = np.where(rng.random(n) < 0.1, rng.integers(0, k, n), codes)
        cats[c] = (codes, noisy, k)
    mk = lambda i: pd.DataFrame({c: pd.Categorical(v[i], categories=range(v[2]))  # noqa: E731
                                 for c, v in cats.items()})
    return mk(0), mk(1)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(what: str, n: int, seed: int, check: int) -> dict:
    import linkrisk
    from linkrisk.engine import standardize

    x, y = _data(n, seed, what == "dbrl_hamming")
    out: dict = {"what": what, "n": n}
    if what in REFERENCES:
        a = standardize(x.to_numpy()).astype(np.float32)
        b = standardize(y.to_numpy()).astype(np.float32)
        base = _rss_mb()
        t0 = time.perf_counter()
        if what == "faiss":
            import faiss

            ix = faiss.IndexFlatL2(a.shape[1])
            ix.add(b)
            ix.search(a, 1)
        else:
            from sklearn.neighbors import NearestNeighbors

            NearestNeighbors(n_neighbors=1, algorithm="brute").fit(b).kneighbors(a)
        out["seconds"] = time.perf_counter() - t0
    else:
        _warm_up(what, x.iloc[:500], y.iloc[:500])
        base = _rss_mb()
        t0 = time.perf_counter()
        r = linkrisk.attack(x, y, what)
        out["seconds"] = time.perf_counter() - t0
        out["rate"] = r.rate
    # before the brute-force check, whose float64 blocks are not the attack's
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(peak_mb=peak, delta_mb=peak - base)
    if what not in REFERENCES and what not in UNCHECKED and check:
        out["check"] = (_gdbrl_check(x, y, r) if what == "gdbrl"
                        else _brute_check(what, x, y, r, check, seed))
    return out


def _warm_up(what: str, x, y) -> None:
    """Compile the kernels outside the timing, including those that only larger files
    reach: gdbrl's sparse solver and certificate, dbrl's faiss screen, prl's subset
    walks."""
    import linkrisk

    linkrisk.attack(x, y, what)
    if what == "gdbrl":
        linkrisk.attack(x, y, what, dense_max_n=0)
        # the float32-screened lists and certificate scans, which only files of more
        # than ~7,000 records reach
        from linkrisk.engine import min_cost_matching, standardize

        min_cost_matching(standardize(x.to_numpy()), standardize(y.to_numpy()), root=True,
                          solver="sparse", screen=True)
    elif what == "dbrl":
        # the faiss screen, which only problems of 5·10⁷ pairs or more reach
        from linkrisk.engine import standardize
        from linkrisk.engine.nearest import faiss_screen, nearest_sets

        if faiss_screen.available():
            nearest_sets(standardize(x.to_numpy()), standardize(y.to_numpy()), screen="faiss")
    elif what == "prl":
        from linkrisk.attacks import make_context
        from linkrisk.attacks import probabilistic as P

        ctx = make_context(x, y)[0]
        P.run_prl(ctx, path="groups")
        cmp = P.compare(ctx)  # the parallel pair-count walk (500 rows count pairs directly)
        P.run_walk(P.stack_columns(cmp), cmp.size, ctx.n_a, P.COUNT,
                    at_least=np.zeros(1 << cmp.a.shape[1], np.int64))


def _features(what: str, x, y, res):
    """Both files as the float64 arrays the attack's definition compares, and how: ``sq``
    (squared Euclidean), ``kernel``, ``l1``, ``max``, ``hamming`` or ``prl``."""
    from scipy.stats import rankdata

    xa, yb = x.to_numpy(np.float64), y.to_numpy(np.float64)
    std = lambda v: (v - v.mean(0)) / v.std(0, ddof=1)  # noqa: E731
    if what in ("dbrl", "dbrl_l1", "kernel"):
        return std(xa), std(yb), {"dbrl": "sq", "dbrl_l1": "l1", "kernel": "kernel"}[what]
    if what == "dbrl2":
        sig = np.sqrt(xa.var(0, ddof=1) + yb.var(0, ddof=1))
        return xa / sig, yb / sig, "sq"
    if what in ("mahalanobis", "mahalanobis0"):
        s = np.cov(xa, rowvar=False) + np.cov(yb, rowvar=False)
        if what == "mahalanobis":  # true pairs: row i of both files
            c = ((xa - xa.mean(0)).T @ (yb - yb.mean(0))) / (len(xa) - 1)
            s = s - c - c.T
        w = np.linalg.inv(np.linalg.cholesky(s))  # S⁻¹ = Wᵀ W
        mu = xa.mean(0)
        return (xa - mu) @ w.T, (yb - mu) @ w.T, "sq"
    if what in ("rbrl_sum", "rbrl_max"):
        return (rankdata(xa, method="average", axis=0), rankdata(yb, method="average", axis=0),
                "l1" if what == "rbrl_sum" else "max")
    if what == "dbrl_hamming":
        return (np.column_stack([x[c].cat.codes for c in x.columns]).astype(np.float64),
                np.column_stack([y[c].cat.codes for c in y.columns]).astype(np.float64),
                "hamming")
    if what == "prl":
        q = 10
        a, b = np.empty_like(xa), np.empty_like(yb)
        for j in range(xa.shape[1]):
            edges = np.unique(np.quantile(xa[:, j], np.arange(1, q) / q))
            a[:, j] = np.searchsorted(edges, xa[:, j], side="right")
            b[:, j] = np.searchsorted(edges, yb[:, j], side="right")
        return a, b, "prl"
    raise ValueError(what)


def _brute_check(what: str, x, y, res, k: int, seed: int) -> dict:
    """The attack's definition (see the module docstring) for ``k`` random attacker records
    against the whole released file, in float64."""
    a, b, how = _features(what, x, y, res)
    rows = np.random.default_rng(seed).choice(a.shape[0], size=min(k, a.shape[0]),
                                              replace=False)
    per = res.per_record
    if how in ("sq", "kernel"):
        nb = np.einsum("ij,ij->i", b, b)
    if how == "prl":
        wa = np.array(list(res.extra["weight_agree"].values()))
        wd = np.array(list(res.extra["weight_disagree"].values()))
    bad = 0
    for r0 in range(0, rows.size, 64):
        idx = rows[r0:r0 + 64]
        if how in ("sq", "kernel"):
            g = a[idx] @ b.T
            if how == "sq":
                g = nb[None, :] - 2.0 * g
            else:
                na = np.einsum("ij,ij->i", a[idx], a[idx])
                g = (1 + na[:, None]) ** 2 - 2 * (1 + g) ** 2 + (1 + nb[None, :]) ** 2
        for t, i in enumerate(idx):
            if how in ("sq", "kernel"):
                lo = g[t].min()
                near = np.flatnonzero(g[t] <= lo + 1e-6 * (abs(lo) + np.abs(g[t]).max()))
                if how == "sq":
                    d = ((a[i] - b[near]) ** 2).sum(1)
                else:
                    d = ((1 + a[i] @ a[i]) ** 2 - 2 * (1 + b[near] @ a[i]) ** 2
                         + (1 + (b[near] ** 2).sum(1)) ** 2)
            else:
                near = np.arange(b.shape[0])
                if how == "prl":  # −w summed in attribute order, as the definition's table
                    agree = a[i] == b
                    d = np.zeros(b.shape[0])
                    for j in range(b.shape[1]):
                        d = d + np.where(agree[:, j], -wa[j], -wd[j])
                else:
                    diff = a[i] != b if how == "hamming" else np.abs(a[i] - b)
                    d = diff.max(1) if how == "max" else diff.sum(1)
            mn = d.min()
            tied = set(near[d <= mn + 1e-9 * abs(mn)].tolist())
            ok = (per["candidates"].iat[i] == len(tied) and per["link"].iat[i] in tied
                  and bool(per["true_in_set"].iat[i]) == (i in tied))
            bad += not ok
    return {"sample": int(rows.size), "mismatches": int(bad)}


def _gdbrl_check(x, y, res) -> dict:
    """gdbrl: the links are a permutation and their Euclidean cost (standardized values,
    float64) equals the reported total cost."""
    a, b, _ = _features("dbrl", x, y, res)
    link = res.per_record["link"].to_numpy()
    perm = bool(np.array_equal(np.sort(link), np.arange(b.shape[0])))
    cost = float(np.sqrt(((a - b[link]) ** 2).sum(1)).sum()) if perm else float("nan")
    rep = float(res.extra["total_cost"])
    return {"permutation": perm, "cost": cost, "reported": rep,
            "cost_ok": bool(perm and abs(cost - rep) <= 1e-9 * abs(rep)),
            "certified": bool(res.extra["certified"])}


def _run(what: str, n: int, seed: int, check: int, inline: bool = False) -> dict:
    if inline:  # in this process (the test): no separate memory figures
        try:
            return _child(what, n, seed, check)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            return {"what": what, "n": n, "error": f"{type(exc).__name__}: {exc}"}
    cmd = [sys.executable, __file__, "--child", what, "--n", str(n), "--seed", str(seed),
           "--check", str(check)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"what": what, "n": n, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def gemm_peak() -> dict:
    """GFLOP/s of numpy square matrix products (the machine's BLAS peak, roughly)."""
    out = {}
    for dt in (np.float32, np.float64):
        m = np.random.default_rng(0).standard_normal((3000, 3000)).astype(dt)
        m @ m
        t0 = time.perf_counter()
        for _ in range(3):
            m @ m
        out[np.dtype(dt).name] = 3 * 2 * 3000**3 / (time.perf_counter() - t0) / 1e9
    return out


def fit(ns: list[int], ts: list[float]) -> float:
    """Exponent b of t ≈ c·n^b (least squares on logs)."""
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def _sizes(text: str) -> list[int]:
    """``1e4,1e5,100000`` → [10000, 100000, 100000]; whole numbers ≥ 2 only."""
    out = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        try:
            v = float(tok)
        except ValueError:
            raise SystemExit(f"error: --sizes: {tok!r} is not a number") from None
        if not np.isfinite(v) or v != int(v) or v < 2:
            raise SystemExit(f"error: --sizes: {tok!r} is not a whole number of records >= 2")
        out.append(int(v))
    if not out:
        raise SystemExit("error: --sizes names no size")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="attacks: " + ", ".join(ATTACKS) + ". Left out: dbrl_mixed (dbrl's distance "
               "on numeric QIs, dbrl_hamming's on the categorical version). No spot check: "
               + ", ".join(UNCHECKED) + " (rank-window definitions).")
    ap.add_argument("--sizes", default="1e4,1e5,3e5,1e6",
                    help="comma-separated numbers of records, e.g. 1e4,1e5,1e6")
    ap.add_argument("--attacks", default=",".join(ATTACKS),
                    help="comma-separated subset of the attacks (faiss k=1 always runs)")
    ap.add_argument("--quick", action="store_true",
                    help="no sklearn, 1,000 spot-check records, cases predicted above 300 s "
                         "extrapolated: the whole table at 1e5 in under 20 minutes")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="extrapolate cases predicted slower (default 900; 300 with --quick)")
    ap.add_argument("--sklearn-max", type=int, default=100_000)
    ap.add_argument("--check", type=int, default=None,
                    help="spot-check records per case (default 2,000; 1,000 with --quick; "
                         "0: none)")
    ap.add_argument("--markdown", action="store_true",
                    help="print only the Markdown table (no progress lines on stderr)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="run faiss and each attack this many times, alternated (faiss, "
                         "attacks, faiss, ...); the table gives median seconds and the median "
                         "of each run's ratio to the faiss run just before it (single runs on "
                         "a shared machine move by 5-10 %%); spot checks in the first only")
    ap.add_argument("--inline", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.n, args.seed, args.check)))
        return
    check = args.check if args.check is not None else (1000 if args.quick else 2000)
    max_s = args.max_seconds if args.max_seconds is not None else (
        300.0 if args.quick else 900.0)
    sizes = _sizes(args.sizes)
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown:
        raise SystemExit(f"error: --attacks: unknown {', '.join(unknown)}; "
                         f"choose from {', '.join(ATTACKS)}")
    log = (lambda *a, **k: None) if args.markdown else (  # noqa: E731
        lambda *a, **k: print(*a, file=sys.stderr, flush=True, **k))
    peak = gemm_peak()
    log(f"GEMM peak (numpy, 3000³): float32 {peak['float32']:.0f} GFLOP/s, "
        f"float64 {peak['float64']:.0f} GFLOP/s; synthetic(n, 13) + 0.25·σ noise")
    rows: list[dict] = []

    def case(what: str, n: int) -> dict:
        done = [r for r in rows if r["what"] == what and "seconds" in r and not r.get("est")]
        if len(done) >= 2 or (len(done) == 1 and done[0]["n"] < n):
            ns = [r["n"] for r in done]
            ts = [r["seconds"] for r in done]
            b = fit(ns, ts) if len(done) >= 2 else 2.0  # one size: assume n²
            pred = ts[-1] * (n / ns[-1]) ** b
            if pred > max_s:
                r = {"what": what, "n": n, "seconds": float(pred), "est": True}
                rows.append(r)
                return r
        r = _run(what, n, args.seed, check, args.inline)
        rows.append(r)
        return r

    t_start = time.perf_counter()
    for n in sizes:
        sk = ["sklearn"] if (not args.quick and n <= args.sklearn_max) else []
        for what in ["faiss", *sk, *attacks]:
            r = case(what, n)
            log(_line(r, rows))
        for rep in range(1, max(1, args.repeat)):
            base = _run("faiss", n, args.seed, 0, args.inline)
            log(f"  run {rep + 1}: {_line(base, rows)}")
            for what in [*sk, *attacks]:
                r = next(x for x in rows if x["what"] == what and x["n"] == n)
                if r.get("est") or "error" in r or "error" in base:
                    continue
                again = _run(what, n, args.seed, 0, args.inline)
                if "error" in again:
                    continue
                r.setdefault("runs", [r["seconds"]]).append(again["seconds"])
                r.setdefault("ratios", [_ratio(r, rows)]).append(
                    again["seconds"] / base["seconds"])
                log(f"  run {rep + 1}: {what} {again['seconds']:.2f} s, "
                    f"{r['ratios'][-1]:.2f}x faiss")
            f = next(x for x in rows if x["what"] == "faiss" and x["n"] == n)
            if "error" not in base and "error" not in f:
                f.setdefault("runs", [f["seconds"]]).append(base["seconds"])
    for r in rows:
        if "runs" in r:
            r["first"] = r["seconds"]
            r["seconds"] = float(statistics.median(r["runs"]))
    log(f"whole run: {time.perf_counter() - t_start:.0f} s")
    print(markdown(rows, sizes, check, args))


def _ratio(r: dict, rows: list[dict]) -> float:
    """Seconds / faiss's of the same size; with --repeat, the median of the runs' ratios
    (each to the faiss run just before it)."""
    if "ratios" in r and "first" in r:  # the repeats are complete
        return float(statistics.median(r["ratios"]))
    ref = [x for x in rows if x["what"] == "faiss" and x["n"] == r["n"] and "seconds" in x
           and not x.get("est")]
    first = ref[0].get("first", ref[0]["seconds"]) if ref else float("nan")
    return r.get("first", r["seconds"]) / first if ref and "seconds" in r else float("nan")


def _check_text(r: dict) -> str:
    if r.get("est") or "error" in r:
        return ""
    if r["what"] in REFERENCES:
        return ""
    if r["what"] in UNCHECKED:
        return "—"
    c = r.get("check")
    if not c:
        return "not run"
    if r["what"] == "gdbrl":
        return (f"cost {'=' if c['cost_ok'] else '≠'} reported"
                f"{'' if c['permutation'] else ' (not a permutation)'}, "
                f"{'certified' if c['certified'] else 'NOT certified'}")
    return f"{c['mismatches']} / {c['sample']:,}"


def _line(r: dict, rows: list[dict]) -> str:
    if "error" in r:
        return f"{r['what']:>13} {r['n']:>9,} error: {r['error']}"
    secs = ("~" if r.get("est") else "") + f"{r['seconds']:.2f}"
    mem = (f"{r['peak_mb']:>8.0f} {r['delta_mb']:>7.0f}" if "peak_mb" in r
           else f"{'':>8} {'':>7}")
    rate = f"{100 * r['rate']:>6.2f}%" if "rate" in r else f"{'':>7}"
    ratio = _ratio(r, rows)
    rt = f"{ratio:>6.2f}x" if np.isfinite(ratio) else f"{'':>7}"
    note = "extrapolated from the fitted exponent" if r.get("est") else _check_text(r)
    return f"{r['what']:>13} {r['n']:>9,} {secs:>10} {rt} {mem} {rate}  {note}"


def markdown(rows: list[dict], sizes: list[int], check: int, args) -> str:
    """The run as one Markdown table (plus the command and the scaling exponents)."""
    cmd = "python benchmarks/scale.py " + " ".join(
        a for a in sys.argv[1:] if a != "--markdown") if not args.inline else "(test)"
    out = [f"`{cmd}`", "",
           "| attack | n | s | × faiss k=1 | peak RSS MB | +MB | correct-link rate | check |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['what']} | {r['n']:,} | error: {r['error']} | | | | | |")
            continue
        est = "~" if r.get("est") else ""
        ratio = _ratio(r, rows)
        runs = (" (" + " / ".join(f"{t:.2f}" for t in r["runs"]) + ")") if "runs" in r else ""
        cells = [r["what"], f"{r['n']:,}", f"{est}{r['seconds']:.2f}{runs}",
                 f"{est}{ratio:.2f}" if np.isfinite(ratio) else "",
                 f"{r['peak_mb']:.0f}" if "peak_mb" in r else "",
                 f"{r['delta_mb']:.0f}" if "delta_mb" in r else "",
                 f"{100 * r['rate']:.2f} %" if "rate" in r else "", _check_text(r)]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    if any("runs" in r for r in rows):
        out.append("With --repeat: s is the median of the runs (in brackets, in order), "
                   "× faiss the median of each run's ratio to the faiss run before it; "
                   "peak memory, rate and check from the first run.")
    out.append(f"check: brute-force float64 mismatches / random attacker records "
               f"({check:,} per case); gdbrl: recomputed total cost and the certificate. "
               "~: extrapolated, not run.")
    if len(sizes) > 1:
        exps = []
        for what in dict.fromkeys(r["what"] for r in rows):
            meas = [r for r in rows if r["what"] == what and "seconds" in r and not r.get("est")]
            if len(meas) >= 2:
                exps.append(f"{what} {fit([r['n'] for r in meas], [r['seconds'] for r in meas]):.2f}")
        out.append("Scaling exponents (t ∝ n^b, measured sizes): " + ", ".join(exps) + ".")
    return "\n".join(out)


if __name__ == "__main__":
    main()
