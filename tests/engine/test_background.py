"""The background compilation a cold command line run starts (engine/background.py)."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.cli import app as cli_app
from linkrisk.engine import background
from linkrisk.engine.nearest import small


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_one_holder_at_a_time_and_a_stale_lock_is_taken_over(tmp_path):
    lock = tmp_path / "linkrisk-warmup.lock"
    with background.hold_lock(lock) as mine:
        assert mine and background.holder(lock) == os.getpid()
        with background.hold_lock(lock) as second:
            assert not second  # a live holder: nothing taken
        assert lock.exists()
    assert not lock.exists()
    lock.write_text(str(_dead_pid()))  # a process that died holding it
    assert background.holder(lock) is None
    with background.hold_lock(lock) as mine:
        assert mine and background.holder(lock) == os.getpid()
    lock.write_text("not a pid")
    assert background.holder(lock) is None


def test_start_spawns_one_detached_low_priority_warmup(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    calls = []

    class Popen:
        def __init__(self, args, **kw):
            calls.append((args, kw))
            self.pid = 4242

    monkeypatch.setattr(background.subprocess, "Popen", Popen)
    monkeypatch.setenv(background.ENV, "0")
    assert background.start() is None and not calls
    monkeypatch.setenv(background.ENV, "1")
    assert background.start() == 4242
    args, kw = calls[0]
    assert args[1:] == ["-m", "linkrisk", "warmup", "--background"]
    assert kw["start_new_session"] and kw["stdout"] == subprocess.DEVNULL
    assert background.lock_path() == tmp_path / "linkrisk-warmup.lock"
    background.lock_path().write_text(str(os.getpid()))  # one is running: no second
    assert background.running() and background.start() is None and len(calls) == 1


def test_only_a_command_that_deferred_a_kernel_starts_it(monkeypatch):
    monkeypatch.setattr(background, "start", lambda: 99)
    monkeypatch.setattr(small, "_deferred", False)
    assert background.start_if_deferred() is None
    monkeypatch.setattr(small, "_deferred", True)
    assert background.start_if_deferred() == 99


def test_the_command_line_says_so_after_a_result(monkeypatch, capsys):
    """After ``datasets`` (or any command) that left kernels uncompiled: one note line on
    stderr with the pid and how to turn it off; nothing when nothing was deferred."""
    from linkrisk import cli

    monkeypatch.setattr(background, "start_if_deferred", lambda: 1234)  # what the CLI calls
    with pytest.raises(SystemExit) as exit_:
        cli.main(["methods"])
    assert exit_.value.code == 0
    err = capsys.readouterr().err
    assert "pid 1234" in err and f"{background.ENV}=0" in err
    monkeypatch.setattr(background, "start_if_deferred", lambda: None)
    with pytest.raises(SystemExit):
        cli.main(["methods"])
    assert "background" not in capsys.readouterr().err


def test_warmup_background_compiles_the_attacks_once_per_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "nice", lambda inc: 0)
    seen = []
    real = linkrisk.warmup

    def fake(progress=None, masking=True, exclusive=False):
        # the real function for the lock; the compilation itself only recorded
        if exclusive:
            return real(progress, masking, exclusive)
        seen.append((progress, masking, background.holder()))
        return []

    monkeypatch.setattr(linkrisk, "warmup", fake)
    runner = CliRunner()
    res = runner.invoke(cli_app, ["warmup", "--background"])
    assert res.exit_code == 0, res.output
    assert seen == [(None, False, os.getpid())]  # compiled while holding the lock
    assert not background.lock_path().exists()
    background.lock_path().write_text(str(os.getpid()))  # another one holds the lock
    res = runner.invoke(cli_app, ["warmup", "--background"])
    assert res.exit_code == 0 and len(seen) == 1


def test_the_public_function(monkeypatch):
    monkeypatch.setattr(background, "start", lambda: 7)
    monkeypatch.setattr(small, "_deferred", False)
    assert linkrisk.warmup_in_background() == 7
    assert linkrisk.warmup_in_background(only_if_needed=True) is None
