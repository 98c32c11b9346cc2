"""Assess Census released with rank swapping (p = 5), write the HTML report and screenshot
it in headless Chromium (Debian's ``chromium`` package: ``apt-get install chromium``).

    python scripts/report_screenshot.py [--data-dir DIR]
    # → docs/report-census-rankswap.html and docs/report-census-rankswap.png
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import linkrisk
from linkrisk.errors import LinkriskError
from linkrisk.fileio import atomic_write_text

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: Path, png_path: Path, width: int = 1200, height: int = 3500,
               timeout: float = 120.0) -> None:
    """Render ``html_path`` in headless Chromium and save a ``width``×``height`` PNG."""
    exe = chromium()
    if exe is None:
        raise SystemExit("chromium not found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               f"--window-size={width},{height}", f"--screenshot={png_path.resolve()}",
               html_path.resolve().as_uri()]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0 or not png_path.exists():
        raise SystemExit(f"chromium failed ({p.returncode}): {p.stderr.strip()[-500:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None,
                    help="folder with census.csv that overrides the packaged file "
                         "(default: $LINKRISK_DATA, else the file shipped with linkrisk)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"
                                         / "report-census-rankswap"),
                    help="output path without suffix (.html and .png are written)")
    ap.add_argument("--p", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    census = linkrisk.datasets.load("census", args.data_dir)
    released = linkrisk.mask(census, "rank_swap", p=args.p, seed=args.seed)
    res = linkrisk.assess(census, released, rank_swap_p=args.p, seed=args.seed)
    base = Path(args.out)
    html_path, png_path = base.with_suffix(".html"), base.with_suffix(".png")
    atomic_write_text(html_path, res.to_html(f"Census, rank swapping p = {args.p:g}: "
                                             "disclosure-risk report"), force=True)
    screenshot(html_path, png_path)
    w = res.worst
    print(f"worst case {w.method} {100 * w.rate:.1f} %; wrote {html_path} and {png_path}",
          file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except LinkriskError as exc:  # e.g. a --data-dir that is not a folder: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
