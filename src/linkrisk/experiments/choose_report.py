"""The risk–utility map of ``linkrisk choose`` (PNG) and its self-contained HTML report."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import LinkriskError

if TYPE_CHECKING:
    from .choose import Choice


def require_matplotlib() -> None:
    """Fail early, with the install command, when matplotlib is missing.

    Returns
    -------
    None
        Raises :class:`~linkrisk.errors.LinkriskError` when matplotlib cannot be imported.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise LinkriskError("the risk–utility map needs matplotlib: pip install "
                            "'linkrisk[report]'") from exc


def _figure(choice: Choice):  # a matplotlib Figure
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    p = choice.points
    lim = choice.settings["max_risk"]
    fig, ax = plt.subplots(figsize=(9, 6))
    markers = "osD^v<>ph*"
    lines = []
    for i, (label, part) in enumerate(p.groupby("label", sort=False)):
        part = part.sort_values("order")
        x, y = part["IL_mean"].to_numpy(float), part["risk_mean"].to_numpy(float)
        xerr = np.vstack([x - part["IL_lo"], part["IL_hi"] - x]).clip(min=0)
        yerr = np.vstack([y - part["risk_lo"], part["risk_hi"] - y]).clip(min=0)
        eb = ax.errorbar(x, y, xerr=xerr, yerr=yerr, marker=markers[i % len(markers)], ms=5,
                         capsize=2.5, lw=1.3, elinewidth=0.9, label=label)
        lines.append((part, eb[0].get_color()))
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    _label_points(fig, ax, lines)
    if lim is not None:
        top = max(ax.get_ylim()[1], 1.15 * lim)
        ax.axhline(lim, color="crimson", ls="--", lw=1.2, label=f"risk limit {lim:g} %")
        ax.axhspan(lim, top, color="crimson", alpha=0.04)
        ax.set_ylim(0, top)
    best = choice.best
    if best is not None:
        ax.plot(best["IL_mean"], best["risk_mean"], marker="*", ms=22, mfc="gold", mec="black",
                mew=1.0, ls="none", zorder=5, label=f"recommended: {best['point']}")
    elif choice.closest is not None:
        c = choice.points.loc[choice.closest]
        ax.plot(c["IL_mean"], c["risk_mean"], marker="X", ms=14, mfc="none", mec="black",
                ls="none", zorder=5, label=f"closest (none meets the limit): {c['point']}")
    ax.set_xlabel("information loss IL (%)  — less is better")
    ax.set_ylabel("worst-case re-identification (%)  — less is safer")
    ax.grid(alpha=0.3)
    s = choice.settings
    ax.set_title(f"Risk–utility map: {s['original']} ({s['rows']:,} records, "
                 f"{len(s['qi'])} QIs), {s['replications']} replications, mean and 95 % "
                 "intervals", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig, plt


def _label_points(fig, ax, lines) -> None:
    """Write ``param=value`` beside each point, skipping labels that would overlap one
    already written (points crowded in a corner keep their first label)."""
    fig.canvas.draw()
    taken: list[tuple[float, float]] = []
    for part, color in lines:
        for _, r in part.iterrows():
            text = f"{r['param']}={_short(r['value'])}"
            x, y = ax.transData.transform((r["IL_mean"], r["risk_mean"]))
            w = 5.0 * len(text)
            if any(abs(x - a) < w and abs(y - b) < 11 for a, b in taken):
                continue
            taken.append((x, y))
            ax.annotate(text, (r["IL_mean"], r["risk_mean"]), xytext=(4, 3),
                        textcoords="offset points", fontsize=7, color=color)


def _short(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def png_bytes(choice: Choice) -> bytes:
    fig, plt = _figure(choice)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def write_png(choice: Choice, path: Path, *, force: bool = False) -> Path:
    """Write the map atomically; refuse to overwrite unless ``force``."""
    from ..fileio import atomic_path, check_output

    check_output(path, force)
    data = png_bytes(choice)
    with atomic_path(path, force=force) as tmp:
        tmp.write_bytes(data)
    return path


def _cell(v: object) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if not np.isfinite(v) else f"{v:.2f}"
    return html.escape(str(v))


def render_html(choice: Choice) -> str:
    """A self-contained page: recommendation, reasons, the map (embedded PNG), every point,
    the settings and the command that reproduces the sweep."""
    e = html.escape
    s = choice.settings
    img = base64.b64encode(png_bytes(choice)).decode()
    p = choice.points
    cols = [("point", "point"), ("n", "R"), ("IL_mean", "IL %"), ("IL_sd", "sd"),
            ("IL_lo", "95 % low"), ("IL_hi", "95 % high"), ("risk_mean", "worst-case %"),
            ("risk_sd", "sd"), ("risk_lo", "95 % low"), ("risk_hi", "95 % high"),
            ("deciding_attack", "deciding attack"), ("DR_mean", "DR"), ("Score_mean", "Score"),
            ("verdict", "verdict")]
    head = "".join(f"<th>{e(h)}</th>" for _, h in cols)
    body = []
    for _, r in p.iterrows():
        cls = ' class="rec"' if r["recommended"] else (' class="bad"' if not r["feasible"]
                                                       else "")
        body.append(f"<tr{cls}>" + "".join(f"<td>{_cell(r[c])}</td>" for c, _ in cols)
                    + "</tr>")
    rates = "".join(f"<tr><td>{e(r['point'])}</td><td>{e(r['rates'])}</td></tr>"
                    for _, r in p.iterrows())
    reasons = "".join(f"<li>{e(x)}</li>" for x in choice.reasons)
    notes = "".join(f"<li>{e(x)}</li>" for x in choice.notes)
    settings = {"original": f"{s['original']} ({s['rows']:,} records, {s['kind']}, data "
                            f"sha1 {s['data_sha1']})",
                "QIs (masked and attacked)": ", ".join(s["qi"]),
                "confidential (passed through)": ", ".join(s["confidential"]) or "none",
                "risk limit": "none (least Score)" if s["max_risk"] is None
                else f"{s['max_risk']:g} % (upper 95 % bound of worst-case risk)",
                "risk attacks": s["risk_attacks"] + (" (every attack that applies; rsrl and "
                                                     "rsrl_union for rank swaps)"
                                                     if s["risk_attacks"] == "default" else ""),
                "replications": f"{s['replications']} per point of a random method "
                                "(deterministic methods once)",
                "blocking keys": ", ".join(s.get("block") or []) or "none",
                "seed": str(s["seed"]), "methods": "; ".join(s["methods"]), "rule": s["rule"],
                "linkrisk": s.get("linkrisk", "")}
    st = "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in settings.items())
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<title>linkrisk choose: {e(s['original'])}</title><style>
body{{font-family:sans-serif;max-width:1250px;margin:auto;padding:20px;color:#222}}
table{{border-collapse:collapse;font-size:13px;margin:8px 0}}
td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}
td:first-child,th:first-child,td:last-child{{text-align:left}}
tr.rec{{background:#fff3b0;font-weight:bold}}tr.bad td{{color:#888}}
.head{{font-size:17px;padding:10px;background:#f4f4f4;border-left:5px solid #d4a000}}
img{{max-width:100%}}code{{background:#f4f4f4;padding:2px 5px}}</style></head><body>
<h1>Choose a protection: {e(s['original'])}</h1>
<p class="head">{e(choice.headline())}</p>
<h2>Why the others lose</h2><ul>{reasons}</ul>
<h2>Risk–utility map</h2><img alt="risk-utility map" src="data:image/png;base64,{img}">
<p>Each line is a masking method through its parameters; points are means over the
replications, bars their 95 % t-intervals. Worst-case risk: the highest re-identification
rate of the risk attacks. Greyed rows in the table exceed the limit.</p>
<h2>Every point</h2><table><tr>{head}</tr>{''.join(body)}</table>
<h3>Re-identification by attack (mean %)</h3><table><tr><th>point</th><th>attacks</th></tr>
{rates}</table>
<h2>Settings</h2><table>{st}</table>
<p>Reproduce: <code>{e(s['command'])}</code></p>
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
<p>IL: {e(_il_text(s['kind']))} DR: {e(_dr_text(s['kind']))} Score = (IL + DR)/2.</p>
</body></html>
"""


def _il_text(kind: str) -> str:
    return ("Domingo-Ferrer & Torra (2001), 100·mean(IL1..IL5) over the masked QIs."
            if kind == "numeric" else "entropy-based, 100·mean_j H(X_j|Y_j)/H(X_j).")


def _dr_text(kind: str) -> str:
    return ("0.25·DLD + 0.25·PLD + 0.5·ID, or (RSLD + DLD + PLD)/6 + 0.5·ID for rank swaps."
            if kind == "numeric" else "(DLD + PLD)/2 with DLD the Hamming linkage rate.")
