"""Measures of docs/methods.md on hand-worked examples, identity masking and brute-force twins."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import linkrisk
from linkrisk.errors import LinkriskError
from linkrisk.measures import (
    disclosure_risk,
    information_loss,
    interval_disclosure,
    per_record_risk,
    pil,
    score,
    worst_case,
)


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    x = pd.DataFrame(rng.lognormal(size=(300, 4)) + 1, columns=list("abcd"))
    return x, linkrisk.mask(x, "noise", a=0.3, seed=1)


def test_identity_masking_loses_nothing_and_is_fully_disclosive(pair):
    x, _ = pair
    il = information_loss(x, x)
    assert (il.il1, il.il2, il.il3, il.il4, il.il5, il.il) == (0, 0, 0, 0, 0, 0)
    assert pil(x, x)["PIL"] == 0
    assert interval_disclosure(x, x) == 100.0
    for m in ("dbrl", "rbrl_max", "mahalanobis0", "rsrl", "gdbrl"):
        assert linkrisk.attack(x, x, m).rate == 1.0
    # prl compares quantile bins (q = 10 → 10⁴ patterns for 300 records here), so records
    # sharing every bin tie; exact agreement (tol = 0) separates them all
    assert linkrisk.attack(x, x, "prl", tol=0).rate == 1.0


def test_interval_disclosure_by_hand():
    # n = 20, p = 10 %: window ±⌊10·20/200⌋ = 1 rank; masked y = 0..19, so the interval of
    # record i is [i−1, i+1] ∩ [0, 19].
    y = pd.DataFrame({"v": np.arange(20.0)})
    assert interval_disclosure(y + 1, y, ps=[10]) == 95.0   # only x = 20 falls outside
    assert interval_disclosure(y + 1.5, y, ps=[10]) == 0.0
    assert interval_disclosure(y - 1, y, ps=[10]) == 95.0   # x = −1 outside
    # p = 1..4 give a zero window: only exact values count
    assert interval_disclosure(y + 1, y, ps=[1, 2, 3, 4]) == 0.0
    # tied masked values share one interval: [1, 2] for both 1s (positions 0..1, window 1)
    yt = pd.DataFrame({"v": [1.0, 1.0, 2.0, 5.0] * 5})
    xt = pd.DataFrame({"v": [2.0, 1.5, 5.0, 2.0] * 5})
    # sorted: five 1s, five 2s, five 5s; window ±1: 1s → [1, 2], 2 → [1, 5], 5 → [2, 5]
    assert interval_disclosure(xt, yt, ps=[10]) == 100.0


def test_information_loss_by_hand():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 1.0, 4.0, 3.0]})
    y = x.copy()
    y["a"] = [2.0, 2.0, 3.0, 4.0]
    il = information_loss(x, y)
    assert il.il1 == pytest.approx(1.0 / 8)            # |1−2|/1 once over 8 entries
    assert il.il2 == pytest.approx((0.25 / 2.5) / 2)    # mean of a moves 2.5 → 2.75
    vx, vy = np.cov(x.T), np.cov(y.T)
    iu = np.triu_indices(2)
    assert il.il3 == pytest.approx(np.mean(np.abs(vx[iu] - vy[iu]) / np.abs(vx[iu])))
    assert il.il4 == pytest.approx(np.mean(np.abs(np.diag(vx) - np.diag(vy)) / np.diag(vx)))
    assert il.il5 == pytest.approx(abs(np.corrcoef(x.T)[0, 1] - np.corrcoef(y.T)[0, 1]))
    assert il.il == pytest.approx(100 * np.mean([il.il1, il.il2, il.il3, il.il4, il.il5]))


def test_zero_denominators_are_skipped_and_reported():
    x = pd.DataFrame({"a": [0.0, 1.0, -1.0, 2.0], "b": [1.0, 2.0, 3.0, 4.0]})
    y = x + 0.5
    il = information_loss(x, y)
    assert any("IL1" in s for s in il.skipped)
    assert np.isfinite(il.il)


def test_pil_matches_formula(pair):
    x, y = pair
    out = pil(x, y)
    n = len(x)
    xm, ym, s = x.mean().to_numpy(), y.mean().to_numpy(), x.std().to_numpy()
    assert out["PIL(m)"] == pytest.approx(100 * np.mean(2 * (norm.cdf(np.abs(xm - ym) / (s / np.sqrt(n))) - 0.5)))
    assert all(0 <= v < 100 for v in out.values())
    assert pil(x, linkrisk.mask(x, "noise", a=1.0, seed=1))["PIL"] > out["PIL"]


def test_dr_and_score_formulas():
    assert disclosure_risk(40, 20, 60) == pytest.approx(0.25 * 40 + 0.25 * 20 + 30)
    assert disclosure_risk(40, 20, 60, rsld=90) == pytest.approx(150 / 6 + 30)
    assert score(10, 30) == 20


def test_worst_case_and_per_record_risk(pair):
    x, y = pair
    res = [linkrisk.attack(x, y, m) for m in ("dbrl", "rbrl_max", "mahalanobis")]
    w = worst_case(res)
    assert w.rate == max(r.rate for r in res)
    per = per_record_risk(res)
    p = np.column_stack([r.per_record["correct"] for r in res])
    assert np.allclose(per["max_risk"], p.max(1))
    assert np.allclose(per["share"], (p > 0.5).mean(1))
    assert per["best_attack"].isin(["dbrl", "rbrl_max", "mahalanobis", ""]).all()


def test_bad_inputs(pair):
    x, y = pair
    with pytest.raises(LinkriskError, match="records"):
        information_loss(x, y.iloc[:10])
    with pytest.raises(LinkriskError, match="numeric"):
        interval_disclosure(pd.DataFrame({"s": ["a", "b", "c"]}), pd.DataFrame({"s": ["a", "b", "c"]}))
    with pytest.raises(LinkriskError):
        worst_case([])


def test_release_measures_assemble_the_single_measures(pair):
    """numeric_measures (used by assess and the study runner alike) is the single measures
    put together: IL1–IL5/IL, PIL(·), ID, DR, Score; asked by name it computes only what
    the names need and raises when DR lacks its attacks."""
    from linkrisk.measures import categorical_measures, numeric_measures

    x, y = pair
    cols = list("abcd")
    rates = {"dbrl": 40.0, "prl": 30.0, "rsrl": 20.0, "kernel": 99.0}
    notes: list[str] = []
    out = numeric_measures(x, y, cols, rates, notes=notes)
    il, p, idd = information_loss(x, y, cols), pil(x, y, cols), interval_disclosure(x, y, cols)
    want = {**{k: v for k, v in il.to_dict().items() if k != "skipped"}, **p, "ID": idd}
    want["DR"] = (20.0 + 40.0 + 30.0) / 6 + 0.5 * idd
    want["Score"] = (il.il + want["DR"]) / 2
    assert list(out) == list(want) and out == want and notes == []
    # by name: ID alone needs no information loss; DR without prl raises, with None a note
    assert set(numeric_measures(x, y, cols, rates, {"ID"})) == {"ID"}
    with pytest.raises(LinkriskError, match="need the dbrl and prl"):
        numeric_measures(x, y, cols, {"dbrl": 1.0}, {"DR"})
    out = numeric_measures(x, y, cols, {"dbrl": 1.0}, notes=notes)
    assert "DR" not in out and "ID" in out and notes == ["DR and Score need both dbrl and prl; not computed"]
    # categorical: DR = (DLD_hamming + PLD)/2, no PIL/ID
    c = pd.DataFrame({"u": list("aabbc") * 4})
    d = c.copy()
    d.loc[:3, "u"] = "c"
    got = categorical_measures(c, d, ["u"], {"dbrl_hamming": 50.0, "prl": 30.0}, {"DR"})
    assert got == {"DR": 40.0}
    got = categorical_measures(c, d, ["u"], {"dbrl_hamming": 50.0, "prl": 30.0}, {"Score"})
    assert got["Score"] == pytest.approx((got["IL"] + 40.0) / 2) and got["IL"] > 0
    with pytest.raises(LinkriskError, match="numeric attributes only"):
        categorical_measures(c, d, ["u"], {}, {"ID"})
