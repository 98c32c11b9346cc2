"""The HTML report: self-contained, every section present, renders in a real browser."""

import re
import shutil
import subprocess

import numpy as np
import pytest

import linkrisk


@pytest.fixture(scope="module")
def report():
    orig = linkrisk.datasets.synthetic(300, 4, seed=1)
    rel = linkrisk.mask(orig, "noise", a=0.5, seed=2)
    return linkrisk.assess(orig, rel, attacks="dbrl,rbrl_max,prl").to_html("test report")


def test_sections_and_embedded_plots(report):
    for section in ("verdict", "attacks", "utility", "records", "exposed", "settings"):
        assert f'id="{section}"' in report
    imgs = re.findall(r'<img[^>]*src="([^"]+)"', report)
    assert len(imgs) == 2 and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert "Worst case" in report and "rbrl_max" in report


def test_no_external_resources(report):
    assert not re.search(r'(src|href)="(https?:)?//', report)
    assert "<script" not in report


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="headless render test needs Debian's chromium: apt-get install -y "
                           "chromium (.ci/run installs it)")
def test_renders_in_headless_chromium(report, tmp_path):
    html = tmp_path / "r.html"
    html.write_text(report)
    png = tmp_path / "r.png"
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600",
           f"--screenshot={png}", html.as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    import matplotlib.image as mpimg

    pix = mpimg.imread(png)
    assert pix.shape[0] == 1600 and pix.shape[1] == 1200
    # the red verdict banner and the plots make the page far from blank
    assert float(np.std(pix[..., :3])) > 0.05
    red = (pix[..., 0] > 0.7) & (pix[..., 1] < 0.3) & (pix[..., 2] < 0.3)
    assert red.sum() > 1000
