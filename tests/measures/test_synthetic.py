"""Synthetic-data measures against independent computations: DCR against scipy's cKDTree,
the membership AUC against a direct pair count, anonymeter's statistics by hand, and
agreement with anonymeter itself (same neighbours, same counts)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial import cKDTree
from scipy.stats import norm

from linkrisk.synthetic import distance_risk, inference, linkability, singling_out, synthetic_risk
from linkrisk.synthetic.anonymeter import AttackRisk, neighbours, wilson
from linkrisk.synthetic.distance import auc_lower_is_member, roc_points, tpr_at


def gaussian_copula(df: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A Gaussian copula fit (normal scores of the ranks, their correlation, margins by
    empirical quantiles): a synthetic file with no record pairing."""
    rng = np.random.default_rng(seed)
    u = (df.rank(method="average").to_numpy() - 0.5) / len(df)
    z = norm.ppf(u)
    corr = np.corrcoef(z, rowvar=False)
    s = rng.multivariate_normal(np.zeros(df.shape[1]), corr, size=n)
    q = norm.cdf(s)
    return pd.DataFrame({c: np.quantile(df[c].to_numpy(), q[:, j])
                         for j, c in enumerate(df.columns)})


@pytest.fixture(scope="module")
def split(census):
    rng = np.random.default_rng(3)
    perm = rng.permutation(len(census))
    tr = census.iloc[perm[:540]].reset_index(drop=True)
    ho = census.iloc[perm[540:]].reset_index(drop=True)
    return tr, ho


def noise_release(tr: pd.DataFrame, seed: int, a: float = 0.1) -> pd.DataFrame:
    """Rows resampled, then noise: no record of the release pairs with an original one."""
    rng = np.random.default_rng(seed)
    s = tr.iloc[rng.choice(len(tr), len(tr))].reset_index(drop=True)
    return s + rng.standard_normal(s.shape) * (a * tr.std().to_numpy())


def test_dcr_against_ckdtree(split):
    tr, ho = split
    syn = noise_release(tr, 1)
    r = distance_risk(syn, tr, ho, n_boot=20)
    mu, sd = tr.mean().to_numpy(), tr.std(ddof=1).to_numpy()
    z = lambda d: (d.to_numpy() - mu) / sd  # noqa: E731
    d_t, _ = cKDTree(z(tr)).query(z(syn))
    d_h, _ = cKDTree(z(ho)).query(z(syn))
    np.testing.assert_allclose(r.dcr_train, d_t, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r.dcr_holdout, d_h, rtol=1e-9, atol=1e-12)
    s = r.summary
    assert s["closer_to_train_share"] == pytest.approx(np.mean(d_t < d_h) + 0.5 * np.mean(d_t == d_h))
    dd, _ = cKDTree(z(tr)).query(z(syn), k=2)
    assert s["nndr_train_median"] == pytest.approx(np.median(dd[:, 0] / dd[:, 1]))
    # membership: each original record's distance to the synthetic file
    m_t, _ = cKDTree(z(syn)).query(z(tr))
    m_h, _ = cKDTree(z(syn)).query(z(ho))
    auc = np.mean(m_t[:, None] < m_h[None, :]) + 0.5 * np.mean(m_t[:, None] == m_h[None, :])
    assert s["membership"]["auc"] == pytest.approx(auc)
    lo, hi = s["membership"]["auc_ci"]
    assert lo <= auc <= hi
    # a memorising release: the share and the AUC are far above 1/2
    assert s["closer_to_train_share"] > 0.9 and auc > 0.7


def test_copies_and_unequal_sizes(split):
    tr, ho = split
    syn = pd.concat([tr.iloc[:10], noise_release(tr, 2).iloc[:90]], ignore_index=True)
    r = distance_risk(syn, tr, ho.iloc[:200], n_boot=0)
    assert r.summary["exact_copies_train"] == 10
    assert any("subsampled" in n for n in r.notes)
    assert distance_risk(syn, tr, None).summary.get("membership") is None


def test_roc_helpers_by_hand():
    m, h = np.array([0.1, 0.2, 0.5]), np.array([0.3, 0.4, 0.5, 0.6])
    # pairs m < h: 0.1:4, 0.2:4, 0.5: 1 (0.6) + tie ½ (0.5)
    assert auc_lower_is_member(m, h) == pytest.approx((4 + 4 + 1.5) / 12)
    fpr, tpr = roc_points(m, h)
    assert tpr_at(fpr, tpr, 0.0) == pytest.approx(2 / 3)
    assert tpr_at(fpr, tpr, 0.25) == pytest.approx(2 / 3)
    assert tpr_at(fpr, tpr, 0.75) == pytest.approx(1.0)


def test_anonymeter_statistics_by_hand():
    # Wilson: anonymeter's success_rate(100, 20, 0.95)
    z = norm.ppf(0.975)
    rate, err = wilson(100, 20, 0.95)
    assert rate == pytest.approx((20 + z * z / 2) / (100 + z * z))
    assert err == pytest.approx(z / (100 + z * z) * np.sqrt(20 * 80 / 100 + z * z / 4))
    r = AttackRisk("x", 100, 20, 1, 5, 100, 0.95)
    c, ec = wilson(100, 5, 0.95)
    res = (rate - c) / (1 - c)
    e = np.sqrt((err / (1 - c)) ** 2 + (ec * (rate - 1) / (1 - c) ** 2) ** 2)
    assert r.risk == pytest.approx(res)
    assert r.ci == pytest.approx((res - e, res + e))


def test_neighbours_against_brute_force():
    rng = np.random.default_rng(0)
    cand = pd.DataFrame({"x": rng.random(300) * 50, "y": rng.random(300),
                         "c": rng.choice(list("abc"), 300)})
    q = pd.DataFrame({"x": rng.random(40) * 60, "y": rng.random(40),
                      "c": rng.choice(list("abd"), 40)})
    rx = max(cand.x.max(), q.x.max()) - min(cand.x.min(), q.x.min())
    ry = max(cand.y.max(), q.y.max()) - min(cand.y.min(), q.y.min())
    d = (np.abs(q.x.to_numpy()[:, None] - cand.x.to_numpy()[None]) / rx
         + np.abs(q.y.to_numpy()[:, None] - cand.y.to_numpy()[None]) / ry
         + (q.c.to_numpy()[:, None] != cand.c.to_numpy()[None]))
    want = np.argsort(d, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(neighbours(cand, q, 3), want)
    np.testing.assert_array_equal(neighbours(cand, q, 1)[:, 0], want[:, 0])


def _anonymeter_python() -> list[str] | None:
    """How to run anonymeter: in this interpreter when it imports, else the Python named by
    $LINKRISK_ANONYMETER_PYTHON (anonymeter 1.1 pins numpy < 1.27, so it usually lives in
    a separate environment), else None."""
    try:
        import anonymeter  # noqa: F401

        return [sys.executable]
    except ImportError:
        exe = os.environ.get("LINKRISK_ANONYMETER_PYTHON")
        return [exe] if exe and Path(exe).exists() else None


def agreement_data(census):
    rng = np.random.default_rng(11)
    perm = rng.permutation(len(census))
    cols = ["AFNLWGT", "AGI", "FEDTAX", "PTOTVAL", "STATETAX", "FICA"]
    tr = census.iloc[perm[:500]][cols].reset_index(drop=True)
    ho = census.iloc[perm[500:1000]][cols].reset_index(drop=True)
    syn = noise_release(tr, 5, a=0.2)
    for f in (tr, ho, syn):   # a categorical column: anonymeter's 0/1 distance
        f["band"] = pd.cut(f["PTOTVAL"], [-np.inf, 2e4, 5e4, np.inf],
                           labels=["low", "mid", "high"]).astype(str)
    return tr, ho, syn


def test_agreement_with_anonymeter(census, tmp_path):
    py = _anonymeter_python()
    if py is None:
        pytest.skip("anonymeter is not importable (its numpy < 1.27 pin conflicts with "
                    "linkrisk's); set LINKRISK_ANONYMETER_PYTHON to a Python that has it")
    tr, ho, syn = agreement_data(census)
    aux = (["AFNLWGT", "AGI", "band"], ["FEDTAX", "STATETAX", "FICA"])
    for k in (1, 3):
        tr.to_csv(tmp_path / "ori.csv", index=False)
        ho.to_csv(tmp_path / "control.csv", index=False)
        syn.to_csv(tmp_path / "syn.csv", index=False)
        (tmp_path / "spec.json").write_text(json.dumps(
            {"aux_cols": aux, "secret": "band", "n_neighbors": k, "so_attacks": 200}))
        ref = json.loads(subprocess.run(
            py + [str(Path(__file__).with_name("anonymeter_ref.py")), str(tmp_path)],
            capture_output=True, text=True, check=True).stdout)
        # same neighbours (read back from the CSV, as anonymeter saw the data)
        t2, s2 = pd.read_csv(tmp_path / "ori.csv"), pd.read_csv(tmp_path / "syn.csv")
        np.testing.assert_array_equal(neighbours(s2[aux[0]], t2[aux[0]], k), ref["idx0"])
        lk = linkability(t2, s2, aux, control=pd.read_csv(tmp_path / "control.csv"),
                         n_neighbors=k)
        assert (lk.n_success, lk.n_control) == (ref["linkability"]["n_success"],
                                                ref["linkability"]["n_control"])
        assert lk.risk == pytest.approx(ref["linkability"]["risk"])
        assert lk.ci == pytest.approx(tuple(ref["linkability"]["ci"]))
    c2 = pd.read_csv(tmp_path / "control.csv")
    inf = inference(t2, s2, "band", control=c2)
    assert (inf.n_success, inf.n_control) == (ref["inference"]["n_success"],
                                              ref["inference"]["n_control"])
    assert inf.risk == pytest.approx(ref["inference"]["risk"])
    # singling out is random: the risks agree within their intervals
    for mode in ("univariate", "multivariate"):
        so = singling_out(t2, s2, control=c2, mode=mode, n_attacks=200)
        lo, hi = ref[f"singling_out_{mode}"]["ci"]
        assert so.ci[0] <= hi and lo <= so.ci[1], (mode, so.to_dict(), ref)


def test_attacks_on_a_copula_release(split):
    tr, ho = split
    syn = gaussian_copula(tr, 540, seed=4)
    r = synthetic_risk(tr, syn, ho, sensitive=["PTOTVAL"], n_boot=50, singling_out_attacks=100)
    s = r.distance.summary
    # a copula keeps margins and correlations, not records: no memorisation
    assert 0.35 < s["closer_to_train_share"] < 0.65
    assert s["membership"]["auc_ci"][0] < 0.5 < s["membership"]["auc_ci"][1] or \
        abs(s["membership"]["auc"] - 0.5) < 0.06
    assert r.attacks["linkability"].risk < 0.1
    assert set(r.attacks) >= {"singling out (univariate)", "singling out (multivariate)",
                              "linkability", "inference (PTOTVAL)"}
    assert "Membership inference" in r.text() and "linkability" in r.text()
    # a memorising release is caught by every measure
    m = synthetic_risk(tr, noise_release(tr, 7, a=0.02), ho, sensitive=["PTOTVAL"], n_boot=50,
                       singling_out_attacks=100)
    assert m.attacks["linkability"].risk > 0.3   # ~63 % of records are resampled
    assert m.distance.summary["membership"]["auc"] > 0.75   # resampled-out records look like holdout
    assert m.worst[1] > r.worst[1]


def test_no_holdout_skips_with_a_note(split):
    tr, _ = split
    r = synthetic_risk(tr, noise_release(tr, 8), None, sensitive=["PTOTVAL"], n_boot=0,
                       singling_out_attacks=50)
    assert r.attacks["linkability"].control_rate is None
    assert any("no holdout" in n for n in r.distance.notes)
    assert "no holdout" in r.text()
