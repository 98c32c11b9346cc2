"""linkrisk's web app (``linkrisk serve``): assess, mask and choose from a page served on
the data owner's own machine; the data never leaves it. README, "The web app".

Needs the ``app`` extra (``pip install 'linkrisk[app]'``): Starlette, uvicorn, Jinja2 and
plotly (whose JavaScript ships in its wheel).
"""

from __future__ import annotations

import atexit
import logging
import signal
import socket
import sys
import webbrowser
from pathlib import Path
from typing import Any

from linkrisk.errors import LinkriskError
from linkrisk.options import parse_size

EXTRA = "the web app needs the 'app' extra: pip install 'linkrisk[app]'"


class _Stop(BaseException):
    """SIGINT or SIGTERM: stop the server (and clean up)."""


def require() -> None:
    """Fail with the install command when the app's dependencies are missing."""
    missing = []
    for mod in ("starlette", "uvicorn", "jinja2", "plotly"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        raise LinkriskError(f"{EXTRA} (missing: {', '.join(missing)})")


def serve(host: str = "127.0.0.1", port: int = 0, *, token: str | None = None,
          root: str | Path | None = None, open_browser: bool = True, max_jobs: int = 2,
          max_upload: int | str = 2 * 2**30, warm: bool = True, log_level: str = "warning",
          out=None) -> None:
    """Start the app and block until Ctrl-C/SIGTERM; print its tokened address first."""
    require()
    import uvicorn

    from .server import Config, address, create_app

    out = out or sys.stdout
    max_upload = parse_size(max_upload)
    if max_jobs < 1:
        raise LinkriskError("--jobs must be at least 1")
    if root is not None:
        root = Path(root).expanduser().resolve()
        if not root.is_dir():
            raise LinkriskError(f"--root {root}: not a folder")
    kw = {} if token is None else {"token": token}
    cfg = Config(host=host, port=port, root=root, max_jobs=max_jobs, max_upload=max_upload,
                 warm=warm, **kw)
    if not cfg.loopback and token == "":
        raise LinkriskError("a server reachable from other machines needs its token")
    sock = _listen(host, port)
    cfg.port = sock.getsockname()[1]
    app, state = create_app(cfg)
    state.port = cfg.port
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    url = address(cfg, cfg.port)
    state.jobs.start()
    _announce(url, state, cfg, out)
    if open_browser:
        try:
            webbrowser.open(url)
        except Exception:  # no browser is not an error
            pass
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False,
                                           lifespan="off", timeout_graceful_shutdown=2))
    _run_until_stopped(server, sock, state, out)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), or one error line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise LinkriskError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)
    return sock


def _announce(url: str, state: Any, cfg: Any, out: Any) -> None:
    """The lines printed at start: the tokened address, where files live, how to stop."""
    print(f"linkrisk web app: {url}", file=out, flush=True)
    print(f"uploads and results: {state.dir} (private, deleted when the server stops)",
          file=out, flush=True)
    if not cfg.loopback:
        print("listening beyond this machine: every request needs the token; reading files "
              "by path is " + (f"limited to {cfg.root}" if cfg.root else "off (--root DIR)"),
              file=out, flush=True)
    print("stop with Ctrl-C", file=out, flush=True)


def _run_until_stopped(server: Any, sock: socket.socket, state: Any, out: Any) -> None:
    """Serve on ``sock`` until SIGINT/SIGTERM, then delete the uploads and results (also
    at interpreter exit, whichever comes first)."""
    closed = []

    def close() -> None:
        if not closed:
            closed.append(True)
            state.close()
            sock.close()

    atexit.register(close)

    def stop(signum: int, frame: object) -> None:
        raise _Stop(signum)

    # uvicorn handles SIGINT/SIGTERM and raises them again once it has stopped: these
    # handlers then turn them into _Stop, so that the clean-up below always runs
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    except _Stop:
        pass
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        close()
        print("linkrisk web app stopped; its uploads and results were deleted", file=out,
              flush=True)
