"""``linkrisk serve``: the printed tokened address, the token, the stop (uploads deleted),
and the message when the 'app' extra is missing."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

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
