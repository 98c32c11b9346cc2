"""The pattern transport solver of gdbrl against scipy's dense optimum and properties."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

import linkrisk
from linkrisk.engine import min_cost_matching
from linkrisk.engine.matching import transport
from linkrisk.errors import LinkriskError

pytestmark = pytest.mark.skipif(not transport.available(), reason="needs POT: pip install -e '.[transport]'")


def _coded(n, m, levels, change, seed):
    """Integer-coded records with few distinct combinations, and a copy with a fraction
    ``change`` of the values redrawn (a PRAM-like release)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, levels, (n, m)).astype(float)
    b = a.copy()
    hit = rng.random(a.shape) < change
    b[hit] = rng.integers(0, levels, hit.sum())
    return a, b


def _dense_opt(c):
    r, q = linear_sum_assignment(c)
    return c[r, q].sum()


@pytest.mark.parametrize("metric,cd,root", [("l1", "cityblock", False),
                                            ("sqeuclidean", "euclidean", True),
                                            ("linf", "chebyshev", False)])
@pytest.mark.parametrize("seed", range(4))
def test_patterns_equal_the_dense_optimum(metric, cd, root, seed):
    a, b = _coded(1200, 3, 4, 0.3, seed)
    c = cdist(a, b, cd)
    m = min_cost_matching(a, b, metric=metric, root=root, solver="patterns", seed=seed)
    assert m.solver == "patterns" and m.certified
    assert not m.info["full_transport"]          # a metric: the common mass stays
    assert np.array_equal(np.sort(m.link), np.arange(1200))   # a bijection
    np.testing.assert_allclose(m.cost, c[np.arange(1200), m.link])
    assert m.total_cost == pytest.approx(_dense_opt(c), abs=1e-9)


def test_a_cost_that_is_no_metric_falls_back_to_the_full_transport():
    # squared Euclidean breaks the triangle inequality: keeping the common mass in place
    # is not optimal here, the certificate notices, the whole pattern problem is solved
    # (0→1, 1→2 costs 2 per pair; keeping 1→1 forces 0→2 at 4)
    a = np.array([[0.0]] * 5 + [[1.0]] * 5)
    b = np.array([[1.0]] * 5 + [[2.0]] * 5)
    c = cdist(a, b, "sqeuclidean")
    m = min_cost_matching(a, b, metric="sqeuclidean", solver="patterns")
    assert m.certified and m.info["full_transport"]
    assert m.total_cost == pytest.approx(_dense_opt(c))
    a, b = _coded(900, 2, 5, 0.4, 3)
    c = cdist(a, b, "sqeuclidean")
    m = min_cost_matching(a, b, metric="sqeuclidean", solver="patterns")
    assert m.certified
    assert m.total_cost == pytest.approx(_dense_opt(c))


def test_tied_records_are_split_at_random_and_seeded():
    # one pattern repeated: every matching is optimal; the reported one is a random one
    a = np.zeros((2000, 2))
    m1 = min_cost_matching(a, a, metric="l1", solver="patterns", seed=1)
    m2 = min_cost_matching(a, a, metric="l1", solver="patterns", seed=1)
    m3 = min_cost_matching(a, a, metric="l1", solver="patterns", seed=2)
    assert np.array_equal(m1.link, m2.link) and not np.array_equal(m1.link, m3.link)
    assert (m1.link == np.arange(2000)).sum() < 10        # ~1 expected, not 2000
    assert m1.total_cost == 0.0 and m1.certified


def test_auto_picks_patterns_on_repetitive_files_and_respects_the_budget():
    a, b = _coded(4000, 3, 3, 0.3, 5)
    c = cdist(a, b, "cityblock")
    best = _dense_opt(c)
    auto = min_cost_matching(a, b, metric="l1", dense_max_n=100)
    assert auto.solver == "patterns" and auto.total_cost == pytest.approx(best)
    # a budget too small for the residual transport: the record-level solver takes over
    small = min_cost_matching(a, b, metric="l1", solver="patterns", memory_budget=200)
    assert small.solver == "sparse" and small.certified
    assert small.total_cost == pytest.approx(best)


def test_patterns_refuses_what_it_does_not_cover():
    a, b = _coded(50, 2, 3, 0.3, 0)
    with pytest.raises(LinkriskError, match="equal size"):
        min_cost_matching(a, b[:40], metric="l1", solver="patterns")
    with pytest.raises(LinkriskError, match="equal size"):
        min_cost_matching(a, b, metric="l1", solver="patterns", delta=2.0)


def test_gdbrl_hamming_on_categorical_frames_uses_patterns():
    rng = np.random.default_rng(0)
    import pandas as pd

    cats = {c: pd.Categorical(rng.choice(list("abcd"), 5000)) for c in "uvwx"}
    orig = pd.DataFrame(cats)
    rel = linkrisk.mask(orig, "pram", pd=0.7, seed=3)
    res = linkrisk.attack(orig, rel, method="gdbrl", metric="hamming")
    assert res.extra["solver"] == "patterns" and res.extra["certified"]
    ref = linkrisk.attack(orig, rel, method="gdbrl", metric="hamming", solver="sparse")
    assert res.extra["total_cost"] == pytest.approx(ref.extra["total_cost"])


@pytest.mark.parametrize("levels", [2, 3, 50, 10_000])
def test_may_repeat_never_rules_out_a_repetitive_pair(levels):
    # the 1-D pre-check is a lower bound on the distinct records: it may only say "no"
    # when the full row-wise count says so too
    from linkrisk.engine.nearest import Pairwise

    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = rng.integers(0, levels, (400, 3)).astype(float)
        y = x.copy()
        y[rng.random(400) < 0.2, 0] += 1
        pw = Pairwise.build(x, y, "sqeuclidean")
        rep = transport.repetitive(transport.patterns(pw))
        assert transport.may_repeat(pw) or not rep
    cont = np.random.default_rng(1).standard_normal((400, 3))
    assert not transport.may_repeat(Pairwise.build(cont, cont + 0.1, "sqeuclidean"))
