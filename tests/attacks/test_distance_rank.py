"""Every distance/rank attack against an independent dense computation of its documented formula."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

import linkrisk
from linkrisk.errors import LinkriskError, SingularCovarianceError
from tests.conftest import noisy


def _std(x):
    return (x - x.mean(0)) / x.std(0, ddof=1)


def dense_score(method, a, b, **kw):
    """Score matrices written straight from docs/methods.md, independent of the engine."""
    if method == "dbrl":
        return ((_std(a)[:, None] - _std(b)[None]) ** 2).sum(-1)
    if method == "dbrl_l1":
        return np.abs(_std(a)[:, None] - _std(b)[None]).sum(-1)
    if method == "dbrl2":
        if kw.get("sigma") == "aligned":
            sd = (a - b).std(0, ddof=1)  # row order is truth here
        else:  # default: the spread of A − B without the true pairs, √(Var A + Var B)
            sd = np.sqrt(a.var(0, ddof=1) + b.var(0, ddof=1))
        return (((a[:, None] - b[None]) / sd) ** 2).sum(-1)
    if method in ("mahalanobis", "mahalanobis0"):
        s = np.cov(a.T) + np.cov(b.T)
        if method == "mahalanobis":
            c = np.cov(np.hstack([a, b]).T)[: a.shape[1], a.shape[1]:]
            s = s - c - c.T
        diff = a[:, None] - b[None]
        return np.einsum("ijk,kl,ijl->ij", diff, np.linalg.inv(s), diff)
    if method == "kernel":
        d = kw.get("d", 2)
        sa, sb = _std(a), _std(b)
        kab = (1 + sa @ sb.T) ** d
        return ((1 + (sa**2).sum(1)) ** d)[:, None] - 2 * kab + ((1 + (sb**2).sum(1)) ** d)[None]
    ra, rb = rankdata(a, axis=0), rankdata(b, axis=0)  # "average" is rankdata's default
    if len(a) != len(b):
        ra, rb = ra / len(a), rb / len(b)
    diff = np.abs(ra[:, None] - rb[None])
    return diff.sum(-1) if method == "rbrl_sum" else diff.max(-1)


def dense_correct(d, truth):
    mn = d.min(1)
    c = d <= (mn + 1e-9 * np.abs(mn))[:, None]
    hit = np.array([t >= 0 and c[i, t] for i, t in enumerate(truth)])
    return np.where(hit, 1 / c.sum(1), 0.0), c.sum(1)


METHODS = ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel", "rbrl_sum",
           "rbrl_max"]


def tied_files(seed, n=160, m=4):
    """Integer-valued files with many exact ties and some duplicated records."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, (n, m)).astype(float)
    b = a + rng.integers(-1, 2, (n, m))
    b[5] = b[6]
    a[20] = a[21]
    cols = [f"x{j}" for j in range(m)]
    return pd.DataFrame(a, columns=cols), pd.DataFrame(b, columns=cols)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_attack_equals_dense_formula(method, seed):
    o, m = tied_files(seed)
    res = linkrisk.attack(o, m, method=method)
    d = dense_score(method, o.to_numpy(), m.to_numpy())
    correct, count = dense_correct(d, np.arange(len(o)))
    np.testing.assert_array_equal(res.per_record["candidates"].to_numpy(), count)
    np.testing.assert_allclose(res.per_record["correct"].to_numpy(), correct)
    assert res.correct_links == pytest.approx(correct.sum())
    assert res.rate == pytest.approx(correct.mean())
    assert res.n == len(o)
    assert count.max() > 1, "test data must contain ties"


@pytest.mark.parametrize("method", [m for m in METHODS if not m.startswith("mahalanobis")])
def test_identity_masking_links_everyone(method, census):
    res = linkrisk.attack(census, census.copy(), method=method)
    assert res.rate == 1.0


def test_mahalanobis_identity_is_singular_and_names_attributes(census):
    # identity masking: Var(A−B) = 0, every attribute is "unperturbed"
    with pytest.raises(SingularCovarianceError, match="AFNLWGT"):
        linkrisk.attack(census, census.copy(), method="mahalanobis")
    # Census has PTOTVAL = PEARNVAL + POTHVAL: Var(A)+Var(A) is singular on exactly those
    with pytest.raises(SingularCovarianceError, match="PTOTVAL, POTHVAL, PEARNVAL are"):
        linkrisk.attack(census, census.copy(), method="mahalanobis0")
    tiny = noisy(census, 1e-4, 0)
    assert linkrisk.attack(census, tiny, method="mahalanobis").rate == 1.0
    # COV0 on nearly collinear attributes amplifies the noise along the collinear direction
    # (cond(S) ~ 6e9; the dense formula agrees: 726 links), so link without PTOTVAL
    qi = [c for c in census.columns if c != "PTOTVAL"]
    assert linkrisk.attack(census, tiny, method="mahalanobis0", qi=qi).rate == 1.0


def test_collinear_attributes_named():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 0] + x[:, 1], "d": x[:, 2]})
    with pytest.raises(SingularCovarianceError) as ei:
        linkrisk.attack(df, df.copy(), method="mahalanobis0")
    msg = str(ei.value)
    assert all(f"{c}" in msg for c in "abc") and ", d" not in msg


def test_rbrl_uses_average_ranks_hand_example():
    # A: ranks of [10, 20, 20, 30] are [1, 2.5, 2.5, 4]; B: [11, 19, 25, 31] → [1, 2, 3, 4].
    # Average ranks make records 1 and 2 of A equidistant (0.5) from B's rows 1 and 2, so
    # each has a two-way tie: 1 + 1/2 + 1/2 + 1 = 3 expected correct links.
    # (Ordinal ranks 2, 3 would give 4 certain links; min ranks 2, 2 would give 3.5.)
    o = pd.DataFrame({"x": [10.0, 20, 20, 30]})
    m = pd.DataFrame({"x": [11.0, 19, 25, 31]})
    for method in ("rbrl_sum", "rbrl_max"):
        res = linkrisk.attack(o, m, method=method)
        assert res.correct_links == pytest.approx(3.0)
        assert res.per_record["candidates"].tolist() == [1, 2, 2, 1]


def test_dbrl_hand_example():
    # standardized A: [-1, 0, 1]; standardized B of [0, 5, 7]: [-1.1094, 0.2774, 0.8321]
    # nearest: a0→b0, a1→b1, a2→b2 → 3 links; with B = [0, 1, 7]: a1 (0) is nearer b1
    # (std −0.4319) than b0 (−0.7559)… by hand: both files standardized separately.
    o = pd.DataFrame({"x": [1.0, 2, 3]})
    assert linkrisk.attack(o, pd.DataFrame({"x": [0.0, 5, 7]})).correct_links == 3
    # B reversed: every record links to its mirror image, only the middle one is right
    assert linkrisk.attack(o, pd.DataFrame({"x": [3.0, 2, 1]})).correct_links == 1


def test_kernel_degree_one_equals_dbrl(census):
    m = noisy(census, 0.5, 3)
    assert (linkrisk.attack(census, m, "kernel", d=1).correct_links
            == linkrisk.attack(census, m, "dbrl").correct_links)


def test_direction_and_ids_define_truth():
    o, m = tied_files(3, n=120)
    o["id"] = np.arange(len(o))
    m["id"] = np.arange(len(m))
    shuffled = m.sample(frac=1.0, random_state=0)
    qi = ["x0", "x1", "x2", "x3"]
    base = linkrisk.attack(o, m, "dbrl", qi=qi)
    res = linkrisk.attack(o, shuffled, "dbrl", qi=qi, ids="id")
    assert res.correct_links == pytest.approx(base.correct_links)
    # the attacker knows fewer records than were released: truth through ids
    part = linkrisk.attack(o.iloc[:50], shuffled, "rbrl_sum", qi=qi, ids="id")
    assert part.n == 50 and part.n_released == 120
    d = dense_score("rbrl_sum", o[qi].iloc[:50].to_numpy(), shuffled[qi].to_numpy())
    truth = pd.Index(shuffled["id"]).get_indexer(o["id"].iloc[:50])
    assert part.correct_links == pytest.approx(dense_correct(d, truth)[0].sum())
    back = linkrisk.attack(o, m, "dbrl", qi=qi, direction="masked->original")
    d = dense_score("dbrl", m[qi].to_numpy(), o[qi].to_numpy())
    assert back.direction == "masked->original"
    assert back.correct_links == pytest.approx(dense_correct(d, np.arange(len(o)))[0].sum())


def test_noise_lowers_risk_monotonically(census):
    rates = [linkrisk.attack(census, noisy(census, a, 0), "dbrl").rate for a in (0.01, 0.5, 2)]
    assert rates[0] > rates[1] > rates[2]
    assert rates[0] > 0.99


@pytest.mark.parametrize("bad,match", [
    (dict(qi="AFNLWGT,nope"), "not in the original"),
    (dict(method="dbrl3"), "unknown attack"),
    (dict(method="kernel", d=0), "integer from 1 to"),
    (dict(method="dbrl", k=3), "no parameter"),
    (dict(direction="sideways"), "direction"),
])
def test_bad_arguments(census, bad, match):
    kw = {"method": "dbrl", **bad}
    with pytest.raises(LinkriskError, match=match):
        linkrisk.attack(census, census, **kw)


def test_bad_data(census):
    m = census.copy()
    m.loc[3, "AGI"] = np.nan  # scored over the observed attributes (test_missing.py)
    assert linkrisk.attack(census, m).extra["missing_values"] is True
    m = census.astype({"AGI": object})
    m.loc[7, "AGI"] = "n/a"
    with pytest.raises(LinkriskError, match="not numeric.*row 7"):
        linkrisk.attack(census, m)
    with pytest.raises(LinkriskError, match="no rows"):
        linkrisk.attack(census, census.iloc[:0])
    with pytest.raises(LinkriskError, match="row order"):
        linkrisk.attack(census, census.iloc[:10])
    cat = census.assign(AGI=pd.Categorical(census["AGI"].astype(int).astype(str)))
    # dbrl mixes categorical QIs in (see test_categorical); numeric-only attacks refuse them
    with pytest.raises(LinkriskError, match="categorical"):
        linkrisk.attack(cat, cat, method="mahalanobis", qi="AGI,FICA", kinds={"AGI": "nominal"})


def test_in_place_transforms_leave_inputs_and_shared_context_intact():
    # the attacks transform their float64 copies of the files in place (memory at 10⁶):
    # the caller's DataFrames and a context shared by several attacks must not notice
    from linkrisk.attacks import make_context, run_attack

    o, m = tied_files(0)
    o0, m0 = o.copy(), m.copy()
    ctx, direction = make_context(o, m)
    for method in METHODS + ["dbrl"]:
        shared = run_attack(ctx, method, direction)
        alone = linkrisk.attack(o, m, method=method)
        pd.testing.assert_frame_equal(shared.per_record, alone.per_record)
    pd.testing.assert_frame_equal(o, o0)
    pd.testing.assert_frame_equal(m, m0)
    a, b = ctx.numeric()
    np.testing.assert_array_equal(a, o0.to_numpy(float))
    np.testing.assert_array_equal(b, m0.to_numpy(float))


def test_mahalanobis_with_added_records_uses_the_true_pairs_for_s():
    """Records added to the release (paired by ids) do not make S = Var(A) + Var(B) −
    2 Cov(A, B) indefinite: the three terms are taken on the true pairs (issue 38: it was
    refused as 'collinear or unperturbed'). Without added records S is unchanged."""
    from linkrisk.attacks import make_context
    from linkrisk.attacks.distance import _whitened

    c = linkrisk.datasets.load("census").drop(columns=["AFNLWGT"])
    r = linkrisk.mask(c, "noise", a=0.3, seed=1)
    rng = np.random.default_rng(3)
    extra = c.sample(300, random_state=3).reset_index(drop=True) * rng.uniform(0.5, 1.5,
                                                                              (300, 12))
    c2 = c.assign(pid=[f"p{i}" for i in range(len(c))])
    r2 = pd.concat([r.assign(pid=[f"p{i}" for i in range(len(r))]),
                    extra.assign(pid=[f"x{i}" for i in range(300)])], ignore_index=True)
    got = linkrisk.attack(c2, r2, "mahalanobis", ids="pid")
    assert got.rate > 0.3
    # the whitening is that of S on the true pairs
    ctx, _ = make_context(c2, r2, ids="pid")
    a, b = ctx.numeric()
    ia, ib = ctx.true_pairs()
    d = a[ia] - b[ib]
    s = np.cov(d, rowvar=False, bias=False)
    wa, wb = _whitened(ctx, True)
    z = (wa[ia] - wb[ib])
    # |W(a - b)|² = (a - b)ᵀ S⁻¹ (a - b) for every true pair
    np.testing.assert_allclose((z ** 2).sum(1)[:50],
                               np.einsum("ij,jk,ik->i", d[:50], np.linalg.inv(s), d[:50]),
                               rtol=1e-6)
    # without added records S is the former Var(A) + Var(B) − 2 Cov(A, B) (the snapshot
    # test pins those results bit for bit)
    assert linkrisk.attack(c, r, "mahalanobis").rate > 0.3
