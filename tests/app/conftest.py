"""Fixtures of the web app's tests: a real server (``linkrisk serve --no-browser``) on a
free port, and headless Debian chromium driven by Playwright (no
browser download: ``executable_path`` is the system's chromium)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-dev-shm-usage"]


class Server:
    def __init__(self, *args: str, cwd: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "linkrisk", "serve", "--no-browser",
                                      *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=cwd, env=env)
        self.url = self.dir = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server did not start: " + self.proc.stderr.read())
            if line.startswith("linkrisk web app: "):
                self.url = line.split(": ", 1)[1].strip()
            if line.startswith("uploads and results: "):
                self.dir = Path(line.split(": ", 1)[1].split(" (")[0])
                break
        self.base = self.url.split("/?")[0]

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        out = self.proc.stdout.read()
        self.log = self.proc.stderr.read()
        return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server("--max-upload", "3MiB", cwd=tmp_path_factory.mktemp("cwd"))
    yield srv
    srv.stop()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the browser tests need Playwright (the dev extra: "
                                      "pip install -e '.[dev]')")
    exe = _chromium()
    if exe is None:
        pytest.skip("the browser tests need Debian's chromium: apt-get install -y chromium "
                    "(.ci/run installs it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        yield b
        b.close()
