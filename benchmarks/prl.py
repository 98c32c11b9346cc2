"""prl (Fellegi–Sunter) at scale: 10^5 × 10^5 records, no pair enumerated.

Synthetic categorical microdata (8 attributes with 2–20 categories, skewed frequencies),
released with a PRAM-like perturbation (each value kept with probability 0.8, else a
uniformly chosen other category). Times linkrisk's ``prl`` (pattern counts by the subset
walk + Möbius inversion, EM, maximal-weight candidate sets by grouping) and, at a smaller
n, the obvious alternative: enumerate the pairs in blocks with numpy (agreement patterns →
bincount for EM; scores of all pairs → row minima and ties for the candidate sets), checking
that both give the same pattern counts and the same correct links.

    python benchmarks/prl.py [--n 100000] [--n-small 10000] [--seed 1]

``--numeric``: prl on ``linkrisk.datasets.synthetic(n, 13)`` released with additive noise
(a = 0.25; numeric attributes agree in the same of 10 quantile bins): the public attack
(compiled, pruned subset walks) against the plain numpy subset walks it replaced, in the
same process, checking identical pattern counts, candidate sets and links.

    python benchmarks/prl.py --numeric [--n 100000] [--seed 0] [--no-old]

``--against PATH`` (with ``--numeric``): another version of prl, the package directory
``src/linkrisk/attacks/probabilistic/`` (e.g. ``mkdir /tmp/old && git archive main
src/linkrisk/attacks/probabilistic | tar -x -C /tmp/old``) or the single module
``probabilistic.py`` it was before the split (``git show 3c5e782:src/linkrisk/attacks/
probabilistic.py > /tmp/old_prl.py``), loaded next to this one (a copy in a temporary
directory); the whole ``run_prl`` of both, alternating, ``--reps`` times each, checking
identical pattern counts, candidate sets and links.

    python benchmarks/prl.py --numeric --n 100000 --seed 0 --no-old \
        --against /tmp/old/src/linkrisk/attacks/probabilistic
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P


def synthetic(n: int, m: int = 8, seed: int = 1, keep: float = 0.8
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, 21, m)
    a, b = {}, {}
    for j, L in enumerate(cards):
        x = rng.choice(L, n, p=rng.dirichlet(np.full(L, 1.5)))
        y = x.copy()
        ch = rng.random(n) > keep
        y[ch] = (x[ch] + rng.integers(1, L, ch.sum())) % L
        a[f"c{j}"] = pd.Categorical(x, categories=range(L))
        b[f"c{j}"] = pd.Categorical(y, categories=range(L))
    return pd.DataFrame(a), pd.DataFrame(b)


def numpy_blocks(a_df: pd.DataFrame, b_df: pd.DataFrame, block: int = 128) -> dict:
    """The alternative: every pair's agreement pattern, in blocks of A rows."""
    ctx, _ = make_context(a_df, b_df)
    cmp = P.compare(ctx)
    a, b = cmp.a.astype(np.int16), cmp.b.astype(np.int16)
    n_a, m = a.shape
    shifts = (1 << np.arange(m)).astype(np.int32)

    def patterns(r0: int) -> np.ndarray:
        return ((a[r0:r0 + block, None, :] == b[None, :, :]) * shifts).sum(-1)

    t0 = time.perf_counter()
    counts = np.zeros(1 << m, np.int64)
    for r0 in range(0, n_a, block):
        counts += np.bincount(patterns(r0).ravel(), minlength=1 << m)
    t_counts = time.perf_counter() - t0
    known = min(ctx.n_a, ctx.n_b) / counts.sum()  # prl's default match proportion
    fit = P.em(counts, m, known, fixed_p=known)
    wa, wd = P.agreement_weights(fit.m, fit.u)
    score = P.pattern_table(-wa, -wd)
    t1 = time.perf_counter()
    correct = 0.0
    for r0 in range(0, n_a, block):
        s = score[patterns(r0)]
        mn = s.min(axis=1)
        tied = s <= (mn + P.RTOL * np.abs(mn))[:, None]
        rows = np.arange(r0, min(r0 + block, n_a))
        hit = tied[np.arange(rows.size), ctx.truth[rows]]
        correct += (hit / tied.sum(axis=1)).sum()
    t_sets = time.perf_counter() - t1
    return {"counts": counts, "correct": correct, "t_counts": t_counts, "t_sets": t_sets,
            "seconds": time.perf_counter() - t0}


def linkrisk_prl(a_df: pd.DataFrame, b_df: pd.DataFrame) -> dict:
    """linkrisk's prl, timed by stage, and the public call end to end."""
    ctx, _ = make_context(a_df, b_df)
    t0 = time.perf_counter()
    cmp = P.compare(ctx)
    counts = P.pattern_counts(cmp)
    t_counts = time.perf_counter() - t0
    res = linkrisk.attack(a_df, b_df, method="prl")
    return {"counts": counts, "correct": res.correct_links, "t_counts": t_counts,
            "seconds": res.seconds, "result": res}


def load_against(path: str):
    """Another version of prl, imported from a copy of its package directory or of the
    single module it was before (its relative imports resolve in linkrisk.attacks; the
    attack registry keeps this version's ``prl``)."""
    import importlib.util
    import os
    import shutil
    import sys
    import tempfile

    from linkrisk.attacks.base import ATTACKS

    tmp = tempfile.mkdtemp(prefix="prl_against_")
    name = "linkrisk.attacks._probabilistic_against"
    if os.path.isdir(path):
        dst = shutil.copytree(path, f"{tmp}/probabilistic_against",
                              ignore=shutil.ignore_patterns("__pycache__"))
        spec = importlib.util.spec_from_file_location(name, f"{dst}/__init__.py",
                                                      submodule_search_locations=[dst])
    else:
        dst = shutil.copy(path, f"{tmp}/probabilistic_against.py")
        spec = importlib.util.spec_from_file_location(name, dst)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    keep = ATTACKS["prl"]
    spec.loader.exec_module(mod)
    ATTACKS["prl"] = keep
    return mod


def against(x: pd.DataFrame, y: pd.DataFrame, path: str, reps: int) -> None:
    """The whole run_prl of this version against another one, alternating."""
    other = load_against(path)
    small, _ = make_context(x.iloc[:3000], y.iloc[:3000])
    for mod in (other, P):  # compile both outside the timings (the walks need n > ~2,000)
        mod.run_prl(small, path="groups")
    ctx, _ = make_context(x, y)
    times: dict[str, list[float]] = {"other": [], "this": []}
    cpu: dict[str, list[float]] = {"other": [], "this": []}
    outs = {}
    for _ in range(reps):
        for name, mod in (("other", other), ("this", P)):
            t0, c0 = time.perf_counter(), time.process_time()
            outs[name] = mod.run_prl(ctx)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    stages(ctx, other, reps)
    a, b = outs["other"], outs["this"]
    for f in ("min_score", "count", "true_in_set", "true_score", "link"):
        assert np.array_equal(getattr(a.sets, f), getattr(b.sets, f)), f"{f} differs"
    for k in ("linked_pairs", "clerical_pairs", "nonlinked_pairs", "candidate_search"):
        assert a.extra[k] == b.extra[k], f"{k} differs"
    fmt = ", ".join
    print(f"run_prl, {reps} alternating runs each (candidate search "
          f"{b.extra['candidate_search']}): other {fmt(f'{t:.2f}' for t in times['other'])} s; "
          f"this {fmt(f'{t:.2f}' for t in times['this'])} s; best of each: "
          f"{min(times['other']):.2f} s -> {min(times['this']):.2f} s; CPU time (all threads) "
          f"other {fmt(f'{t:.2f}' for t in cpu['other'])} s, this "
          f"{fmt(f'{t:.2f}' for t in cpu['this'])} s; identical pattern class counts, "
          "candidate sets and links")


def stages(ctx, other, reps: int) -> None:
    """Pattern counts and candidate sets (the walks) of both versions, alternating: best
    wall and CPU seconds of each."""
    cmp = P.compare(ctx)
    m = cmp.a.shape[1]
    counts = P.pattern_counts(cmp)
    known = min(ctx.n_a, ctx.n_b) / (ctx.n_a * ctx.n_b)
    fit = P.em(counts, m, known, fixed_p=known)
    wa, wd = P.agreement_weights(fit.m, fit.u)
    score = P.pattern_table(-wa, -wd)
    keep = np.flatnonzero(wa != wd)
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for _ in range(reps):
        for name, mod in (("other", other), ("this", P)):
            for stage, call in (("counts", lambda mod=mod: mod.pattern_counts(cmp)),
                                ("sets", lambda mod=mod: mod.group_sets(
                                    cmp, score, ctx.truth, ctx.seed, keep=keep))):
                t0, c0 = time.perf_counter(), time.process_time()
                call()
                t = (time.perf_counter() - t0, time.process_time() - c0)
                old = best.get((name, stage), (np.inf, np.inf))
                best[name, stage] = (min(old[0], t[0]), min(old[1], t[1]))
    for stage in ("counts", "sets"):
        (wo, co), (wt, ct) = best["other", stage], best["this", stage]
        print(f"{stage:>6}: other {wo:.2f} s wall / {co:.2f} s CPU, this {wt:.2f} s wall / "
              f"{ct:.2f} s CPU (best of {reps}, {P.nb.get_num_threads()} threads)")


def numeric(n: int, seed: int, old: bool, against_path: str | None = None,
            reps: int = 2) -> None:
    """prl on numeric data: the public attack, then (``old``) the numpy walks by stage."""
    from linkrisk.datasets import synthetic as numeric_synthetic

    x = numeric_synthetic(n, 13, seed)
    rng = np.random.default_rng(seed + 1)
    y = x + rng.standard_normal(x.shape) * (0.25 * x.std(ddof=1).to_numpy())
    if against_path is not None:
        against(x, y, against_path, reps)
    linkrisk.attack(x.iloc[:500], y.iloc[:500], method="prl")  # compile outside the timing
    ctx, _ = make_context(x, y)
    cmp = P.compare(ctx)
    t0 = time.perf_counter()
    counts = P.pattern_counts(cmp)
    t_counts = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = linkrisk.attack(x, y, method="prl")
    t_all = time.perf_counter() - t0
    x_ = res.extra
    print(f"prl, synthetic({n:,}, 13) + 0.25 sigma noise, q = 10 bins, "
          f"{P.nb.get_num_threads()} threads; candidate search: {x_['candidate_search']}")
    print(f"new: whole attack {t_all:.2f} s (pattern counts alone {t_counts:.2f} s); "
          f"rate {res.rate:.4f}, correct {res.correct_links:.1f}")
    if not old or x_["candidate_search"] != "groups":
        return
    known = min(ctx.n_a, ctx.n_b) / (ctx.n_a * ctx.n_b)
    fit = P.em(counts, cmp.a.shape[1], known, fixed_p=known)
    wa, wd = P.agreement_weights(fit.m, fit.u)
    score = P.pattern_table(-wa, -wd)
    keep = np.flatnonzero(wa != wd)
    t0 = time.perf_counter()
    old_counts = P.pattern_counts(cmp, walk="numpy")
    t_oc = time.perf_counter() - t0
    t0 = time.perf_counter()
    old_sets = P.group_sets(cmp, score, ctx.truth, ctx.seed, keep=keep, walk="numpy")
    t_os = time.perf_counter() - t0
    t0 = time.perf_counter()
    two_sets = P.group_sets(cmp, score, ctx.truth, ctx.seed, keep=keep, walk="walks")
    t_ws = time.perf_counter() - t0
    t0 = time.perf_counter()
    new_sets = P.group_sets(cmp, score, ctx.truth, ctx.seed, keep=keep)
    t_ns = time.perf_counter() - t0
    assert np.array_equal(old_counts, counts), "pattern counts differ"
    for f in ("min_score", "count", "true_in_set", "link"):
        assert np.array_equal(getattr(old_sets, f), getattr(new_sets, f)), f"{f} differs"
        assert np.array_equal(getattr(two_sets, f), getattr(new_sets, f)), f"{f} differs"
    assert np.array_equal(new_sets.link, res.per_record["link"].to_numpy()), "links differ"
    print(f"old (numpy walks): pattern counts {t_oc:.2f} s, candidate sets {t_os:.2f} s "
          f"(total {t_oc + t_os:.2f} s)")
    print(f"two compiled walks (minimum, then collecting): candidate sets {t_ws:.2f} s")
    print(f"new (compiled):    pattern counts {t_counts:.2f} s, candidate sets {t_ns:.2f} s "
          f"(total {t_counts + t_ns:.2f} s); identical counts, sets and links")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--n-small", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--numeric", action="store_true",
                    help="numeric synthetic data, new against old walks")
    ap.add_argument("--no-old", action="store_true", help="with --numeric: skip the old walks")
    ap.add_argument("--against", help="with --numeric: another prl (package directory or "
                    "probabilistic.py) to compare")
    ap.add_argument("--reps", type=int, default=2, help="with --against: runs of each")
    args = ap.parse_args()
    if args.numeric:
        numeric(args.n, args.seed, not args.no_old, args.against, args.reps)
        return

    # compile the kernels once, outside the timings
    linkrisk.attack(*synthetic(300, seed=0), method="prl")

    rows = []
    a, b = synthetic(args.n, seed=args.seed)
    big = linkrisk_prl(a, b)
    res = big["result"]
    rows.append((f"linkrisk prl, {args.n:,} x {args.n:,}", big["t_counts"], big["seconds"],
                 res.correct_links, res.extra["candidate_search"]))

    a_s, b_s = synthetic(args.n_small, seed=args.seed)
    small = linkrisk_prl(a_s, b_s)
    alt = numpy_blocks(a_s, b_s)
    assert np.array_equal(small["counts"], alt["counts"]), "pattern counts differ"
    assert abs(small["correct"] - alt["correct"]) < 1e-6, "correct links differ"
    rows.append((f"linkrisk prl, {args.n_small:,} x {args.n_small:,}", small["t_counts"],
                 small["seconds"], small["correct"], small["result"].extra["candidate_search"]))
    rows.append((f"numpy pair blocks, {args.n_small:,} x {args.n_small:,}", alt["t_counts"],
                 alt["seconds"], alt["correct"], "all pairs"))
    scale = (args.n / args.n_small) ** 2
    rows.append((f"numpy pair blocks, {args.n:,} x {args.n:,} (extrapolated x{scale:.0f})",
                 alt["t_counts"] * scale, alt["seconds"] * scale, float("nan"), "—"))

    print(f"prl on synthetic categorical data (8 attributes, 2-20 categories, PRAM keep 0.8), "
          f"{linkrisk.attacks.probabilistic.nb.get_num_threads()} threads")
    print(f"{'run':<52} {'counts s':>9} {'total s':>9} {'correct':>9}  candidate search")
    for name, tc, tt, corr, how in rows:
        print(f"{name:<52} {tc:9.2f} {tt:9.2f} {corr:9.1f}  {how}")
    print(f"ratio numpy / linkrisk at n={args.n_small:,}: pattern counts "
          f"{alt['t_counts'] / small['t_counts']:.0f}x, whole attack "
          f"{alt['seconds'] / small['seconds']:.0f}x (identical counts and correct links)")
    x = res.extra
    print(f"n={args.n:,}: rate {res.rate:.4f}; EM {x['em_iterations']} cycles; "
          f"m = {np.round(list(x['m'].values()), 3).tolist()}; "
          f"LP/CP/NP pairs = {x['linked_pairs']:,}/{x['clerical_pairs']:,}/"
          f"{x['nonlinked_pairs']:,} (thresholds {x['upper_threshold']} / {x['lower_threshold']})")


if __name__ == "__main__":
    main()
