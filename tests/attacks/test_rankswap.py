"""rsrl / rsrl_union against a dense brute force of docs/methods.md, and their defining properties."""

import math

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.attacks.rankswap import rank_positions, windows
from linkrisk.engine import standardize
from linkrisk.errors import LinkriskError


def brute(orig: pd.DataFrame, rel: pd.DataFrame, p: float, union: bool) -> float:
    """Correct links by the definition: position ranges, the window test on every pair,
    intersection (or maximal count), DBRL inside, plain DBRL when empty."""
    x, y = orig.to_numpy(float), rel.to_numpy(float)
    n, m = x.shape
    w = math.floor(p * n / 100)
    inside = np.zeros((m, n, n), bool)
    for j in range(m):
        s = np.sort(x[:, j])

        def pos(v, s=s):
            lo, hi = np.searchsorted(s, v, "left"), np.searchsorted(s, v, "right") - 1
            if hi < lo:
                lo = lo - 1
            return min(max(lo, 0), n - 1), min(max(hi, 0), n - 1)

        pa = [pos(v) for v in x[:, j]]
        pb = [pos(v) for v in y[:, j]]
        for i in range(n):
            for k in range(n):
                gap = max(0, pb[k][0] - pa[i][1], pa[i][0] - pb[k][1])
                inside[j, i, k] = gap <= w
    d = ((standardize(x)[:, None, :] - standardize(y)[None, :, :]) ** 2).sum(-1)
    total = 0.0
    for i in range(n):
        if union:
            cnt = inside[:, i, :].sum(0)
            allowed = cnt == cnt.max() if cnt.max() > 0 else np.ones(n, bool)
        else:
            allowed = inside[:, i, :].all(0)
            if not allowed.any():
                allowed = np.ones(n, bool)
        di = np.where(allowed, d[i], np.inf)
        mn = di.min()
        c = di <= mn + 1e-9 * abs(mn)
        total += c[i] / c.sum()
    return total


@pytest.mark.parametrize("union", [False, True])
@pytest.mark.parametrize("p", [3, 10, 30])
def test_matches_brute_force_with_ties(union, p):
    rng = np.random.default_rng(p)
    orig = pd.DataFrame(rng.integers(0, 12, size=(60, 3)).astype(float), columns=list("xyz"))
    rel = linkrisk.mask(orig, "rank_swap_pdist" if union else "rank_swap", p=p, seed=p)
    method = "rsrl_union" if union else "rsrl"
    res = linkrisk.attack(orig, rel, method, p=p)
    assert res.correct_links == pytest.approx(brute(orig, rel, p, union), abs=1e-9)


def test_value_outside_original_uses_neighbouring_positions():
    rng = np.random.default_rng(0)
    orig = pd.DataFrame(rng.normal(size=(50, 2)), columns=["a", "b"])
    rel = orig + rng.normal(scale=0.05, size=orig.shape)  # not a swap: values are new
    res = linkrisk.attack(orig, rel, "rsrl", p=5)
    assert res.correct_links == pytest.approx(brute(orig, rel, 5, False), abs=1e-9)


def test_certain_links_are_correct_and_beat_dbrl_on_census(census):
    for p in (5, 10):
        rel = linkrisk.mask(census, "rank_swap", p=p, seed=11)
        rs = linkrisk.attack(census, rel, "rsrl", p=p)
        assert rs.extra["certain_links"] > 0
        assert rs.extra["certain_correct"] == rs.extra["certain_links"]
        assert rs.rate > linkrisk.attack(census, rel, "dbrl").rate


def test_true_image_always_in_window_under_standard_swapping():
    """With the true p every window holds the true record (also with tied values), so
    rsrl never falls back to plain DBRL and never loses the truth to the restriction."""
    rng = np.random.default_rng(5)
    orig = pd.DataFrame(np.round(rng.lognormal(size=(400, 4)), 1), columns=list("abcd"))
    rel = linkrisk.mask(orig, "rank_swap", p=8, seed=3)
    x, y = orig.to_numpy(), rel.to_numpy()
    w = math.floor(8 * 400 / 100)

    def positions(v):
        lo, hi = zip(*(rank_positions(v[:, j], x[:, j]) for j in range(4)), strict=True)
        return np.stack(lo, 1), np.stack(hi, 1)

    _, place, start, end = windows(positions(x), positions(y), w)
    idx = np.arange(400)
    assert ((place[:, idx] >= start) & (place[:, idx] < end)).all()
    res = linkrisk.attack(orig, rel, "rsrl", p=8)
    assert res.extra["fallback_dbrl"] == 0
    assert res.rate >= linkrisk.attack(orig, rel, "dbrl").rate


def test_identity_release_links_everything():
    rng = np.random.default_rng(1)
    orig = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    assert linkrisk.attack(orig, orig, "rsrl", p=1).rate == 1.0
    assert linkrisk.attack(orig, orig, "rsrl_union", p=1).rate == 1.0


def test_backward_direction_ranks_against_the_original():
    """masked->original: windows are still original ranks, so the truth stays inside."""
    rng = np.random.default_rng(2)
    orig = pd.DataFrame(rng.normal(size=(150, 3)), columns=list("abc"))
    rel = linkrisk.mask(orig, "rank_swap", p=10, seed=4)
    back = linkrisk.attack(orig, rel, "rsrl", p=10, direction="masked->original")
    assert back.extra["fallback_dbrl"] == 0
    assert back.rate >= linkrisk.attack(orig, rel, "dbrl", direction="masked->original").rate


@pytest.mark.parametrize("p", [0, -1, 101, "x"])
def test_bad_p(p):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]})
    with pytest.raises(LinkriskError, match="p"):
        linkrisk.attack(df, df, "rsrl", p=p)
