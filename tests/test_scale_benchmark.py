"""benchmarks/scale.py, the one command behind the README's scale table, runs end to end at
a tiny size so that it cannot rot: every attack, faiss k = 1, the ratio column and the
float64 spot checks (0 mismatches; gdbrl's cost and certificate)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
_spec = importlib.util.spec_from_file_location("scale_benchmark", SCRIPT)
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)


def test_sizes_accept_exponent_form():
    assert scale._sizes("1e4, 1e5,100000") == [10_000, 100_000, 100_000]
    for bad in ("1e4,x", "2.5", "1", ""):
        with pytest.raises(SystemExit):
            scale._sizes(bad)


@pytest.mark.slow
def test_whole_table_at_a_tiny_size(capsys):
    scale.main(["--sizes", "600", "--quick", "--check", "150", "--inline", "--markdown"])
    out = capsys.readouterr().out
    table = [line for line in out.splitlines()
             if line.startswith("| ") and not line.startswith("| attack ")]
    cells = {line.split(" | ")[0][2:]: line.split(" | ") for line in table}
    assert set(cells) == {"faiss", *scale.ATTACKS}  # --quick: no sklearn
    for name, c in cells.items():
        assert "error" not in c[2], c
        assert float(c[3]) > 0  # ratio to faiss k=1 of the same run
        if name == "faiss":
            continue
        assert c[6].endswith("%")  # correct-link rate
        check = c[7].rstrip(" |")
        if name == "gdbrl":
            assert check == "cost = reported, certified"
        elif name in scale.UNCHECKED:
            assert check == "—"
        else:
            assert check == "0 / 150", (name, check)


def test_repeat_reports_medians_of_alternated_runs(capsys):
    """--repeat 3: faiss and the attack run three times each, alternated; the table gives
    the median seconds with the runs in brackets and the median of the runs' ratios."""
    scale.main(["--sizes", "400", "--attacks", "dbrl", "--sklearn-max", "0", "--check", "20",
                "--repeat", "3", "--inline", "--markdown"])
    out = capsys.readouterr().out
    cells = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.splitlines()
             if line.startswith("| ") and not line.startswith("| attack ")}
    assert set(cells) == {"faiss", "dbrl"}
    for c in cells.values():
        med, runs = c[2].split(" (")
        runs = [float(t) for t in runs.rstrip(")").split(" / ")]
        assert len(runs) == 3 and float(med) == pytest.approx(sorted(runs)[1], abs=0.006)
    assert float(cells["dbrl"][3]) > 0 and cells["dbrl"][7].startswith("0 / 20")
    assert "median of each run's ratio" in out
