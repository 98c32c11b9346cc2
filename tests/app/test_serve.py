"""``linkrisk serve``: the printed tokened address, the token, the stop (uploads deleted),
and the message when the 'app' extra is missing."""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from linkrisk.errors import LinkriskError

from .conftest import Server


def test_require_names_the_extra(monkeypatch):
    import linkrisk.app

    monkeypatch.setitem(sys.modules, "starlette", None)  # import starlette fails
    with pytest.raises(LinkriskError, match=r"pip install 'linkrisk\[app\]'"):
        linkrisk.app.require()


def test_serve_prints_a_tokened_address_and_cleans_up(tmp_path):
    pytest.importorskip("starlette", reason="the web app needs the 'app' extra")
    srv = Server(cwd=tmp_path)
    try:
        assert srv.url.startswith("http://127.0.0.1:") and "/?token=" in srv.url
        assert len(srv.url.split("token=")[1]) >= 32
        assert srv.dir.is_dir() and srv.dir.stat().st_mode & 0o777 == 0o700
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(srv.base + "/", timeout=30)
        assert e.value.code == 403
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(srv.url, timeout=30) as r:  # the token becomes a cookie
            assert r.status == 200 and b"linkrisk-session" in r.read()
    finally:
        out = srv.stop()
    assert "deleted" in out
    assert not srv.dir.exists()
    assert srv.proc.returncode == 0


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_stopping_the_server_kills_running_jobs(tmp_path):
    pytest.importorskip("starlette", reason="the web app needs the 'app' extra")
    srv = Server(cwd=tmp_path)
    try:
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        page = browser.open(srv.url, timeout=30).read().decode()
        sid = re.search(r'name="linkrisk-session" content="([^"]+)"', page).group(1)

        def call(path: str, body: dict | None = None) -> dict:
            req = urllib.request.Request(srv.base + path, method="POST" if body else "GET",
                                         data=json.dumps(body).encode() if body else None,
                                         headers={"X-Linkrisk-Session": sid,
                                                  "Content-Type": "application/json"})
            return json.loads(browser.open(req, timeout=30).read())

        def wait(job: dict, until: tuple[str, ...]) -> dict:
            t0 = time.monotonic()
            while job["state"] not in until and time.monotonic() - t0 < 120:
                time.sleep(0.1)
                job = call(f"/api/jobs/{job['id']}")
            return job

        assert wait(call("/api/data/original", {"dataset": "census"}), ("done",))["state"] == "done"
        job = call("/api/choose", {"methods": ["rank_swap:p=1..20:1"], "replications": 5})
        assert wait(job, ("running",))["state"] == "running"
        workers = _children(srv.proc.pid)
        assert workers
    finally:
        srv.stop()
    def alive() -> list[int]:
        out = []
        for p in workers:
            try:
                if Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    out.append(p)
            except OSError:
                pass
        return out

    t0 = time.monotonic()
    while alive() and time.monotonic() - t0 < 5:  # multiprocessing's tracker exits last
        time.sleep(0.1)
    assert alive() == []
    assert not srv.dir.exists()  # with the job's folder and its partial files
