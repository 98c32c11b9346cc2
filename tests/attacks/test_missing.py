"""Attacks on files with missing QI values against dense brute force written from
docs/methods.md ("Missing values"): a pair is scored over the attributes observed in both,
numeric sums rescaled by m/m_o (L∞ not), a missing category matches any."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks.distance import linked, missing_linked, space
from linkrisk.engine.nearest import missing as miss
from linkrisk.errors import LinkriskError
from tests.attacks.test_categorical import check

RTOL = 1e-9  # the engine's tie tolerance


# ------------------------------------------------------------------ brute force
def _std_obs(x):
    return (x - np.nanmean(x, 0)) / np.nanstd(x, 0, ddof=1)


def _ranks_obs(x, norm):
    r = np.full(x.shape, np.nan)
    for j in range(x.shape[1]):
        ok = ~np.isnan(x[:, j])
        r[ok, j] = rankdata(x[ok, j])
        if norm[j]:
            r[ok, j] /= ok.sum()
    return r


def dense_missing(method, a, b, d=2):
    """Score of every pair over the attributes observed in both, one pair at a time."""
    m = a.shape[1]
    if method in ("dbrl", "dbrl_l1", "kernel"):
        a, b = _std_obs(a), _std_obs(b)
    elif method == "dbrl2":
        sd = np.sqrt(np.nanvar(a, 0, ddof=1) + np.nanvar(b, 0, ddof=1))
        a, b = a / sd, b / sd
    elif method in ("rbrl_sum", "rbrl_max"):
        norm = (~np.isnan(a)).sum(0) != (~np.isnan(b)).sum(0)
        a, b = _ranks_obs(a, norm), _ranks_obs(b, norm)
    elif method.startswith("mahalanobis"):
        if method == "mahalanobis":  # Var(A − B) over the complete true pairs (row order)
            ok = ~(np.isnan(a).any(1) | np.isnan(b).any(1))
            s = np.cov((a[ok] - b[ok]).T)
        else:
            s = np.cov(a[~np.isnan(a).any(1)].T) + np.cov(b[~np.isnan(b).any(1)].T)
    out = np.empty((len(a), len(b)))
    for i in range(len(a)):
        for k in range(len(b)):
            o = ~np.isnan(a[i]) & ~np.isnan(b[k])
            if not o.any():
                out[i, k] = np.inf
                continue
            c = m / o.sum()
            x, y = a[i, o], b[k, o]
            if method in ("dbrl", "dbrl2"):
                v = c * ((x - y) ** 2).sum()
            elif method in ("dbrl_l1", "rbrl_sum"):
                v = c * np.abs(x - y).sum()
            elif method == "rbrl_max":
                v = np.abs(x - y).max()
            elif method == "kernel":  # inner products over the common attributes, × m/m_o
                v = ((1 + c * x @ x) ** d - 2 * (1 + c * x @ y) ** d + (1 + c * y @ y) ** d)
            else:
                diff = x - y
                v = c * diff @ np.linalg.solve(s[np.ix_(o, o)], diff)
            out[i, k] = v
    return out


def dense_categorical(a_df, b_df, spec):
    """Nominal 0/1, ordinal (|r−r'|+1)/|D|, numeric standardized over observed values and
    rescaled by m_num/m_o; a missing category matches any; no numeric attribute in common
    (when there are some): ∞."""
    n_a, n_b = len(a_df), len(b_df)
    cat = np.zeros((n_a, n_b))
    num_sum = np.zeros((n_a, n_b))
    num_cnt = np.zeros((n_a, n_b))
    m_num = 0
    for c, kind in spec.items():
        va, vb = a_df[c].to_numpy(object), b_df[c].to_numpy(object)
        na, nb = pd.isna(a_df[c]).to_numpy(), pd.isna(b_df[c]).to_numpy()
        both = ~na[:, None] & ~nb[None]
        if kind == "numeric":
            m_num += 1
            sa = _std_obs(a_df[c].to_numpy(float)[:, None])[:, 0]
            sb = _std_obs(b_df[c].to_numpy(float)[:, None])[:, 0]
            num_sum += np.where(both, (sa[:, None] - sb[None]) ** 2, 0.0)
            num_cnt += both
        elif kind == "nominal":
            cat += np.where(both, va[:, None] != vb[None], 0.0)
        else:
            pos = {v: i for i, v in enumerate(kind)}
            pa = np.array([pos.get(v, 0) for v in va])
            pb = np.array([pos.get(v, 0) for v in vb])
            cat += np.where(both, (np.abs(pa[:, None] - pb[None]) + 1) / len(kind), 0.0)
    if m_num:
        with np.errstate(divide="ignore", invalid="ignore"):
            num = np.where(num_cnt > 0, num_sum * m_num / np.maximum(num_cnt, 1), np.inf)
        return cat + num
    return cat


def holes(x, rng, frac, cols=None):
    """``x`` with a share ``frac`` of its cells (in ``cols``) set missing."""
    x = x.copy()
    cols = list(x.columns) if cols is None else cols
    for c in cols:
        x.loc[rng.random(len(x)) < frac, c] = np.nan
    return x


def num_files(seed, n=70, m=4, frac=0.2):
    """Integer-valued files (many exact ties) with missing cells in both."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, (n, m)).astype(float)
    b = a + rng.integers(-1, 2, (n, m))
    cols = [f"x{j}" for j in range(m)]
    a_df, b_df = pd.DataFrame(a, columns=cols), pd.DataFrame(b, columns=cols)
    return holes(a_df, rng, frac / 2), holes(b_df, rng, frac)


NUMERIC = ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel", "rbrl_sum",
           "rbrl_max"]


# ------------------------------------------------------------------ numeric attacks
@pytest.mark.parametrize("method", NUMERIC)
@pytest.mark.parametrize("seed", [0, 1])
def test_numeric_attack_equals_dense_formula(method, seed):
    a, b = num_files(seed)
    res = linkrisk.attack(a, b, method=method)
    # the kernel distance cancels: K(a,a) − 2K(a,b) + K(b,b) agrees to ~1e-14 absolute
    cnt = check(res, dense_missing(method, a.to_numpy(), b.to_numpy()), atol=1e-12)
    assert cnt.max() > 1, "test data must contain ties"
    assert res.extra.get("missing_values") is True


def test_unequal_sizes_and_no_common_attribute():
    """|A| ≠ |B| (ranks normalized), and a released record with every value missing is
    at +∞ from everyone: a candidate only for the rows with nothing better."""
    a, b = num_files(3, n=50)
    b = b.iloc[:40].reset_index(drop=True)
    b.iloc[7] = np.nan
    a["id"], b["id"] = np.arange(50), np.arange(40)
    cols = [c for c in a.columns if c != "id"]
    for method in ("dbrl", "rbrl_sum", "rbrl_max"):
        res = linkrisk.attack(a, b, method=method, ids="id", qi=cols)
        truth = np.where(np.arange(50) < 40, np.arange(50), -1)
        check(res, dense_missing(method, a[cols].to_numpy(), b[cols].to_numpy()), truth)
        assert not res.per_record["link"].eq(7).any()


def test_row_without_any_common_value_ties_everyone():
    a, b = num_files(4, n=30)
    a.iloc[2] = np.nan
    res = linkrisk.attack(a, b, method="dbrl")
    pr = res.per_record
    assert pr["candidates"].iloc[2] == 30 and np.isinf(pr["score"].iloc[2])
    check(res, dense_missing("dbrl", a.to_numpy(), b.to_numpy()))


# ------------------------------------------------------------------ categorical attacks
def cat_files(seed, n=90, frac=0.15):
    rng = np.random.default_rng(seed)
    a = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "reg": rng.choice(list("abcde"), n),
                      "edu": rng.integers(1, 5, n), "job": rng.choice(list("pqrs"), n)})
    b = a.copy()
    flip = rng.random(n) < 0.2
    b.loc[flip, "reg"] = rng.choice(list("abcde"), flip.sum())
    return holes(a, rng, frac / 3), holes(b, rng, frac, ["reg", "edu", "job"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hamming_missing_matches_any_category(seed):
    a, b = cat_files(seed)
    kinds = {c: "nominal" for c in a.columns}
    res = linkrisk.attack(a, b, method="dbrl_hamming", kinds=kinds)
    cnt = check(res, dense_categorical(a, b, kinds))
    assert cnt.max() > 1


def test_mixed_ordinal_nominal_numeric():
    a, b = cat_files(5)
    rng = np.random.default_rng(5)
    a["age"] = rng.integers(18, 80, len(a)).astype(float)
    b["age"] = a["age"] + rng.integers(-2, 3, len(a))
    b = holes(b, rng, 0.2, ["age"])
    kinds = {"sex": "nominal", "reg": "nominal", "job": "nominal", "edu": "ordinal",
             "age": "numeric"}
    res = linkrisk.attack(a, b, method="dbrl_mixed", kinds=kinds,
                          categories={"edu": [1, 2, 3, 4]})
    spec = {"sex": "nominal", "reg": "nominal", "edu": [1, 2, 3, 4], "job": "nominal",
            "age": "numeric"}
    check(res, dense_categorical(a, b, spec))


def test_assess_runs_on_a_local_suppression_release():
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    orig = linkrisk.datasets.load("household")[keys].iloc[:1500].reset_index(drop=True)
    rel = linkrisk.mask(orig, "local_suppression", k=3, columns=keys)
    assert rel.isna().to_numpy().any()
    res = linkrisk.assess(orig, rel, qi=keys)
    assert "dbrl_hamming" in res.results
    r = res.results["dbrl_hamming"]
    kinds = {c: "nominal" for c in keys}
    check(r, dense_categorical(orig, rel, kinds))


# ------------------------------------------------------------------ no missing values
@pytest.mark.parametrize("method", ["sqeuclidean", "l1", "kernel", "dbrl2", "mahalanobis",
                                    "rank_sum", "rank_max"])
def test_complete_files_take_the_unchanged_path(method, monkeypatch):
    """Without a missing value the attack is the engine's search on the old space (bit for
    bit), never the pattern search; the pattern search on complete files agrees."""
    a, b = num_files(6, frac=0.0)
    ctx, _ = make_context(a, b)
    assert not ctx.has_missing

    def boom(*_a, **_k):
        raise AssertionError("pattern search used on complete files")

    monkeypatch.setattr(miss, "nearest_sets_missing", boom)
    got = linked(ctx, method).sets
    sp = space(make_context(a, b)[0], method)
    ref = make_context(a, b)[0].nearest(sp.a, sp.b, sp.metric, **sp.kw).sets
    for f in ("min_score", "count", "true_in_set", "true_score", "link"):
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
    monkeypatch.undo()
    alt = missing_linked(make_context(a, b)[0], method).sets
    np.testing.assert_array_equal(alt.count, ref.count)
    np.testing.assert_array_equal(alt.true_in_set, ref.true_in_set)
    np.testing.assert_allclose(alt.min_score, ref.min_score, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ engine pieces
def test_patterns_group_in_file_order():
    obs = np.array([[1, 0], [1, 1], [1, 0], [0, 0], [1, 1]], bool)
    uniq, groups = miss.patterns(obs)
    assert len(groups) == 3
    for u, g in zip(uniq, groups, strict=True):
        assert (obs[g] == u).all() and (np.diff(g) > 0).all()
    assert sorted(np.concatenate(groups).tolist()) == list(range(5))


def test_too_many_patterns_are_refused(monkeypatch):
    monkeypatch.setattr(miss, "MAX_PATTERN_PAIRS", 3)
    a, b = num_files(7)
    with pytest.raises(LinkriskError, match="missingness patterns"):
        linkrisk.attack(a, b, method="dbrl")


def _l1_build(a, b):
    """Pattern pairs scored by |a₀ − b₀| only (column 1 just makes patterns)."""
    def build(r, s, common):
        return miss.Sub(a[r][:, :1].copy(), b[s][:, :1].copy(), "l1")
    return build


@pytest.mark.parametrize("seed", range(4))
def test_merge_across_patterns_recounts_at_the_overall_threshold(seed):
    """Minima of different B patterns within the tolerance of each other: a pattern whose
    minimum is above the overall one keeps only its records within t(overall minimum)."""
    rng = np.random.default_rng(seed)
    n_a, n_b = 40, 300
    a = np.zeros((n_a, 2))
    a[:, 0] = -rng.integers(0, 2, n_a) * 4.0
    # scores near 1 (or 5) at the scale of the tolerance: 1, 1 + 0.5e-9, 1 + 0.9e-9 …
    b = np.zeros((n_b, 2))
    gone = rng.random(n_b) < 0.5
    b[gone, 1] = np.nan  # two B patterns; the exact 1 only in the first
    off = np.where(gone, rng.choice([0.5, 0.9, 1.2, 3.0], n_b),
                   rng.choice([0, 0.9, 1.2, 3.0], n_b, p=[.05, .3, .3, .35]))
    b[:, 0] = rng.integers(0, 2, n_b) + 1 + off * 1e-9
    a[rng.random(n_a) < 0.3, 1] = np.nan  # two A patterns
    truth = rng.integers(-1, n_b, n_a)
    got = miss.nearest_sets_missing(~np.isnan(a), ~np.isnan(b), _l1_build(a, b), truth=truth,
                                    seed=seed)
    d = np.abs(a[:, :1] - b[None, :, 0])
    mn = d.min(1)
    c = d <= (mn + RTOL * np.abs(mn))[:, None]
    np.testing.assert_array_equal(got.min_score, mn)
    np.testing.assert_array_equal(got.count, c.sum(1))
    np.testing.assert_array_equal(got.true_in_set,
                                  [t >= 0 and c[i, t] for i, t in enumerate(truth)])
    assert c[np.arange(n_a), got.link].all()
    # the tolerance case occurs: a pattern's own minimum above the overall one, yet tied
    g = ~np.isnan(b[:, 1])
    m0, m1 = d[:, g].min(1), d[:, ~g].min(1)
    assert ((m0 != m1) & (np.maximum(m0, m1) <= mn + RTOL * mn)).any()


@pytest.mark.parametrize("method", ["gdbrl", "prl"])
def test_global_and_probabilistic_attacks_take_missing_values(method):
    """gdbrl (costs over the attributes observed in both) and prl (a missing comparison
    weighs 0) run on files with missing values (tests/attacks/test_global.py and
    test_prl.py check them against brute force)."""
    a, b = cat_files(8, n=40)
    res = linkrisk.attack(a, b, method=method)
    assert res.extra["missing_values"] and 0 <= res.rate <= 1


def test_assess_runs_every_attack_on_missing_values():
    a, b = cat_files(9, n=60)
    res = linkrisk.assess(a, b)  # edu is numeric here: dbrl_mixed
    assert {"dbrl_mixed", "prl", "gdbrl"} <= set(res.results)
    assert not {"prl", "gdbrl"} & set(res.skipped)


def test_choose_sweeps_local_suppression(tmp_path):
    """local_suppression is in choose's categorical grid; its releases are scored by every
    attack, prl and gdbrl included (a missing comparison weighs 0 / costs over the
    observed attributes), so no attack is noted as not run."""
    from linkrisk.experiments.choose import CATEGORICAL_DEFAULTS, choose

    assert "local_suppression" in CATEGORICAL_DEFAULTS
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    df = linkrisk.datasets.load("household")[keys].iloc[:500].reset_index(drop=True)
    methods = ["local_suppression:k=2,5", "pram:pd=0.8"]
    for lim in (None, 50):
        ch = choose(df, methods=methods, replications=2, processes=1, cache_dir=tmp_path,
                    max_risk=lim)
        ls = ch.points[ch.points["method"] == "local_suppression"]
        assert len(ls) == 2 and (ls["risk_mean"] > 0).all()
        assert ls["deciding_attack"].isin(["dbrl_hamming", "prl", "gdbrl"]).all()
        assert not any("did not run on local_suppression" in n for n in ch.notes)
