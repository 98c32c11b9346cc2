"""The HTML report: self-contained, every section present, no record values unless asked,
renders in a real browser; its SVG charts are drawn to scale."""

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import linkrisk
from linkrisk.report import fmt, svg

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def assessment():
    orig = linkrisk.datasets.synthetic(300, 4, seed=1)
    rel = linkrisk.mask(orig, "noise", a=0.5, seed=2)
    return linkrisk.assess(orig, rel, attacks="dbrl,rbrl_max,prl")


@pytest.fixture(scope="module")
def report(assessment):
    return assessment.to_html("test report")


def _svgs(html):
    return [ET.fromstring(s) for s in re.findall(r"<svg.*?</svg>", html, flags=re.S)]


def test_sections_and_inline_svg_charts(report):
    for section in ("verdict", "threat", "attacks", "scenarios", "utility", "records",
                    "exposed", "inputs", "settings"):
        assert f'id="{section}"' in report
    charts = _svgs(report)  # well-formed XML: attacks, drivers (QI alone), per-record risk
    assert len(charts) == 3 and "<img" not in report
    assert "Worst case" in report and "rbrl_max" in report


def test_threat_model_and_every_attack_explained(report, assessment):
    assert "Threat model" in report and "informed intruder" in report
    for name in assessment.results:
        assert linkrisk.ATTACKS[name].summary.split(":")[0] in report
    assert "true pairs by row order (checked" in report
    assert "quasi-identifiers used" in report


def test_no_record_values_unless_asked(assessment):
    plain = assessment.to_html("r")
    exposed = plain.split('id="exposed"')[1].split('id="inputs"')[0]
    for c in assessment.settings["qi"]:
        assert f">{c}<" not in exposed
    assert "class=\"banner\"" not in plain
    full = assessment.to_html("r", include_records=True)
    exposed = full.split('id="exposed"')[1].split('id="inputs"')[0]
    assert all(f">{c}<" in exposed for c in assessment.settings["qi"])
    assert 'class="banner"' in full and "confidential" in full


def test_inputs_hash_and_command(assessment):
    h = assessment.to_html("r", inputs=[{"role": "original", "name": "o.csv", "sha256": "ab" * 32}],
                           command="linkrisk assess o.csv m.csv")
    assert "ab" * 32 in h and "linkrisk assess o.csv m.csv" in h


def test_number_formatting():
    assert fmt(1079.5) == "1,079.5"
    assert fmt(2.6e-16) == "0"
    assert fmt(99.95) == "99.95"
    assert fmt(np.int64(1080)) == "1,080"
    assert fmt(float("nan")) == "—"


def test_report_without_matplotlib(assessment, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    assert assessment.to_html("r").startswith("<!DOCTYPE html>")


def test_max_risk_sets_bands(assessment):
    pct = 100 * assessment.worst.rate
    assessment.settings["max_risk"] = pct + 1
    try:
        assert not assessment.exceeds and "Risk level: <b>moderate" in assessment.to_html()
        assessment.settings["max_risk"] = pct / 2
        assert assessment.exceeds and "above the limit" in assessment.to_html()
        assessment.settings["max_risk"] = 2 * pct + 1
        assert "Risk level: <b>low" in assessment.to_html()
    finally:
        assessment.settings["max_risk"] = None


def test_bar_chart_to_scale():
    s = ET.fromstring(svg.bar_chart({"a": 10.0, "b": 40.0, "c": 0.0}, highlight="b"))
    rects = s.findall(f"{SVG_NS}rect")
    w = [float(r.get("width")) for r in rects]
    assert w[1] == pytest.approx(4 * w[0], abs=0.3) and w[2] == 0
    assert rects[1].get("fill") == "#c62828" and rects[0].get("fill") != "#c62828"


def test_histogram_to_scale():
    s = ET.fromstring(svg.histogram([3, 6, 0], [0, 1, 2, 3]))
    h = [float(r.get("height")) for r in s.findall(f"{SVG_NS}rect")]
    assert h[1] == pytest.approx(2 * h[0], abs=0.2) and h[2] == 0
    with pytest.raises(ValueError):
        svg.histogram([1, 2], [0, 1])


def test_line_chart_error_bars_and_escaping():
    s = svg.line_chart({"<a&b>": ([1, 2, 3], [10, 20, 30], [1, 2, 0]),
                        "c": ([1, 2, 3], [5, 5, 5], None)}, title="t<1>", ylim=(0, 40))
    root = ET.fromstring(s)
    assert len(root.findall(f"{SVG_NS}circle")) == 6
    # two points with error bars: three lines each (bar + two caps)
    bars = [ln for ln in root.findall(f"{SVG_NS}line") if ln.get("stroke") == svg.PALETTE[0]]
    assert len(bars) == 2 * 3 + 1  # + the legend line
    assert "&lt;a&amp;b&gt;" in s


def test_nice_ticks():
    assert svg.nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    t = svg.nice_ticks(0, 0.37)
    assert t[0] == 0 and t[-1] >= 0.37


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
