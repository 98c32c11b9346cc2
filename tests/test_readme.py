"""The README's examples run as shown on a fresh install, in an empty folder.

Every command of its ```bash blocks and every ```python block is run in order, in one
temporary folder (later commands use the files of earlier ones), with no LINKRISK_DATA and
no folder beside the repository. Left out (``NOT_RUN``, each with its reason): installing
(.ci/run does it), the test suite itself, the full studies and benchmarks (minutes each;
their commands and timings are in docs/studies and benchmarks/README.md), Dask clusters
(tests/engine/nearest/test_distributed.py covers them), and any line the README marks ``# long`` or
``# your own file``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def examples(text: str) -> list[tuple[str, str]]:
    """(kind, code) of the README's examples in order: one per line of a ```bash block
    (comments stripped, ``a && b`` kept together), one per ```python block."""
    out = []
    for lang, body in re.findall(r"^```(bash|python)\n(.*?)^```", text, re.S | re.M):
        if lang == "python":
            out.append(("python", body))
            continue
        for line in body.splitlines():
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(("bash", cmd))
    return out


def skip_reason(kind: str, code: str, comment: str = "") -> str | None:
    if kind == "bash" and code.startswith("pip install"):
        return "installing is .ci/run's first step"
    if kind == "bash" and code.startswith("python -m pytest"):
        return "the test suite itself"
    if "tcp://" in code:
        return "needs a running remote Dask scheduler"
    if "--backend dask" in code:
        return "starts a local Dask cluster (tests/engine/nearest/test_distributed.py covers it)"
    if kind == "bash" and code.startswith("linkrisk study") and "--quick" not in code:
        return "a full study takes minutes (docs/studies/README.md lists their timings)"
    if kind == "bash" and code.startswith("python benchmarks/"):
        return "benchmarks take minutes (benchmarks/README.md)"
    if "# long" in comment:
        return "marked '# long' in the README"
    if "# your own file" in comment:
        return "stands for the reader's own file (marked '# your own file' in the README)"
    return None


def _raw_lines(text: str) -> dict[str, str]:
    """command -> its full README line (to read a trailing '# long' marker)."""
    lines = {}
    for line in text.splitlines():
        cmd = re.sub(r"\s+#.*$", "", line).strip()
        lines.setdefault(cmd, line)
    return lines


TEXT = README.read_text(encoding="utf-8")
EXAMPLES = examples(TEXT)
RAW = _raw_lines(TEXT)


RUN = [(k, c) for k, c in EXAMPLES if skip_reason(k, c, RAW.get(c, "")) is None]
NOT_RUN = {c: skip_reason(k, c, RAW.get(c, "")) for k, c in EXAMPLES if (k, c) not in RUN}


def test_the_readme_has_examples_and_no_outside_folder():
    kinds = [k for k, _ in RUN]
    assert kinds.count("bash") >= 6 and "python" in kinds
    assert str(Path("..", "shared")) not in TEXT and "--data-dir" not in "".join(c for _, c in EXAMPLES)
    # what is left out, and why (not collected as skipped tests: nothing a user must fix)
    assert all(NOT_RUN.values()) and len(NOT_RUN) <= 8, NOT_RUN


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LINKRISK_DATA"}
    src = str(Path(__file__).resolve().parents[1] / "src")
    # the linkrisk under test, also when it is not installed (PYTHONPATH=src python -m pytest)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env["PYTHONWARNINGS"] = "ignore"
    return env


@pytest.mark.parametrize("kind,code", RUN,
                         ids=[f"{i}-{c.splitlines()[0][:60]}" for i, (_, c) in enumerate(RUN)])
def test_readme_example_runs(kind, code, workdir):
    if kind == "bash":
        if code.split()[0] == "linkrisk" and shutil.which("linkrisk") is None:
            pytest.skip("the linkrisk command is not on PATH: pip install -e . first")
        p = subprocess.run(code, shell=True, cwd=workdir, env=_env(), capture_output=True,
                           text=True, timeout=600)
    else:
        p = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=_env(),
                           capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{code}\nexit {p.returncode}\n{p.stderr[-2000:]}"
    assert "Traceback" not in p.stderr
