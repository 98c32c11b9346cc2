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
    p = run("attack", files / "o.csv", tmp_path / "nan.csv")  # linked over observed values
    assert p.returncode == 0, p.stderr


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


def test_first_run_compilation_is_announced_once(capsys):
    """A cache miss of a numba kernel prints one plain line (no terminal); a kernel that is
    compiled already prints nothing."""
    import numba

    from linkrisk import cli

    @numba.njit
    def twice(a):
        return 2 * a

    @numba.njit
    def twice_plus_one(a):  # its callee compiles inside its own event
        return twice(a) + 1

    with cli.progress_bar():
        assert twice_plus_one(3) == 7  # compiled here: no cache for a test's own kernel
        assert twice(4.5) == 9.0  # a second signature: compiled, not announced again
    assert capsys.readouterr().err.count(cli.COMPILE_NOTE) == 1
    with cli.progress_bar():
        assert twice(5) == 10
    assert cli.COMPILE_NOTE not in capsys.readouterr().err


def test_compilation_shows_a_line_of_the_progress_display():
    """At a terminal the notice is a task of the rich display, hidden between kernels."""
    import io

    import numba
    from rich.console import Console
    from rich.progress import Progress, TextColumn

    from linkrisk import cli

    @numba.njit
    def thrice(a):
        return 3 * a

    console = Console(file=io.StringIO(), force_terminal=True)
    # no redirection of sys.stdout: numba's first compile in a process has colorama wrap it
    with Progress(TextColumn("{task.description} {task.fields[count]}"), console=console,
                  redirect_stdout=False, redirect_stderr=False) as prog:
        with cli.compile_notice(prog):
            @numba.njit
            def calls_thrice(a):  # the callee compiles inside the caller's event
                return thrice(a) + 1

            assert calls_thrice(2) == 7
            seen = [(t.description, t.fields["count"], t.visible) for t in prog.tasks]
            assert thrice(1.5) == 4.5  # the next kernel, once more in the same task
            again = [(t.fields["count"], t.visible) for t in prog.tasks]
    assert seen == [("compiling kernels (first run only)", "kernel 1", False)]
    assert again == [("kernel 2", False)]
