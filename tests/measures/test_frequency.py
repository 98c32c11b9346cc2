"""Frequency and population risk: sdcMicro's published test values, hand-worked cases and
brute-force references."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

from linkrisk import LinkriskError
from linkrisk.measures.frequency import (
    frequency_risk,
    household_risk,
    individual_risk,
    sample_frequencies,
    suda2,
)

# sdcMicro tests/testthat/test_indivRisk.R: 8 records, keys A, B, C, a weight
A = [2, 3, 2, 2, 3, 3, 1, 2]
B = [3, 3, 3, 3, 3, 3, 4, 3]
C = [1, 3, 1, 2, 1, 1, 1, 1]
W = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]


def _sdc(missing: bool) -> pd.DataFrame:
    if missing:
        return pd.DataFrame({"A": [2, 3, 2, 2, 3, 3, 1, np.nan], "B": B,
                             "C": [1, 3, np.nan, 2, 1, 1, np.nan, 1], "w": W})
    return pd.DataFrame({"A": A, "B": B, "C": C, "w": W})


@pytest.mark.parametrize("missing, method, expected", [
    (False, "approx", [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883,
                       0.03931625, 0.01369863]),
    (False, "exact", [0.01355297, 0.08579129, 0.01355297, 0.17707583, 0.01877883, 0.01877883,
                      0.03931625, 0.01355297]),
    (True, "approx", [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066,
                      0.009836066, 0.039316254, 0.005973716]),
    (True, "exact", [0.013552968, 0.085791288, 0.010504889, 0.032466112, 0.009756889,
                     0.009756889, 0.039316254, 0.005962551]),
])
def test_sdcmicro_indivrisk_testthat_values(missing, method, expected):
    f = sample_frequencies(_sdc(missing), ["A", "B", "C"], weights="w")
    r = individual_risk(f.fk, f.Fk, method)
    np.testing.assert_allclose(r, expected, rtol=0, atol=5e-9)


def test_sdcmicro_unweighted_frequencies_with_missing_values():
    # test_indivRisk.R, survey=FALSE: 1/fk = 0.33333 1 0.25 0.5 0.33333 0.33333 1 0.2
    f = sample_frequencies(_sdc(True), ["A", "B", "C"])
    assert f.fk.tolist() == [3, 1, 4, 2, 3, 3, 1, 5]
    assert (f.fk == f.Fk).all()
    np.testing.assert_allclose(individual_risk(f.fk), 1 / np.array([3, 1, 4, 2, 3, 3, 1, 5]))


def test_sdcmicro_freqcalc_wildcard_example():
    # tests/testthat/test_freqCalc.R ("method 1"): fk 2,2,2,2,1; with record 5's status
    # suppressed 3,3,3,3,5
    df = pd.DataFrame({"region": ["A"] * 5,
                       "status": ["single", "married", "married", "single", "widow"],
                       "agegroup": ["5"] * 5})
    keys = ["region", "status", "agegroup"]
    assert sample_frequencies(df, keys).fk.tolist() == [2, 2, 2, 2, 1]
    df.loc[4, "status"] = None
    assert sample_frequencies(df, keys).fk.tolist() == [3, 3, 3, 3, 5]


def _freqcalc_reference(rows, w, alpha):
    """sdcMicro's freqCalc rules written out over distinct keys (None = missing)."""
    n, m = len(rows), len(rows[0])
    keys = list(dict.fromkeys(rows))
    cnt = {k: sum(r == k for r in rows) for k in keys}
    ws = {k: sum(wi for r, wi in zip(rows, w, strict=True) if r == k) for k in keys}

    def compat(a, b):
        return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))

    out = {}
    for k in keys:
        nna = sum(x is None for x in k)
        if nna == m:
            out[k] = (n, sum(w))
            continue
        f, F = cnt[k], ws[k]
        for j in keys:
            jna = sum(x is None for x in j)
            if j == k or not compat(k, j):
                continue
            if nna == 0:                # complete key: NA keys count alpha (not all-NA,
                if jna > 0 and (jna < m or m == 1):     # unless one key variable)
                    f, F = f + alpha * cnt[j], F + alpha * ws[j]
            elif jna > 0:               # NA key vs NA key: alpha
                f, F = f + alpha * cnt[j], F + alpha * ws[j]
            else:                       # NA key vs complete key: full count
                f, F = f + cnt[j], F + ws[j]
        out[k] = (f, F)
    return np.array([out[r][0] for r in rows]), np.array([out[r][1] for r in rows])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_frequencies_with_missing_match_reference(seed, alpha):
    rng = np.random.default_rng(seed)
    m = 1 + seed % 4
    n = 60
    x = rng.integers(0, 3, size=(n, m)).astype(float)
    x[rng.random((n, m)) < 0.2] = np.nan
    if seed == 5:
        x[:3] = np.nan                # all-missing records
    w = rng.uniform(1, 50, n)
    df = pd.DataFrame(x, columns=[f"k{j}" for j in range(m)])
    df["w"] = w
    rows = [tuple(None if np.isnan(v) else v for v in r) for r in x]
    f_ref, F_ref = _freqcalc_reference(rows, w, alpha)
    got = sample_frequencies(df, list(df.columns[:m]), weights="w", alpha=alpha)
    np.testing.assert_allclose(got.fk, f_ref)
    np.testing.assert_allclose(got.Fk, F_ref)


def _series(f, p):
    """E[1/F | f] under the negative binomial, summed directly."""
    F = np.arange(f, f + 400000)
    logt = (gammaln(F) - gammaln(f) - gammaln(F - f + 1) + f * np.log(p)
            + (F - f) * np.log1p(-p))
    return float(np.sum(np.exp(logt) / F))


@pytest.mark.parametrize("f", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("p", [0.02, 0.3])
def test_exact_risk_is_the_negative_binomial_expectation(f, p):
    r = individual_risk(np.array([f]), np.array([f / p]), "exact")[0]
    assert r == pytest.approx(_series(f, p), rel=1e-9)
    if f <= 2:   # approx and exact coincide below 3
        assert individual_risk(np.array([f]), np.array([f / p]))[0] == pytest.approx(r)


def _nb_inverse_mean(f, p):
    """Σ_{F≥f} (1/F)·C(F−1, f−1)·p^f·(1−p)^{F−f} summed term by term in 40-digit decimals
    (p the float's exact value), until the rest, at most t·ρ/(1−ρ) past the mode (ρ the
    falling ratio of consecutive terms), is below 10^-22 of the sum."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 40
        f, p = int(f), Decimal(float(p))
        q = 1 - p
        t = p ** int(f)                 # P(F = f)
        s = t / f
        j = 0
        while True:
            t *= (f + j) * q / (j + 1)
            j += 1
            s += t / (f + j)
            rho = (f + j) * q / (j + 1)
            if rho < 1 and t * rho / (1 - rho) / (f + j) < Decimal("1e-22") * s:
                return float(s)


@pytest.mark.parametrize("f, p", [(1, 0.9), (2, 0.999), (3, 1e-3), (40, 0.2), (63, 0.01),
                                  (64, 0.01), (172, 0.01), (300, 0.5), (1000, 0.3),
                                  (5000, 0.9)])
def test_exact_risk_for_large_f_is_the_direct_sum(f, p):
    # sdcMicro's closed form overflows (p^(1−f)) from f = 172 at p = 0.01: NaN
    r = individual_risk(np.array([float(f)]), np.array([f / p]), "exact")[0]
    assert r == pytest.approx(_nb_inverse_mean(f, f / (f / p)), rel=2e-15)


def test_household_exact_risk_is_the_direct_sum_for_every_record(data_dir):
    # issue #38: Household, 8 keys, weights: 172 records have f_k = 172, p = 0.01, and were
    # NaN (dropped from the global risk by nansum); E[1/F | f] = 5.85e-5
    from linkrisk.datasets import HOUSEHOLD_QI, load

    hh = load("household", data_dir, raw=True)
    fr = frequency_risk(hh, HOUSEHOLD_QI, weights="sampling_weight", suda=False,
                        method="exact")
    rec = fr.per_record
    assert np.isfinite(rec.risk).all() and (rec.fk == 172).sum() == 172
    ref = {fF: _nb_inverse_mean(fF[0], fF[0] / fF[1])
           for fF in set(zip(rec.fk.tolist(), rec.Fk.tolist(), strict=True))}
    want = np.array([1 / f if f == F else ref[f, F] for f, F in zip(rec.fk, rec.Fk,
                                                                      strict=True)])
    np.testing.assert_allclose(rec.risk, want, rtol=2e-15, atol=0)
    assert rec.risk[rec.fk == 172].iloc[0] == pytest.approx(5.8476092598287e-05, rel=1e-12)
    assert fr.summary["global_risk_ER"] == pytest.approx(want.sum(), rel=1e-14)
    assert fr.summary["max_risk"] == pytest.approx(want.max(), rel=2e-15)


def test_frequency_sums_near_a_whole_number_take_its_branch():
    # α = 0.1: the complete record (0, 0, 0) has f_k = 1 + 0.1·1 + 0.1·7 + 0.1·2, summed
    # as 2.0000000000000004; α = 0.2: 1 + 0.2·2 + 0.2·2 + 0.2·1 = 1.9999999999999998.
    # Both are 2: the f_k = 2 formula, no 2-anonymity violation, not a sample unique.
    from linkrisk.grouping import frequencies_from_codes, key_codes

    def file(c1, c2, c3):
        rows = ([[0, 0, 0]] + [[None, 0, 0]] * c1 + [[0, None, 0]] * c2
                + [[0, 0, None]] * c3)
        return pd.DataFrame(rows, columns=list("abc"), dtype=float).assign(w=100.0)

    for alpha, df in ((0.1, file(1, 7, 2)), (0.2, file(2, 2, 1))):
        codes, size = key_codes(df, list("abc"))
        raw = frequencies_from_codes(codes, size, None, alpha)[0][0]
        assert raw != 2 and raw == pytest.approx(2)
        f = sample_frequencies(df, list("abc"), weights="w", alpha=alpha)
        assert f.fk[0] == 2.0
        p = 2 / f.Fk[0]
        o = p / (1 - p)
        want = o - o ** 2 * math.log(1 / p)
        fr = frequency_risk(df, list("abc"), weights="w", alpha=alpha, suda=False)
        assert fr.per_record.risk[0] == pytest.approx(want, rel=1e-12)
        assert fr.summary["k_anonymity_violations"]["2"] == 0
        assert fr.summary["sample_uniques"] == 0
        # the raw sum given directly is taken as 2 too, by either method (the other
        # records' f_k are not whole numbers, which method="exact" refuses)
        assert individual_risk(np.array([raw]), np.array([f.Fk[0]]))[0] == pytest.approx(
            want, rel=1e-12)
        assert individual_risk(np.array([raw]), np.array([f.Fk[0]]), "exact")[0] == (
            pytest.approx(want, rel=1e-12))


def test_exact_risk_needs_population_at_least_the_sample():
    # weights below 1 (F_k < f_k): outside the negative-binomial model, an error, not NaN
    with pytest.raises(LinkriskError, match="F_k >= f_k"):
        individual_risk(np.array([3.0]), np.array([1.5]), "exact")
    # f_k = F_k (or within 1e-9): the sample is the population, 1/f_k
    r = individual_risk(np.array([3.0, 3.0]), np.array([3.0, 3.0 * (1 + 1e-12)]), "exact")
    np.testing.assert_allclose(r, [1 / 3, 1 / 3], rtol=1e-15)


def test_risk_special_cases_by_hand():
    # f = F: 1/f; f = 3, p = 0.1: 0.1 / (3 - 0.9); no weights: 1/f
    r = individual_risk(np.array([2.0, 3.0, 3.0]), np.array([2.0, 30.0, 30.0]))
    assert r[0] == 0.5 and r[1] == pytest.approx(0.1 / 2.1)
    p = 1 / 40
    assert individual_risk(np.array([1.0]), np.array([40.0]))[0] == pytest.approx(
        p / (1 - p) * math.log(40))
    assert individual_risk(np.array([1.5]), np.array([40.0]))[0] == 0.0   # sdcMicro: none
    with pytest.raises(LinkriskError, match="method"):
        individual_risk(np.array([1.0]), np.array([2.0]), "other")


def test_household_risk_by_hand():
    r = np.array([0.5, 0.2, 0.1, 1.0, 0.3])
    h = np.array([7, 7, 8, 9, 9])
    np.testing.assert_allclose(household_risk(r, h), [0.6, 0.6, 0.1, 1.0, 1.0])
    with pytest.raises(LinkriskError, match="household id is missing"):
        household_risk(r, np.array([1, 2, None, 3, 4], dtype=object))


def test_frequency_risk_summary_and_globals():
    df = _sdc(False)
    df["hid"] = [1, 1, 2, 2, 2, 3, 3, 4]
    fr = frequency_risk(df, ["A", "B", "C"], weights="w", household="hid")
    rec = fr.per_record
    assert rec.fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    d = fr.to_dict()
    assert d["sample_uniques"] == 3
    assert d["k_anonymity_violations"] == {"2": 3, "3": 5, "5": 8}
    assert d["global_risk_ER"] == pytest.approx(rec.risk.sum())
    assert d["global_risk"] == pytest.approx(rec.risk.sum() / 8)
    hh = 1 - (1 - rec.risk).groupby(df.hid).prod()
    np.testing.assert_allclose(rec.household_risk, hh[df.hid].to_numpy())
    assert d["hier_risk_ER"] == pytest.approx(rec.household_risk.sum())
    top = d["top_patterns"]
    assert top[0]["risk"] == pytest.approx(rec.risk.max())
    assert [t["risk"] for t in top] == sorted((t["risk"] for t in top), reverse=True)
    assert len({(t["A"], t["B"], t["C"]) for t in top}) == len(top) == 5   # 5 patterns
    html = fr.to_html()
    assert html.startswith("<section") and "Frequency and population risk" in html
    assert "highest risk" in html
    # without weights the risk is 1/fk (sdcMicro's measure_risk without w)
    fr0 = frequency_risk(df, ["A", "B", "C"], suda=False)
    np.testing.assert_allclose(fr0.per_record.risk, 1 / fr0.per_record.fk)
    assert "Fk" not in fr0.per_record and fr0.suda is None


def test_bad_input_is_one_clear_error():
    df = _sdc(False)
    with pytest.raises(LinkriskError, match="not in the file"):
        frequency_risk(df, ["A", "Z"])
    with pytest.raises(LinkriskError, match="positive"):
        frequency_risk(df.assign(w=-1.0), ["A"], weights="w")
    with pytest.raises(LinkriskError, match="no column named"):
        frequency_risk(df, ["A"], weights="nope")
    with pytest.raises(LinkriskError, match="max_size"):
        suda2(df, ["A", "B", "C"], max_size=5)
    with pytest.raises(LinkriskError, match="alpha"):
        sample_frequencies(df, ["A"], alpha=2)


# ---------------------------------------------------------------- SUDA2
def test_suda2_sdcmicro_book_example():
    # tests/testthat/test_suda2.R "suda2 book example": scores[5:8] = 4, 2, 6, 8
    tab = pd.DataFrame({"age": ["20s"] * 7 + ["60s"],
                        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
                        "income": ["50k+", "50k+"] + ["50k-"] * 6,
                        "education": ["highschool"] * 4 + ["university", "highschool",
                                                           "middleschool", "university"]})
    s = suda2(tab, list(tab.columns))
    assert s.score.tolist() == [0, 0, 0, 0, 4, 2, 6, 8]


def test_suda2_sdcmicro_guideline_example():
    # tests/testthat/test_suda2.R "suda2 sdc guideline"
    t = pd.DataFrame({
        "Residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
        "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female", "Male",
                   "Female", "Female"],
        "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                      "Secondary complete", "Secondary complete", "Secondary complete",
                      "Primary complete", "Post-secondary", "Secondary incomplete",
                      "Secondary incomplete"],
        "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
                  "Non-LF", "Unemployed", "Non-LF", "Non-LF"]})
    assert suda2(t, list(t.columns)).score.tolist() == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


@pytest.mark.parametrize("order", [["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"],
                                   ["c", "b", "a"]])
def test_suda2_sdcmicro_attribute_contributions(order):
    # tests/testthat/test_suda2.R "simple example contribution" 1-4
    d = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})[order]
    s = suda2(d, order)
    assert s.attribute_contribution == {"a": 50.0, "b": 37.5, "c": 37.5}


def _msu_brute(rows, max_size):
    n, m = len(rows), len(rows[0])
    counts = np.zeros((n, m), int)
    for i in range(n):
        uniq = set()
        for k in range(1, max_size + 1):
            for S in itertools.combinations(range(m), k):
                if any(rows[i][j] is None for j in S):
                    continue
                if sum(all(rows[r][j] == rows[i][j] for j in S) for r in range(n)) != 1:
                    continue
                uniq.add(S)
                if not any(tuple(x for x in S if x != v) in uniq for v in S if k > 1):
                    counts[i, k - 1] += 1
    return counts


@pytest.mark.parametrize("seed", range(4))
def test_suda2_msus_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    m, n = 5, 40
    x = rng.integers(0, 2 + seed % 3, size=(n, m)).astype(float)
    if seed % 2:
        x[rng.random((n, m)) < 0.1] = np.nan
    df = pd.DataFrame(x, columns=list("abcde"))
    rows = [tuple(None if np.isnan(v) else v for v in r) for r in x]
    max_size = 5 if seed < 2 else 3
    ref = _msu_brute(rows, max_size)
    s = suda2(df, list(df.columns), max_size=max_size)
    np.testing.assert_array_equal(s.msu_counts, ref)
    w = np.array([math.factorial(m - k) for k in range(1, m + 1)], float)
    np.testing.assert_allclose(s.score, ref @ w)
    # the IHSN weights (original_scores=False)
    s2 = suda2(df, list(df.columns), max_size=max_size, original_scores=False)
    w2 = np.array([(2 ** (m - k) - 1) / math.comb(m, k) for k in range(1, m + 1)])
    np.testing.assert_allclose(s2.score, ref @ w2)


def test_dis_score_formula_by_hand():
    tab = pd.DataFrame({"age": ["20s"] * 7 + ["60s"],
                        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
                        "income": ["50k+", "50k+"] + ["50k-"] * 6,
                        "education": ["highschool"] * 4 + ["university", "highschool",
                                                           "middleschool", "university"]})
    s = suda2(tab, list(tab.columns), dis_fraction=0.01)
    # 4 records in exact pairs (1-2, 3-4), M = 4: Q = 1 + 4/20
    q = float(np.float32(1.2))
    sc = np.array([4.0, 2.0, 6.0, 8.0])
    adj = (sc ** -q).sum()
    dis = 1 / (1 + 4 * 0.99 / 0.01 / (sc ** q * adj))
    np.testing.assert_allclose(s.dis_score[4:], dis)
    assert (s.dis_score[:4] == 0).all()


def test_household_file_against_direct_computation(data_dir):
    from linkrisk.datasets import HOUSEHOLD_QI, load

    hh = load("household", data_dir, raw=True)
    fr = frequency_risk(hh, HOUSEHOLD_QI, weights="sampling_weight", household="ori_hid")
    g = hh.groupby(HOUSEHOLD_QI)
    fk = g["sampling_weight"].transform("size").to_numpy()
    Fk = g["sampling_weight"].transform("sum").to_numpy()
    rec = fr.per_record
    np.testing.assert_array_equal(rec.fk, fk)
    np.testing.assert_allclose(rec.Fk, Fk)
    assert fr.summary["sample_uniques"] == int((fk == 1).sum())
    # no two records share a pattern: every sample unique has an MSU
    assert (rec.suda_score > 0).sum() == fr.summary["sample_uniques"]
