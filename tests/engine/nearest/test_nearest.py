"""The engine against dense brute force (scipy cdist), with heavy ties."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine import Tables, nearest_sets
from linkrisk.errors import LinkriskError


def brute_sets(d: np.ndarray, truth: np.ndarray, rtol: float = 1e-9):
    mn = d.min(axis=1)
    c = d <= (mn + rtol * np.abs(mn))[:, None]
    true_in = np.array([t >= 0 and c[i, t] for i, t in enumerate(truth)])
    return mn, c, true_in


def tie_data(seed: int, n_a: int = 257, n_b: int = 233, m: int = 3, levels: int = 4):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, levels, (n_a, m)).astype(float)
    b = rng.integers(0, levels, (n_b, m)).astype(float)
    truth = rng.integers(-1, n_b, n_a)
    return a, b, truth


@pytest.mark.parametrize("metric,cd", [("sqeuclidean", "sqeuclidean"), ("l1", "cityblock"),
                                       ("linf", "chebyshev")])
@pytest.mark.parametrize("cap", [2, 32])
def test_matches_cdist_with_ties(metric, cd, cap):
    a, b, truth = tie_data(1)
    r = nearest_sets(a, b, metric=metric, truth=truth, cap=cap)
    mn, c, true_in = brute_sets(cdist(a, b, cd), truth)
    np.testing.assert_array_equal(r.min_score, mn)
    np.testing.assert_array_equal(r.count, c.sum(axis=1))
    np.testing.assert_array_equal(r.true_in_set, true_in)
    assert c[np.arange(len(a)), r.link].all(), "chosen link must be a tied candidate"
    if cap == 2:
        assert r.count.max() > cap  # the overflow path was exercised


def test_continuous_data_and_correct_measure():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 5))
    b = a + 0.3 * rng.standard_normal((300, 5))
    b[10] = b[11]  # an exact duplicate in the release: a tie for whoever is nearest
    truth = np.arange(300)
    r = nearest_sets(a, b, truth=truth)
    d = cdist(a, b, "sqeuclidean")
    mn, c, true_in = brute_sets(d, truth)
    np.testing.assert_allclose(r.min_score, mn, rtol=1e-12)
    np.testing.assert_array_equal(r.count, c.sum(axis=1))
    np.testing.assert_array_equal(r.true_in_set, true_in)
    expected = np.where(true_in, 1 / c.sum(axis=1), 0)
    np.testing.assert_allclose(r.correct, expected)


def test_kernel_metric():
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, (120, 3)).astype(float)
    b = rng.integers(-2, 3, (110, 3)).astype(float)
    k = lambda x, y: (1 + x @ y.T) ** 2  # noqa: E731
    d = np.diag(k(a, a))[:, None] - 2 * k(a, b) + np.diag(k(b, b))[None, :]
    r = nearest_sets(a, b, metric="kernel", degree=2, cap=3)
    mn, c, _ = brute_sets(d, np.full(len(a), -1))
    np.testing.assert_allclose(r.min_score, mn)
    np.testing.assert_array_equal(r.count, c.sum(axis=1))


def test_mixed_metric_tables():
    rng = np.random.default_rng(4)
    a = np.column_stack([rng.standard_normal(150), rng.integers(0, 3, 150), rng.integers(0, 5, 150)])
    b = np.column_stack([rng.standard_normal(140), rng.integers(0, 3, 140), rng.integers(0, 5, 140)])
    nominal = 1.0 - np.eye(3)
    ordinal = (np.abs(np.subtract.outer(np.arange(5), np.arange(5))) + 1) / 5
    ordinal[0, 4] = np.inf  # a pair the masking cannot produce
    r = nearest_sets(a, b, metric="mixed", tables=Tables.from_list([None, nominal, ordinal]))
    ia, ib = a[:, 1:].astype(int), b[:, 1:].astype(int)
    d = ((a[:, None, 0] - b[None, :, 0]) ** 2 + nominal[ia[:, None, 0], ib[None, :, 0]]
         + ordinal[ia[:, None, 1], ib[None, :, 1]])
    mn, c, _ = brute_sets(d, np.full(len(a), -1))
    np.testing.assert_allclose(r.min_score, mn)
    np.testing.assert_array_equal(r.count, c.sum(axis=1))


def test_mixed_rejects_codes_outside_table():
    a = np.array([[0.0], [3.0]])
    with pytest.raises(LinkriskError, match="category codes"):
        nearest_sets(a, a, metric="mixed", tables=Tables.from_list([1 - np.eye(2)]))


def test_blocking_and_budget_do_not_change_results():
    a, b, truth = tie_data(5, 3000, 2500, m=2, levels=6)
    r1 = nearest_sets(a, b, metric="l1", truth=truth, memory_budget=2**20, seed=7)
    r2 = nearest_sets(a, b, metric="l1", truth=truth, memory_budget=2**30, seed=7)
    for f in ("min_score", "count", "true_in_set", "link"):
        np.testing.assert_array_equal(getattr(r1, f), getattr(r2, f))


def test_seed_moves_links_among_ties_only():
    a, b, truth = tie_data(6)
    r1 = nearest_sets(a, b, metric="l1", truth=truth, seed=1)
    r2 = nearest_sets(a, b, metric="l1", truth=truth, seed=2)
    np.testing.assert_array_equal(r1.count, r2.count)
    assert (r1.link != r2.link).any()
    d = cdist(a, b, "cityblock")
    assert np.allclose(d[np.arange(len(a)), r2.link], r2.min_score)


def test_progress_callback_and_validation():
    a, b, _ = tie_data(7, 700, 50)
    seen = []
    nearest_sets(a, b, memory_budget=2**20, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (700, 700)
    with pytest.raises(LinkriskError, match="metric"):
        nearest_sets(a, b, metric="cosine")
    with pytest.raises(LinkriskError, match="attribute counts"):
        nearest_sets(a, b[:, :2])
    with pytest.raises(LinkriskError, match="empty"):
        nearest_sets(a[:0], b)
