"""Attribute disclosure measures against independent computations: sdcMicro's test values,
a pandas groupby on Household, and the worked examples of Li, Li & Venkatasubramanian
(2007)."""

import numpy as np
import pandas as pd
import pytest

from linkrisk.errors import LinkriskError
from linkrisk.measures.attribute import (
    emd_equal,
    emd_ordered,
    l_diversity,
    linked_inference,
    t_closeness,
)


def test_sdcmicro_test_ldiversity_values():
    # sdcMicro tests/testthat/test_ldiversity.R, first case (a missing key is a value)
    df = pd.DataFrame({
        "sex": ["female", "female", "female", "male", "male", "female", "female"],
        "occupation": [None, None, None, "teacher", "teacher", "nurse", "nurse"],
        "ethnicity": ["other"] * 5 + ["majority"] * 2,
        "sensitive": [1, 0, 2, 1, 0, 0, 1],
    })
    r = l_diversity(df, ["sex", "occupation", "ethnicity"], "sensitive")
    assert r.per_record["sensitive_distinct"].tolist() == [3, 3, 3, 2, 2, 2, 2]
    # third case: two sensitive variables in one pattern
    df = pd.DataFrame({"key": [1, 1, 1], "sens1": list("ABA"), "sens2": list("XYZ")})
    r = l_diversity(df, ["key"], ["sens1", "sens2"])
    assert r.per_record.loc[0, "sens1_distinct"] == 2
    assert r.per_record.loc[0, "sens2_distinct"] == 3


def test_entropy_and_recursive_by_hand():
    # one pattern with counts 4, 2, 1, 1 (n = 8); c = 2
    df = pd.DataFrame({"k": [0] * 8, "s": list("aaaabbcd")})
    r = l_diversity(df, ["k"], "s", c=2)
    p = np.array([4, 2, 1, 1]) / 8
    assert r.per_record.loc[0, "s_entropy"] == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    # r1 = 4 < 2·(2+1+1) = 8 → l ≥ 2; 4 < 2·(1+1) = 4 is false → l = 2
    assert r.per_record.loc[0, "s_recursive"] == 2
    assert l_diversity(df, ["k"], "s", c=3).per_record.loc[0, "s_recursive"] == 3
    # a missing sensitive value is one more category beside the others (sdcMicro)
    df2 = pd.DataFrame({"k": [0, 0, 0, 1, 1], "s": ["a", "a", None, None, None]})
    r2 = l_diversity(df2, ["k"], "s").per_record
    assert r2["s_distinct"].tolist() == [2, 2, 2, 0, 0]
    assert r2.loc[0, "s_entropy"] == pytest.approx(np.exp(-(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))))


def test_household_l_diversity_equals_groupby():
    from linkrisk.datasets import HOUSEHOLD_QI, load

    hh = load("household", raw=True)
    keys = [c for c in HOUSEHOLD_QI if c != "relat"]
    r = l_diversity(hh, keys, "relat")
    g = hh.groupby(keys, dropna=False)["relat"]
    np.testing.assert_array_equal(r.per_record["relat_distinct"], g.transform("nunique"))

    def ent(s):
        p = s.value_counts(normalize=True).to_numpy()
        return float(np.exp(-(p * np.log(p)).sum()))

    np.testing.assert_allclose(r.per_record["relat_entropy"], g.transform(ent))
    size = g.transform("size")
    homog = (g.transform("nunique") == 1) & (size >= 2)
    assert r.summary["relat"]["homogeneous_records"] == int(homog.sum())
    assert r.summary["relat"]["sample_uniques"] == int(hh.groupby(keys).size().eq(1).sum())
    # entropy l is a real number, not floored
    assert (r.per_record["relat_entropy"] % 1 != 0).any()


def test_t_closeness_li_et_al_salary_example():
    # Li et al. 2007, section 4.2: salaries 3k..11k; P1 = {3k,4k,5k}: 0.375,
    # P2 = {6k,8k,11k}: 0.167 under the ordered distance
    q = np.full(9, 1 / 9)
    p1 = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0]) / 3
    p2 = np.array([0, 0, 0, 1, 0, 1, 0, 0, 1]) / 3
    assert emd_ordered(p1, q) == pytest.approx(0.375)
    assert emd_ordered(p2, q) == pytest.approx(1 / 6)
    df = pd.DataFrame({"zip": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
                       "salary": [3, 4, 5, 6, 8, 11, 7, 9, 10]})
    t = t_closeness(df, ["zip"], "salary")
    assert t.summary["salary"]["ground"] == "ordered"
    assert t.summary["salary"]["t"] == pytest.approx(0.375)
    assert t.per_record["salary_t"].iloc[3] == pytest.approx(1 / 6)
    # equal distance: ½ Σ|p − q|; a class holding 3 of 9 equally frequent values
    assert emd_equal(p1, q) == pytest.approx(0.5 * (3 * (1 / 3 - 1 / 9) + 6 / 9))
    te = t_closeness(df, ["zip"], "salary", ground="equal")
    assert te.summary["salary"]["t"] == pytest.approx(2 / 3)


def test_t_closeness_nominal_by_hand():
    df = pd.DataFrame({"k": [0, 0, 1, 1], "d": ["flu", "flu", "flu", "cancer"]})
    t = t_closeness(df, ["k"], "d")
    # overall flu 3/4, cancer 1/4; pattern 0 all flu: ½(1/4 + 1/4) = 1/4
    assert t.summary["d"]["ground"] == "equal"
    assert t.per_record["d_t"].tolist() == pytest.approx([0.25, 0.25, 0.25, 0.25])


def test_linked_inference_counts():
    orig = pd.DataFrame({"s": ["a", "b", "c"], "x": [100.0, 200.0, 300.0]})
    rel = pd.DataFrame({"s": ["b", "a", "c"], "x": [104.0, 230.0, 301.0]})
    out = linked_inference(orig, rel, np.array([1, 1, 2]), ["s", "x"], p=5)
    assert out["s"]["inferred"] == 2          # rows 0 (a→a) and 2 (c→c)
    assert out["x"]["inferred"] == 1          # 230 vs 100 no; 230 vs 200 no; 301 vs 300 yes
    out = linked_inference(orig, rel, np.array([1, -1, 2]), "s", correct=np.array([0, 0, 1.0]))
    assert out["s"]["inferred_reidentified"] == 1
    assert out["s"]["inferred_without_identity"] == 1


def test_errors():
    df = pd.DataFrame({"k": [1], "s": [1]})
    with pytest.raises(LinkriskError, match="also be a key"):
        l_diversity(df, ["k", "s"], "s")
    with pytest.raises(LinkriskError, match="no column"):
        t_closeness(df, ["k"], "nope")
