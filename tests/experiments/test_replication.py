"""The replication machinery: published cells, the revised definitions and the settings
the replicated papers need, each against an independent computation."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.attacks import make_context, run_attack
from linkrisk.errors import LinkriskError
from linkrisk.experiments import load_config
from linkrisk.experiments.published import load_published, value_key
from linkrisk.experiments.runner import expand
from linkrisk.masking import mask
from linkrisk.masking.categorical import invariant_pram_matrix, invariant_pram_matrix_all
from linkrisk.masking.rankswap import PDIST_DEFAULT, rank_permutation

ROOT = Path(__file__).resolve().parents[2]


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- published cells


def test_published_cells_all_map_to_a_study_cell():
    pub = load_published()
    assert len(pub) == 339
    assert pub["published"].notna().all()
    assert set(pub["study"]) == {"rbrl", "gdbrl"}
    assert (pub.loc[pub["study"] == "rbrl", "table"].isin([1, 2, 3, 4, 5])).all()
    assert set(pub.loc[pub["study"] == "gdbrl", "table"]) == {2, 6}
    tasks = expand(load_config("replicate"), None)
    have = {(t.dataset.label, t.masking, value_key(t.value), a.label)
            for t in tasks for a in t.attacks}
    keys = set(zip(pub["dataset_label"], pub["masking_label"], pub["value_key"],
                   pub["attack_label"], strict=True))
    assert keys <= have, sorted(keys - have)[:3]
    # counts of 1080 are turned into %
    g = pub[pub["study"] == "gdbrl"].iloc[0]
    assert g["published_pct"] == pytest.approx(100 * g["published"] / 1080)


def test_replicate_study_replications():
    st = load_config("replicate")
    tasks = expand(st, None)
    reps = {}
    for t in tasks:
        reps.setdefault((t.dataset.label, t.masking, value_key(t.value)), set()).add(t.replication)
    assert len(reps[("household (493 distinct)", "gdbrl-cat pram", "")]) == 20
    assert len(reps[("adult (8688 distinct)", "gdbrl-cat pram", "")]) == 5
    assert len(reps[("census", "rbrl-t1 noise", "0.25")]) == 10
    assert len(reps[("census", "rbrl-t5 microaggregation_ir", "54")]) == 1  # deterministic


def test_verdict_rules():
    v = _script("replication_report").verdict
    assert v(50.0, 52.0, 49.0, 55.0) == "reproduced"     # in the interval
    assert v(50.0, 50.9, 50.5, 51.3) == "reproduced"     # within 1 point
    assert v(50.0, 52.5, 52.0, 53.0) == "close"          # within 3 points
    assert v(80.0, 84.0, 83.5, 84.5) == "close"          # within 5 %
    assert v(10.0, 14.0, 13.5, 14.5) == "differs"


# ---------------------------------------------------------------- revised definitions


def _pair(seed=0, n=60, m=3):
    rng = np.random.default_rng(seed)
    a = pd.DataFrame(rng.normal(size=(n, m)) * [1.0, 10.0, 100.0], columns=list("xyz"))
    b = a + rng.normal(size=(n, m)) * [0.5, 2.0, 50.0]
    return a, b


def _nearest_rate(d):
    mn = d.min(1)
    c = d <= (mn + 1e-9 * np.abs(mn))[:, None]
    return np.mean([c[i, i] / c[i].sum() for i in range(len(d))])


@pytest.mark.parametrize("sigma", ["spread", "aligned"])
def test_dbrl2_sigma_readings(sigma):
    a, b = _pair(1)
    x, y = a.to_numpy(), b.to_numpy()
    sd = ((x - y).std(0, ddof=1) if sigma == "aligned"
          else np.sqrt(x.var(0, ddof=1) + y.var(0, ddof=1)))
    d = (((x[:, None] - y[None]) / sd) ** 2).sum(-1)
    ctx, dr = make_context(a, b, seed=0)
    assert run_attack(ctx, "dbrl2", dr, sigma=sigma).rate == pytest.approx(_nearest_rate(d))
    with pytest.raises(LinkriskError, match="sigma"):
        run_attack(ctx, "dbrl2", dr, sigma="owner")


def test_raw_distances():
    a, b = _pair(2)
    x, y = a.to_numpy(), b.to_numpy()
    raw = ((x[:, None] - y[None]) ** 2).sum(-1)
    ctx, dr = make_context(a, b, seed=0)
    assert run_attack(ctx, "dbrl", dr, standardize=False).rate == pytest.approx(
        _nearest_rate(raw))
    assert run_attack(ctx, "dbrl_l1", dr, standardize=False).rate == pytest.approx(
        _nearest_rate(np.abs(x[:, None] - y[None]).sum(-1)))
    # raw distances are dominated by z (sd 100, noise 50): fewer links than standardized
    assert (run_attack(ctx, "dbrl", dr, standardize=False).rate
            != run_attack(ctx, "dbrl", dr).rate)
    # global matching on raw Euclidean: compare with scipy's assignment
    from scipy.optimize import linear_sum_assignment

    r, c = linear_sum_assignment(np.sqrt(raw))
    res = run_attack(ctx, "gdbrl", dr, standardize=False)
    assert res.rate == pytest.approx(np.mean(c[np.argsort(r)] == np.arange(len(x))))
    with pytest.raises(LinkriskError, match="standardize=False"):
        run_attack(ctx, "gdbrl", dr, standardize=False, metric="mahalanobis0")


# ---------------------------------------------------------------- p-distribution readings


def _is_involution(src):
    return np.array_equal(src[src], np.arange(len(src)))


@pytest.mark.parametrize("variant", ["max/half/free", "max/p/free", "distance/half/free",
                                     "distance/p/free", "max/p/nofree", "distance/p/nofree"])
def test_pdist_readings(variant):
    n, p = 3000, 4
    x = np.random.default_rng(0).permutation(n).astype(float)   # values are ranks
    src = rank_permutation(x, "rank_swap_pdist", np.random.default_rng(3), p=p,
                           variant=variant)
    assert np.array_equal(np.sort(src), np.arange(n))            # a permutation
    draw, scale, rule = variant.split("/")
    mu = p * n / (100 if scale == "p" else 200)
    d = np.abs(x[src] - x)
    if rule == "free":
        assert _is_involution(src)                               # disjoint transpositions
        moved = d[d > 0]
        # E[max(D,0)] for D ~ N(mu, mu) is 1.083·mu; a uniform distance below it halves it
        expect = 1.083 * mu / (2 if draw == "max" else 1)
        assert 0.75 * expect < moved.mean() < 1.3 * expect
    else:
        assert (d > 0).mean() > 0.9                              # nearly every value moves


def test_pdist_default_and_bad_variant(census):
    assert PDIST_DEFAULT == "max/p/free"
    a = mask(census, "rank_swap_pdist", p=5, seed=3)
    b = mask(census, "rank_swap_pdist", p=5, seed=3, variant="max/p/free")
    assert a.equals(b)
    with pytest.raises(LinkriskError, match="variant must be one of"):
        mask(census, "rank_swap_pdist", p=5, variant="normal")
    with pytest.raises(LinkriskError, match="unknown parameter 'variant'"):
        mask(census, "rank_swap", p=5, variant="max/p/free")


# ---------------------------------------------------------------- noise, IPSO, PRAM settings


@pytest.mark.parametrize("scale", ["sd", "variance", "range", "mean"])
def test_noise_scales(scale):
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"u": rng.uniform(10, 20, 20000), "v": rng.normal(100, 5, 20000)})
    out = mask(df, "noise", a=0.2, scale=scale, seed=1)
    x = df.to_numpy()
    want = {"sd": 0.2 * x.std(0, ddof=1), "variance": np.sqrt(0.2) * x.std(0, ddof=1),
            "range": 0.2 * (x.max(0) - x.min(0)), "mean": 0.2 * np.abs(x.mean(0))}[scale]
    got = (out.to_numpy() - x).std(0)
    assert got == pytest.approx(want, rel=0.03)
    with pytest.raises(LinkriskError, match="scale"):
        mask(df, "noise", a=0.2, scale="iqr")


@pytest.mark.parametrize("method", ["ipso", "data_shuffle"])
def test_mutual_blocks(census, method):
    b1, b2 = list(census.columns[:6]), list(census.columns[6:])
    kw = {"variant": "C"} if method == "ipso" else {}
    one = mask(census, method, columns=b1, confidential=b2, seed=5, **kw)
    both = mask(census, method, columns=b1, confidential=b2, seed=5, mutual=True, **kw)
    assert one[b2].equals(census[b2])                 # only block 1 released synthetic
    assert both[b1].equals(one[b1])                   # same first draw
    assert (both[b2] != census[b2]).any().all()       # block 2 synthesized too
    w = np.column_stack([np.ones(len(census)), census[b1].to_numpy()])
    beta = np.linalg.lstsq(w, census[b2].to_numpy(), rcond=None)[0]
    beta_rel = np.linalg.lstsq(w, both[b2].to_numpy(), rcond=None)[0]
    if method == "ipso":                              # IPSO-C keeps B̂ of block 2 on block 1
        assert np.allclose(beta_rel, beta, rtol=1e-6, atol=1e-6 * np.abs(beta).max())
    else:                                             # shuffling releases original values
        for c in b2:
            assert np.array_equal(np.sort(both[c]), np.sort(census[c]))


def test_pram_sdcmicro_matrix():
    rng = np.random.default_rng(0)
    counts = np.array([50.0, 0.0, 30.0, 20.0])        # category 1 unused
    m = invariant_pram_matrix_all(counts, 0.8, 0.5, np.random.default_rng(1))
    f = counts / counts.sum()
    assert np.allclose(m.sum(1), 1) and np.allclose(f @ m, f)   # invariant
    assert np.allclose(m[:, 1][counts > 0], 0)                  # never produces it
    # the observed-only matrix differs (P spreads mass to the unused level in sdcMicro)
    used = invariant_pram_matrix(counts[counts > 0], 0.8, 0.5, np.random.default_rng(1))
    assert not np.allclose(m[np.ix_(counts > 0, counts > 0)], used)
    # without unused categories the two constructions agree draw for draw
    c3 = np.array([5.0, 3.0, 2.0])
    assert np.allclose(invariant_pram_matrix_all(c3, 0.7, 0.5, np.random.default_rng(2)),
                       invariant_pram_matrix(c3, 0.7, 0.5, np.random.default_rng(2)))
    s = pd.DataFrame({"c": pd.Categorical(rng.choice(["a", "c", "d"], 400),
                                          categories=["a", "b", "c", "d"])})
    out = mask(s, "pram", variant="sdcmicro", seed=3)
    assert out.attrs["pram_matrices"]["c"]["categories"] == ["a", "b", "c", "d"]
    assert (out["c"] != "b").all()
    with pytest.raises(LinkriskError, match="variant"):
        mask(s, "pram", variant="R")


def test_prl_warns_when_em_zeroes_weights(data_dir):
    qi = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    hh = linkrisk.datasets.load("household", data_dir).drop_duplicates(qi)[qi]
    hh = hh.reset_index(drop=True)
    ctx, dr = make_context(hh, hh.copy(), seed=0)
    res = run_attack(ctx, "prl", dr)
    assert len(hh) == 493
    assert res.rate * 493 < 100              # an unmasked copy, yet few links (the model)
    assert "zero weight" in res.extra["warnings"][0]


@pytest.mark.parametrize("name", ["rank-vs-distance", "categorical", "replicate"])
def test_committed_study_results_match_their_config_seeds(name):
    # the committed results must be reproducible from (config, seed): adding a study option
    # must not reseed the cells of studies that do not use it
    res = pd.read_csv(ROOT / "docs" / "studies" / name / "results.csv")
    st = load_config(name)
    seeds = {t.seed for t in expand(st, None)}
    assert seeds == set(res["seed"])
