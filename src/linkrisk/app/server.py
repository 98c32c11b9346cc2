"""The web app's server: Starlette routes, the security layer and the sessions.

Security (README, "The web app"):

- every request carries the random token printed at start (``?token=``; the page then
  keeps it in an HttpOnly, SameSite=Strict cookie), else 403;
- the Host header must name this server (DNS rebinding) when it binds loopback;
- every state-changing request (POST/PUT/DELETE) carries the page's session id in the
  ``X-Linkrisk-Session`` header (a cross-site form cannot set it; the id lives in the
  tab's memory, not in a cookie) and, when the browser sends one, a same-origin
  ``Origin``: this is the CSRF protection;
- a session is one browser tab: its data and jobs are invisible to the others;
- responses carry a Content-Security-Policy without inline script, ``nosniff``,
  ``frame-ancestors 'none'`` and ``no-referrer``; the pages load nothing from elsewhere
  (htmx is not needed: the page's script is ours, plotly's ships in its wheel);
- uploads stream into a private (0700) folder removed when the server stops, up to
  ``max_upload`` bytes.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

import linkrisk

from .jobs import JobManager

log = logging.getLogger("linkrisk.app")

HERE = Path(__file__).parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
           "referrer-policy": "no-referrer", "x-frame-options": "DENY",
           "cross-origin-opener-policy": "same-origin",
           "cross-origin-resource-policy": "same-origin",
           "permissions-policy": "camera=(), microphone=(), geolocation=()"}
#: file formats a release can be written in (fileio.write_table)
FORMATS = ("csv", "csv.gz", "parquet", "dta", "sav", "xpt")
FORBIDDEN = ("403 Forbidden: this linkrisk server needs its token. Open the address "
             "`linkrisk serve` printed (it ends in ?token=…).\n")
ROLES = ("original", "release")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


@dataclass
class Config:
    """How the server runs (``linkrisk serve`` options)."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    root: Path | None = None
    max_jobs: int = 2
    max_upload: int = 2 * 2**30
    warm: bool = True
    workdir: Path | None = None

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def paths_allowed(self) -> bool:
        """Files may be read by server-side path: on loopback, or under ``root``."""
        return self.loopback or self.root is not None


@dataclass
class Session:
    id: str
    dir: Path
    data: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: float = field(default_factory=time.time)


class State:
    def __init__(self, config: Config) -> None:
        self.config = config
        base = config.workdir
        self.dir = Path(tempfile.mkdtemp(prefix="linkrisk-app-", dir=base))
        os.chmod(self.dir, 0o700)
        self.sessions: dict[str, Session] = {}
        self.jobs = JobManager(config.max_jobs, warm=config.warm)
        self.port = config.port

    def new_session(self) -> Session:
        sid = secrets.token_urlsafe(18)
        d = self.dir / f"s-{secrets.token_hex(8)}"
        d.mkdir(mode=0o700)
        s = Session(sid, d)
        self.sessions[sid] = s
        return s

    def close(self) -> None:
        self.jobs.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# ---------------------------------------------------------------------- security layer
class Guard:
    """ASGI middleware: Host check, token, CSRF, security headers."""

    def __init__(self, app: Any, state: State) -> None:
        self.app = app
        self.state = state

    def _allowed_host(self, host: str) -> bool:
        cfg = self.state.config
        if not cfg.loopback:
            return True  # every request still needs the token
        port = self.state.port
        return host in {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        req = Request(scope)

        async def send_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {k.lower() for k, _ in headers}
                for k, v in HEADERS.items():
                    if k.encode() not in have:
                        headers.append((k.encode(), v.encode()))
                if not scope["path"].startswith("/static/"):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        host = req.headers.get("host", "")
        if not self._allowed_host(host):
            await PlainTextResponse("400 Bad Request: unknown Host header (this server "
                                    "answers only to its own address)\n",
                                    status_code=400)(scope, receive, send_headers)
            return
        token = self.state.config.token
        given = req.query_params.get("token")
        cookie = req.cookies.get(self.cookie_name)
        ok = ((given is not None and secrets.compare_digest(given, token))
              or (cookie is not None and secrets.compare_digest(cookie, token)))
        if not ok:
            await PlainTextResponse(FORBIDDEN, status_code=403)(scope, receive, send_headers)
            return
        if req.method not in ("GET", "HEAD"):
            origin = req.headers.get("origin")
            if origin is not None and origin.split("://", 1)[-1] != host:
                await JSONResponse({"error": "cross-origin request refused"},
                                   status_code=403)(scope, receive, send_headers)
                return
            sid = req.headers.get("x-linkrisk-session", "")
            if sid not in self.state.sessions:
                await JSONResponse({"error": "missing or unknown session (CSRF check): "
                                             "reload the page"},
                                   status_code=403)(scope, receive, send_headers)
                return
        if given is not None and req.method == "GET" and scope["path"] == "/":
            # keep the token in a cookie and take it out of the address bar
            resp = RedirectResponse("/", status_code=303)
            resp.set_cookie(self.cookie_name, token, httponly=True, samesite="strict",
                            secure=False, path="/")
            await resp(scope, receive, send_headers)
            return
        await self.app(scope, receive, send_headers)

    @property
    def cookie_name(self) -> str:
        return f"linkrisk_token_{self.state.port}"


# ---------------------------------------------------------------------- helpers
def _session(request: Request) -> Session:
    st: State = request.app.state.linkrisk
    sid = request.headers.get("x-linkrisk-session") or request.query_params.get("s", "")
    s = st.sessions.get(sid)
    if s is None:
        raise HttpError(404, "unknown session: reload the page")
    return s


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise HttpError(400, "the request body is not JSON") from exc
    if not isinstance(body, dict):
        raise HttpError(400, "the request body must be a JSON object")
    return body


def _role(request: Request) -> str:
    role = request.path_params["role"]
    if role not in ROLES:
        raise HttpError(404, f"no such input {role!r}")
    return role


def _command(*parts: Any) -> str:
    return shlex.join(["linkrisk", *[str(p) for p in parts if p is not None]])


def _param_json(p: Any) -> dict[str, Any]:
    default = p.default
    if default is not None and not isinstance(default, (int, float, str, bool)):
        default = str(default)
    return {"name": p.name, "type": p.type.__name__, "shown_type": p.shown_type,
            "default": default, "shown_default": p.shown_default, "help": p.help,
            "choices": list(p.choices), "required": p.required}


def _meta(state: State) -> dict[str, Any]:
    """The registries as the page needs them: the forms are generated from these."""
    from linkrisk import datasets
    from linkrisk.attacks import ATTACKS
    from linkrisk.experiments.choose import CATEGORICAL_DEFAULTS, NUMERIC_DEFAULTS
    from linkrisk.masking import METHODS

    methods = []
    for spec in METHODS.values():
        grid = {**NUMERIC_DEFAULTS, **CATEGORICAL_DEFAULTS}.get(spec.name, {})  # choose's
        methods.append({"name": spec.name, "summary": spec.summary, "kind": spec.kind,
                        "deterministic": spec.deterministic, "strength": spec.strength,
                        "params": [_param_json(p) for p in spec.params.values()],
                        "grid": {k: ",".join(map(str, v)) for k, v in grid.items()}})
    attacks = [{"name": a.name, "summary": a.summary, "kinds": list(a.kinds),
                "params": [_param_json(p) for p in a.params.values()]}
               for a in ATTACKS.values()]
    return {"methods": methods, "attacks": attacks, "datasets": list(datasets.REFERENCE),
            "formats": list(FORMATS), "paths": state.config.paths_allowed,
            "root": None if state.config.root is None else str(state.config.root),
            "max_upload": state.config.max_upload, "max_upload_text": _mib(state.config.max_upload),
            "version": linkrisk.__version__}


def _resolve_path(state: State, text: str) -> Path:
    cfg = state.config
    if not cfg.paths_allowed:
        raise HttpError(403, "reading files by path is off on a server reachable from other "
                             "machines; upload the file, or restart with --root DIR")
    p = Path(os.path.expanduser(text.strip()))
    if not p.is_absolute():
        p = (cfg.root or Path.cwd()) / p
    p = p.resolve()
    if cfg.root is not None:
        root = cfg.root.resolve()
        if p != root and root not in p.parents:
            raise HttpError(403, f"only files under {root} can be read by path (--root)")
    if not p.is_file():
        raise HttpError(400, f"file not found: {text}")
    return p


def _submit(request: Request, s: Session, kind: str, args: dict[str, Any], label: str
            ) -> JSONResponse:
    st: State = request.app.state.linkrisk
    job = st.jobs.submit(s.id, kind, args, s.dir / "jobs" / secrets.token_hex(8), label)
    return JSONResponse(st.jobs.view(job), status_code=202)


# ---------------------------------------------------------------------- routes
async def index(request: Request) -> Response:
    st: State = request.app.state.linkrisk
    s = st.new_session()
    page = request.app.state.templates.get_template("index.html").render(
        session=s.id, version=linkrisk.__version__, paths=st.config.paths_allowed,
        max_upload=_mib(st.config.max_upload))
    return Response(page, media_type="text/html; charset=utf-8")


async def meta(request: Request) -> Response:
    return JSONResponse(_meta(request.app.state.linkrisk))


async def plotly_js(request: Request) -> Response:
    import plotly

    p = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return FileResponse(p, media_type="text/javascript",
                        headers={"cache-control": "private, max-age=86400"})


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if not re.fullmatch(r"[a-z0-9_-]+\.(js|css|svg)", name):
        raise HttpError(404, "not found")
    p = HERE / "static" / name
    if not p.is_file():
        raise HttpError(404, "not found")
    media = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}[name.rsplit(".", 1)[1]]
    return FileResponse(p, media_type=media, headers={"cache-control": "private, max-age=60"})


async def upload(request: Request) -> Response:
    """PUT /api/data/{role}/upload: the file's bytes, its name in ``X-Filename``."""
    st: State = request.app.state.linkrisk
    s = _session(request)
    role = _role(request)
    name = unquote(request.headers.get("x-filename", "")) or "upload.csv"
    name = re.sub(r"[\x00-\x1f]", "_", Path(name.replace("\\", "/")).name)
    if name in ("", ".", ".."):
        name = "upload.csv"  # fileio reads an upload by its suffix, as the CLI a file
    limit = st.config.max_upload
    too_big = HttpError(413, f"{name} is larger than the upload limit of {_mib(limit)}: open "
                             "it by path instead (a file on this machine is read in place), "
                             "or start the server with a larger --max-upload")
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > limit:
        raise too_big
    d = s.dir / "uploads" / secrets.token_hex(6)
    d.mkdir(mode=0o700, parents=True)
    path = d / name
    n = 0
    with open(path, "wb") as f:
        async for chunk in request.stream():
            n += len(chunk)
            if n > limit:
                f.close()
                shutil.rmtree(d, ignore_errors=True)
                raise too_big
            f.write(chunk)
    return _load(request, s, role, str(path), name, "upload")


def _load(request: Request, s: Session, role: str, spec: str, label: str, kind: str
          ) -> JSONResponse:
    s.data.pop(role, None)
    resp = _submit(request, s, "load", {"spec": spec, "label": label, "kind": kind},
                   f"read {label}")
    s.data[role + "_pending"] = {"label": label, "kind": kind, "spec": spec,
                                 "job": json.loads(resp.body)["id"]}
    return resp


async def open_data(request: Request) -> Response:
    """POST /api/data/{role}: ``{"path": …}`` or ``{"dataset": …}``."""
    from linkrisk import datasets

    st: State = request.app.state.linkrisk
    s = _session(request)
    role = _role(request)
    body = await _json(request)
    if body.get("dataset"):
        name = str(body["dataset"]).lower()
        if name not in datasets.REFERENCE:
            raise HttpError(400, f"no built-in data set {name!r}")
        return _load(request, s, role, name, name, "dataset")
    if body.get("path"):
        p = _resolve_path(st, str(body["path"]))
        return _load(request, s, role, str(p), p.name, "path")
    raise HttpError(400, "give a path or a data set")


async def use_release(request: Request) -> Response:
    """POST /api/data/release/from-job: a masked release of this session as the release."""
    st: State = request.app.state.linkrisk
    s = _session(request)
    body = await _json(request)
    job = st.jobs.get(s.id, str(body.get("job", "")))
    if job is None or job.state != "done" or job.kind != "mask":
        raise HttpError(404, "no such release")
    r = job.result or {}
    s.data["release"] = {"label": r["name"], "kind": "mask", "spec": None,
                         "pickle": r["pickle"], "rows": r["records"], "sha256": None}
    return JSONResponse(_data_view(s))


def _data_view(s: Session) -> dict[str, Any]:
    return {role: {k: v for k, v in s.data[role].items() if k in ("label", "kind", "rows",
                                                                   "columns", "warnings")}
            for role in ROLES if role in s.data}


def _absorb(st: State, s: Session) -> None:
    """Record finished reads of this session as its inputs."""
    for job in st.jobs.session_jobs(s.id):
        if job.kind == "load" and job.state == "done" and not job.args.get("_absorbed"):
            job.args["_absorbed"] = True
            for role in ROLES:
                pend = s.data.get(role + "_pending")
                if pend is not None and pend["job"] == job.id:
                    s.data[role] = {**pend, **job.result}
                    s.data.pop(role + "_pending")


async def data_state(request: Request) -> Response:
    st: State = request.app.state.linkrisk
    s = _session(request)
    _absorb(st, s)
    return JSONResponse(_data_view(s))


def _inputs(st: State, s: Session, need_release: bool = True) -> tuple[dict, dict | None]:
    _absorb(st, s)
    a = s.data.get("original")
    if a is None:
        raise HttpError(400, "open the original file first")
    b = s.data.get("release")
    if need_release and b is None:
        raise HttpError(400, "open the release (masked file) first")
    return a, b


def _columns(value: Any) -> list[str] | None:
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    return [str(c) for c in value]


async def _job_request(request: Request, need_release: bool = False
                       ) -> tuple[Session, dict, dict | None, dict[str, Any]]:
    """The session, its inputs and the JSON body of a request that starts a job."""
    st: State = request.app.state.linkrisk
    s = _session(request)
    body = await _json(request)
    a, b = _inputs(st, s, need_release=need_release and body.get("point") is None)
    return s, a, b, body


async def inspect(request: Request) -> Response:
    s, a, b, body = await _job_request(request)
    args = {"original": a["pickle"], "release": b["pickle"] if b else None,
            "qi": _columns(body.get("qi")), "ids": _columns(body.get("ids")),
            "kinds": {str(k): str(v) for k, v in (body.get("kinds") or {}).items()}}
    return _submit(request, s, "inspect", args, "read the schema")


def _spec_name(d: dict[str, Any]) -> str:
    return d["spec"] if d.get("kind") in ("dataset", "path") else d["label"]


async def run_assess(request: Request) -> Response:
    s, a, b, body = await _job_request(request, need_release=True)
    point = body.get("point")
    qi, ids = _columns(body.get("qi")), _columns(body.get("ids"))
    kinds = {str(k): str(v) for k, v in (body.get("kinds") or {}).items()}
    attacks = _columns(body.get("attacks"))
    rsp = body.get("rank_swap_p")
    limit = body.get("max_risk")
    try:
        rsp = None if rsp in (None, "") else float(rsp)
        limit = None if limit in (None, "") else linkrisk.parse_percent(str(limit))
        suda = body.get("suda_max_size")
        suda = None if suda in (None, "") else int(suda)
        seed = int(body.get("seed") or 0)
    except (TypeError, ValueError) as exc:
        raise HttpError(400, f"not a number: {exc}") from exc
    except linkrisk.LinkriskError as exc:
        raise HttpError(400, str(exc)) from exc
    names = {"original": a["label"],
             "release": point["label"] if point else b["label"]}
    cmd = _command("assess", _spec_name(a), "<release>" if point else _spec_name(b),
                   *(["--method", ",".join(attacks)] if attacks else []),
                   *(["--qi", ",".join(qi)] if qi else []),
                   *(["--ids", ",".join(ids)] if ids else []),
                   *(["--kinds", ",".join(f"{k}={v}" for k, v in kinds.items())]
                     if kinds else []),
                   *(["--rank-swap-p", f"{rsp:g}"] if rsp is not None else []),
                   *(["--max-risk", f"{limit:g}%"] if limit is not None else []),
                   *(["--weights", body["weights"]] if body.get("weights") else []),
                   *(["--household", body["household"]] if body.get("household") else []),
                   *(["--seed", seed] if seed else []))
    args = {"original": a["pickle"], "release": None if point else b["pickle"],
            "qi": qi, "ids": ids, "kinds": kinds, "attacks": attacks, "rank_swap_p": rsp,
            "max_risk": limit, "weights": body.get("weights") or None,
            "household": body.get("household") or None, "suda_max_size": suda,
            "seed": seed, "names": names, "sha_original": a.get("sha256"),
            "sha_release": None if point else b.get("sha256"), "command": cmd}
    if point is not None:
        args["point"] = {k: point[k] for k in ("label", "method", "params", "seed", "columns")}
    return _submit(request, s, "assess", args, f"assess {names['release']}")


async def run_mask(request: Request) -> Response:
    s, a, _, body = await _job_request(request)
    method = str(body.get("method", ""))
    params = {str(k): str(v) for k, v in (body.get("params") or {}).items()
              if v not in (None, "")}
    fmt = str(body.get("format", "csv"))
    if fmt not in FORMATS:
        raise HttpError(400, f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    seed = body.get("seed")
    cmd = _command("mask", _spec_name(a), "--method", method,
                   *[x for k, v in params.items() for x in ("--param", f"{k}={v}")],
                   *(["--columns", body["columns"]] if body.get("columns") else []),
                   *(["--seed", seed] if seed not in (None, "") else []),
                   "-o", f"release.{fmt}")
    args = {"original": a["pickle"], "method": method, "params": params, "format": fmt,
            "seed": seed, "columns": body.get("columns") or None, "ids": body.get("ids"),
            "label": a["label"], "sha256": a.get("sha256"),
            "stem": Path(a["label"]).name.split(".")[0], "command": cmd}
    return _submit(request, s, "mask", args, f"mask {a['label']} with {method}")


async def run_choose(request: Request) -> Response:
    s, a, _, body = await _job_request(request)
    methods = [str(m) for m in body.get("methods") or []]
    args = {"original": a["pickle"], "methods": methods,
            "max_risk": body.get("max_risk") or None,
            "replications": int(body.get("replications") or 5),
            "qi": _columns(body.get("qi")), "confidential": _columns(body.get("confidential")),
            "ordered": bool(body.get("ordered")), "seed": int(body.get("seed") or 0)}
    return _submit(request, s, "choose", args, f"choose for {a['label']}")


def _job(request: Request) -> tuple[State, Session, Any]:
    st: State = request.app.state.linkrisk
    s = _session(request)
    job = st.jobs.get(s.id, request.path_params["job"])
    if job is None:
        raise HttpError(404, "no such job")
    return st, s, job


async def job_view(request: Request) -> Response:
    st, s, job = _job(request)
    if job.kind == "load" and job.state == "done":
        _absorb(st, s)
    return JSONResponse(st.jobs.view(job))


async def job_cancel(request: Request) -> Response:
    st, s, job = _job(request)
    # killing a worker can take seconds: off the event loop, so other pages stay served
    await run_in_threadpool(st.jobs.cancel, job)
    return JSONResponse(st.jobs.view(job))


async def job_list(request: Request) -> Response:
    st: State = request.app.state.linkrisk
    s = _session(request)
    return JSONResponse([{k: v for k, v in st.jobs.view(j).items() if k != "result"}
                         for j in st.jobs.session_jobs(s.id)])


async def job_file(request: Request) -> Response:
    st, s, job = _job(request)
    name = request.path_params["name"]
    files = (job.result or {}).get("files", []) if job.state == "done" else []
    if name not in files:
        raise HttpError(404, "no such file")
    p = job.out / name
    return FileResponse(p, filename=name, content_disposition_type="attachment",
                        headers={"content-security-policy": "sandbox; default-src 'none'"})


async def _errors(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HttpError):
        return JSONResponse({"error": exc.message}, status_code=exc.status)
    log.error("request %s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal error (the server log has the details)"},
                        status_code=500)


def create_app(config: Config) -> tuple[Any, State]:
    """The ASGI app (wrapped in the security layer) and its state."""
    state = State(config)
    routes = [
        Route("/", index),
        Route("/api/meta", meta),
        Route("/static/plotly.min.js", plotly_js),
        Route("/static/{name}", static),
        Route("/api/data", data_state),
        Route("/api/data/release/from-job", use_release, methods=["POST"]),
        Route("/api/data/{role}", open_data, methods=["POST"]),
        Route("/api/data/{role}/upload", upload, methods=["PUT"]),
        Route("/api/inspect", inspect, methods=["POST"]),
        Route("/api/assess", run_assess, methods=["POST"]),
        Route("/api/mask", run_mask, methods=["POST"]),
        Route("/api/choose", run_choose, methods=["POST"]),
        Route("/api/jobs", job_list),
        Route("/api/jobs/{job}", job_view),
        Route("/api/jobs/{job}/cancel", job_cancel, methods=["POST"]),
        Route("/api/jobs/{job}/files/{name}", job_file),
    ]
    app = Starlette(routes=routes, exception_handlers={HttpError: _errors, Exception: _errors})
    app.state.linkrisk = state
    app.state.templates = Environment(loader=PackageLoader("linkrisk.app", "templates"),
                                      autoescape=select_autoescape(["html"]))
    return Guard(app, state), state


def address(config: Config, port: int) -> str:
    host = config.host
    shown = "127.0.0.1" if host in ("localhost",) else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/?token={quote(config.token)}"
