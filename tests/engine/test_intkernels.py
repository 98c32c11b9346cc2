"""Integer kernels (rank distances, Hamming): same results as the float64 kernel and as a
brute-force computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine import Tables, average_ranks
from linkrisk.engine.nearest import Pairwise
from linkrisk.engine.nearest.intkernels import I_HAMMING, I_L1, I_LINF, integer_form
from linkrisk.engine.nearest.kernels import METRIC_CODES
from linkrisk.engine.nearest.sets import exact_sets

RTOL = 1e-9


def _hamming_tables(sizes):
    return Tables.from_list([1.0 - np.eye(k) for k in sizes])


def _run(a, b, metric, tables=None, *, integer, cap=32, seed=3):
    tables = tables or Tables.empty(a.shape[1])
    pw = Pairwise.build(a, b, metric, degree=2, tables=tables, transpose=False)
    truth = np.arange(a.shape[0]) % b.shape[0]
    return exact_sets(pw, truth, np.arange(a.shape[0]), rtol=RTOL, seed=seed, cap=cap,
                      memory_budget=2**20, progress=None, integer=integer)


def test_integer_form_detection():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 3))
    ra, rb = average_ranks(x), average_ranks(x + 0.1 * rng.standard_normal(x.shape))
    ra[:4, 0] = 2.5  # an average rank
    l1, linf, mixed = (METRIC_CODES[k] for k in ("l1", "linf", "mixed"))
    form = integer_form(ra, rb, l1, Tables.empty(3))
    assert form is not None and form[2] == I_L1 and form[3] == 2
    assert integer_form(np.round(ra), np.round(rb), linf, Tables.empty(3))[2:] == (I_LINF, 1)
    # non-integer values, a float metric, huge values: no integer form
    assert integer_form(x, x, l1, Tables.empty(3)) is None
    assert integer_form(ra, rb, METRIC_CODES["sqeuclidean"], Tables.empty(3)) is None
    assert integer_form(ra * 1e9, rb, l1, Tables.empty(3)) is None
    codes = rng.integers(0, 4, (20, 2)).astype(float)
    assert integer_form(codes, codes, mixed, _hamming_tables([4, 4]))[2] == I_HAMMING
    weighted = Tables.from_list([2.0 * (1.0 - np.eye(4)), 1.0 - np.eye(4)])
    assert integer_form(codes, codes, mixed, weighted) is None
    numeric = Tables.from_list([None, 1.0 - np.eye(4)])
    assert integer_form(codes, codes, mixed, numeric) is None


@pytest.mark.parametrize("metric", ["l1", "linf", "hamming"])
@pytest.mark.parametrize("cap", [32, 2])  # cap 2: tie buffers overflow and are recounted
def test_integer_kernel_equals_float_kernel_and_brute_force(metric, cap):
    rng = np.random.default_rng(7)
    n_a, n_b, m = 700, 900, 4
    if metric == "hamming":
        sizes = [3, 4, 2, 5]
        a = np.column_stack([rng.integers(0, k, n_a) for k in sizes]).astype(float)
        b = np.column_stack([rng.integers(0, k, n_b) for k in sizes]).astype(float)
        tables, eng, brute = _hamming_tables(sizes), "mixed", cdist(a, b, "hamming") * m
    else:
        # average ranks of coarse values: many exact ties, multiples of ½
        a = average_ranks(rng.integers(0, 6, (n_a, m)).astype(float))
        b = average_ranks(rng.integers(0, 6, (n_b, m)).astype(float))
        tables, eng = None, metric
        brute = cdist(a, b, "cityblock" if metric == "l1" else "chebyshev")
    assert integer_form(a, b, METRIC_CODES[eng], tables or Tables.empty(m)) is not None
    fast = _run(a, b, eng, tables, integer=True, cap=cap)
    slow = _run(a, b, eng, tables, integer=False, cap=cap)
    for f in ("min_score", "count", "true_in_set", "true_score", "link"):
        np.testing.assert_array_equal(getattr(fast, f), getattr(slow, f), err_msg=f)
    mn = brute.min(axis=1)
    np.testing.assert_array_equal(fast.min_score, mn)
    tied = brute <= (mn + RTOL * np.abs(mn))[:, None]
    np.testing.assert_array_equal(fast.count, tied.sum(axis=1))
    assert tied[np.arange(n_a), fast.link].all()
    assert (fast.count > cap).any() == (cap == 2)
