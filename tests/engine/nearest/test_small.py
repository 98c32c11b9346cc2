"""The small-problem path (engine/nearest/small.py) gives the compiled kernels' nearest sets
bit for bit: every metric of the per-record attacks, many ties, tie buffers that overflow,
near-ties one ulp apart, with and without true images; and the dispatcher takes it only
where its predicate says."""

import numba as nb
import numpy as np
import pytest

from linkrisk.engine.nearest import small
from linkrisk.engine.nearest.kernels import Pairwise, Tables, nearest_block
from linkrisk.engine.nearest.search import nearest_sets
from linkrisk.engine.nearest.sets import exact_sets
from linkrisk.engine.nearest.transforms import standardize

FIELDS = ("min_score", "count", "true_in_set", "true_score", "link")


def both(a, b, **kw):
    """(small path, kernel path) of the same search."""
    with small.mode("always"):
        fast = nearest_sets(a, b, **kw)
    with small.mode("off"):
        kern = nearest_sets(a, b, **kw)
    return fast, kern


def assert_same(fast, kern):
    for f in FIELDS:
        x, y = getattr(fast, f), getattr(kern, f)
        assert x.dtype == y.dtype, f
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f
        if x.dtype.kind == "f":  # bit for bit, the sign of zero included
            assert np.array_equal(x.view(np.int64), y.view(np.int64)), f


def tied(rng, n_a, n_b, m, levels=4):
    """Integer-valued files with duplicates: many exact ties."""
    a = rng.integers(0, levels, (n_a, m)).astype(float)
    b = rng.integers(0, levels, (n_b, m)).astype(float)
    b[: n_b // 4] = a[rng.integers(0, n_a, n_b // 4)]  # exact duplicates of attacker rows
    return a, b


def truths(rng, n_a, n_b):
    return [None, rng.integers(-1, n_b, n_a), np.arange(n_a) % n_b]


def ranks(x):
    return np.argsort(np.argsort(x, axis=0, kind="stable"), axis=0) / 2.0 + 0.5


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("metric", ["sqeuclidean", "l1", "linf", "kernel"])
@pytest.mark.parametrize("cap", [32, 3])
def test_numeric_metrics_with_ties(seed, metric, cap):
    rng = np.random.default_rng(seed)
    n_a, n_b, m = int(rng.integers(30, 200)), int(rng.integers(30, 200)), int(rng.integers(1, 6))
    a, b = tied(rng, n_a, n_b, m)
    for x, y in ((a, b), (a / 3, b / 3), (standardize(a), standardize(b))):
        for truth in truths(rng, n_a, n_b):
            assert_same(*both(x, y, metric=metric, truth=truth, seed=seed, cap=cap))


@pytest.mark.parametrize("degree", [1, 3, -2])
def test_kernel_degrees(degree):
    rng = np.random.default_rng(7)
    a, b = tied(rng, 80, 90, 3)
    assert_same(*both(a / 4, b / 4, metric="kernel", degree=degree, truth=np.arange(80), cap=4))


@pytest.mark.parametrize("metric", ["l1", "linf"])
def test_rank_metrics_take_the_integer_kernels(metric):
    """rbrl_sum / rbrl_max: ranks (multiples of ½) go through the integer kernels."""
    rng = np.random.default_rng(3)
    a = ranks(rng.integers(0, 5, (300, 4)))
    b = ranks(rng.integers(0, 5, (300, 4)))
    for cap in (32, 2):
        for truth in truths(rng, 300, 300):
            assert_same(*both(a, b, metric=metric, truth=truth, cap=cap, seed=1))


def test_mahalanobis_through_its_transform():
    rng = np.random.default_rng(4)
    a, b = tied(rng, 150, 150, 4, levels=6)
    cov = np.cov(np.vstack([a, b]).T)
    w = np.linalg.cholesky(np.linalg.inv(cov))
    assert_same(*both(a @ w, b @ w, truth=np.arange(150)))


@pytest.mark.parametrize("cap", [32, 2])
def test_mixed_and_hamming(cap):
    rng = np.random.default_rng(5)
    m = 5
    a, b = tied(rng, 120, 140, m, levels=3)
    unit = Tables.from_list([1.0 - np.eye(3)] * m)  # Hamming: the narrow-code kernel
    weighted = Tables.from_list([rng.random((3, 3)).round(2) if j % 2 else None for j in range(m)])
    blocked = Tables.from_list([np.where(np.eye(3) > 0, 0.0, np.inf)] + [1.0 - np.eye(3)] * (m - 1))
    for tables in (unit, weighted, blocked):
        for truth in truths(rng, 120, 140):
            assert_same(*both(a, b, metric="mixed", tables=tables, truth=truth, cap=cap))


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_near_ties_and_overflowing_buffers(cap):
    """Scores within rtol of each other in every order: the kernel's buffer overflows and
    is cleared or not by a later near-tie minimum (the replay of small._overflows)."""
    rng = np.random.default_rng(6)
    levels = np.array([1.0, 1.0 + 0.5e-9, 1.0 + 1.2e-9, 1.0 + 3e-9, np.nextafter(1.0, 2.0)])
    b = rng.choice(levels, size=(60, 1))
    a = np.zeros((400, 1))
    for k in range(400):  # each row its own sequence: its scores are b itself
        b_k = rng.permutation(b)
        fast, kern = both(a[:1], b_k, metric="l1", truth=np.array([k % 60]), cap=cap, seed=k)
        assert_same(fast, kern)


def test_overflow_kept_by_a_near_tie_minimum():
    """cap 2: the buffer fills with 1+0.5e-9 and 1+1.2e-9, loses the next 1+1.2e-9, then
    1.0 is the minimum and 1+0.5e-9 (the old minimum) is still tied with it: the kernel
    keeps the overflow flag although |C| = 2, so the link is its reservoir draw."""
    b = np.array([[1 + 0.5e-9], [1 + 1.2e-9], [1 + 1.2e-9], [1.0]])
    assert small._replay(list(b[:, 0]), 1e-9, 2)
    for seed in range(40):
        fast, kern = both(np.zeros((1, 1)), b, metric="l1", cap=2, seed=seed)
        assert_same(fast, kern)
        assert kern.count[0] == 2


def test_short_near_tie_sequences():
    rng = np.random.default_rng(11)
    levels = np.array([1.0, 1.0 + 0.5e-9, 1.0 + 1.2e-9, 1.0 + 1.4e-9, 1.0 + 3e-9])
    b = rng.choice(levels, size=(2000, 1), p=[0.05, 0.25, 0.3, 0.3, 0.1])
    for k in range(300):
        seq = b[rng.integers(0, 2000, int(rng.integers(3, 9)))]
        assert_same(*both(np.zeros((1, 1)), seq, metric="l1", cap=2, seed=k))


def test_nan_and_infinite_scores():
    rng = np.random.default_rng(8)
    a, b = tied(rng, 50, 60, 2)
    a[3, 0] = np.nan
    b[5, 1] = np.inf
    b[7, 0] = np.nan
    for metric in ("sqeuclidean", "l1", "linf"):
        assert_same(*both(a, b, metric=metric, truth=np.arange(50), cap=3))


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the kernel path's −∞ + ∞
def test_minus_infinity_is_left_to_the_kernels():
    """A −∞ minimum has a NaN tie threshold: the small path declines the problem."""
    tables = Tables.from_list([np.array([[0.0, -np.inf], [1.0, 0.0]])])
    a, b = np.array([[0.0], [1.0]]), np.array([[0.0], [1.0], [1.0]])
    pw = Pairwise.build(a, b, "mixed", tables=tables, transpose=False)
    assert small.small_sets(pw, np.zeros(2, np.int64), np.arange(2), rtol=1e-9, seed=0,
                            cap=32) is None
    assert_same(*both(a, b, metric="mixed", tables=tables, truth=np.arange(2)))


def test_row_ids_and_blocks(monkeypatch):
    """Rows split over several score blocks give the one-block result."""
    rng = np.random.default_rng(9)
    a, b = tied(rng, 333, 257, 3)
    rid = rng.permutation(1000)[:333]
    ref = both(a, b, truth=np.arange(333) % 257, row_ids=rid, cap=4)
    monkeypatch.setattr(small, "BLOCK_ELEMENTS", 600)
    with small.mode("always"):
        assert_same(nearest_sets(a, b, truth=np.arange(333) % 257, row_ids=rid, cap=4), ref[1])
    assert_same(*ref)


def test_threshold_boundary(monkeypatch):
    rng = np.random.default_rng(10)
    a, b = tied(rng, 40, 50, 3)
    pw = Pairwise.build(a, b, transpose=False)
    monkeypatch.setattr(small, "MAX_PAIRS", 40 * 50)
    calls = []
    real = small.small_sets
    monkeypatch.setattr("linkrisk.engine.nearest.sets.small_sets",
                        lambda *x, **k: calls.append(1) or real(*x, **k))
    kw = dict(rtol=1e-9, seed=0, cap=32, memory_budget=1 << 24, progress=None)
    with small.mode("always"):
        assert small.is_usable_for(pw, nearest_block)
        at = exact_sets(pw, np.arange(40), np.arange(40), **kw)
        assert calls == [1]
        monkeypatch.setattr(small, "MAX_PAIRS", 40 * 50 - 1)
        assert not small.is_usable_for(pw, nearest_block)
        above = exact_sets(pw, np.arange(40), np.arange(40), **kw)
        assert calls == [1]
    assert_same(at, above)


def test_auto_mode_follows_the_kernels_cache_and_its_rent(monkeypatch, tmp_path):
    """``auto``: the small path only while the kernel has no compiled version (in this
    process or in numba's cache), and only until the process has spent RENT on it."""
    pw = Pairwise.build(np.zeros((3, 2)), np.zeros((4, 2)), transpose=False)
    with small.mode("off"):
        nearest_sets(np.zeros((3, 2)), np.ones((4, 2)))  # nearest_block compiled or loaded
    assert small.kernel_ready(nearest_block)
    assert not small.is_usable_for(pw, nearest_block)

    @nb.njit(cache=True)
    def fresh(x):
        return x + 1

    def wrapper(x):  # a Python function that calls the kernel
        return fresh(x)

    monkeypatch.setattr(fresh._cache._cache_file, "_index_path", str(tmp_path / "f.nbi"))
    monkeypatch.setattr(small, "_spent", 0)
    monkeypatch.setattr(small, "_deferred", False)
    assert small.is_usable_for(pw, fresh) and small.is_usable_for(pw, wrapper)
    assert small.deferred()  # a kernel left uncompiled: the CLI compiles it in the background
    (tmp_path / "f.nbi").write_bytes(b"")  # numba's index of a cached version
    assert small.kernel_ready(fresh) and small.kernel_ready(wrapper)
    assert not small.is_usable_for(pw, wrapper)

    @nb.njit
    def uncached(x):
        return x - 1

    assert small.is_usable_for(pw, uncached)
    uncached(1)  # compiled in this process
    assert not small.is_usable_for(pw, uncached)
    assert small.is_usable_for(pw, lambda x: x)  # calls no kernel: nothing to wait for
    monkeypatch.setattr(small, "_spent", small.RENT)
    assert not small.is_usable_for(pw, lambda x: x)
    monkeypatch.setattr(small, "_deferred", False)
    with small.mode("always"):
        assert small.is_usable_for(pw, nearest_block)
    assert not small.deferred()  # "always" took it by choice, not for a missing kernel
    with small.mode("off"):
        monkeypatch.setattr(small, "_spent", 0)
        assert not small.is_usable_for(pw, lambda x: x)


def test_mode_names():
    with pytest.raises(ValueError, match="small path mode"), small.mode("never"):
        pass


def test_blocks_on_threads_give_the_single_block_result(monkeypatch):
    """The row blocks run on a thread pool: any block size (one row, a few, all) gives the
    same minimum, set size, true score and link of every row."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, (97, 3)).astype(float)
    b = rng.integers(0, 4, (61, 3)).astype(float)
    truth = rng.integers(-1, 61, 97)
    pw = Pairwise.build(a, b, "l1", transpose=False)
    rid = np.arange(97)
    got = []
    for elements in (61, 61 * 7, 61 * 97, 1 << 18):
        monkeypatch.setattr(small, "BLOCK_ELEMENTS", elements)
        got.append(small.small_sets(pw, truth, rid, rtol=1e-9, seed=3, cap=4))
    for other in got[1:]:
        for x, y in zip(got[0], other, strict=True):
            assert np.array_equal(x, y)


def test_a_forked_child_makes_its_own_threads():
    """The thread pool made by the parent has no thread in a forked child: the child's
    small path must still finish (multiprocessing's fork start method)."""
    import multiprocessing as mp

    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    pw = Pairwise.build(a, b, transpose=False)
    args = (pw, np.arange(300), np.arange(300))
    kw = dict(rtol=1e-9, seed=1, cap=4)
    mine = small.small_sets(*args, **kw)  # the parent's pool exists from here on
    with mp.get_context("fork").Pool(1) as pool:
        theirs = pool.apply_async(_child_sets, (args, kw)).get(timeout=60)
    for x, y in zip(mine, theirs, strict=True):
        assert np.array_equal(x, y)


def _child_sets(args, kw):
    return small.small_sets(*args, **kw)
