"""linkrisk choose with blocking keys (``choose(block=)``, ``linkrisk choose --block``):
every risk attack blocks, the keys are neither QIs nor masked, and the settings (JSON,
HTML, sidecar, command) name them."""

import json
import warnings

import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.errors import LinkriskError
from linkrisk.masking import mask

from ..test_study_blocking import keyed_file


def test_risk_attacks_block_and_settings_name_the_keys(tmp_path):
    orig = keyed_file(tmp_path / "keyed.csv")
    res = linkrisk.choose(orig, ["noise:a=0.5"], risk_attacks="dbrl,prl", replications=2,
                          seed=4, processes=1, cache_dir=tmp_path / "cache", block="g")
    s = res.settings
    assert s["block"] == ["g"] and s["qi"] == ["x0", "x1", "x2"]
    assert "--block g" in s["command"]
    att = res.rows[res.rows["name"].isin(["dbrl", "prl"])]
    assert len(att) == 4 and (att["error"] == "").all()
    for _, r in att.iterrows():
        rel = mask(orig, "noise", columns=s["qi"], seed=int(r["seed"]), a=0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = linkrisk.attack(orig, rel, r["name"], block="g", assume_row_order=True,
                                  seed=int(r["seed"]))
        assert r["result"] == pytest.approx(100 * ref.rate, rel=1e-12)
    assert (res.release()["g"] == orig["g"]).all()  # the key is released as it is
    assert res.to_dict()["settings"]["block"] == ["g"]
    assert "blocking keys</th><td>g" in res.to_html()
    _, side = res.write_release(tmp_path / "release.csv")
    assert json.loads(side.read_text())["chosen_under"]["block"] == ["g"]


def test_unblocked_settings_say_none(tmp_path):
    orig = keyed_file(tmp_path / "keyed.csv")
    res = linkrisk.choose(orig.drop(columns="g"), ["noise:a=0.5"], risk_attacks="dbrl",
                          replications=1, processes=1, cache_dir=tmp_path / "cache")
    assert res.settings["block"] is None and "--block" not in res.settings["command"]


@pytest.mark.parametrize("kw, match", [
    ({"block": "h"}, "blocking key 'h' is not in"),
    ({"block": "g", "qi": "x0,g"}, "both a blocking key and a QI"),
    ({"block": "g", "confidential": "g"}, "both a blocking key and confidential"),
    ({"block": "g,g"}, "named twice"),
])
def test_bad_keys_refused(tmp_path, kw, match):
    orig = keyed_file(tmp_path / "keyed.csv")
    with pytest.raises(LinkriskError, match=match):
        linkrisk.choose(orig, ["noise:a=0.5"], risk_attacks="dbrl", replications=1,
                        processes=1, cache_dir=tmp_path / "cache", **kw)


def test_cli_choose_block(tmp_path):
    from linkrisk.cli import app

    keyed_file(tmp_path / "keyed.csv")
    r = CliRunner().invoke(app, ["choose", str(tmp_path / "keyed.csv"), "-m", "noise:a=0.5",
                                 "--risk-attacks", "dbrl", "--replications", "1",
                                 "--processes", "1", "--cache", str(tmp_path / "cache"),
                                 "--block", "g", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["settings"]["block"] == ["g"] and "g" not in d["settings"]["qi"]
    assert "--block g" in d["settings"]["command"]
