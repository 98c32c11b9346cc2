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


def _freqcalc(mat, alpha):
    """sdcMicro's freqCalc f_k, record by record (−1 = missing): a complete pattern counts
    its own records and α per record with missing values (not all missing, unless m = 1)
    that agrees with it where observed; a pattern with missing values its own records, 1
    per agreeing complete record and α per agreeing record of another pattern with missing
    values; an all-missing pattern n."""
    n, m = mat.shape
    na = mat < 0
    fk = np.zeros(n)
    for r in range(n):
        if na[r].all():
            fk[r] = n
            continue
        for s in range(n):
            if (mat[s] == mat[r]).all():
                fk[r] += 1
            elif ((mat[s] == mat[r]) | na[s] | na[r]).all():
                if not na[r].any():
                    if na[s].any() and (not na[s].all() or m == 1):
                        fk[r] += alpha
                elif not na[s].any():
                    fk[r] += 1
                else:
                    fk[r] += alpha
    return fk


def _sdcmicro_ls(codes, k, importance, alpha=1.0):
    """sdcMicro's suppSubset (R/localSuppression.R) and cpp_calcSuppInds
    (src/calcSuppInds.cpp) transcribed as they run, in plain Python (−1 = NA)."""
    n, m = codes.shape
    k = min(k, n)
    # 1) `xKeys[is.na(kV), kV := unique(kV)[1]]`: j evaluated on the NA subset, whose
    #    unique(kV)[1] is NA -- the fill-in is a no-op
    x_keys = codes.copy()
    for j in range(m):
        sub = np.flatnonzero(x_keys[:, j] < 0)
        if sub.size:
            x_keys[sub, j] = list(dict.fromkeys(x_keys[sub, j].tolist()))[0]
    # 2) fk = .N by pattern (NA a value of its own in data.table's grouping);
    # 3) of every group with fk > k, `tail(.SD, fk - k)` is removed (setkey is stable)
    groups = {}
    for r in range(n):
        groups.setdefault(tuple(x_keys[r]), []).append(r)
    weg = {r for rows in groups.values() if len(rows) > k for r in rows[k:]}
    work = [r for r in range(n) if r not in weg]
    mat = codes[work].copy()
    # 4) the greedy loop
    col_sorted = sorted(range(m), key=lambda j: (m + 1) - importance[j])   # order(importanceI)
    ff = _freqcalc(mat, alpha)
    while True:
        rk = 1.0 / ff                                   # indivRisk without weights: 1/fk
        problems = sorted((i for i in range(len(mat)) if ff[i] < k), key=lambda i: -rk[i])
        for i in problems:
            # cpp_calcSuppInds(mat, mat[i, ], alpha, id = i)
            dists = [sum(1 for j in range(m) if mat[r, j] >= 0 and mat[i, j] >= 0
                         and mat[r, j] != mat[i, j]) for r in range(len(mat))]
            min_dist = m
            for d in dists:
                if 0 < d < min_dist:
                    min_dist = d
            ind = [r for r in range(len(mat)) if dists[r] == min_dist]
            if sum(dists) == 0 and alpha < 1:
                ind = [i]
            assert ind, "Error the length of the index vector is 0."
            col = None
            for cc in col_sorted:
                if len(ind) == 1 and ind[0] == i:
                    z = [r for r in ind if mat[r, cc] >= 0]
                else:       # NA != x is NA, which `which` drops
                    z = [r for r in ind if mat[i, cc] >= 0 and mat[r, cc] >= 0
                         and mat[i, cc] != mat[r, cc]]
                if z:
                    col = cc
                    break
            assert col is not None      # sdcMicro would loop for ever
            mat[i, col] = -1
        ff = _freqcalc(mat, alpha)
        if (ff >= k).all():
            break
    out = codes.copy()
    out[work] = mat
    return out


def test_file_already_k_anonymous_with_missing_values_gets_no_suppression():
    # issue #38: a, b = (1,2), (1,2), (1,NA), (1,1) has f_k = 3, 3, 4, 2 -- 2-anonymous.
    # sdcMicro's fill-in leaves the NA, no group has more than k records, nothing is
    # suppressed; filling the NA with the column's first value (2) dropped record 3 from
    # the work file, leaving (1,1) unique there, and suppressed one value.
    df = pd.DataFrame({"a": [1, 1, 1, 1], "b": [2, 2, np.nan, 1]})
    assert sample_frequencies(df, ["a", "b"]).fk.tolist() == [3, 3, 4, 2]
    out = linkrisk.mask(df, "local_suppression", k=2)
    assert out.attrs["local_suppression"]["total"] == 0
    pd.testing.assert_frame_equal(out, df)
    from linkrisk.masking.suppression import default_importance
    from linkrisk.measures.frequency import key_codes

    codes, _ = key_codes(df, ["a", "b"])
    np.testing.assert_array_equal(_sdcmicro_ls(codes, 2, default_importance(codes)), codes)


def test_alpha_sums_that_miss_a_whole_number_count_as_it():
    # α = 0.2: the complete record's f_k is 1 + 0.2·2 + 0.2·2 + 0.2·1, which the grouped
    # sums give as 1.9999999999999998; it is 2, so the file is 2-anonymous
    from linkrisk.grouping import frequencies_from_codes
    from linkrisk.measures.frequency import key_codes

    x = pd.DataFrame([[0, 0, 0], [None, 0, 0], [None, 0, 0], [0, None, 0], [0, None, 0],
                      [0, 0, None]], columns=list("abc"), dtype=float)
    codes, size = key_codes(x, list("abc"))
    assert frequencies_from_codes(codes, size, None, 0.2)[0][0] < 2      # the raw sum
    assert sample_frequencies(x, list("abc"), alpha=0.2).fk.min() == 2.0
    out = linkrisk.mask(x, "local_suppression", k=2, alpha=0.2)
    assert out.attrs["local_suppression"]["total"] == 0


@pytest.mark.parametrize("seed", range(8))
def test_compiled_greedy_matches_sdcmicro_transcription(seed):
    from linkrisk.masking.suppression import default_importance, suppress_codes
    from linkrisk.measures.frequency import key_codes

    # few categories, so that patterns with missing values fall in groups of more than k
    # records once their NAs are filled in: a fill-in that does something (as this code
    # had) differs from sdcMicro on 7 of these 8 files
    rng = np.random.default_rng(seed)
    m = 3 + seed % 2
    x = pd.DataFrame(rng.integers(0, 2 + seed % 3, size=(80, m)).astype(float))
    x[rng.random(x.shape) < (0.03, 0.08, 0.15)[seed % 3]] = np.nan
    if seed == 7:
        x.iloc[[5, 40]] = np.nan     # all-missing records
    codes, size = key_codes(x, list(x.columns))
    imp = default_importance(codes)
    for k in (2, 3, 5):
        for alpha in (1.0, 0.5):
            got, _ = suppress_codes(codes, size, k, imp, alpha)
            np.testing.assert_array_equal(got, _sdcmicro_ls(codes, k, imp, alpha))


def test_pass_where_every_remaining_pattern_has_a_missing_value():
    # k = 5 on a tiny file: later passes work on patterns that all have missing values
    x = pd.DataFrame({"a": list("aabbcd"), "b": list("xyxyzz"), "c": list("112233")})
    out = linkrisk.mask(x, "local_suppression", k=5)
    assert sample_frequencies(out, list("abc")).fk.min() >= 5
