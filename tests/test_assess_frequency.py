"""assess() and `linkrisk assess` with the frequency and population risk of the release."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.measures.frequency import frequency_risk

KEYS = ["k1", "k2", "k3"]


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(3)
    n = 300
    orig = pd.DataFrame({"k1": rng.choice(list("abc"), n), "k2": rng.choice(list("xyzw"), n),
                         "k3": rng.choice(list("pqrstu"), n),
                         "w": rng.uniform(10, 90, n).round(1), "hid": np.arange(n) // 3})
    rel = linkrisk.mask(orig, "pram", columns=KEYS, pd=0.7, seed=4)
    return orig, rel


def test_assess_adds_frequency_risk_of_the_release(pair):
    orig, rel = pair
    res = linkrisk.assess(orig, rel, qi=KEYS, attacks=["dbrl_hamming"], weights="w",
                          household="hid")
    ref = frequency_risk(rel, KEYS, weights="w", household="hid")
    assert res.frequency is not None
    assert res.frequency.summary == ref.summary
    # row order is the truth: record i's released counterpart is released record i
    np.testing.assert_array_equal(res.records["fk"], ref.per_record["fk"])
    np.testing.assert_allclose(res.records["freq_risk"], ref.per_record["risk"])
    np.testing.assert_allclose(res.records["household_risk"], ref.per_record["household_risk"])
    np.testing.assert_allclose(res.records["dis_score"], ref.per_record["dis_score"])
    d = res.to_dict()["frequency_risk"]
    assert d["weights"] == "w" and d["household"] == "hid" and "suda2" in d
    html = res.to_html()
    assert "Frequency and population risk" in html
    assert html.index("frequency-risk") < html.rindex("</body>")


def test_no_categorical_qi_means_no_frequency_risk():
    o = linkrisk.datasets.synthetic(150, 3, seed=1)
    o["w"] = 10.0
    m = o + 1.0
    res = linkrisk.assess(o, m, qi=["v1", "v2", "v3"], attacks=["dbrl"], weights="w")
    assert res.frequency is None
    assert any("categorical QIs" in x for x in res.notes)
    assert "frequency_risk" not in res.to_dict()


def test_missing_weight_column_is_an_error(pair):
    orig, rel = pair
    with pytest.raises(linkrisk.LinkriskError, match="no column named 'nope'"):
        linkrisk.assess(orig, rel, qi=KEYS, attacks=["dbrl_hamming"], weights="nope")


def run(*args):
    return subprocess.run([sys.executable, "-m", "linkrisk.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_cli_weights_and_household(pair, tmp_path):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "r.csv", index=False)
    args = ("assess", tmp_path / "o.csv", tmp_path / "r.csv", "--qi", ",".join(KEYS),
            "--method", "dbrl_hamming", "--weights", "w", "--household", "hid")
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert "Population register" in p.stdout and "household risk" in p.stdout
    p = run(*args, "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)["frequency_risk"]
    ref = frequency_risk(rel, KEYS, weights="w", household="hid")
    assert d["global_risk_ER"] == pytest.approx(ref.summary["global_risk_ER"])
    p = run("assess", tmp_path / "o.csv", tmp_path / "r.csv", "--qi", ",".join(KEYS),
            "--method", "dbrl_hamming", "--weights", "nope")
    assert p.returncode == 2 and "error:" in p.stderr and "Traceback" not in p.stderr
