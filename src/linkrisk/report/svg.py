"""Small inline-SVG charts for the HTML reports: no plotting library, no network, no
script. Each function returns one ``<svg>`` element as a string; every text is escaped.

- :func:`bar_chart`: horizontal bars with their values (attack rates);
- :func:`histogram`: vertical bars over given bin edges (per-record risk);
- :func:`line_chart`: one or more series over x with optional error bars (study results).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

FONT = "font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif"
AXIS = "#57606a"
BLUE = "#4a6fa5"
PALETTE = ("#4a6fa5", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037",
           "#ad1457")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (steps 1, 2, 2.5 or 5 × 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    out = []
    v = first
    while v <= hi + 1e-9 * step:
        out.append(round(v, 10))
        v += step
    if out[-1] < hi:
        out.append(round(out[-1] + step, 10))
    return out


def _fmt_tick(v: float) -> str:
    return f"{v:,.0f}" if abs(v - round(v)) < 1e-9 else f"{v:,.2f}".rstrip("0").rstrip(".")


def _close(parts: list[str], left: float, top: float, pw: float, ph: float, height: int,
           xlabel: str, ylabel: str) -> str:
    """The plot area's x and y axes, the axis labels and the closing tag (histogram and
    line chart share this frame)."""
    base = top + ph
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + pw}" y2="{base}" stroke="{AXIS}"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="{AXIS}"/>')
    if xlabel:
        parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">'
                     f'{_e(xlabel)}</text>')
    if ylabel:
        parts.append(f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" '
                     f'transform="rotate(-90 14 {top + ph / 2:.1f})">{_e(ylabel)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(values: Mapping[str, float], *, title: str = "", unit: str = "",
              highlight: str | None = None, xmax: float | None = None,
              colour: str = BLUE, highlight_colour: str = "#c62828", width: int = 560) -> str:
    """Horizontal bars, one per item in the given order, value written at the bar's end;
    the item named ``highlight`` in ``highlight_colour``; x axis from 0 to ``xmax`` (default:
    the largest value, rounded up)."""
    items = list(values.items())
    label_w = 8 + 7 * max((len(str(k)) for k, _ in items), default=4)
    top, row, bottom = (28 if title else 8), 22, 34
    h = top + row * len(items) + bottom
    plot_w = width - label_w - 70
    vmax = max((v for _, v in items if math.isfinite(v)), default=1.0)
    ticks = nice_ticks(0.0, xmax if xmax is not None else max(vmax, 1e-12))
    xmax = ticks[-1]
    sx = plot_w / xmax if xmax > 0 else 0.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
             f'viewBox="0 0 {width} {h}" role="img" aria-label="{_e(title or "bar chart")}" '
             f'style="{FONT};font-size:12px">']
    if title:
        parts.append(f'<text x="{width / 2:.1f}" y="17" text-anchor="middle" '
                     f'font-weight="600" font-size="13">{_e(title)}</text>')
    y0 = top + row * len(items)
    for t in ticks:
        x = label_w + t * sx
        parts.append(f'<line x1="{x:.1f}" y1="{top - 2}" x2="{x:.1f}" y2="{y0}" '
                     f'stroke="#e3e6ea"/>')
        parts.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle" fill="{AXIS}" '
                     f'font-size="11">{_e(_fmt_tick(t))}</text>')
    for i, (k, v) in enumerate(items):
        y = top + i * row
        v = v if math.isfinite(v) else 0.0
        c = highlight_colour if k == highlight else colour
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{_e(k)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 4}" width="{max(v * sx, 0.0):.1f}" '
                     f'height="{row - 8}" fill="{c}"><title>{_e(k)}: {_e(_num(v))}{_e(unit)}'
                     f'</title></rect>')
        parts.append(f'<text x="{label_w + v * sx + 4:.1f}" y="{y + 15}" '
                     f'font-size="11">{_e(_num(v))}{_e(unit)}</text>')
    parts.append(f'<line x1="{label_w}" y1="{top - 2}" x2="{label_w}" y2="{y0}" '
                 f'stroke="{AXIS}"/>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(counts: Sequence[float], edges: Sequence[float], *, title: str = "",
              xlabel: str = "", ylabel: str = "", colours: Sequence[str] | None = None,
              width: int = 520, height: int = 300) -> str:
    """Vertical bars of ``counts`` over the bins ``edges`` (len(counts) + 1 values), each
    bar labelled with its count; ``colours`` per bar (default one blue)."""
    n = len(counts)
    if len(edges) != n + 1:
        raise ValueError("histogram needs len(edges) == len(counts) + 1")
    left, right, top, bottom = 56, 16, (30 if title else 10), 46
    pw, ph = width - left - right, height - top - bottom
    ticks = nice_ticks(0.0, max(max(counts, default=0.0), 1.0), 4)
    ymax = ticks[-1]
    lo, hi = float(edges[0]), float(edges[-1])
    sx = pw / (hi - lo) if hi > lo else 0.0
    sy = ph / ymax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title or "histogram")}"'
             f' style="{FONT};font-size:12px">']
    if title:
        parts.append(f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-weight="600"'
                     f' font-size="13">{_e(title)}</text>')
    base = top + ph
    for t in ticks:
        y = base - t * sy
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                     f'stroke="#e3e6ea"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{AXIS}" '
                     f'font-size="11">{_e(_fmt_tick(t))}</text>')
    for i, c in enumerate(counts):
        x0 = left + (float(edges[i]) - lo) * sx
        x1 = left + (float(edges[i + 1]) - lo) * sx
        col = colours[i] if colours is not None else BLUE
        parts.append(f'<rect x="{x0 + 1:.1f}" y="{base - c * sy:.1f}" '
                     f'width="{max(x1 - x0 - 2, 0.5):.1f}" height="{c * sy:.1f}" fill="{col}">'
                     f'<title>{_e(_fmt_tick(float(edges[i])))}–{_e(_fmt_tick(float(edges[i + 1])))}'
                     f': {_e(_fmt_tick(float(c)))}</title></rect>')
        if c:
            parts.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{base - c * sy - 3:.1f}" '
                         f'text-anchor="middle" font-size="10">{_e(_fmt_tick(float(c)))}</text>')
    for e in edges:
        x = left + (float(e) - lo) * sx
        parts.append(f'<text x="{x:.1f}" y="{base + 14}" text-anchor="middle" fill="{AXIS}" '
                     f'font-size="10">{_e(_fmt_tick(float(e)))}</text>')
    return _close(parts, left, top, pw, ph, height, xlabel, ylabel)


def line_chart(series: Mapping[str, tuple[Sequence[float], Sequence[float],
                                          Sequence[float] | None]],
               *, title: str = "", xlabel: str = "", ylabel: str = "",
               ylim: tuple[float, float] | None = None, width: int = 560,
               height: int = 320) -> str:
    """Lines with markers: ``series[name] = (x, y, err)``, ``err`` the half-width of an
    error bar at each point (None: no bars). A legend lists the series."""
    left, right, top, bottom = 56, 150, (30 if title else 10), 46
    plot_w, plot_h = width - left - right, height - top - bottom
    x_lo, x_hi, y_lo, y_hi = _line_extent(series)
    if ylim is not None:
        y_lo, y_hi = ylim
    yt = nice_ticks(y_lo, y_hi, 5)
    y_lo, y_hi = yt[0], yt[-1]
    xt = nice_ticks(x_lo, x_hi, 6)
    xt = [t for t in xt if x_lo - 1e-9 <= t <= x_hi + 1e-9] or [x_lo, x_hi]

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title or "line chart")}"'
             f' style="{FONT};font-size:12px">']
    if title:
        parts.append(f'<text x="{left + plot_w / 2:.1f}" y="18" text-anchor="middle" '
                     f'font-weight="600" font-size="13">{_e(title)}</text>')
    for t in yt:
        parts.append(f'<line x1="{left}" y1="{py(t):.1f}" x2="{left + plot_w}" y2="{py(t):.1f}" '
                     f'stroke="#e3e6ea"/><text x="{left - 6}" y="{py(t) + 4:.1f}" '
                     f'text-anchor="end" fill="{AXIS}" font-size="11">{_e(_fmt_tick(t))}</text>')
    for t in xt:
        parts.append(f'<text x="{px(t):.1f}" y="{top + plot_h + 14}" text-anchor="middle" '
                     f'fill="{AXIS}" font-size="11">{_e(_fmt_tick(t))}</text>')
    for i, (name, (x, y, err)) in enumerate(series.items()):
        col = PALETTE[i % len(PALETTE)]
        parts += _line_marks(name, x, y, err, col, px, py)
        ly = top + 8 + 18 * i
        parts.append(f'<line x1="{left + plot_w + 12}" y1="{ly}" x2="{left + plot_w + 30}" '
                     f'y2="{ly}" stroke="{col}" stroke-width="2"/><text '
                     f'x="{left + plot_w + 36}" y="{ly + 4}">{_e(name)}</text>')
    return _close(parts, left, top, plot_w, plot_h, height, xlabel, ylabel)


def _line_extent(series: Mapping[str, tuple[Sequence[float], Sequence[float],
                                             Sequence[float] | None]]
                 ) -> tuple[float, float, float, float]:
    """(x_lo, x_hi, y_lo, y_hi) of the points and their error bars; x widened by 0.5 on
    each side when it is a single value, (0, 1) without points."""
    xs = [float(v) for s in series.values() for v in s[0]]
    lows = [float(y) - float(e or 0.0) for s in series.values()
            for y, e in zip(s[1], s[2] if s[2] is not None else [0.0] * len(s[1]), strict=True)]
    highs = [float(y) + float(e or 0.0) for s in series.values()
             for y, e in zip(s[1], s[2] if s[2] is not None else [0.0] * len(s[1]), strict=True)]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5
    return x_lo, x_hi, min(lows, default=0.0), max(highs, default=1.0)


def _line_marks(name: str, x: Sequence[float], y: Sequence[float],
                err: Sequence[float] | None, col: str, px: Callable[[float], float],
                py: Callable[[float], float]) -> list[str]:
    """One series of :func:`line_chart`: its line, error bars and point markers."""
    parts = []
    pts = [(px(float(a)), py(float(b))) for a, b in zip(x, y, strict=True)]
    if len(pts) > 1:
        parts.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'
                     .format(col, " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)))
    for j, (a, b) in enumerate(pts):
        if err is not None and err[j]:
            y1, y2 = py(float(y[j]) - float(err[j])), py(float(y[j]) + float(err[j]))
            parts.append(f'<line x1="{a:.1f}" y1="{y1:.1f}" x2="{a:.1f}" y2="{y2:.1f}" '
                         f'stroke="{col}"/><line x1="{a - 4:.1f}" y1="{y1:.1f}" '
                         f'x2="{a + 4:.1f}" y2="{y1:.1f}" stroke="{col}"/>'
                         f'<line x1="{a - 4:.1f}" y1="{y2:.1f}" x2="{a + 4:.1f}" '
                         f'y2="{y2:.1f}" stroke="{col}"/>')
        parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{col}">'
                     f'<title>{_e(name)}: {_e(_num(float(x[j])))}, {_e(_num(float(y[j])))}'
                     f'</title></circle>')
    return parts
