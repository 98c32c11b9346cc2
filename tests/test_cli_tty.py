"""Every CLI command as a user runs it: under a pseudo-terminal (rich draws progress bars
and colours, the path CI never saw) and with pipes (plain progress lines). Real
subprocesses; exit code 0, the expected output and no traceback in both cases."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import linkrisk

SRC = str(Path(linkrisk.__file__).parents[1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "TERM": "xterm-256color", "COLUMNS": "120",
            "LINES": "40"}


def run_pty(args: list[str], cwd: Path, timeout: float = 300) -> tuple[int, str]:
    """Run ``linkrisk ARGS`` with stdin, stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "linkrisk.cli", *args], stdin=slave,
                         stdout=slave, stderr=slave, cwd=cwd, env=_env(), close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=timeout)
    os.close(master)
    return p.returncode, b"".join(chunks).decode("utf-8", errors="replace")


def run_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "linkrisk.cli", *args], cwd=cwd, env=_env(),
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("tty")
    orig = linkrisk.datasets.synthetic(300, 4, seed=1)
    orig.to_csv(d / "o.csv", index=False)
    linkrisk.mask(orig, "rank_swap", p=5, seed=2).to_csv(d / "m.csv", index=False)
    (d / "s.toml").write_text(f"""name = "tiny"
seed = 1
replications = 1
attacks = ["dbrl"]

[[datasets]]
name = "{d / 'o.csv'}"

[[masking]]
method = "noise"
param = "a"
values = [0.5]
""")
    return d


COMMANDS = {
    "demo": (["demo", "--n", "300", "--m", "4"], "Worst case"),
    "attack": (["attack", "o.csv", "m.csv", "-m", "dbrl,prl,rbrl_max"], "re-identified"),
    "assess": (["assess", "o.csv", "m.csv", "-m", "dbrl,prl", "-o", "{out}.html"], "Worst case"),
    "study": (["study", "s.toml", "-o", "{out}", "--processes", "1"], "strongest attacks"),
    "mask": (["mask", "o.csv", "-m", "noise", "-p", "a=0.5", "-o", "{out}.csv"], "wrote"),
    "methods": (["methods"], "rbrl_max"),
    "datasets": (["datasets"], "census"),
}
#: without a terminal every command is also run in process by the other CLI tests; these
#: two show the plain path end to end in a real process
PIPED = ["demo", "assess"]


@pytest.mark.slow
@pytest.mark.parametrize("name,mode", [(n, "pty") for n in COMMANDS]
                         + [(n, "pipe") for n in PIPED])
def test_command(name, mode, work):
    args, expect = COMMANDS[name]
    args = [a.replace("{out}", f"out-{name}-{mode}") for a in args]
    code, text = (run_pty if mode == "pty" else run_pipe)(args, work)
    assert code == 0, text
    assert expect in text
    assert "Traceback" not in text and "Error" not in text


@pytest.mark.slow
def test_error_under_a_terminal_is_one_line(work):
    code, text = run_pty(["attack", "o.csv", "m.csv", "-m", "dbrl3"], work)
    assert code == 2
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown attack 'dbrl3'" in lines[0]
