"""Rank swapping (standard, p-distribution, p-buckets) and rank shuffling."""

import numpy as np
import pytest

from linkrisk.masking import mask
from linkrisk.masking.rankswap import rank_permutation
from tests.conftest import continuous

SWAPS = ["rank_swap", "rank_swap_pdist", "rank_swap_pbuckets"]


def _ranks(x):
    r = np.empty(len(x), dtype=np.int64)
    r[np.argsort(x, kind="stable")] = np.arange(len(x))
    return r


def _source_rows(x, y):
    """Row of x each released value y_i came from (x without ties)."""
    pos = {v: i for i, v in enumerate(x)}
    return np.array([pos[v] for v in y])


@pytest.mark.parametrize("method,p", [("rank_swap", 7), ("rank_swap_pdist", 7),
                                      ("rank_swap_pbuckets", 8)])
def test_swaps_keep_multisets_and_are_disjoint_transpositions(method, p):
    df = continuous(400, 3, seed=5)
    out = mask(df, method, p=p, seed=11)
    for c in df.columns:
        x, y = df[c].to_numpy(), out[c].to_numpy()
        assert np.array_equal(np.sort(x), np.sort(y))          # same multiset
        src = _source_rows(x, y)
        assert np.array_equal(src[src], np.arange(len(x)))     # an involution: transpositions
        assert (src != np.arange(len(x))).mean() > 0.5         # and most values did move


def test_standard_swap_distance_bound():
    n, p = 500, 4
    df = continuous(n, 4, seed=1)
    out = mask(df, "rank_swap", p=p, seed=3)
    bound = int(np.floor(p * n / 100))
    for c in df.columns:
        x = df[c].to_numpy()
        r = _ranks(x)
        moved = np.abs(r[_source_rows(x, out[c].to_numpy())] - r)
        assert moved.max() <= bound
        assert moved.max() >= bound - 2  # the whole window is used


def test_standard_swap_with_ties_keeps_multiset(census_csv):
    out = mask(census_csv, "rank_swap", p=5, seed=0)
    for c in census_csv.columns:
        assert np.array_equal(np.sort(out[c]), np.sort(census_csv[c]))
    assert (out.dtypes == census_csv.dtypes).all()


def test_tiny_window_is_identity():
    df = continuous(30, 2)
    out = mask(df, "rank_swap", p=3, seed=0)  # floor(3·30/100) = 0: nobody may move
    assert out.equals(df)


def test_pdist_goes_beyond_the_standard_window():
    n, p = 2000, 2
    x = np.random.default_rng(0).permutation(n).astype(float)
    src = rank_permutation(x, "rank_swap_pdist", np.random.default_rng(1), p=p,
                           variant="max/half/free")
    d = np.abs(x[src] - x)  # x is a permutation of 0..n-1, so values are ranks
    swapped = d[d > 0]
    # D ~ N(p·n/200, p·n/200) truncated at 0; r ~ U{1..D}: mean r ≈ E[D⁺]/2 ≈ 0.58·p·n/200
    assert d.max() > p * n / 100
    assert 0.4 * p * n / 200 < swapped.mean() < 0.9 * p * n / 200


def test_pbuckets_prefers_near_buckets():
    n, p = 4000, 20
    x = np.arange(n, dtype=float)
    src = rank_permutation(x, "rank_swap_pbuckets", np.random.default_rng(2), p=p)
    bucket = (np.arange(n) * p) // n
    moved = src != np.arange(n)
    assert moved.mean() > 0.95
    diff = np.abs(bucket[src] - bucket)[moved]
    share = np.bincount(diff, minlength=p) / len(diff)
    # weights 2^-|s-r| over the (mostly higher) buckets: about 1/2, 1/4, 1/8, ...
    assert 0.4 < share[0] < 0.6
    assert 0.18 < share[1] < 0.32
    assert share[4:].sum() < 0.1


def test_rank_shuffle_blocks():
    n, q = 203, 10
    df = continuous(n, 3, seed=4)
    out = mask(df, "rank_shuffle", q=q, seed=5)
    for c in df.columns:
        x, y = df[c].to_numpy(), out[c].to_numpy()
        assert np.array_equal(np.sort(x), np.sort(y))
        r = _ranks(x)
        # s = q: disjoint windows of q sorted positions (the last one cut at n)
        assert np.array_equal(r[_source_rows(x, y)] // q, r // q)
        assert (y != x).mean() > 0.8


def test_rank_shuffle_sliding_windows():
    n, q, s = 300, 6, 2
    x = np.arange(n, dtype=float)[::-1].copy()
    src = rank_permutation(x, "rank_shuffle", np.random.default_rng(0), q=q, s=s)
    assert np.array_equal(np.sort(src), np.arange(n))
    # x's value is its sorted position. Overlapping windows can carry a value forward
    # (up) again and again, but down by at most q − 1 positions in its last window.
    came_from = x[src] - x   # = −(distance the received value travelled)
    assert came_from.max() <= q - 1
    assert came_from.min() < -(q - 1)
    assert (src != np.arange(n)).mean() > 0.7
