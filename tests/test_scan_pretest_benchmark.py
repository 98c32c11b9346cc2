"""benchmarks/scan_pretest.py runs end to end at a tiny size: both pre-test kernels time the
same all-rejecting scan and return the same result, and the kernel switch is restored."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scan_pretest.py"
_spec = importlib.util.spec_from_file_location("scan_pretest_benchmark", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_scan_pretest_table_at_a_tiny_size(capsys):
    K = importlib.import_module("linkrisk.engine.matching.knn")
    before = K.SCAN_REGISTER
    bench.main(["--n", "700", "--rows", "50", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "0 pairs passed" in out
    rows = [line for line in out.splitlines() if line.startswith("| register")
            or line.startswith("| loop")]
    assert len(rows) == 2 and all(float(r.split("|")[3]) > 0 for r in rows)
    assert "same scans: True" in out
    assert K.SCAN_REGISTER == before
