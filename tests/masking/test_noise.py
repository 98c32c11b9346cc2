"""Additive, correlated and multiplicative noise: the stated moments, with a fixed seed."""

import numpy as np
import pandas as pd

from linkrisk.masking import mask
from tests.conftest import continuous

N = 20_000


def test_additive_noise_moments():
    df = continuous(N, 3, seed=1)
    a = 0.5
    e = mask(df, "noise", a=a, seed=2) - df
    for c in df.columns:
        sd = a * df[c].std(ddof=1)
        assert abs(e[c].mean()) < 4 * sd / np.sqrt(N)
        # sd of a sample std is ≈ σ/sqrt(2N) ≈ 0.5 % here
        assert abs(e[c].std() / sd - 1) < 0.025
    # independent across attributes
    assert np.abs(np.corrcoef(e.to_numpy().T)[np.triu_indices(3, 1)]).max() < 0.04


def test_percent_equals_a():
    df = continuous(100, 2)
    pd.testing.assert_frame_equal(mask(df, "noise", percent=15, seed=4),
                                  mask(df, "noise", a=0.15, seed=4))


def test_correlated_noise_covariance():
    df = continuous(N, 3, seed=3)
    a = 0.3
    e = (mask(df, "correlated_noise", a=a, seed=5) - df).to_numpy()
    sigma = np.cov(df.to_numpy(), rowvar=False)
    got = np.cov(e, rowvar=False)
    assert np.abs(e.mean(0)).max() < 4 * np.sqrt(a * np.diag(sigma).max() / N)
    # each entry within a few standard errors: se(cov_jk) ≈ sqrt((s_jj s_kk + s_jk²)/N)
    d = np.diag(a * sigma)
    se = np.sqrt((np.outer(d, d) + (a * sigma) ** 2) / N)
    assert (np.abs(got - a * sigma) < 5 * se).all()


def test_correlated_noise_singular_covariance(census_csv):
    # PTOTVAL = PEARNVAL + POTHVAL: Σ is singular; the noise must respect the same identity
    out = mask(census_csv, "correlated_noise", a=0.2, seed=0)
    e = out - census_csv
    resid = e["PTOTVAL"] - e["PEARNVAL"] - e["POTHVAL"]
    assert np.abs(resid).max() < 1e-6 * census_csv["PTOTVAL"].abs().max()
    assert e["PTOTVAL"].std() > 0


def test_multiplicative_noise_factor_range_and_moments():
    df = continuous(N, 2, seed=6) + 1000  # keep away from zero
    b = 0.2
    f = mask(df, "multiplicative_noise", b=b, seed=7) / df
    for c in df.columns:
        assert f[c].min() >= 1 - b and f[c].max() <= 1 + b
        assert abs(f[c].mean() - 1) < 4 * b / np.sqrt(3 * N)
        assert abs(f[c].var() / (b * b / 3) - 1) < 0.05   # Var U(1−b,1+b) = b²/3
        assert f[c].min() < 1 - 0.99 * b and f[c].max() > 1 + 0.99 * b


def test_noise_on_integer_columns_gives_floats(census_csv):
    out = mask(census_csv.iloc[:50], "noise", a=0.1, seed=0)
    assert (out.dtypes == np.float64).all()
