"""Studies with blocking keys (``linkrisk.study(block=)``, ``linkrisk study --block``):
every attack of every replication blocks, the keys are neither masked nor QIs, the
outputs name them and the cache keys change with them."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.cli import app
from linkrisk.errors import LinkriskError
from linkrisk.experiments import load_config
from linkrisk.experiments.runner import expand
from linkrisk.masking import mask


def keyed_file(path, n=150, seed=0):
    """Numeric attributes x0..x2 and a key g in 0..2; written as CSV at ``path``."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 3)).round(3), columns=["x0", "x1", "x2"])
    df["g"] = rng.integers(0, 3, n)
    df.to_csv(path, index=False)
    return df


def _config(path, **dataset):
    return {"name": "blocked", "seed": 3, "replications": 2,
            "datasets": [{"name": str(path), "label": "keyed", **dataset}],
            "masking": [{"method": "noise", "param": "a", "values": [0.5]}],
            "attacks": ["dbrl", "prl"]}


def test_every_attack_blocks_and_keys_are_kept(tmp_path):
    data = tmp_path / "keyed.csv"
    orig = keyed_file(data)
    res = linkrisk.study(_config(data), out_dir=tmp_path / "out", processes=1, block="g")
    att = res.rows[res.rows["kind"] == "attack"]
    assert len(att) == 4 and (att["error"] == "").all(), att["error"].tolist()
    for _, r in att.iterrows():
        rel = mask(orig, "noise", columns=["x0", "x1", "x2"], seed=int(r["seed"]), a=0.5)
        assert (rel["g"] == orig["g"]).all()  # the key is released unmasked
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = linkrisk.attack(orig, rel, r["name"], block="g", assume_row_order=True,
                                  seed=int(r["seed"]))
        assert ref.qi == ["x0", "x1", "x2"] and ref.extra["block"] == ["g"]
        assert r["result"] == pytest.approx(100 * ref.rate, rel=1e-12)
    assert json.loads((tmp_path / "out" / "study.json").read_text())["block"] == ["g"]
    assert "Blocking keys: g" in (tmp_path / "out" / "summary.md").read_text()
    assert "Blocking keys: g" in (tmp_path / "out" / "index.html").read_text()


def test_block_changes_the_cells_not_the_unblocked_ones(tmp_path):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    st = load_config(_config(data))
    plain = expand(st, None)
    assert all(t.block is None for t in plain)
    assert "block" not in json.dumps([t.key for t in plain])
    blocked = expand(st.__class__(**{**st.__dict__, "block": ("g",)}), None)
    assert {t.key for t in blocked}.isdisjoint({t.key for t in plain})
    assert all(t.block == ("g",) for t in blocked)


@pytest.mark.parametrize("dataset, match", [
    ({"qi": ["x0", "g"]}, "both a blocking key and a QI"),
    ({"columns": ["x0", "g"]}, "both a blocking key and a masked column"),
])
def test_keys_as_qi_or_masked_refused(tmp_path, dataset, match):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    with pytest.raises(LinkriskError, match=match):
        linkrisk.study(_config(data, **dataset), out_dir=tmp_path / "out", processes=1,
                       block="g")


def test_missing_key_refused(tmp_path):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    with pytest.raises(LinkriskError, match="blocking key 'h' is not a column"):
        linkrisk.study(_config(data), out_dir=tmp_path / "out", processes=1, block="h")


def test_cli_study_block(tmp_path):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'name = "blocked"\nseed = 3\nreplications = 1\n'
                   f'datasets = [{{name = "{data}", label = "keyed"}}]\n'
                   'attacks = ["dbrl"]\n'
                   '[[masking]]\nmethod = "noise"\nparam = "a"\nvalues = [0.5]\n')
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["study", str(cfg), "-o", str(out), "--processes", "1",
                                 "--block", "g"])
    assert r.exit_code == 0, r.output
    assert "within blocks of g" in " ".join(r.output.split())
    assert json.loads((out / "study.json").read_text())["block"] == ["g"]


@pytest.mark.parametrize("value, keys", [("g", ("g",)), (["g", "x0"], ("g", "x0")),
                                         ("g, x0", ("g", "x0")), ([], None)])
def test_block_in_the_study_file(tmp_path, value, keys):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    assert load_config({**_config(data), "block": value}).block == keys


@pytest.mark.parametrize("value, match", [(["g", "g"], "named twice"), (3, "block must be")])
def test_bad_block_in_the_study_file(tmp_path, value, match):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    with pytest.raises(LinkriskError, match=match):
        load_config({**_config(data), "block": value})


def test_block_argument_replaces_the_file(tmp_path):
    data = tmp_path / "keyed.csv"
    keyed_file(data)
    cfg = {**_config(data), "attacks": ["dbrl"], "replications": 1, "block": "h"}
    with pytest.raises(LinkriskError, match="blocking key 'h' is not a column"):
        linkrisk.study(cfg, out_dir=tmp_path / "a", processes=1)  # the file's key is used
    res = linkrisk.study(cfg, out_dir=tmp_path / "b", processes=1, block="g")
    assert json.loads((tmp_path / "b" / "study.json").read_text())["block"] == ["g"]
    assert (res.rows["error"] == "").all()
