"""``python -m linkrisk.app`` = ``linkrisk serve`` (used by the tests)."""

from __future__ import annotations

import argparse
import sys

from linkrisk.errors import LinkriskError


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m linkrisk.app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--root")
    p.add_argument("--token")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--max-upload", type=int, default=2 * 2**30)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--no-warm", action="store_true")
    a = p.parse_args(argv)
    from . import serve

    try:
        serve(a.host, a.port, token=a.token, root=a.root, open_browser=not a.no_browser,
              max_jobs=a.jobs, max_upload=a.max_upload, warm=not a.no_warm)
    except LinkriskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
