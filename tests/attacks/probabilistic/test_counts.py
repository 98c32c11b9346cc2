"""prl's pattern counts against the enumeration of all pairs (counts.py)."""

import numpy as np
import pytest

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    brute_patterns,
    mixed_files,
    pram_files,
)


@pytest.mark.parametrize("tol", [None, {"y": 0.5}, 2.0])
def test_pattern_counts_equal_enumeration(tol):
    a, b = mixed_files(1)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, q=5, tol=tol)
    got = P.pattern_counts(cmp)
    want = np.bincount(brute_patterns(cmp).ravel(), minlength=16)
    np.testing.assert_array_equal(got, want)
    if tol is None:  # the walk and the pair kernel agree on coded files too
        np.testing.assert_array_equal(P.pair_counts(cmp), want)


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


@pytest.mark.parametrize("tol", [None, {"y": 0.5}, 2.0])
def test_numpy_pair_counts_equal_the_kernel(tol, monkeypatch):
    """Small problems bin every pair's pattern with numpy (no kernel to compile), larger
    ones with the compiled pair kernel: the same counts, and the same progress calls."""
    a, b = mixed_files(2, n=130)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, q=4, tol=tol)
    calls = []
    with_numpy = P.pair_counts(cmp, lambda done, n: calls.append(("numpy", done, n)))
    monkeypatch.setattr(P.counts, "NUMPY_MAX_PAIRS", 0)
    compiled = P.pair_counts(cmp, lambda done, n: calls.append(("kernel", done, n)))
    np.testing.assert_array_equal(with_numpy, compiled)
    np.testing.assert_array_equal(with_numpy,
                                  np.bincount(brute_patterns(cmp).ravel(), minlength=16))
    assert [c[1:] for c in calls if c[0] == "numpy"] == [c[1:] for c in calls if c[0] == "kernel"]
