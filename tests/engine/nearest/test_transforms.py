"""The shared transforms against numpy/scipy formulas, in place and block by block."""

import numpy as np
import pytest
from scipy.stats import rankdata

from linkrisk.engine.nearest.transforms import (
    average_ranks,
    covariance,
    difference_sd,
    standardize,
    whiten,
    whitening,
)


def _x(n=257, m=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, (n, m))
    x[:, 1] = np.round(x[:, 1])  # ties for the ranks
    x[:, 4] = 7.0                # constant: centred, not divided by zero
    return x


def test_standardize_matches_formula_in_place_or_not():
    x = _x()
    sd = x.std(0, ddof=1)
    want = (x - x.mean(0)) / np.where(sd > 1e-12, sd, 1.0)
    got = standardize(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not np.shares_memory(got, x)
    y = x.copy()
    out = standardize(y, inplace=True)
    assert out is y
    np.testing.assert_array_equal(out, got)
    np.testing.assert_array_equal(got[:, 4], 0.0)


def test_inplace_refuses_what_it_cannot_overwrite():
    x = _x()
    for bad in (x.astype(np.float32), np.asfortranarray(x), x[:, :3]):
        with pytest.raises(ValueError, match="C-contiguous float64"):
            standardize(bad, inplace=True)


@pytest.mark.parametrize("normalize", [False, True])
def test_average_ranks_match_scipy(normalize):
    x = _x()
    want = rankdata(x, method="average", axis=0) / (x.shape[0] if normalize else 1)
    np.testing.assert_array_equal(average_ranks(x, normalize=normalize), want)
    y = x.copy()
    assert average_ranks(y, normalize=normalize, inplace=True) is y
    np.testing.assert_array_equal(y, want)


def test_whiten_blocks_match_one_product():
    x = _x()
    w = whitening(np.cov(x[:, :4].T) + np.eye(4), list("abcd"))
    mu = x[:, :4].mean(0)
    want = (x[:, :4] - mu) @ w.T
    xx = np.ascontiguousarray(x[:, :4])
    np.testing.assert_allclose(whiten(xx, w, mu, rows=10), want, rtol=1e-12, atol=1e-12)
    assert whiten(xx, w, mu, inplace=True, rows=7) is xx
    np.testing.assert_allclose(xx, want, rtol=1e-12, atol=1e-12)


def test_covariance_matches_np_cov_with_indices_and_blocks():
    x, y = _x(seed=1), _x(seed=2)
    np.testing.assert_allclose(covariance(x, rows=13), np.cov(x.T), rtol=1e-12, atol=1e-12)
    ix = np.random.default_rng(3).permutation(x.shape[0])[:100]
    iy = np.random.default_rng(4).permutation(y.shape[0])[:100]
    m = x.shape[1]
    want = np.cov(np.hstack([x[ix], y[iy]]).T)[:m, m:]
    np.testing.assert_allclose(covariance(x, y, ix=ix, iy=iy, rows=9), want,
                               rtol=1e-12, atol=1e-12)


def test_difference_sd_matches_aligned_std_and_keeps_exact_zeros():
    x = _x(seed=5)
    rng = np.random.default_rng(6)
    iy = rng.permutation(x.shape[0])
    y = np.empty_like(x)
    y[iy] = x + 1e-7 * rng.standard_normal(x.shape)  # tiny noise: no cancellation allowed
    y[iy, 2] = x[:, 2]                               # an untouched attribute: σ exactly 0
    ix = np.arange(x.shape[0])
    want = (x[ix] - y[iy]).std(0, ddof=1)
    got = difference_sd(x, y, ix, iy, rows=10)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert got[2] == 0.0
