"""prl (Fellegi–Sunter) against brute force over all pairs."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from linkrisk.errors import LinkriskError

RTOL = 1e-9


def pram_files(n, cards, keep, seed, n_b=None):
    """Independent categorical attributes; B = A with each value kept with probability
    keep_j, else replaced by a uniformly chosen other category (PRAM-like)."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for j, (L, k) in enumerate(zip(cards, keep, strict=True)):
        x = rng.choice(L, n, p=rng.dirichlet(np.full(L, 2.0)))
        y = x.copy()
        ch = rng.random(n) > k
        y[ch] = (x[ch] + rng.integers(1, L, ch.sum())) % L
        a[f"x{j}"] = pd.Categorical(x, categories=range(L))
        b[f"x{j}"] = pd.Categorical(y, categories=range(L))
    return pd.DataFrame(a), pd.DataFrame(b)


def brute_agree(cmp):
    """(n_a, n_b, m) agreement array of all pairs."""
    tol = np.where(cmp.tol > 0, cmp.tol, 0.0)
    return np.abs(cmp.a[:, None, :] - cmp.b[None, :, :]) <= tol


def brute_patterns(cmp):
    g = brute_agree(cmp)
    return (g.astype(np.int64) << np.arange(cmp.a.shape[1])).sum(-1)


def brute_scores(cmp, wa, wd):
    """−w for every pair, summed in attribute order (the engine's arithmetic)."""
    g = brute_agree(cmp)
    acc = np.zeros(g.shape[:2])
    for j in range(g.shape[2]):
        acc = acc + np.where(g[:, :, j], -wa[j], -wd[j])
    return acc


def mixed_files(seed, n=90):
    rng = np.random.default_rng(seed)
    a = pd.DataFrame({
        "c": pd.Categorical(rng.choice(list("abcd"), n)),
        "o": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"],
                            ordered=True),
        "x": rng.normal(50, 10, n).round(),
        "y": rng.exponential(3, n),
    })
    b = a.copy()
    b["x"] = a["x"] + rng.normal(0, 3, n).round()
    b["y"] = a["y"] * rng.uniform(0.7, 1.3, n)
    flip = rng.random(n) < 0.2
    b.loc[flip, "c"] = rng.choice(list("abcd"), flip.sum())
    return a, b


@pytest.mark.parametrize("tol", [None, {"y": 0.5}, 2.0])
def test_pattern_counts_equal_enumeration(tol):
    a, b = mixed_files(1)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, q=5, tol=tol)
    got = P.pattern_counts(cmp)
    want = np.bincount(brute_patterns(cmp).ravel(), minlength=16)
    np.testing.assert_array_equal(got, want)
    if tol is None:  # the walk and the pair kernel agree on coded files too
        np.testing.assert_array_equal(P._pair_counts(cmp), want)


def test_pattern_counts_unequal_sizes_and_walk():
    a, b = pram_files(150, [2, 3, 5, 4, 2, 6], [0.8] * 6, 2)
    b = b.iloc[:97].copy()
    b["id"] = np.arange(97)
    a["id"] = np.arange(150)
    ctx, _ = make_context(a, b, qi=list(a.columns[:-1]), ids="id")
    cmp = P.compare(ctx)
    want = np.bincount(brute_patterns(cmp).ravel(), minlength=64)
    np.testing.assert_array_equal(P.pattern_counts(cmp), want)
    assert want.sum() == 150 * 97


def test_quantile_bins_from_original_file():
    a, b = mixed_files(3)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, q=4)
    edges = np.unique(np.quantile(a["x"], [0.25, 0.5, 0.75]))
    np.testing.assert_array_equal(cmp.a[:, 2], np.searchsorted(edges, a["x"], side="right"))
    np.testing.assert_array_equal(cmp.b[:, 2], np.searchsorted(edges, b["x"], side="right"))
    assert cmp.rule[2] == "same of 4 quantile bins"


def test_em_recovers_known_m_and_u():
    cards = [3, 5, 8, 12, 20, 6, 10, 4]
    keep = [0.9, 0.8, 0.7, 0.95, 0.6, 0.85, 0.75, 0.9]
    a, b = pram_files(2000, cards, keep, 3)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    cnt = P.pattern_counts(cmp)
    g = P.bits(8, np.arange(256))
    tc = np.bincount(P._true_patterns(cmp, ctx.truth), minlength=256)
    true_m = (tc @ g) / 2000                      # agreement rate over the true pairs
    true_u = ((cnt - tc) @ g) / (cnt.sum() - 2000)  # over all other pairs
    for fixed in (None, 2000 / cnt.sum()):
        fit = P.em(cnt, 8, 1 / 2000, fixed_p=fixed)
        assert fit.converged and (fit.m >= fit.u).all()
        np.testing.assert_allclose(fit.m, true_m, atol=0.03)
        np.testing.assert_allclose(fit.u, true_u, atol=1e-3)
        assert fit.p * cnt.sum() == pytest.approx(2000, rel=0.1)
    np.testing.assert_allclose(true_m, keep, atol=0.03)


def _brute_sets(d, truth):
    mn = d.min(1)
    c = d <= (mn + RTOL * np.abs(mn))[:, None]
    cnt = c.sum(1)
    tin = np.array([t >= 0 and c[i, t] for i, t in enumerate(truth)])
    return mn, c, cnt, tin


@pytest.mark.parametrize("path", ["groups", "engine", "pairs"])
@pytest.mark.parametrize("weights", ["tied", "em", "zero"])
def test_prl_candidate_sets_equal_brute_force(path, weights):
    a, b = pram_files(300, [3, 4, 6, 8, 4, 5], [0.85, 0.8, 0.9, 0.7, 0.75, 0.8], 4)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    if weights == "tied":  # equal weights: many exact and rounding-level ties
        wa = np.array([1.0, 1.0, 1.0, 0.1, 0.3, 0.2])
        wd = np.array([-1.0, -1.0, -1.0, -0.2, -0.1, -0.3])
    elif weights == "zero":  # m_j = u_j: attributes 1 and 4 weigh nothing (left out of walk)
        wa = np.array([2.0, 0.0, 1.5, 0.7, 0.0, 1.1])
        wd = np.array([-3.0, 0.0, -0.5, -0.2, 0.0, -1.0])
    else:
        out = P.run_prl(ctx)
        wa = np.array(list(out.extra["weight_agree"].values()))
        wd = np.array(list(out.extra["weight_disagree"].values()))
    if path == "groups" and not (wa >= wd).all():
        pytest.skip("groups needs every agreement to raise the weight")
    score = P.pattern_table(-wa, -wd)
    sets = {"groups": lambda: P.group_sets(cmp, score, ctx.truth, 0,
                                           keep=np.flatnonzero(wa != wd)),
            "engine": lambda: P.engine_sets(ctx, cmp, wa, wd),
            "pairs": lambda: P.pair_sets(ctx, cmp, score)}[path]()
    mn, c, cnt, tin = _brute_sets(brute_scores(cmp, wa, wd), ctx.truth)
    np.testing.assert_array_equal(sets.count, cnt)
    np.testing.assert_array_equal(sets.true_in_set, tin)
    np.testing.assert_allclose(sets.min_score, mn, rtol=1e-12)
    assert c[np.arange(len(a)), sets.link].all()
    assert (cnt > 1).any()  # ties exercised


def test_groups_link_is_uniform_over_ties():
    a = pd.DataFrame({"p": pd.Categorical([0]), "q": pd.Categorical([0])})
    b = pd.DataFrame({"p": pd.Categorical([0, 0, 0, 1, 1, 1]),
                      "q": pd.Categorical([1, 1, 1, 0, 0, 0])})
    b["id"], a["id"] = range(6), [0]
    ctx, _ = make_context(a, b, qi=["p", "q"], ids="id")
    cmp = P.compare(ctx)
    score = P.pattern_table(-np.array([1.0, 1.0]), np.zeros(2))
    seen = [int(P.group_sets(cmp, score, ctx.truth, seed).link[0]) for seed in range(600)]
    freq = np.bincount(seen, minlength=6)
    assert freq.min() > 60  # 100 expected for each of the 6 tied records


def test_prl_attack_with_numeric_and_tolerance_vs_brute_force():
    a, b = mixed_files(5, n=120)
    for kw in ({}, {"tol": {"x": 3.0}, "q": 6}):
        res = linkrisk.attack(a, b, method="prl", **kw)
        ctx, _ = make_context(a, b)
        cmp = P.compare(ctx, q=kw.get("q", 10), tol=kw.get("tol"))
        wa = np.array(list(res.extra["weight_agree"].values()))
        wd = np.array(list(res.extra["weight_disagree"].values()))
        _, _, cnt, tin = _brute_sets(brute_scores(cmp, wa, wd), ctx.truth)
        np.testing.assert_array_equal(res.per_record["candidates"].to_numpy(), cnt)
        assert res.correct_links == pytest.approx(np.where(tin, 1 / cnt, 0).sum())
        assert res.extra["pairs"] == 120 * 120
        json.dumps(res.to_dict())


def test_thresholds_respect_error_bounds_and_class_counts():
    a, b = pram_files(400, [3, 4, 5, 6, 8], [0.8, 0.7, 0.9, 0.85, 0.6], 6)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    pats = brute_patterns(cmp).ravel()
    for max_fp, max_fn in [(0.01, 0.01), (1e-4, 0.05), (0.0, 0.0), (0.2, 0.3)]:
        res = linkrisk.attack(a, b, method="prl", max_fp=max_fp, max_fn=max_fn)
        x = res.extra
        m = np.array(list(x["m"].values()))
        u = np.array(list(x["u"].values()))
        wa, wd = P.agreement_weights(m, u)
        w = P.pattern_table(wa, wd)
        pm, pu = P.pattern_probs(m), P.pattern_probs(u)
        up = np.inf if x["upper_threshold"] is None else x["upper_threshold"]
        lo = -np.inf if x["lower_threshold"] is None else x["lower_threshold"]
        lp, nlp = w >= up, w <= lo
        assert not (lp & nlp).any()
        assert pu[lp].sum() <= max_fp + 1e-12 and pm[nlp].sum() <= max_fn + 1e-12
        assert x["fp_probability"] == pytest.approx(pu[lp].sum(), abs=1e-15)
        assert x["fn_probability"] == pytest.approx(pm[nlp].sum(), abs=1e-15)
        # maximal: the next weight level below the upper (above the lower) threshold breaks
        # the bound
        below = w[w < up]
        if below.size:
            nxt = below.max()
            assert pu[w >= nxt - 1e-9 * max(1, abs(nxt))].sum() > max_fp
        above = w[(w > lo) & ~lp]
        if above.size:
            nxt = above.min()
            assert pm[w <= nxt + 1e-9 * max(1, abs(nxt))].sum() > max_fn
        # pair counts per class from the patterns of all pairs
        assert x["linked_pairs"] == int(lp[pats].sum())
        assert x["nonlinked_pairs"] == int(nlp[pats].sum())
        assert x["linked_pairs"] + x["clerical_pairs"] + x["nonlinked_pairs"] == pats.size


def test_one_to_one_is_an_optimal_assignment():
    a, b = pram_files(120, [2, 3, 4, 5], [0.8, 0.8, 0.9, 0.7], 7)
    res = linkrisk.attack(a, b, method="prl", one_to_one=True)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    wa = np.array(list(res.extra["weight_agree"].values()))
    wd = np.array(list(res.extra["weight_disagree"].values()))
    d = brute_scores(cmp, wa, wd)
    link = res.per_record["link"].to_numpy()
    assert sorted(link) == list(range(120))
    r, c = linear_sum_assignment(d)
    assert d[np.arange(120), link].sum() == pytest.approx(d[r, c].sum())
    assert res.correct_links == (link == np.arange(120)).sum()
    assert res.extra["candidate_search"] == "assignment"


def test_identity_and_real_data(data_dir):
    h = linkrisk.datasets.load("household", data_dir=data_dir)
    res = linkrisk.attack(h, h, method="prl")
    assert res.correct_links == pytest.approx(493)  # duplicates tie, as in dbrl
    assert res.extra["candidate_search"] in ("groups", "engine")


@pytest.mark.parametrize("kw,match", [
    ({"q": 1}, "q"), ({"tol": {"c": 1.0}}, "numeric attributes"), ({"tol": -1.0}, "tol"),
    ({"max_fp": 1.5}, "max_fp"), ({"match_proportion": 2}, "match_proportion"),
    ({"max_iter": 0}, "max_iter"), ({"one_to_one": True, "memory_budget": 2**20},
                                    "memory budget"),
])
def test_errors(kw, match):
    a, b = mixed_files(8, n=300)
    with pytest.raises(LinkriskError, match=match):
        linkrisk.attack(a, b, method="prl", **kw)


def _numeric_files(n, m, seed):
    """Correlated numeric attributes rounded to few values (many exact ties between records)
    and released with noise, so that the quantile bins give deep shared groups."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 1))
    x = np.round(z + rng.standard_normal((n, m)), 1)
    y = x + rng.standard_normal((n, m)) * 0.2
    a = pd.DataFrame(x, columns=[f"v{j}" for j in range(m)])
    return a, pd.DataFrame(y, columns=a.columns)


def _numpy_walk_counts(cmp):
    """The pattern counts by the plain numpy subset walk (the computation the compiled,
    pruned walk replaced)."""
    from linkrisk.grouping import subset_walk

    m, n_a = cmp.a.shape[1], cmp.a.shape[0]
    at_least = np.zeros(1 << m, np.int64)

    def visit(s, ids, g):
        at_least[s] = int(np.bincount(ids[:n_a], minlength=g) @ np.bincount(ids[n_a:],
                                                                               minlength=g))
    subset_walk(P._stack(cmp), cmp.size, visit)
    return P.superset_mobius(at_least, m)


@pytest.mark.parametrize("case", ["categorical", "numeric", "numeric_q3", "unequal", "one"])
def test_compiled_walk_equals_numpy_walk(case):
    """The compiled walk (pruned rows, small groups finished pair by pair, parallel counts)
    gives the numpy walk's pattern counts, minimal scores, candidate counts and links bit
    for bit, on data with many exact ties (repeated categories, rounded values, tied
    weights), attributes of zero weight (left out of the walk) and several seeds."""
    q = 10
    if case == "categorical":
        a, b = pram_files(500, [3, 4, 6, 8, 4, 5, 2, 3], [0.85, 0.8, 0.9, 0.7, 0.75, 0.8,
                                                         0.9, 0.9], 2)
    elif case == "unequal":  # B a subset of A's records, in another order
        a, b = pram_files(450, [3, 5, 4, 7, 3, 6], [0.9, 0.8, 0.7, 0.85, 0.8, 0.75], 5)
        a["id"] = b["id"] = range(450)
        b = b.sample(320, random_state=1)
    elif case == "one":
        a, b = pram_files(200, [4], [0.8], 1)
    else:
        a, b = _numeric_files(600, 9, 3)
        q = 3 if case == "numeric_q3" else 10
    ctx, _ = make_context(a, b, ids="id" if "id" in a else None)
    cmp = P.compare(ctx, q=q)
    m = cmp.a.shape[1]
    at_least = np.zeros(1 << m, np.int64)
    P._run_walk(P._stack(cmp), cmp.size, cmp.a.shape[0], P._COUNT, at_least=at_least)
    counts = P.superset_mobius(at_least, m)
    np.testing.assert_array_equal(counts, _numpy_walk_counts(cmp))
    np.testing.assert_array_equal(P.pattern_counts(cmp), counts)
    rng = np.random.default_rng(7)
    fit = P.em(counts, m, 1 / len(a), fixed_p=1 / len(a))
    weights = [P.agreement_weights(fit.m, fit.u),
               (np.round(rng.uniform(0.5, 2, m), 0), -np.round(rng.uniform(0, 1, m), 0)),
               (np.ones(m), np.zeros(m))]  # every pattern of one size tied
    if m > 2:
        wa, wd = np.round(rng.uniform(0.5, 2, m), 1), -np.ones(m)
        wa[1] = wd[1] = 0.0  # zero weight: left out of the walk
        weights.append((wa, wd))
    ties = 0
    for wa, wd in weights:
        score = P.pattern_table(-wa, -wd)
        keep = np.flatnonzero(wa != wd)
        for seed in (0, 3):
            old = P.group_sets(cmp, score, ctx.truth, seed, keep=keep, walk="numpy")
            new = P.group_sets(cmp, score, ctx.truth, seed, keep=keep)
            for f in ("min_score", "count", "true_in_set", "true_score", "link"):
                np.testing.assert_array_equal(getattr(new, f), getattr(old, f), err_msg=f)
            ties += int((new.count > 1).sum())
    assert ties > 0  # ties exercised


def _walk_cases():
    yield "categorical", *pram_files(400, [3, 4, 6, 8, 4, 5, 2, 3],
                                     [0.85, 0.8, 0.9, 0.7, 0.75, 0.8, 0.9, 0.9], 4), 10
    a, b = pram_files(350, [3, 5, 4, 7, 3, 6], [0.9, 0.8, 0.7, 0.85, 0.8, 0.75], 6)
    a["id"] = b["id"] = range(350)
    yield "unequal", a, b.sample(230, random_state=2), 10
    yield "numeric_q3", *_numeric_files(500, 9, 4), 3


@pytest.mark.parametrize("case", ["categorical", "unequal", "numeric_q3"])
def test_walk_kernels_against_pairs_and_two_walks(case):
    """The pair counts with small groups finished by their exact later pattern (folded by
    ``_fold_finished``) equal the enumeration of all pairs whatever the small-group limit
    (0: every group refined; 1; the default; everything finished below two attributes),
    and the one-walk candidate sets (events of the minimum walk, replayed in walk order; 1
    or several threads, the same limits) equal the two-walk path (minimum, then collecting
    walk) bit for bit, on data with tied records, tied weights and unequal file sizes."""
    import numba

    _, a, b, q = next(c for c in _walk_cases() if c[0] == case)
    ctx, _ = make_context(a, b, ids="id" if "id" in a else None)
    cmp = P.compare(ctx, q=q)
    n_a, m = cmp.a.shape
    want = P._pair_counts(cmp)  # every pair's pattern, binned
    for lim in (0, 1, P._SMALL, 10**9):
        at_least = np.zeros(1 << m, np.int64)
        P._run_walk(P._stack(cmp), cmp.size, n_a, P._COUNT, at_least=at_least, small_lim=lim)
        np.testing.assert_array_equal(P.superset_mobius(at_least, m), want, err_msg=str(lim))
    rng = np.random.default_rng(3)
    fit = P.em(want, m, 1 / n_a, fixed_p=1 / n_a)
    weights = [P.agreement_weights(fit.m, fit.u), (np.ones(m), np.zeros(m)),
               (np.round(rng.uniform(0.5, 2, m), 1), -np.ones(m))]
    threads = numba.get_num_threads()
    ties = 0
    try:
        for wa, wd in weights:
            score = P.pattern_table(-wa, -wd)
            keep = np.flatnonzero(wa != wd)
            codes = P._stack(cmp)[:, keep]
            full = (((np.arange(1 << keep.size)[:, None] >> np.arange(keep.size)) & 1)
                    << keep).sum(axis=1)
            score_k = score[full]
            for seed in (0, 5):
                old = P.group_sets(cmp, score, ctx.truth, seed, keep=keep, walk="walks")
                base = P._walk_base(np.arange(n_a, dtype=np.uint64), seed)
                for nt, lim in ((1, 0), (1, P._SMALL), (threads, 1), (threads, 10**9)):
                    numba.set_num_threads(nt)
                    best = np.full(n_a, np.inf)
                    ev = P._min_walk(codes, cmp.size[keep], n_a, score_k, best, base, lim)
                    thr = P.tie_threshold_np(best, P.RTOL)
                    count = np.zeros(n_a, np.int64)
                    link = np.full(n_a, -1, np.int64)
                    P._replay(ev, P._walk_order(keep.size), score_k, thr, base, count, link)
                    np.testing.assert_array_equal(best, old.min_score)
                    np.testing.assert_array_equal(count, old.count)
                    np.testing.assert_array_equal(link, old.link)
                new = P.group_sets(cmp, score, ctx.truth, seed, keep=keep)
                for f in ("min_score", "count", "true_in_set", "true_score", "link"):
                    np.testing.assert_array_equal(getattr(new, f), getattr(old, f), err_msg=f)
                ties += int((old.count > 1).sum())
    finally:
        numba.set_num_threads(threads)
    assert ties > 0


def test_walk_order_is_the_walks_order():
    """_walk_order ranks the subsets as grouping.subset_walk visits them."""
    from linkrisk.grouping import subset_walk

    seen = []
    subset_walk(np.zeros((2, 5), np.int64), np.ones(5, np.int64),
                lambda s, ids, g: seen.append(s))
    rank = P._walk_order(5)
    assert sorted(seen) == list(range(32))
    np.testing.assert_array_equal(rank[seen], np.arange(32))


def test_one_to_one_ties_do_not_favour_row_order():
    """Every pair of identical files of one repeated record has the same weight, so every
    assignment is optimal: the one reported must not be the identity (row order is the
    truth), and it is the same for the same seed."""
    a = pd.DataFrame({"x": ["p"] * 300, "y": ["q"] * 300}).astype("category")
    res = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=3)
    link = res.per_record["link"].to_numpy()
    assert sorted(link) == list(range(300))
    assert res.correct_links <= 15  # a random permutation has ~1 fixed point
    again = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=3)
    assert (again.per_record["link"].to_numpy() == link).all()
    other = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=4)
    assert not (other.per_record["link"].to_numpy() == link).all()


# ------------------------------------------------------------------ missing values
def _holes(df, rng, frac):
    out = df.copy()
    for c in out.columns:
        out.loc[rng.random(len(out)) < frac, c] = np.nan
    return out


def _ref_pairs(cmp):
    """(observed, agree) boolean (n_a, n_b, m) arrays, pair by pair in plain loops."""
    n_a, n_b, m = cmp.a.shape[0], cmp.b.shape[0], cmp.a.shape[1]
    obs = np.zeros((n_a, n_b, m), bool)
    agr = np.zeros((n_a, n_b, m), bool)
    for i in range(n_a):
        for k in range(n_b):
            for j in range(m):
                x, y = cmp.a[i, j], cmp.b[k, j]
                if np.isnan(x) or np.isnan(y):
                    continue
                obs[i, k, j] = True
                agr[i, k, j] = abs(x - y) <= (cmp.tol[j] if cmp.tol[j] > 0 else 0.0)
    return obs, agr


def _ref_em(obs, agr, p, iters=20000):
    """Plain EM over all pairs: a missing comparison is left out of the likelihood and of
    m_j, u_j; p fixed, m_j >= u_j, probabilities in [1e-9, 1 - 1e-9]."""
    o = obs.reshape(-1, obs.shape[-1]).astype(float)
    g = agr.reshape(-1, agr.shape[-1]).astype(float)
    u = np.clip((g.sum(0)) / o.sum(0), P.EPS, 1 - P.EPS)
    m = np.clip(np.maximum(0.9, (1 + u) / 2), P.EPS, 1 - P.EPS)
    for _ in range(iters):
        lm = np.log(p) + (g * np.log(m) + (o - g) * np.log1p(-m)).sum(1)
        lu = np.log1p(-p) + (g * np.log(u) + (o - g) * np.log1p(-u)).sum(1)
        post = 1 / (1 + np.exp(lu - lm))
        m2 = np.clip((post[:, None] * g).sum(0) / (post[:, None] * o).sum(0), P.EPS, 1 - P.EPS)
        u2 = np.clip(((1 - post)[:, None] * g).sum(0) / ((1 - post)[:, None] * o).sum(0),
                     P.EPS, 1 - P.EPS)
        m2 = np.maximum(m2, u2)
        done = max(np.abs(m2 - m).max(), np.abs(u2 - u).max()) < 1e-13
        m, u = m2, u2
        if done:
            break
    return m, u


@pytest.mark.parametrize("seed", range(3))
def test_missing_values_em_and_sets_equal_a_reference(seed):
    """Three-state comparisons: the pattern counts, EM (against a plain EM over all pairs),
    and the maximal-weight sets (against per-pair scores) on files with missing cells."""
    rng = np.random.default_rng(seed)
    a, b = pram_files(70, [3, 4, 2, 5], [0.9, 0.8, 0.85, 0.9], seed)
    a["v"] = rng.normal(size=len(a)).round(1)
    b["v"] = (a["v"] + rng.normal(0, 0.2, 70)).to_numpy()
    a, b = _holes(a, rng, 0.1), _holes(b, rng, 0.15)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, tol={"v": 0.25} if seed == 2 else None)
    assert cmp.missing
    obs, agr = _ref_pairs(cmp)
    bit = 1 << np.arange(cmp.a.shape[1])
    key = ((obs @ bit) << cmp.a.shape[1]) | (agr @ bit)
    uk, uc = np.unique(key, return_counts=True)
    o, g, c = P.missing_pattern_counts(cmp)
    np.testing.assert_array_equal((o << cmp.a.shape[1]) | g, uk)
    np.testing.assert_array_equal(c, uc)
    known = 1 / 70
    fit = P.em_missing(g, o, c, cmp.a.shape[1], known, max_iter=5000, fixed_p=known)
    m_ref, u_ref = _ref_em(obs, agr, known)
    np.testing.assert_allclose(fit.m, m_ref, atol=1e-7)
    np.testing.assert_allclose(fit.u, u_ref, atol=1e-7)
    tol = {"v": 0.25} if seed == 2 else None
    res = P.run_prl(make_context(a, b)[0], tol=tol)
    assert res.extra["missing_values"] and res.extra["candidate_search"] == (
        "pairs" if seed == 2 else "engine")
    wa = np.array(list(res.extra["weight_agree"].values()))
    wd = np.array(list(res.extra["weight_disagree"].values()))
    sc = np.zeros(obs.shape[:2])
    for j in range(obs.shape[2]):  # −w, a missing comparison adding 0
        sc = sc + np.where(obs[:, :, j], np.where(agr[:, :, j], -wa[j], -wd[j]), 0.0)
    truth = ctx.truth
    _, _, cnt, ok = _brute_sets(sc, truth)
    np.testing.assert_array_equal(res.sets.count, cnt)
    np.testing.assert_array_equal(res.sets.true_in_set, ok)
    np.testing.assert_array_equal(res.sets.min_score, sc.min(1))
    assert np.isclose(sc[np.arange(70), res.sets.link], sc.min(1), rtol=RTOL, atol=0).all()
    for path in ("engine", "pairs") if seed < 2 else ("pairs",):
        alt = P.run_prl(make_context(a, b)[0], tol=tol, path=path).sets
        np.testing.assert_array_equal(alt.count, cnt)
        np.testing.assert_array_equal(alt.true_in_set, ok)
    # one-to-one: an optimal assignment of the grid costs
    one = P.run_prl(make_context(a, b)[0], tol=tol, one_to_one=True)
    ga, gd = P.grid_weights(wa, wd)
    gc = np.zeros(obs.shape[:2])
    for j in range(obs.shape[2]):
        gc = gc + np.where(obs[:, :, j], np.where(agr[:, :, j], ga[j], gd[j]), 0.0)
    ri, ci = linear_sum_assignment(gc)
    link = one.sets.link
    got = link >= 0
    assert got.sum() == 70 and len(set(link[got])) == 70
    assert gc[np.flatnonzero(got), link[got]].sum() == gc[ri, ci].sum()
    np.testing.assert_array_equal(one.sets.min_score[got], sc[np.flatnonzero(got), link[got]])


def test_prl_runs_on_a_local_suppression_release_of_household():
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    orig = linkrisk.datasets.load("household")[keys].iloc[:1500].reset_index(drop=True)
    rel = linkrisk.mask(orig, "local_suppression", k=3, columns=keys)
    assert rel.isna().to_numpy().any()
    res = linkrisk.attack(orig, rel, method="prl")
    assert res.extra["missing_values"] and 0 < res.extra["missing_comparisons"] < 0.1
    assert res.extra["em_converged"] and 0 < res.rate <= 1
    assert res.extra["linked_pairs"] + res.extra["clerical_pairs"] + \
        res.extra["nonlinked_pairs"] == 1500 * 1500
    one = linkrisk.attack(orig, rel, method="prl", one_to_one=True)
    assert (one.per_record["link"] >= 0).all() and 0 < one.rate <= 1
