"""Regenerate the parameter tables of docs/methods.md from the registries.

    python scripts/gen_methods_doc.py           # rewrite docs/methods.md in place
    python scripts/gen_methods_doc.py --check   # exit 1 if the committed file is stale

Only the blocks between ``<!-- BEGIN … -->`` and ``<!-- END … -->`` markers change (see
:mod:`linkrisk.catalog`); the prose around them is left as written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from linkrisk.catalog import render

DOC = Path(__file__).resolve().parent.parent / "docs" / "methods.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report whether the file is "
                    "up to date (exit 1 if not)")
    ap.add_argument("path", nargs="?", type=Path, default=DOC)
    args = ap.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    try:
        new = render(text)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if new == text:
        print(f"{args.path}: up to date")
        return 0
    if args.check:
        print(f"{args.path}: out of date; run python scripts/gen_methods_doc.py",
              file=sys.stderr)
        return 1
    tmp = args.path.with_suffix(".md.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(args.path)
    print(f"{args.path}: regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
