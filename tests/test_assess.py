"""linkrisk.assess and the `assess` command."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.cli import app
from linkrisk.errors import LinkriskError


@pytest.fixture(scope="module")
def files():
    orig = linkrisk.datasets.synthetic(400, 5, seed=3)
    return orig, linkrisk.mask(orig, "rank_swap", p=5, seed=4)


def test_identity_release_every_rate_one_and_no_loss(files):
    orig, _ = files
    a = linkrisk.assess(orig, orig, attacks=["dbrl", "rbrl_max", "mahalanobis0", "gdbrl", "rsrl"],
                        params={"rsrl": {"p": 1}})
    assert all(r.rate == 1.0 for r in a.results.values())
    assert a.measures["IL"] == 0 and a.measures["PIL"] == 0 and a.measures["ID"] == 100
    assert (a.records["max_risk"] == 1).all()


def test_all_attacks_measures_and_worst_case(files):
    orig, rel = files
    a = linkrisk.assess(orig, rel, rank_swap_p=5)
    assert {"dbrl", "prl", "gdbrl", "rsrl", "rsrl_union", "rbrl_max"} <= set(a.results)
    assert not a.skipped
    m = a.measures
    assert m["DLD"] == pytest.approx(100 * a.results["dbrl"].rate)
    assert m["DR"] == pytest.approx((m["RSLD"] + m["DLD"] + m["PLD"]) / 6 + 0.5 * m["ID"])
    assert m["Score"] == pytest.approx((m["IL"] + m["DR"]) / 2)
    assert a.worst.rate == max(r.rate for r in a.results.values())
    assert m["worst_case_%"] == pytest.approx(100 * a.worst.rate)
    d = json.loads(json.dumps(a.to_dict()))
    assert d["worst_case"]["attack"] == a.worst.method
    assert len(a.records) == len(orig) and "max_risk" in a.records


def test_categorical_files_get_categorical_attacks(data_dir):
    hh = linkrisk.datasets.load("household", data_dir).head(600)
    rel = linkrisk.mask(hh, "pram", pd=0.8, alpha=0.5, seed=1)
    a = linkrisk.assess(hh, rel)
    assert set(a.results) == {"dbrl_hamming", "prl", "gdbrl"}
    assert "IL" not in a.measures and a.notes


def test_failing_attack_is_reported_not_fatal():
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(size=50)})
    x["b"] = 2 * x["a"]  # collinear: Mahalanobis cannot whiten
    a = linkrisk.assess(x, x + 0.01, attacks="dbrl,mahalanobis0")
    assert "dbrl" in a.results and "mahalanobis0" in a.skipped


def test_bad_arguments(files):
    orig, rel = files
    with pytest.raises(LinkriskError, match="rank_swap_p"):
        linkrisk.assess(orig, rel, attacks="rsrl")
    with pytest.raises(LinkriskError, match="unknown attack"):
        linkrisk.assess(orig, rel, attacks="nope")
    with pytest.raises(LinkriskError, match="not among"):
        linkrisk.assess(orig, rel, attacks="dbrl", params={"prl": {"q": 5}})


def test_cli_assess_writes_report_and_json(tmp_path, files):
    orig, rel = files
    o, m = tmp_path / "o.csv", tmp_path / "m.csv"
    orig.to_csv(o, index=False)
    rel.to_csv(m, index=False)
    rep = tmp_path / "r.html"
    run = CliRunner().invoke(app, ["assess", str(o), str(m), "--rank-swap-p", "5",
                                   "-o", str(rep)])
    assert run.exit_code == 0, run.output
    assert "Worst case" in run.output and "rsrl" in run.output
    assert rep.read_text().startswith("<!DOCTYPE html>")
    js = CliRunner().invoke(app, ["assess", str(o), str(m), "--rank-swap-p", "5", "--json"])
    assert js.exit_code == 0
    assert json.loads(js.stdout)["worst_case"]["rate"] > 0.9
    again = CliRunner().invoke(app, ["assess", str(o), str(m), "-o", str(rep)])
    assert again.exit_code != 0 and "--force" in str(again.exception or again.output)
