"""local_suppression: sdcMicro's greedy suppression to k-anonymity."""

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk import LinkriskError
from linkrisk.measures.frequency import sample_frequencies


def test_sdcmicro_freqcalc_example_one_suppression():
    # sdcMicro tests/testthat/test_freqCalc.R: kAnon on this file suppresses record 5's
    # status, after which fk = 3, 3, 3, 3, 5
    df = pd.DataFrame({"region": ["A"] * 5,
                       "status": ["single", "married", "married", "single", "widow"],
                       "agegroup": ["5"] * 5})
    out = linkrisk.mask(df, "local_suppression", k=2)
    assert out.attrs["local_suppression"]["total"] == 1
    assert out["status"].isna().tolist() == [False] * 4 + [True]
    assert sample_frequencies(out, list(df.columns)).fk.tolist() == [3, 3, 3, 3, 5]


def test_importance_decides_the_suppressed_key():
    # record 5 (a, 2) is at distance 1 from (a, 1) and from (b, 2): either key would do
    df = pd.DataFrame({"x": ["a", "a", "b", "b", "a"], "y": [1, 1, 2, 2, 2],
                       "z": [0.5, 1.5, 2.5, 3.5, 4.5]})
    out = linkrisk.mask(df, "local_suppression", k=2, keys=["x", "y"], columns=["x", "y"])
    # default: equal category counts, the first key is more important, y goes first
    assert out["y"].isna().tolist() == [False] * 4 + [True]
    assert out["x"].notna().all()
    out2 = linkrisk.mask(df, "local_suppression", k=2, keys=["x", "y"], columns=["x", "y"],
                         importance={"x": 2, "y": 1})
    assert out2["x"].isna().tolist() == [False] * 4 + [True]
    assert out2["y"].notna().all()
    assert out2.attrs["local_suppression"]["total"] == 1
    pd.testing.assert_series_equal(out2["z"], df["z"])     # not a key: untouched


def test_k_anonymous_file_is_left_alone():
    df = pd.DataFrame({"x": list("aabbcc"), "y": list("112233")})
    out = linkrisk.mask(df, "local_suppression", k=2)
    pd.testing.assert_frame_equal(out, df)
    assert out.attrs["local_suppression"]["total"] == 0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_result_is_k_anonymous_and_touches_only_unsafe_records(seed, k):
    rng = np.random.default_rng(seed)
    n, m = 300, 4
    x = pd.DataFrame({f"k{j}": rng.choice(list("abcdef"[: 2 + j]), size=n,
                                          p=None) for j in range(m)})
    keys = list(x.columns)
    before = sample_frequencies(x, keys).fk.to_numpy()
    out = linkrisk.mask(x, "local_suppression", k=k)
    after = sample_frequencies(out, keys).fk.to_numpy()
    assert after.min() >= k
    touched = out[keys].isna().any(axis=1).to_numpy()
    # without missing values in the input a safe record never loses a value
    assert not (touched & (before >= k)).any()
    # deterministic
    pd.testing.assert_frame_equal(out, linkrisk.mask(x, "local_suppression", k=k))


def test_existing_missing_values_count_as_wildcards():
    rng = np.random.default_rng(7)
    x = pd.DataFrame(rng.integers(0, 4, size=(200, 3)).astype(float), columns=list("abc"))
    x[rng.random(x.shape) < 0.1] = np.nan
    out = linkrisk.mask(x, "local_suppression", k=3)
    assert sample_frequencies(out, list("abc")).fk.min() >= 3
    assert (out.isna() | ~x.isna()).all().all()        # existing NAs stay missing


def test_categorical_dtype_and_other_columns_kept(data_dir):
    from linkrisk.datasets import HOUSEHOLD_QI, load

    hh = load("household", data_dir)
    out = linkrisk.mask(hh, "local_suppression", k=3, keys=HOUSEHOLD_QI)
    assert all(isinstance(out[c].dtype, pd.CategoricalDtype) for c in HOUSEHOLD_QI)
    assert sample_frequencies(out, HOUSEHOLD_QI).fk.min() >= 3
    info = out.attrs["local_suppression"]
    assert info["total"] == int(out.isna().sum().sum()) > 0
    raw = load("household", data_dir, raw=True)
    out_raw = linkrisk.mask(raw, "local_suppression", k=3, keys=HOUSEHOLD_QI)
    assert out_raw.attrs["local_suppression"]["total"] == info["total"]
    pd.testing.assert_series_equal(out_raw["sampling_weight"], raw["sampling_weight"])


def test_bad_parameters_are_clear_errors():
    df = pd.DataFrame({"x": list("aab"), "y": list("112"), "v": [1.0, 2.0, 3.0]})
    with pytest.raises(LinkriskError, match="k must"):
        linkrisk.mask(df, "local_suppression", k=0)
    with pytest.raises(LinkriskError, match="not among the masked columns"):
        linkrisk.mask(df, "local_suppression", keys=["x", "v"])
    with pytest.raises(LinkriskError, match="importance"):
        linkrisk.mask(df, "local_suppression", importance=[1])
    with pytest.raises(LinkriskError, match="alpha"):
        linkrisk.mask(df, "local_suppression", alpha=3)


def test_sdcmicro_greedy_is_reproduced_where_it_is_not_optimal():
    # sdcMicro tests/testthat/test_ls_greedy2.R, "3x2 witness": the optimum is 2
    # suppressions, "sdcMicro-style first-differing-key logic needs three"
    x = pd.DataFrame({"a": ["1", "1", "2"], "b": ["1", "2", "2"]})
    out = linkrisk.mask(x, "local_suppression", k=2)
    assert out.attrs["local_suppression"]["total"] == 3
    assert out.isna().to_numpy().tolist() == [[False, True], [True, False], [True, False]]
    # same file: one cheap suppression against a big class (k = 3)
    x1 = pd.DataFrame({"a": ["1"] * 11, "b": ["1"] * 10 + ["9"]})
    out1 = linkrisk.mask(x1, "local_suppression", k=3)
    assert out1.attrs["local_suppression"]["total"] == 1 and pd.isna(out1.loc[10, "b"])


def _greedy_reference(codes, size, k, importance):
    """sdcMicro's suppSubset written out in plain Python (−1 = missing)."""
    from linkrisk.measures.frequency import frequencies_from_codes

    n, m = codes.shape
    k = min(k, n)
    imputed = codes.copy()
    for j in range(m):
        if codes[0, j] >= 0:
            imputed[codes[:, j] < 0, j] = codes[0, j]
    seen, work = {}, []
    for r in range(n):
        key = tuple(imputed[r])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= k:
            work.append(r)
    mat = codes[work].copy()
    order = sorted(range(m), key=lambda j: -importance[j])     # stable: ties by column
    while True:
        fk = frequencies_from_codes(mat, size)[0]
        bad = [i for i in np.argsort(fk, kind="stable") if fk[i] < k]
        if not bad:
            break
        for i in bad:
            d = [sum(1 for j in range(m) if mat[i, j] >= 0 and mat[r, j] >= 0
                     and mat[i, j] != mat[r, j]) for r in range(len(mat))]
            dmin = min(x for x in d if x > 0)
            near = [r for r in range(len(mat)) if d[r] == dmin]
            col = next(j for j in order if any(mat[r, j] >= 0 and mat[i, j] >= 0
                                               and mat[r, j] != mat[i, j] for r in near))
            mat[i, col] = -1
    out = codes.copy()
    out[work] = mat
    return out


@pytest.mark.parametrize("seed", range(6))
def test_compiled_greedy_matches_a_plain_reference(seed):
    from linkrisk.masking.suppression import default_importance, suppress_codes
    from linkrisk.measures.frequency import key_codes

    rng = np.random.default_rng(seed)
    m = 3 + seed % 2
    x = pd.DataFrame(rng.integers(0, 3 + seed % 3, size=(80, m)).astype(float))
    if seed % 3 == 2:
        x[rng.random(x.shape) < 0.1] = np.nan
    codes, size = key_codes(x, list(x.columns))
    imp = default_importance(codes)
    for k in (2, 3):
        got, _ = suppress_codes(codes, size, k, imp)
        np.testing.assert_array_equal(got, _greedy_reference(codes, size, k, imp))


def test_pass_where_every_remaining_pattern_has_a_missing_value():
    # k = 5 on a tiny file: later passes work on patterns that all have missing values
    x = pd.DataFrame({"a": list("aabbcd"), "b": list("xyxyzz"), "c": list("112233")})
    out = linkrisk.mask(x, "local_suppression", k=5)
    assert sample_frequencies(out, list("abc")).fk.min() >= 5
