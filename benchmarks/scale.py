"""How the exact attacks scale with n: time and peak memory from 10⁴ to 10⁶ records.

Data: ``linkrisk.datasets.synthetic(n, 13, seed)`` released with additive noise
(a = 0.25); for ``dbrl_hamming`` the 13 attributes are cut into 4–12 quantile categories and
10 % of the values are replaced at random. Every case runs in its own subprocess (time is
wall clock around the attack, numba compilation excluded; memory is the subprocess's peak
RSS and its increase during the attack). In the same run:

* ``faiss k=1`` — faiss ``IndexFlatL2`` nearest neighbour (float32, no ties) of the same
  standardized data: the reference the issue sets (dbrl within 1.5× of it);
* ``sklearn`` — ``NearestNeighbors(algorithm="brute")`` (only up to 10⁵: beyond it takes
  tens of minutes);
* the machine's GEMM peak (numpy float32 and float64 square products), and the fraction of
  it dbrl achieves, counting 2·n·n'·m flops;
* at the largest n, a float64 brute-force check of dbrl's links (count of tied records and
  the link among them) on a random sample of 10⁴ attacker records.

Cases whose predicted time (from the exponent fitted on the smaller sizes) exceeds
``--max-seconds`` are skipped and their time extrapolated, marked ``~``.

    python benchmarks/scale.py                        # 1e4, 1e5, 3e5, 1e6
    python benchmarks/scale.py --sizes 10000,100000 --attacks dbrl,rbrl_max
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

ATTACKS = ["dbrl", "mahalanobis", "rbrl_sum", "rbrl_max", "dbrl_hamming"]
#: attacks whose links are re-checked by brute force on a sample at the largest n
CHECKED = ("dbrl", "rbrl_sum", "rbrl_max", "dbrl_hamming")


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
    if what in ("faiss", "sklearn"):
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
        linkrisk.attack(x.iloc[:500], y.iloc[:500], what)  # compile outside the timing
        base = _rss_mb()
        t0 = time.perf_counter()
        r = linkrisk.attack(x, y, what)
        out["seconds"] = time.perf_counter() - t0
        out["rate"] = r.rate
    # before the brute-force check, whose float64 GEMM blocks (64 × n) are not the attack's
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(peak_mb=peak, delta_mb=peak - base)
    if what not in ("faiss", "sklearn") and check:
        out["check"] = _brute_check(what, x, y, r, check, seed)
    return out


def _brute_check(what, x, y, res, k: int, seed: int) -> dict:
    """The attack by definition on a random sample of attacker records, in float64 numpy:
    dbrl — squared distances (GEMM identity to find the near-minimal records, then Σ(a−b)²
    of those directly); rbrl_sum/max — Σ/max of |average-rank differences|; dbrl_hamming —
    number of differing categories. Tie set within 1e-9; checked: |C(a)|, the link ∈ C(a)
    and whether the true image is in C(a). Rank and Hamming rows cost a full pass each:
    their sample is capped at 1,000."""
    from scipy.stats import rankdata

    from linkrisk.engine import standardize

    if what != "dbrl":
        k = min(k, 1000)
    rows = np.random.default_rng(seed).choice(x.shape[0], size=min(k, x.shape[0]),
                                              replace=False)
    per = res.per_record
    if what == "dbrl":
        a, b = standardize(x.to_numpy()), standardize(y.to_numpy())
        nb = np.einsum("ij,ij->i", b, b)
    elif what == "dbrl_hamming":
        a = np.column_stack([x[c].cat.codes for c in x.columns])
        b = np.column_stack([y[c].cat.codes for c in y.columns])
    else:
        a = rankdata(x.to_numpy(), method="average", axis=0)
        b = rankdata(y.to_numpy(), method="average", axis=0)
    bad = 0
    for r0 in range(0, rows.size, 64):
        idx = rows[r0:r0 + 64]
        if what == "dbrl":
            g = nb[None, :] - 2.0 * (a[idx] @ b.T)
        for t, i in enumerate(idx):
            if what == "dbrl":
                lo = g[t].min()
                near = np.flatnonzero(g[t] <= lo + 1e-6 * (abs(lo) + nb.max()))
                d = ((a[i] - b[near]) ** 2).sum(1)
            else:
                near = np.arange(b.shape[0])
                diff = np.abs(a[i] - b) if what != "dbrl_hamming" else (a[i] != b)
                d = diff.max(1) if what == "rbrl_max" else diff.sum(1)
            mn = d.min()
            tied = near[d <= mn + 1e-9 * abs(mn)]
            ok = (per["candidates"].iat[i] == tied.size and per["link"].iat[i] in set(tied)
                  and per["true_in_set"].iat[i] == (i in set(tied)))
            bad += not ok
    return {"sample": int(rows.size), "mismatches": int(bad)}


def _run(what: str, n: int, seed: int, check: int) -> dict:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,300000,1000000")
    ap.add_argument("--attacks", default=",".join(ATTACKS))
    ap.add_argument("--max-seconds", type=float, default=900.0)
    ap.add_argument("--sklearn-max", type=int, default=100_000)
    ap.add_argument("--check", type=int, default=10_000,
                    help="brute-force check sample at the largest n (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.n, args.seed, args.check)))
        return

    sizes = [int(s) for s in args.sizes.split(",") if s]
    attacks = [a for a in args.attacks.split(",") if a]
    peak = gemm_peak()
    print(f"GEMM peak (numpy, 3000³): float32 {peak['float32']:.0f} GFLOP/s, "
          f"float64 {peak['float64']:.0f} GFLOP/s; synthetic(n, 13) + 0.25·σ noise", flush=True)
    rows: list[dict] = []

    def case(what: str, n: int, check: int = 0) -> dict:
        done = [r for r in rows if r["what"] == what and "seconds" in r and not r.get("est")]
        if len(done) >= 2:
            pred = np.exp(np.polyval(np.polyfit(np.log([r["n"] for r in done]),
                                                np.log([r["seconds"] for r in done]), 1),
                                     np.log(n)))
            if pred > args.max_seconds:
                r = {"what": what, "n": n, "seconds": float(pred), "est": True}
                rows.append(r)
                return r
        r = _run(what, n, args.seed, check)
        rows.append(r)
        return r

    head = f"{'case':>13} {'n':>9} {'seconds':>10} {'peak MB':>8} {'+MB':>7} {'rate':>7}  note"
    print(head)
    print("-" * len(head), flush=True)
    for n in sizes:
        for what in ["faiss", *(["sklearn"] if n <= args.sklearn_max else []), *attacks]:
            r = case(what, n, args.check if (what in CHECKED and n == max(sizes)) else 0)
            print(_line(r, peak), flush=True)

    print("\nScaling exponents (t ∝ n^b, measured sizes only) and ratios in this run:")
    for what in ["faiss", "sklearn", *attacks]:
        meas = [r for r in rows if r["what"] == what and "seconds" in r and not r.get("est")]
        b = fit([r["n"] for r in meas], [r["seconds"] for r in meas])
        print(f"  {what:>13}: b = {b:.2f}")
    for n in sizes:
        get = {r["what"]: r for r in rows if r["n"] == n and "seconds" in r}
        if "dbrl" in get and "faiss" in get:
            msg = (f"  n = {n:>9,}: dbrl / faiss k=1 = "
                   f"{get['dbrl']['seconds'] / get['faiss']['seconds']:.2f}")
            if "sklearn" in get:
                msg += f", sklearn / dbrl = {get['sklearn']['seconds'] / get['dbrl']['seconds']:.1f}"
            print(msg)


def _line(r: dict, peak: dict) -> str:
    if "error" in r:
        return f"{r['what']:>13} {r['n']:>9,} error: {r['error']}"
    secs = ("~" if r.get("est") else "") + f"{r['seconds']:.2f}"
    note = ""
    if r.get("est"):
        note = "skipped: extrapolated from the fitted exponent"
    elif r["what"] in ("dbrl", "faiss"):
        gf = 2 * r["n"] * r["n"] * 13 / r["seconds"] / 1e9
        note = f"{gf:.0f} GFLOP/s = {100 * gf / peak['float32']:.0f} % of float32 GEMM peak"
    if "check" in r:
        c = r["check"]
        note += f"; brute-force check of {c['sample']:,} rows: {c['mismatches']} mismatches"
    mem = (f"{r['peak_mb']:>8.0f} {r['delta_mb']:>7.0f}" if "peak_mb" in r
           else f"{'':>8} {'':>7}")
    rate = f"{100 * r['rate']:>6.2f}%" if "rate" in r else f"{'':>7}"
    return f"{r['what']:>13} {r['n']:>9,} {secs:>10} {mem} {rate}  {note}"


if __name__ == "__main__":
    main()
