"""gdbrl's dense costs and pair costs with numpy (engine/matching/dense.py) are the
kernel's bit for bit."""

import numpy as np
import pytest

from linkrisk.engine.matching.dense import dense_costs, pair_costs
from linkrisk.engine.matching.knn import dense_costs as kernel_dense_costs
from linkrisk.engine.matching.knn import pair_costs as kernel_pair_costs
from linkrisk.engine.nearest import small
from linkrisk.engine.nearest.kernels import Pairwise, Tables


@pytest.mark.parametrize("metric", ["sqeuclidean", "l1", "linf", "kernel", "mixed"])
@pytest.mark.parametrize("root", [True, False])
def test_dense_costs_equal_the_kernel(metric, root):
    pw = _problem(metric, root)
    with small.mode("always"):
        fast = dense_costs(pw)
    with small.mode("off"):
        kern = dense_costs(pw)
    assert np.array_equal(fast.view(np.int64), kernel_dense_costs(pw).view(np.int64))
    assert np.array_equal(fast.view(np.int64), kern.view(np.int64))


@pytest.mark.parametrize("metric", ["sqeuclidean", "l1", "linf", "kernel", "mixed"])
@pytest.mark.parametrize("root", [True, False])
def test_pair_costs_equal_the_kernel(metric, root):
    """Listed pairs, repeated ones and −1 indices (cost +∞) included."""
    pw = _problem(metric, root)
    rng = np.random.default_rng(2)
    ia = rng.integers(-1, 70, 500)
    ib = rng.integers(-1, 90, 500)
    with small.mode("always"):
        fast = pair_costs(pw, ia, ib)
    assert np.isinf(fast[(ia < 0) | (ib < 0)]).all()
    assert np.array_equal(fast.view(np.int64), kernel_pair_costs(pw, ia, ib).view(np.int64))
    dense = kernel_dense_costs(pw)
    ok = (ia >= 0) & (ib >= 0)
    assert np.array_equal(fast[ok].view(np.int64), dense[ia[ok], ib[ok]].view(np.int64))


def _problem(metric: str, root: bool) -> Pairwise:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, (70, 4)).astype(float)
    b = rng.integers(0, 3, (90, 4)).astype(float)
    if metric != "mixed":
        a, b = a / 3 + rng.normal(size=a.shape) * (metric == "sqeuclidean"), b / 3
    tables = Tables.from_list([rng.random((3, 3)), None, 1 - np.eye(3), None])
    return Pairwise.build(a, b, metric, root=root, tables=tables if metric == "mixed" else None)


def test_negative_and_nan_scores_cost_zero():
    """√ only of positive scores (the kernel's _cost): a negative kernel-metric score or a
    NaN costs 0."""
    a = np.array([[1e308, 0.0], [np.nan, 1.0]])
    b = np.array([[1e308, 0.0], [2.0, 1.0]])
    pw = Pairwise.build(a, b, "kernel", root=True)
    with small.mode("always"):
        fast = dense_costs(pw)
        pairs = pair_costs(pw, np.array([0, 1, 1]), np.array([0, 0, 1]))
    assert np.array_equal(fast.view(np.int64), kernel_dense_costs(pw).view(np.int64))
    assert np.array_equal(pairs.view(np.int64), fast[[0, 1, 1], [0, 0, 1]].view(np.int64))
