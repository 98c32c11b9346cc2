"""Self-contained HTML report of an :class:`~linkrisk.assess.Assessment`: one file, inline
CSS and inline PNG plots (matplotlib, Agg), no network resources, so it can be mailed or
archived with the release."""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import LinkriskError

if TYPE_CHECKING:
    from ..assessment import Assessment

#: verdict bands on the worst-case share of re-identified records (illustrative defaults;
#: the acceptable level is the data owner's policy decision)
BANDS = ((1.0, "low", "#2e7d32"), (5.0, "moderate", "#ef6c00"), (float("inf"), "high", "#c62828"))

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;background:#f4f5f7;color:#1f2328}
main{max-width:1100px;margin:0 auto;padding:24px 32px 48px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:19px;margin:30px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.sub{color:#57606a;margin:0 0 18px}
.verdict{border-radius:8px;padding:18px 22px;color:#fff;display:flex;gap:28px;align-items:center}
.verdict .big{font-size:44px;font-weight:700;line-height:1}.verdict p{margin:4px 0}
.cards{display:flex;gap:14px;flex-wrap:wrap;margin-top:14px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 16px;min-width:130px}
.card .v{font-size:22px;font-weight:600}.card .k{color:#57606a;font-size:13px}
table{border-collapse:collapse;background:#fff;font-size:14px;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:5px 10px;text-align:right}th{background:#eef1f4}
td.l,th.l{text-align:left}
figure{background:#fff;border:1px solid #d0d7de;border-radius:8px;margin:8px 0;padding:8px;display:inline-block}
figure img{display:block;max-width:100%}
.grid{display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start}
.scroll{overflow-x:auto;max-width:100%}
.note{color:#57606a;font-size:13px}code{background:#eef1f4;padding:1px 4px;border-radius:4px}
"""


def _band(pct: float) -> tuple[str, str]:
    for limit, name, colour in BANDS:
        if pct < limit:
            return name, colour
    return BANDS[-1][1], BANDS[-1][2]


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _plt():
    try:
        import matplotlib
    except ImportError as exc:
        raise LinkriskError("the HTML report draws its plots with matplotlib: "
                            "pip install 'linkrisk[report]'") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def rate_chart(rates: pd.Series) -> str:
    """Horizontal bars of % re-identified per attack, the worst in red."""
    plt = _plt()
    r = rates.sort_values()
    fig, ax = plt.subplots(figsize=(6.4, 0.34 * len(r) + 1.1))
    colours = ["#c62828" if v == r.max() else "#4a6fa5" for v in r]
    ax.barh(r.index, r.to_numpy(), color=colours)
    for y, v in enumerate(r):
        ax.text(v, y, f" {v:.1f} %", va="center", fontsize=9)
    ax.set_xlabel("records re-identified (%)")
    ax.set_xlim(0, max(5.0, float(r.max()) * 1.18))
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Correct links by attack", fontsize=11)
    return _png(fig)


def risk_histogram(max_risk: np.ndarray) -> str:
    """Distribution of the per-record probability of re-identification (best attack)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.4, 3.3))
    bins = np.linspace(0, 1, 11)
    counts, _ = np.histogram(max_risk, bins=bins)
    ax.bar(bins[:-1] + 0.05, counts, width=0.09,
           color=[_band(100 * b)[1] if b > 0 else "#4a6fa5" for b in bins[:-1]])
    ax.set_xlabel("probability of re-identification (best attack)")
    ax.set_ylabel("records")
    ax.set_xticks(bins)
    ax.set_xticklabels([f"{b:.1f}" for b in bins], fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Per-record risk", fontsize=11)
    return _png(fig)


def _table(df: pd.DataFrame, left: tuple[str, ...] = ()) -> str:
    head = "".join(f'<th class="{"l" if c in left else ""}">{html.escape(str(c))}</th>'
                   for c in df.columns)
    rows = []
    for _, row in df.iterrows():
        cells = []
        for c in df.columns:
            v = row[c]
            txt = (f"{v:,.4g}" if isinstance(v, (float, np.floating)) and abs(v) < 1e4
                   else f"{v:,.0f}" if isinstance(v, (float, np.floating))
                   else f"{v:,}" if isinstance(v, (int, np.integer)) else str(v))
            cells.append(f'<td class="{"l" if c in left else ""}">{html.escape(txt)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(a: Assessment, title: str | None = None) -> str:
    """The report: verdict, attack rates (chart + table), utility and risk measures,
    per-record risk distribution, the most exposed records, and the settings used."""
    from ..assessment import records_at_risk

    w = a.worst
    pct = 100 * w.rate
    band, colour = _band(pct)
    m = a.measures
    title = title or "linkrisk disclosure-risk report"
    n = a.settings["n_attacker"]
    sure = int((a.records["max_risk"] >= 1.0).sum())
    half = int((a.records["max_risk"] >= 0.5).sum())
    rates = pd.Series({k: 100 * r.rate for k, r in a.results.items()})

    attacks = pd.DataFrame([{"attack": r.method, "re-identified %": 100 * r.rate,
                             "correct links": r.correct_links,
                             "mean |C(a)|": float(r.per_record["candidates"].mean()),
                             "seconds": r.seconds} for r in a.results.values()])
    attacks = attacks.sort_values("re-identified %", ascending=False)
    skipped = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>"
                      for k, v in a.skipped.items())

    util_keys = [k for k in ("IL1", "IL2", "IL3", "IL4", "IL5", "IL", "PIL(Q)", "PIL(m)",
                             "PIL(v)", "PIL(c)", "PIL(r)", "PIL") if k in m]
    risk_keys = [k for k in ("DLD", "PLD", "RSLD", "ID", "DR", "Score", "worst_case_%")
                 if k in m]
    explain = {"IL1": "mean relative change of values", "IL2": "relative change of means",
               "IL3": "relative change of covariances", "IL4": "relative change of variances",
               "IL5": "mean change of correlations", "IL": "100 × mean(IL1..IL5), %",
               "PIL(Q)": "quantiles, %", "PIL(m)": "means, %", "PIL(v)": "variances, %",
               "PIL(c)": "covariances, %", "PIL(r)": "correlations, %",
               "PIL": "probabilistic information loss, %",
               "DLD": "distance-based linkage (dbrl), %", "PLD": "probabilistic linkage (prl), %",
               "RSLD": "rank-swap linkage (rsrl), %", "ID": "interval disclosure, %",
               "DR": "disclosure risk, %", "Score": "(IL + DR) / 2, lower is better",
               "worst_case_%": "worst attack, %"}
    util = pd.DataFrame([{"measure": k, "value": m[k], "meaning": explain[k]}
                         for k in util_keys])
    risk = pd.DataFrame([{"measure": k, "value": m[k], "meaning": explain[k]}
                         for k in risk_keys])

    top = records_at_risk(a.records, 20).copy()
    top.insert(0, "record", top.index)
    top = top.rename(columns={"max_risk": "risk", "best_attack": "best attack",
                              "share": "share of attacks", "mean_risk": "mean risk"})
    s = a.settings
    settings = pd.DataFrame([
        {"setting": "quasi-identifiers", "value": ", ".join(s["qi"])},
        {"setting": "attribute kinds", "value": ", ".join(f"{k}: {v}" for k, v in s["kinds"].items())},
        {"setting": "records (attacker / released)", "value": f"{s['n_attacker']:,} / {s['n_released']:,}"},
        {"setting": "linkage direction", "value": s["direction"]},
        {"setting": "truth", "value": s["truth"]},
        {"setting": "attacks", "value": ", ".join(s["attacks"])},
        {"setting": "attack parameters", "value": "; ".join(
            f"{k}: {', '.join(f'{p}={v}' for p, v in d.items())}" for k, d in s["params"].items()) or "defaults"},
        {"setting": "rank-swap p", "value": "—" if s["rank_swap_p"] is None else str(s["rank_swap_p"])},
        {"setting": "seed / memory budget", "value": f"{s['seed']} / {s['memory_budget'] / 2**20:.0f} MiB"},
        {"setting": "linkrisk / date", "value": f"{s['linkrisk']} / {s['date']}"},
        {"setting": "run time", "value": f"{a.seconds:.1f} s"},
    ])
    notes = "".join(f"<li>{html.escape(t)}</li>" for t in a.notes)

    cards = "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{html.escape(k)}</div></div>'
        for k, v in [("records certainly re-identified", f"{sure:,}"),
                     ("records with risk ≥ 0.5", f"{half:,}"),
                     ("attacks run", f"{len(a.results)}"),
                     *([("information loss IL", f"{m['IL']:.1f} %")] if "IL" in m else []),
                     *([("Score", f"{m['Score']:.1f}")] if "Score" in m else [])])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><main>
<h1>{html.escape(title)}</h1>
<p class="sub">Record-linkage attacks on the released file: how many of its {n:,} records an
attacker holding the original quasi-identifiers could re-identify.</p>
<section id="verdict" class="verdict" style="background:{colour}">
<div class="big">{pct:.1f} %</div>
<div><p><b>Worst case: {html.escape(w.method)}</b> re-identifies {w.correct_links:,.1f} of
{n:,} records ({pct:.2f} %). Risk level: <b>{band}</b>.</p>
<p>{sure:,} records are linked with certainty; {half:,} have a probability of at least 0.5.</p></div>
</section>
<div class="cards">{cards}</div>

<h2 id="attacks">Attacks</h2>
<div class="grid"><figure><img alt="bar chart of re-identification rate by attack"
src="{rate_chart(rates)}"></figure>
{_table(attacks, left=("attack",))}</div>
{f'<p class="note">Not run:</p><ul class="note">{skipped}</ul>' if skipped else ''}
<p class="note">Correct links count a record's link as 1/|C(a)| when its true record is among
|C(a)| equally close candidates (expected links under random tie breaking).</p>

<h2 id="utility">Utility and risk measures</h2>
<div class="grid">{_table(util, left=("measure", "meaning")) if len(util) else ''}
{_table(risk, left=("measure", "meaning"))}</div>
{f'<ul class="note">{notes}</ul>' if notes else ''}

<h2 id="records">Per-record risk</h2>
<div class="grid"><figure><img alt="histogram of per-record risk"
src="{risk_histogram(a.records['max_risk'].to_numpy())}"></figure></div>
<h2 id="exposed">Most exposed records</h2>
<p class="note">Risk = probability that the best attack links the record to its released
version; share = fraction of attacks that do so with probability above 0.5.</p>
<div class="scroll">{_table(top, left=("best attack",))}</div>

<h2 id="settings">Settings</h2>
{_table(settings, left=("setting", "value"))}
<p class="note">Risk bands on the worst case: low &lt; 1 %, moderate &lt; 5 %, high otherwise
(illustrative; the acceptable level is a policy decision). Generated by linkrisk.</p>
</main></body></html>
"""
