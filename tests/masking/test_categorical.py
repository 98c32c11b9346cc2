"""PRAM, top/bottom coding and global recoding."""

import numpy as np
import pandas as pd
import pytest

from linkrisk.errors import LinkriskError
from linkrisk.masking import (
    bottom_coding_map,
    coding_map,
    global_recoding_map,
    invariant_pram_matrix,
    mask,
    pram_matrix,
    pram_matrix_frame,
    pram_support,
    top_coding_map,
)

CATS = ["a", "b", "c", "d"]
PROBS = [0.5, 0.25, 0.15, 0.1]


def _nominal(n, seed=0, probs=PROBS):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": pd.Categorical(rng.choice(CATS, n, p=probs), categories=CATS),
                         "num": np.arange(n, dtype=float)})


# ------------------------------------------------------------------ PRAM


def test_invariant_matrix_is_stochastic_and_invariant():
    rng = np.random.default_rng(0)
    f = np.array([50.0, 30, 15, 4, 1])
    for pd_, alpha in [(0.8, 0.5), (0.3, 1.0), (0.0, 0.7)]:
        m = invariant_pram_matrix(f, pd_, alpha, rng)
        assert (m >= 0).all()
        np.testing.assert_allclose(m.sum(axis=1), 1, atol=1e-12)
        np.testing.assert_allclose(f @ m, f, rtol=1e-10)         # fᵀ(αR + (1−α)I) = fᵀ
    assert np.array_equal(invariant_pram_matrix(f, 1.0, 0.5, rng), np.eye(5))  # pd=1: P = I
    assert np.array_equal(invariant_pram_matrix(f, 0.5, 0.0, rng), np.eye(5))  # α=0: I


def test_pram_transitions_follow_the_matrix():
    n = 40_000
    df = _nominal(n, seed=1)
    out = mask(df, "pram", pd=0.5, alpha=1.0, seed=2)
    m = pram_matrix_frame(out.attrs["pram_matrices"]["g"]).loc[CATS, CATS].to_numpy()
    np.testing.assert_allclose(m.sum(axis=1), 1, atol=1e-12)
    counts = pd.crosstab(df["g"], out["g"]).reindex(index=CATS, columns=CATS, fill_value=0)
    for i, c in enumerate(CATS):
        nc = counts.loc[c].sum()
        emp = counts.loc[c].to_numpy() / nc
        se = np.sqrt(m[i] * (1 - m[i]) / nc)
        assert (np.abs(emp - m[i]) <= 5 * se + 1e-12).all()
    assert out["num"].equals(df["num"])


def test_pram_keeps_marginals_in_expectation():
    n = 2000
    df = _nominal(n, seed=3)
    f = df["g"].value_counts().reindex(CATS).to_numpy()
    draws = np.array([mask(df, "pram", columns=["g"], pd=0.3, alpha=1.0, seed=s)["g"]
                      .value_counts().reindex(CATS).to_numpy() for s in range(60)])
    avg = draws.mean(axis=0)
    # each draw's count has sd ≤ sqrt(n/4); the mean over 60 draws is much tighter
    assert (np.abs(avg - f) < 4 * np.sqrt(n / 4 / 60)).all()
    assert (draws != f).any()    # single draws do move


def test_pram_matrix_function_matches_mask():
    df = _nominal(500, seed=4)
    m = pram_matrix(df["g"], pd=0.6, alpha=0.4, seed=12)
    out = mask(df, "pram", columns=["g"], pd=0.6, alpha=0.4, seed=12)
    pd.testing.assert_frame_equal(m, pram_matrix_frame(out.attrs["pram_matrices"]["g"]),
                                  check_index_type=False, check_column_type=False)


def test_pram_user_matrix_honoured():
    df = _nominal(3000, seed=5)
    perm = pd.DataFrame(np.eye(4)[[1, 2, 3, 0]], index=CATS, columns=CATS)  # a→b→c→d→a
    out = mask(df, "pram", columns=["g"], matrix=perm, seed=0)
    shift = dict(zip(CATS, CATS[1:] + CATS[:1], strict=True))
    assert out["g"].tolist() == [shift[v] for v in df["g"]]
    # a stochastic user matrix, as an array over the categories
    m = np.array([[0.6, 0.4, 0, 0], [0, 1, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0, 1]])
    out = mask(df, "pram", columns=["g"], matrix=m, seed=1)
    a = df["g"] == "a"
    assert set(out.loc[a, "g"]) == {"a", "b"}
    assert abs((out.loc[a, "g"] == "b").mean() - 0.4) < 0.05
    assert (out.loc[df["g"] == "b", "g"] == "b").all()


def test_pram_user_matrix_may_add_categories():
    df = pd.DataFrame({"g": ["x", "y"] * 50})
    m = pd.DataFrame([[0, 1, 0], [0, 0, 1], [0, 0, 1]], index=["x", "y", "z"],
                     columns=["x", "y", "z"])
    out = mask(df, "pram", matrix=m, seed=0)
    assert out["g"].tolist() == ["y", "z"] * 50
    assert pram_support(out.attrs["pram_matrices"]["g"]) == {"x": {"y"}, "y": {"z"},
                                                              "z": {"z"}}


@pytest.mark.parametrize("matrix,msg", [
    (np.full((4, 4), 0.3), "sum to 1"),
    (np.eye(3), "4×4"),
    (pd.DataFrame(np.eye(3), index=CATS[:3], columns=CATS[:3]), "no row for category"),
    (-np.eye(4), "probabilities"),
])
def test_pram_user_matrix_errors(matrix, msg):
    with pytest.raises(LinkriskError, match=msg):
        mask(_nominal(100), "pram", columns=["g"], matrix=matrix, seed=0)


def test_pram_parameter_errors():
    df = _nominal(50)
    with pytest.raises(LinkriskError, match="pd=1.5"):
        mask(df, "pram", pd=1.5)
    with pytest.raises(LinkriskError, match="alpha=-0.1"):
        mask(df, "pram", alpha=-0.1)
    with pytest.raises(LinkriskError, match="both masked and strata"):
        mask(df, "pram", columns=["g"], strata=["g"])


def test_pram_strata():
    n = 600
    s = np.repeat(["s1", "s2"], n // 2)
    g = np.where(s == "s1", np.resize(["a", "b"], n), np.resize(["c", "d"], n))
    df = pd.DataFrame({"g": g, "s": s})
    out = mask(df, "pram", columns=["g"], strata=["s"], pd=0.0, alpha=1.0, seed=0)
    # invariant PRAM within a stratum never produces a category absent from that stratum
    assert set(out.loc[df.s == "s1", "g"]) <= {"a", "b"}
    assert set(out.loc[df.s == "s2", "g"]) <= {"c", "d"}
    assert (out["g"] != df["g"]).mean() > 0.1
    assert set(out.attrs["pram_matrices"]["g"]) == {"s1", "s2"}
    mixed = mask(df, "pram", columns=["g"], pd=0.0, alpha=1.0, seed=0)
    assert set(mixed.loc[df.s == "s1", "g"]) > {"a", "b"}


def test_pram_keeps_dtypes(mixed):
    out = mask(mixed, "pram", pd=0.2, seed=3)
    assert out["edu"].dtype == mixed["edu"].dtype and out["edu"].cat.ordered
    assert out["region"].dtype == mixed["region"].dtype
    assert out["label"].dtype == mixed["label"].dtype
    assert (out["edu"] != mixed["edu"]).any()


def test_pram_keeps_unused_categories():
    df = pd.DataFrame({"g": pd.Categorical(["a", "b"] * 20, categories=["a", "b", "zz"])})
    out = mask(df, "pram", pd=0.0, alpha=1.0, seed=0)
    assert list(out["g"].cat.categories) == ["a", "b", "zz"]
    assert "zz" not in set(out["g"])


# ------------------------------------------------------------------ top / bottom coding

ORD = ["none", "primary", "secondary", "bachelor", "master", "phd"]


def _ordinal(values):
    return pd.Series(pd.Categorical(values, categories=ORD, ordered=True), name="edu")


def test_top_coding_numeric_by_hand():
    df = pd.DataFrame({"x": [1, 5, 10, 3, 8, 10, 2, 7, 6, 4]})
    out = mask(df, "top_coding", threshold=6)
    assert out["x"].tolist() == [1, 5, 6, 3, 6, 6, 2, 6, 6, 4]
    assert out["x"].dtype == np.int64
    # inverted-CDF quantile: sorted 1,2,3,4,5,6,7,8,10,10; 0.8 → 8
    assert mask(df, "top_coding", quantile=0.8)["x"].tolist() == [1, 5, 8, 3, 8, 8, 2, 7, 6, 4]
    out = mask(df, "bottom_coding", quantile=0.3)           # 0.3 → 3
    assert out["x"].tolist() == [3, 5, 10, 3, 8, 10, 3, 7, 6, 4]
    assert mask(df, "bottom_coding", threshold=2.5)["x"].tolist()[:4] == [2.5, 5, 10, 3]
    assert top_coding_map(df["x"], threshold=6) == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6,
                                                    7: 6, 8: 6, 10: 6}


def test_top_and_bottom_coding_ordinal_by_hand():
    s = _ordinal(["none", "primary", "phd", "master", "secondary", "phd", "bachelor",
                  "secondary", "primary", "secondary"])
    df = s.to_frame()
    out = mask(df, "top_coding", threshold="bachelor")
    assert out["edu"].tolist() == ["none", "primary", "bachelor", "bachelor", "secondary",
                                   "bachelor", "bachelor", "secondary", "primary", "secondary"]
    assert out["edu"].dtype == df["edu"].dtype                   # categories and order kept
    # counts 1,2,3,1,1,2 → cdf .1,.3,.6,.7,.8,1: q=0.6 → secondary
    out = mask(df, "top_coding", quantile=0.6)
    assert set(out["edu"]) == {"none", "primary", "secondary"}
    out = mask(df, "bottom_coding", threshold="secondary")
    assert out["edu"].tolist()[:4] == ["secondary", "secondary", "phd", "master"]
    assert bottom_coding_map(s, quantile=0.3) == {
        "none": "primary", "primary": "primary", "secondary": "secondary",
        "bachelor": "bachelor", "master": "master", "phd": "phd"}


def test_coding_errors():
    df = pd.DataFrame({"x": [1.0, 2.0], "g": ["a", "b"], "o": _ordinal(["none", "phd"])})
    with pytest.raises(LinkriskError, match="exactly one of threshold"):
        mask(df, "top_coding", columns=["x"])
    with pytest.raises(LinkriskError, match="exactly one of threshold"):
        mask(df, "top_coding", columns=["x"], threshold=1, quantile=0.5)
    with pytest.raises(LinkriskError, match="nominal"):
        mask(df, "top_coding", columns=["g"], quantile=0.5)
    with pytest.raises(LinkriskError, match="not a category"):
        mask(df, "top_coding", columns=["o"], threshold="doctor")
    with pytest.raises(LinkriskError, match="must be a number"):
        mask(df, "top_coding", columns=["x"], threshold="high")
    with pytest.raises(LinkriskError, match=r"quantile=1.5"):
        mask(df, "bottom_coding", columns=["x"], quantile=1.5)


def test_per_column_thresholds():
    df = pd.DataFrame({"x": [1, 50, 100], "y": [1, 2, 3]})
    out = mask(df, "top_coding", threshold={"x": 60, "y": 2})
    assert out["x"].tolist() == [1, 50, 60] and out["y"].tolist() == [1, 2, 2]


# ------------------------------------------------------------------ global recoding


def test_global_recoding_numeric_intervals_by_hand():
    df = pd.DataFrame({"age": [23, 20, 25, 31, 44, 24]})
    out = mask(df, "global_recoding", width=5)
    iv = pd.Interval
    assert out["age"].tolist() == [iv(20, 25, "left"), iv(20, 25, "left"), iv(25, 30, "left"),
                                   iv(30, 35, "left"), iv(40, 45, "left"), iv(20, 25, "left")]
    assert out["age"].cat.ordered and len(out["age"].cat.categories) == 5  # incl. [35, 40)
    mid = mask(df, "global_recoding", width=5, midpoint=True)
    assert mid["age"].tolist() == [22.5, 22.5, 27.5, 32.5, 42.5, 22.5]
    shifted = mask(df, "global_recoding", width=10, origin=5, midpoint=True)
    assert shifted["age"].tolist() == [20, 20, 30, 30, 40, 20]
    assert global_recoding_map(df["age"], width=10)[44] == iv(40, 50, "left")


def test_global_recoding_float_edges():
    s = pd.Series([0.1, 0.2, 0.3, 0.7], name="x")
    m = global_recoding_map(s, width=0.1, origin=0.0, midpoint=True)
    np.testing.assert_allclose([m[0.1], m[0.2], m[0.3], m[0.7]], [0.15, 0.25, 0.35, 0.75])


def test_global_recoding_ordinal_by_hand():
    s = _ordinal(["none", "primary", "secondary", "bachelor", "master", "phd", "phd"])
    out = mask(s.to_frame(), "global_recoding", width=2)
    assert out["edu"].tolist() == ["none..primary", "none..primary", "secondary..bachelor",
                                   "secondary..bachelor", "master..phd", "master..phd",
                                   "master..phd"]
    assert list(out["edu"].cat.categories) == ["none..primary", "secondary..bachelor",
                                               "master..phd"]
    assert out["edu"].cat.ordered
    m = global_recoding_map(s, width=4)
    assert m["bachelor"] == "none..bachelor" and m["phd"] == "master..phd"


def test_global_recoding_nominal_by_hand():
    vals = ["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] * 2 + ["e"]
    df = pd.DataFrame({"g": pd.Categorical(vals), "s": vals})
    out = mask(df, "global_recoding", n_groups=3)
    assert out["g"].tolist() == ["a"] * 5 + ["b"] * 4 + ["other"] * 6
    assert list(out["g"].cat.categories) == ["a", "b", "other"]
    assert out["s"].tolist() == out["g"].tolist()
    out = mask(df, "global_recoding", columns=["s"], min_frequency=3)   # d, e < 3
    assert out["s"].tolist() == vals[:12] + ["other"] * 3
    assert out["s"].dtype == df["s"].dtype
    # a single rare category is pooled with the next least frequent one
    out = mask(df, "global_recoding", columns=["g"], min_frequency=2)
    assert out["g"].tolist() == vals[:12] + ["other"] * 3
    assert coding_map(df["g"], "global_recoding", min_frequency=0.25) == {  # < 3.75 records
        "a": "a", "b": "b", "c": "other", "d": "other", "e": "other"}
    assert mask(df, "global_recoding", n_groups=5).equals(df)          # nothing to merge


def test_global_recoding_errors():
    df = pd.DataFrame({"x": [1.0, 2.0], "g": ["a", "b"], "o": _ordinal(["none", "phd"])})
    with pytest.raises(LinkriskError, match="nominal; give exactly one of n_groups"):
        mask(df, "global_recoding", columns=["g"], width=2)
    with pytest.raises(LinkriskError, match="numeric; give width"):
        mask(df, "global_recoding", columns=["x"], n_groups=2)
    with pytest.raises(LinkriskError, match="whole number"):
        mask(df, "global_recoding", columns=["o"], width=1.5)
    with pytest.raises(LinkriskError, match="width=-1"):
        mask(df, "global_recoding", columns=["x"], width=-1)
    with pytest.raises(LinkriskError, match="use a larger width"):
        mask(pd.DataFrame({"x": [0.0, 1e9]}), "global_recoding", width=1)
    with pytest.raises(LinkriskError, match="no category map"):
        coding_map(df["x"], "pram")


def test_recoding_labels_are_not_coerced_into_the_column_dtype():
    df = pd.DataFrame({"b": [True, False, True], "x": [0.31, 0.45, 0.9]})
    out = mask(df, "global_recoding", columns=["b"], n_groups=1)
    assert out["b"].tolist() == ["other"] * 3          # not bool("other") == True
    iv = global_recoding_map(df["x"], width=0.1)[0.31]
    assert (iv.left, iv.right) == (0.3, 0.4)           # no 0.30000000000000004 labels
