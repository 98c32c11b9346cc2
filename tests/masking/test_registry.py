"""The mask() contract shared by every method: registry, columns, seeds, pass-through,
parameter checking and the common validation errors."""

import re

import numpy as np
import pandas as pd
import pytest

from linkrisk.errors import LinkriskError
from linkrisk.masking import CATEGORICAL_METHODS, METHODS, NUMERIC_METHODS, mask, method_params

from .conftest import continuous

# small parameterization of every method, applied to the `mixed` fixture
CASES = {
    "noise": dict(a=0.2),
    "correlated_noise": dict(a=0.2),
    "multiplicative_noise": dict(b=0.2),
    "rank_swap": dict(p=10),
    "rank_swap_pdist": dict(p=10),
    "rank_swap_pbuckets": dict(p=5),
    "rank_shuffle": dict(q=5),
    "microaggregation_ir": dict(k=3),
    "mdav": dict(k=3),
    "micdp": dict(k=3, epsilon=1.0),
    "ipso": dict(variant="B", confidential=["v3"]),
    "data_shuffle": dict(confidential=["v3"]),
    "pram": dict(pd=0.6),
    "top_coding": dict(quantile=0.6),
    "bottom_coding": dict(quantile=0.3),
    "global_recoding": dict(width=2, n_groups=2),
    "local_suppression": dict(k=8),
}


def test_registry_lists_every_method():
    assert set(METHODS) == set(CASES)
    assert set(NUMERIC_METHODS) | set(CATEGORICAL_METHODS) == set(METHODS)
    for name, spec in METHODS.items():
        assert spec.name == name and spec.summary and callable(spec)
        assert name in spec.doc and re.search(r"\b(19|20)\d\d\b", spec.doc)  # cites a paper


def test_method_params_contract():
    assert method_params("noise") == {"a": float, "percent": float, "scale": str}
    assert method_params("rank_shuffle") == {"q": int, "s": int}
    assert method_params("ipso") == {"variant": str, "confidential": list, "mutual": bool}
    assert method_params("micdp") == {"k": int, "epsilon": float}
    assert set(method_params("pram")) == {"pd", "alpha", "matrix", "strata", "variant"}
    assert {"width", "n_groups", "min_frequency"} <= set(method_params("global_recoding"))
    with pytest.raises(LinkriskError, match="known: .*mdav"):
        method_params("nope")


@pytest.mark.parametrize("method", sorted(CASES))
def test_contract_every_method(method, mixed):
    before = mixed.copy(deep=True)
    out1 = mask(mixed, method, seed=7, **CASES[method])
    out2 = mask(mixed, method, seed=7, **CASES[method])
    pd.testing.assert_frame_equal(mixed, before)                # input untouched
    pd.testing.assert_frame_equal(out1, out2)                   # same seed, same output
    assert list(out1.columns) == list(mixed.columns)
    assert out1.index.equals(mixed.index)
    spec = METHODS[method]
    masked = [c for c in mixed.columns if not out1[c].equals(mixed[c])]
    assert masked, "something must change"
    if spec.kind == "numeric":
        # non-numeric columns and the confidential one pass through unchanged
        assert set(masked) <= {"v1", "v2", "v3"} - set(CASES[method].get("confidential", []))
    if not spec.deterministic:
        other = mask(mixed, method, seed=8, **CASES[method])
        assert not other.equals(out1)
    else:
        pd.testing.assert_frame_equal(mask(mixed, method, seed=8, **CASES[method]), out1)


def test_generator_seed_is_used_and_advanced(cont):
    g = np.random.default_rng(3)
    a = mask(cont, "noise", a=0.1, seed=g)
    b = mask(cont, "noise", a=0.1, seed=g)
    assert not a.equals(b)
    pd.testing.assert_frame_equal(a, mask(cont, "noise", a=0.1, seed=3))


def test_deterministic_ipso_a_ignores_seed(cont):
    a = mask(cont, "ipso", variant="A", confidential=["v4"], seed=1)
    pd.testing.assert_frame_equal(a, mask(cont, "ipso", variant="A", confidential=["v4"]))


def test_columns_subset_and_passthrough(cont):
    out = mask(cont, "noise", columns=["v2"], a=0.5, seed=0)
    assert not out["v2"].equals(cont["v2"])
    for c in ("v1", "v3", "v4"):
        pd.testing.assert_series_equal(out[c], cont[c])


def test_default_columns(mixed):
    out = mask(mixed, "pram", pd=0.0, alpha=1.0, seed=0)  # categorical columns only
    for c in ("v1", "v2", "v3"):
        pd.testing.assert_series_equal(out[c], mixed[c])
    out = mask(mixed, "top_coding", quantile=0.5)           # ordered categoricals first
    assert not out["edu"].equals(mixed["edu"])
    pd.testing.assert_series_equal(out["region"], mixed["region"])
    out = mask(mixed.drop(columns=["edu"]), "top_coding", quantile=0.5)  # else numeric
    assert not out["v1"].equals(mixed["v1"])


def test_int_columns_and_cli_strings(census_csv):
    df = census_csv.iloc[:120, :5]
    out = mask(df, "mdav", k="3")                           # CLI passes strings
    pd.testing.assert_frame_equal(out, mask(df, "mdav", k=3))
    assert (out.dtypes == np.float64).all()                 # means are not integers
    swapped = mask(df, "rank_swap", p="10", seed=1)
    assert (swapped.dtypes == df.dtypes).all()              # swapped values keep int64
    out = mask(df, "ipso", variant="a", confidential="FEDTAX,PTOTVAL")
    pd.testing.assert_series_equal(out["FEDTAX"], df["FEDTAX"])


# ------------------------------------------------------------------ validation


def test_unknown_method_lists_names(cont):
    with pytest.raises(LinkriskError, match="unknown masking method 'swap'.*rank_swap.*pram"):
        mask(cont, "swap")


def test_unknown_parameter_lists_accepted(cont):
    with pytest.raises(LinkriskError, match="unknown parameter 'kk'.*accepts k"):
        mask(cont, "mdav", kk=3)


@pytest.mark.parametrize("method,params,msg", [
    ("mdav", dict(k=0), "k=0"),
    ("mdav", dict(k=301), "k=301"),
    ("microaggregation_ir", dict(k=-1), "1 <= k <= n"),
    ("micdp", dict(k=1000, epsilon=1), "k=1000"),
    ("mdav", dict(k=2.5), "integer"),
    ("mdav", dict(k="abc"), "integer"),
    ("mdav", dict(), "needs k"),
    ("rank_swap", dict(p=0), r"\(0, 100\]"),
    ("rank_swap", dict(p=101), r"\(0, 100\]"),
    ("rank_swap_pdist", dict(p=-5), r"\(0, 100\]"),
    ("rank_swap_pbuckets", dict(p=0), "buckets"),
    ("multiplicative_noise", dict(b=1.5), "negative"),
    ("multiplicative_noise", dict(b=0.0), r"\(0, 1\]"),
    ("micdp", dict(k=3, epsilon=0), "epsilon"),
    ("micdp", dict(k=3, epsilon=-1), "epsilon"),
    ("rank_shuffle", dict(q=1), "q=1"),
    ("rank_shuffle", dict(q=5, s=0), "s=0"),
    ("rank_shuffle", dict(q=5, s=6), "s=6"),
    ("noise", dict(a=-0.1), "positive"),
    ("noise", dict(), "needs a"),
    ("noise", dict(a=0.1, percent=10), "not both"),
    ("ipso", dict(variant="D", confidential=["v4"]), "variant"),
    ("ipso", dict(variant="A"), "confidential"),
    ("ipso", dict(variant="A", confidential=["zz"]), "zz"),
    ("data_shuffle", dict(confidential=["v9"]), "v9"),
])
def test_parameter_errors(cont, method, params, msg):
    with pytest.raises(LinkriskError, match=msg):
        mask(cont, method, seed=0, **params)


def test_confidential_overlapping_columns(cont):
    with pytest.raises(LinkriskError, match="both in columns and in confidential"):
        mask(cont, "ipso", variant="B", confidential=["v1"], columns=["v1", "v2"])


@pytest.mark.parametrize("method", NUMERIC_METHODS)
def test_nan_in_masked_column(method, cont):
    df = cont.copy()
    df.iloc[5, 0] = np.nan
    params = {**CASES[method], "confidential": ["v4"]} if "confidential" in CASES[method] \
        else CASES[method]
    with pytest.raises(LinkriskError, match="missing values"):
        mask(df, method, seed=0, **params)


@pytest.mark.parametrize("method", NUMERIC_METHODS)
def test_non_numeric_column_refused(method, mixed):
    params = CASES[method]
    with pytest.raises(LinkriskError, match="'region' is not numeric"):
        mask(mixed, method, columns=["v1", "region"], seed=0, **params)


def test_nan_in_categorical_column(mixed):
    df = mixed.copy()
    df.loc[df.index[3], "region"] = np.nan
    with pytest.raises(LinkriskError, match="missing values"):
        mask(df, "pram", columns=["region"], seed=0)


def test_bad_columns_and_frames(cont):
    with pytest.raises(LinkriskError, match="no column named 'zz'"):
        mask(cont, "noise", columns=["zz"], a=0.1)
    with pytest.raises(LinkriskError, match="twice"):
        mask(cont, "noise", columns=["v1", "v1"], a=0.1)
    with pytest.raises(LinkriskError, match="empty"):
        mask(cont, "noise", columns=[], a=0.1)
    with pytest.raises(LinkriskError, match="DataFrame"):
        mask(cont.to_numpy(), "noise", a=0.1)
    with pytest.raises(LinkriskError, match="no rows"):
        mask(cont.iloc[:0], "noise", a=0.1)
    with pytest.raises(LinkriskError, match="seed"):
        mask(cont, "noise", a=0.1, seed=-1)
    with pytest.raises(LinkriskError, match="no numeric column"):
        mask(pd.DataFrame({"s": ["a", "b"]}), "noise", a=0.1)
    with pytest.raises(LinkriskError, match="no categorical column"):
        mask(continuous(20, 2), "pram")
