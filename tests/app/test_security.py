"""The web app's security layer, in process (no browser, no worker): token, Host header,
CSRF, session isolation, upload limit, headers, no external resource."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web app needs the 'app' extra: "
                                        "pip install 'linkrisk[app]'")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx (the dev extra)")

import warnings

with warnings.catch_warnings():  # starlette ≥ 1.x prefers httpx2; httpx still works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from linkrisk.app.server import Config, create_app

PORT = 45678
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def app(tmp_path):
    cfg = Config(port=PORT, max_upload=1000, warm=False, workdir=tmp_path)
    asgi, state = create_app(cfg)
    state.port = PORT
    yield asgi, state, cfg
    state.close()


def client(asgi, **kw) -> TestClient:
    return TestClient(asgi, base_url=BASE, follow_redirects=False, **kw)


def open_page(c: TestClient, token: str) -> str:
    r = c.get(f"/?token={token}")
    assert r.status_code == 303 and r.headers["location"] == "/"
    page = c.get("/")
    assert page.status_code == 200
    return re.search(r'name="linkrisk-session" content="([^"]+)"', page.text).group(1)


def test_no_token_is_403(app):
    asgi, state, cfg = app
    c = client(asgi)
    for path in ("/", "/api/meta", "/static/app.js", "/api/jobs"):
        r = c.get(path)
        assert r.status_code == 403, path
        assert "token" in r.text
    assert c.get("/?token=wrong").status_code == 403
    assert c.post("/api/data/original", json={"dataset": "census"}).status_code == 403


def test_token_becomes_a_strict_httponly_cookie(app):
    asgi, state, cfg = app
    c = client(asgi)
    r = c.get(f"/?token={cfg.token}")
    cookie = r.headers["set-cookie"]
    assert cfg.token in cookie and "httponly" in cookie.lower()
    assert "samesite=strict" in cookie.lower()
    assert c.get("/api/meta").status_code == 200  # the cookie is enough from now on


def test_host_header_checked_against_dns_rebinding(app):
    asgi, state, cfg = app
    c = client(asgi)
    r = c.get(f"/?token={cfg.token}", headers={"host": f"evil.example:{PORT}"})
    assert r.status_code == 400
    assert c.get(f"/api/meta?token={cfg.token}",
                 headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_csrf_needs_the_session_header_and_same_origin(app):
    asgi, state, cfg = app
    c = client(asgi)
    sid = open_page(c, cfg.token)
    body = {"dataset": "census"}
    assert c.post("/api/data/original", json=body).status_code == 403  # no session header
    r = c.post("/api/data/original", json=body,
               headers={"x-linkrisk-session": sid, "origin": "http://evil.example"})
    assert r.status_code == 403
    r = c.post("/api/data/original", json=body,
               headers={"x-linkrisk-session": sid, "origin": BASE})
    assert r.status_code == 202, r.text


def test_sessions_are_isolated(app):
    asgi, state, cfg = app
    c = client(asgi)
    a, b = open_page(c, cfg.token), open_page(c, cfg.token)
    assert a != b
    job = c.post("/api/data/original", json={"dataset": "census"},
                 headers={"x-linkrisk-session": a}).json()
    assert c.get(f"/api/jobs/{job['id']}", headers={"x-linkrisk-session": a}).status_code == 200
    assert c.get(f"/api/jobs/{job['id']}", headers={"x-linkrisk-session": b}).status_code == 404
    assert c.get(f"/api/jobs/{job['id']}/files/report.html?s={b}").status_code == 404
    assert c.post(f"/api/jobs/{job['id']}/cancel", json={},
                  headers={"x-linkrisk-session": b}).status_code == 404
    assert [j["id"] for j in c.get("/api/jobs", headers={"x-linkrisk-session": b}).json()] == []
    assert c.get("/api/data", headers={"x-linkrisk-session": b}).json() == {}


def test_upload_limit_has_a_clear_message(app):
    asgi, state, cfg = app
    c = client(asgi)
    sid = open_page(c, cfg.token)
    r = c.put("/api/data/original/upload", content=b"a,b\n" + b"1,2\n" * 500,
              headers={"x-linkrisk-session": sid, "x-filename": "big.csv"})
    assert r.status_code == 413
    assert "larger than the upload limit of 1,000 bytes" in r.json()["error"]
    assert "by path" in r.json()["error"]
    assert not list(Path(state.dir).rglob("big.csv"))  # nothing kept


def test_upload_names_stay_in_the_private_folder(app):
    asgi, state, cfg = app
    c = client(asgi)
    sid = open_page(c, cfg.token)
    for name in ("..", "../../escape.csv", "a%00b.csv", "..%2F..%2Fx.csv"):
        r = c.put("/api/data/original/upload", content=b"a,b\n1,2\n",
                  headers={"x-linkrisk-session": sid, "x-filename": name})
        assert r.status_code == 202, (name, r.text)
    files = [p for p in Path(state.dir).rglob("*") if p.is_file()]
    assert len(files) == 4 and all(Path(state.dir) in p.parents for p in files)
    assert sorted(p.name for p in files) == ["a_b.csv", "escape.csv", "upload.csv", "x.csv"]


def test_uploads_are_private_and_deleted_on_close(tmp_path):
    cfg = Config(port=PORT, warm=False, workdir=tmp_path)
    asgi, state = create_app(cfg)
    state.port = PORT
    c = client(asgi)
    sid = open_page(c, cfg.token)
    r = c.put("/api/data/original/upload", content=b"a,b\n1,2\n3,4\n",
              headers={"x-linkrisk-session": sid, "x-filename": "small.csv"})
    assert r.status_code == 202
    (f,) = Path(state.dir).rglob("small.csv")
    assert Path(state.dir).stat().st_mode & 0o777 == 0o700
    assert f.read_bytes() == b"a,b\n1,2\n3,4\n"
    state.close()
    assert not Path(state.dir).exists()


def test_paths_off_beyond_loopback_unless_root(tmp_path):
    for root, status in ((None, 403), (tmp_path, 400)):
        cfg = Config(host="0.0.0.0", port=PORT, warm=False, workdir=tmp_path, root=root)
        asgi, state = create_app(cfg)
        state.port = PORT
        c = client(asgi)
        sid = open_page(c, cfg.token)
        r = c.post("/api/data/original", json={"path": "/etc/passwd"},
                   headers={"x-linkrisk-session": sid})
        assert r.status_code == 403, r.text
        r = c.post("/api/data/original", json={"path": str(tmp_path / "missing.csv")},
                   headers={"x-linkrisk-session": sid})
        assert r.status_code == status, r.text
        state.close()


def test_headers_and_no_external_resource(app):
    asgi, state, cfg = app
    c = client(asgi)
    open_page(c, cfg.token)
    r = c.get("/")
    csp = dict(d.strip().split(" ", 1) for d in r.headers["content-security-policy"].split(";"))
    assert csp["script-src"] == "'self'" and csp["default-src"] == "'none'"
    assert csp["frame-ancestors"] == "'none'" and csp["connect-src"] == "'self'"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in r.text and "onclick=" not in r.text  # no inline script
    for url in re.findall(r'(?:src|href)="([^"]+)"', r.text):
        assert url.startswith("/"), url
        assert c.get(url).status_code == 200, url
    js = c.get("/static/app.js").text
    assert "http://" not in js and "https://" not in js
    assert "innerHTML" not in js  # user strings reach the page as text only


def test_meta_is_the_registry(app):
    from linkrisk.attacks import ATTACKS
    from linkrisk.masking import METHODS

    asgi, state, cfg = app
    c = client(asgi)
    open_page(c, cfg.token)
    m = c.get("/api/meta").json()
    assert [x["name"] for x in m["methods"]] == list(METHODS)
    assert [x["name"] for x in m["attacks"]] == list(ATTACKS)
    rs = next(x for x in m["methods"] if x["name"] == "rank_swap")
    assert rs["params"][0]["name"] == "p" and rs["params"][0]["required"]
    assert rs["grid"] == {"p": "2,5,10,15,20"}
