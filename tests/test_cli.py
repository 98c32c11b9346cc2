"""The CLI end to end, as a user runs it (subprocess: exit codes and stderr are real)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from linkrisk import datasets
from tests.conftest import noisy


def run(*args, check=False):
    p = subprocess.run([sys.executable, "-m", "linkrisk.cli", *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    o = datasets.synthetic(400, 5, seed=1)
    o.to_csv(d / "o.csv", index=False)
    noisy(o, 0.3, 2).to_parquet(d / "m.parquet", index=False)
    return d


def test_attack_json(files):
    p = run("attack", files / "o.csv", files / "m.parquet", "--method", "dbrl,rbrl_max", "--json",
            check=True)
    res = json.loads(p.stdout)
    assert [r["method"] for r in res] == ["dbrl", "rbrl_max"]
    for r in res:
        assert {"method", "n", "correct_links", "rate"} <= set(r)
        assert r["n"] == 400 and 0 < r["rate"] <= 1
        assert r["correct_links"] == pytest.approx(400 * r["rate"])


def test_attack_table_and_per_record(files):
    out = files / "per.csv"
    p = run("attack", files / "o.csv", files / "m.parquet", "-m", "kernel", "-p", "d=1",
            "--per-record", out, check=True)
    assert "kernel" in p.stdout and "re-identified" in p.stdout
    assert out.exists()
    p = run("attack", files / "o.csv", files / "m.parquet", "--per-record", out)
    assert p.returncode == 2 and "--force" in p.stderr


@pytest.mark.parametrize("args,msg", [
    (["-m", "nope"], "unknown attack"),
    (["--qi", "v1,zz"], "'zz' not in"),
    (["-p", "zz=1"], "no chosen attack takes parameter"),
])
def test_errors_are_one_line(files, args, msg):
    p = run("attack", files / "o.csv", files / "m.parquet", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0] and "Traceback" not in p.stderr


def test_missing_file_and_nan(files, tmp_path):
    p = run("attack", files / "o.csv", tmp_path / "none.csv")
    assert p.returncode == 2 and "not found" in p.stderr
    bad = datasets.synthetic(400, 5, seed=1)
    bad.iloc[4, 2] = np.nan
    bad.to_csv(tmp_path / "nan.csv", index=False)
    p = run("attack", files / "o.csv", tmp_path / "nan.csv")
    assert p.returncode == 2 and "missing values" in p.stderr


def test_datasets_and_methods_commands(tmp_path):
    # packaged: no argument, no environment variable; python -m linkrisk is the CLI too
    p = subprocess.run([sys.executable, "-m", "linkrisk", "datasets"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for name, ref in datasets.REFERENCE.items():
        assert f"{name}  {ref.title}: {ref.rows:,} records" in p.stdout
    assert "GPL-2" in p.stdout and "CC BY 4.0" in p.stdout and "packaged" in p.stdout
    p = run("datasets", "--data-dir", tmp_path / "nonexistent")
    assert p.returncode == 2 and p.stderr.startswith("error:") and "not a folder" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    datasets.load("census", raw=True).to_csv(tmp_path / "census.csv", index=False)
    p = run("datasets", "--data-dir", tmp_path, check=True)
    assert "[found]" in p.stdout.split("eia")[0] and "[missing]" in p.stdout
    p = run("methods", check=True)
    assert "rbrl_max" in p.stdout
