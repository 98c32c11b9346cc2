"""``linkrisk serve``: start the web app (:mod:`linkrisk.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve(
    port: Annotated[int, typer.Option(help="port (default: a free one)")] = 0,
    host: Annotated[str, typer.Option(help="address to listen on; other than loopback, "
                                           "files are read by path only under --root")] = "127.0.0.1",
    root: Annotated[Path | None, typer.Option(help="the one folder files may be read from "
                                                   "by path when --host is not loopback")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="do not open a browser")] = False,
    jobs: Annotated[int, typer.Option(help="jobs that run at once (the others queue)")] = 2,
    max_upload: Annotated[str, typer.Option(help="largest upload, e.g. 2GiB (larger files: "
                                                 "open them by path)")] = "2GiB",
) -> None:
    """Start the web app on this machine and print its address (with its access token):
    assess, mask and choose from a browser; the data never leaves the machine."""
    import linkrisk.app as web  # says which extra to install when it is missing

    web.require()
    web.serve(host, port, root=root, open_browser=not no_browser, max_jobs=jobs,
              max_upload=max_upload)

