"""IPSO A/B/C and data shuffling."""

import numpy as np
import pytest

from linkrisk.errors import LinkriskError
from linkrisk.masking import mask
from tests.conftest import continuous

QI, CONF = ["v1", "v2", "v3"], ["v4", "v5"]


def _fit(y, x):
    w = np.column_stack([np.ones(len(x)), x])
    beta, *_ = np.linalg.lstsq(w, y, rcond=None)
    return beta, y - w @ beta


@pytest.fixture
def data():
    return continuous(250, 5, seed=3)


def _scale(a):
    return np.abs(a).max()


def test_ipso_a_gives_fitted_values(data):
    out = mask(data, "ipso", variant="A", confidential=CONF, columns=QI)
    y, x = data[QI].to_numpy(), data[CONF].to_numpy()
    beta, resid = _fit(y, x)
    np.testing.assert_allclose(out[QI].to_numpy(), y - resid, rtol=1e-10, atol=1e-9 * _scale(y))
    assert out[CONF].equals(data[CONF])


def test_ipso_b_preserves_coefficients(data):
    out = mask(data, "ipso", variant="B", confidential=CONF, columns=QI, seed=1)
    y, x = data[QI].to_numpy(), data[CONF].to_numpy()
    beta, resid = _fit(y, x)
    beta2, resid2 = _fit(out[QI].to_numpy(), x)
    np.testing.assert_allclose(beta2, beta, rtol=1e-8, atol=1e-8 * _scale(beta))
    # the noise has covariance Σ̂ only approximately (not exactly as in C)
    s, s2 = resid.T @ resid, resid2.T @ resid2
    assert not np.allclose(s, s2, rtol=1e-6)
    assert np.abs(np.diag(s2) / np.diag(s) - 1).max() < 0.4


def test_ipso_c_preserves_coefficients_and_residual_covariance(data):
    out = mask(data, "ipso", variant="C", confidential=CONF, columns=QI, seed=2)
    y, x = data[QI].to_numpy(), data[CONF].to_numpy()
    beta, resid = _fit(y, x)
    beta2, resid2 = _fit(out[QI].to_numpy(), x)
    np.testing.assert_allclose(beta2, beta, rtol=1e-8, atol=1e-8 * _scale(beta))
    s, s2 = resid.T @ resid / len(y), resid2.T @ resid2 / len(y)
    np.testing.assert_allclose(s2, s, rtol=1e-8, atol=1e-8 * _scale(s))
    assert np.abs(out[QI].to_numpy() - y).min(axis=0).max() > 0  # but the values are new


def test_ipso_c_on_census_with_singular_residuals(census_csv):
    # PTOTVAL = PEARNVAL + POTHVAL exactly, so with PEARNVAL confidential the QI residual
    # covariance is singular; C must still preserve B̂ and Σ̂
    conf = list(census_csv.columns[-4:])
    qi = list(census_csv.columns[:-4])
    out = mask(census_csv, "ipso", variant="C", confidential=conf, seed=0)
    y, x = census_csv[qi].to_numpy(float), census_csv[conf].to_numpy(float)
    beta, resid = _fit(y, x)
    beta2, resid2 = _fit(out[qi].to_numpy(), x)
    np.testing.assert_allclose(beta2, beta, rtol=1e-8, atol=1e-8 * _scale(beta))
    s, s2 = resid.T @ resid, resid2.T @ resid2
    np.testing.assert_allclose(s2, s, rtol=1e-8, atol=1e-8 * _scale(s))


def test_ipso_collinear_confidential_names_columns(data):
    df = data.copy()
    df["v6"] = 2 * df["v4"] - df["v5"] + 3
    with pytest.raises(LinkriskError, match=r"columns \['v4', 'v5', 'v6'\] are collinear"):
        mask(df, "ipso", variant="B", confidential=["v4", "v5", "v6"], columns=QI, seed=0)
    df["c"] = 7.0
    with pytest.raises(LinkriskError, match=r"\['c'\] are constant"):
        mask(df, "ipso", variant="A", confidential=["v4", "c"], columns=QI)


def test_ipso_too_few_records(data):
    with pytest.raises(LinkriskError, match="too few"):
        mask(data.iloc[:3], "ipso", variant="A", confidential=CONF, columns=QI)


def test_data_shuffle_releases_permuted_originals(census_csv):
    conf = list(census_csv.columns[-3:])
    out = mask(census_csv, "data_shuffle", confidential=conf, seed=5)
    for c in census_csv.columns:
        assert np.array_equal(np.sort(out[c]), np.sort(census_csv[c]))
    assert (out.dtypes == census_csv.dtypes).all()
    assert out[conf].equals(census_csv[conf])
    assert (out["AGI"] != census_csv["AGI"]).mean() > 0.9


def test_data_shuffle_follows_ipso_c_ranks(data):
    shuffled = mask(data, "data_shuffle", confidential=CONF, columns=QI, seed=9)
    synth = mask(data, "ipso", variant="C", confidential=CONF, columns=QI, seed=9)
    for c in QI:
        assert np.array_equal(np.argsort(shuffled[c].to_numpy()), np.argsort(synth[c].to_numpy()))
