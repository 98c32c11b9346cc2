"""Self-contained HTML report of an :class:`~linkrisk.assessment.Assessment`: one file,
inline CSS and inline SVG charts (:mod:`linkrisk.report.svg`, no plotting library), no
script and no network resources, so that it can be mailed or archived with the release.
Record values are left out unless asked for (``include_records``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import svg

if TYPE_CHECKING:
    from ..assessment import Assessment

#: default verdict bands on the worst-case share of re-identified records when no
#: acceptable level is given (illustrative; the acceptable level is the data owner's policy)
BANDS = ((1.0, "low", "#2e7d32"), (5.0, "moderate", "#ef6c00"), (float("inf"), "high", "#c62828"))

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;background:#f4f5f7;color:#1f2328}
main{max-width:1100px;margin:0 auto;padding:24px 32px 48px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:19px;margin:30px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.sub{color:#57606a;margin:0 0 18px}
.verdict{border-radius:8px;padding:18px 22px;color:#fff;display:flex;gap:28px;align-items:center}
.verdict .big{font-size:44px;font-weight:700;line-height:1}.verdict p{margin:4px 0}
.banner{background:#fff3cd;border:2px solid #c62828;color:#7a1c1c;border-radius:8px;padding:12px 18px;margin:0 0 16px;font-weight:600}
.warn{background:#fff8e1;border:1px solid #ef6c00;border-radius:8px;padding:8px 18px;margin:14px 0}
.cards{display:flex;gap:14px;flex-wrap:wrap;margin-top:14px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 16px;min-width:130px}
.card .v{font-size:22px;font-weight:600}.card .k{color:#57606a;font-size:13px}
table{border-collapse:collapse;background:#fff;font-size:14px;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:5px 10px;text-align:right}th{background:#eef1f4}
td.l,th.l{text-align:left}
figure{background:#fff;border:1px solid #d0d7de;border-radius:8px;margin:8px 0;padding:8px;display:inline-block}
.grid{display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start}
.scroll{overflow-x:auto;max-width:100%}
.note{color:#57606a;font-size:13px}code{background:#eef1f4;padding:1px 4px;border-radius:4px;word-break:break-all}
"""

THREAT_MODEL = (
    "The attacker holds the original values of the quasi-identifiers (QIs) below for the "
    "people in the file, knows they are in the release, and links each of them to the "
    "released record(s) closest under each attack's score. A link is correct when the "
    "released record is the masked version of the same person; a record whose true image "
    "is among |C| equally close candidates counts 1/|C| (expected correct links under "
    "random tie breaking). Attacks that estimate their parameters on the true pairs "
    "(dbrl2, mahalanobis; rsrl with the swap parameter p) model an informed intruder: "
    "they are upper bounds. Variables not among the QIs are assumed unknown to the "
    "attacker.")


def verdict_band(pct: float, max_risk: float | None = None) -> tuple[str, str]:
    bs = bands(max_risk)
    for limit, name, colour in bs:
        if (pct <= limit) if max_risk is not None else (pct < limit):
            return name, colour
    return bs[-1][1], bs[-1][2]


def bands(max_risk: float | None) -> tuple[tuple[float, str, str], ...]:
    """Verdict bands: with an acceptable worst case M (``--max-risk``), "low" up to M/2,
    "moderate" up to M and "above the limit" beyond; without, :data:`BANDS`."""
    if max_risk is None:
        return BANDS
    return ((max_risk / 2, "low", "#2e7d32"), (max_risk, "moderate", "#ef6c00"),
            (float("inf"), f"above the limit of {fmt(max_risk)} %", "#c62828"))


def fmt(v: Any) -> str:
    """A number as a person reads it: thousands separators, at most 4 decimals, no
    exponent, rounding noise (|v| < 5e-5) shown as 0."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not np.isfinite(v):
            return "—" if np.isnan(v) else str(v)
        if abs(v) < 5e-5:
            return "0"
        return f"{v:,.4f}".rstrip("0").rstrip(".")
    return str(v)


def html_table(df: pd.DataFrame, left: tuple[str, ...] = ()) -> str:
    head = "".join(f'<th class="{"l" if c in left else ""}">{html.escape(str(c))}</th>'
                   for c in df.columns)
    rows = []
    for _, row in df.iterrows():
        cells = []
        for c in df.columns:
            v = row[c]
            txt = fmt(v)
            cells.append(f'<td class="{"l" if c in left else ""}">{html.escape(txt)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(a: Assessment, title: str | None = None, *, include_records: bool = False,
                inputs: Sequence[Mapping[str, Any]] | None = None,
                command: str | None = None) -> str:
    """The report: verdict (worst case, truth assumption, QIs used), threat model, attack
    rates (chart + table, one line per attack from the registry), utility and risk
    measures, per-record risk distribution, the most exposed records (values only with
    ``include_records``), warnings, input files with SHA-256, the reproducing command and
    the settings."""
    title = title or "linkrisk disclosure-risk report"
    banner = ('<div class="banner">This report contains the original values of the '
              'quasi-identifiers of the most exposed records (--include-records). It is '
              'confidential: do not publish or mail it with the release.</div>'
              if include_records else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><main>
{banner}
<h1>{html.escape(title)}</h1>
<p class="sub">Record-linkage attacks on the released file: how many of its {a.settings["n_attacker"]:,} records an
attacker holding the original quasi-identifiers could re-identify.</p>
{overall_verdict(a.sections, a.settings.get("max_risk"))}
{_verdict_section(a)}

{_attacks_sections(a)}

{_scenarios_section(a)}
{_linkability_section(a)}
{_attribute_section(a)}
{_measures_section(a)}

{_records_sections(a, include_records)}

{_reproduction_sections(a, inputs, command)}
</main></body></html>
"""


def _verdict_section(a: Assessment) -> str:
    """The worst case's verdict (rate, band, certain and likely links, the limit, the QIs
    and the truth), the summary cards and the warnings."""
    w = a.worst
    pct = 100 * w.rate
    s = a.settings
    mr = s.get("max_risk")
    band, colour = verdict_band(pct, mr)
    n = s["n_attacker"]
    sure = int((a.records["max_risk"] >= 1.0).sum())
    half = int((a.records["max_risk"] >= 0.5).sum())
    warned = "".join(f"<li>{html.escape(t)}</li>" for t in a.warnings)
    limit = ("" if mr is None else
             f"<p>Acceptable worst case: {fmt(mr)} %: the release is "
             f"<b>{'above' if pct > mr else 'within'}</b> it.</p>")
    return f"""<section id="verdict" class="verdict" style="background:{colour}">
<div class="big">{pct:.1f} %</div>
<div><p><b>Worst case: {html.escape(w.method)}</b>{_attacker(a)} re-identifies {fmt(round(float(w.correct_links), 2))}
of {n:,} records ({pct:.2f} %). Risk level: <b>{html.escape(band)}</b>.</p>
<p>{sure:,} records are linked with certainty; {half:,} have a probability of at least 0.5.</p>
{limit}
<p>Assuming the attacker knows {len(s['qi'])} quasi-identifiers
({html.escape(', '.join(map(str, s['qi'])))}); true pairs by {html.escape(s['truth'])}.</p>
{"".join(f'<p class="verdict-note"><b>{html.escape(t[0].upper() + t[1:])}.</b></p>'
         for t in getattr(a, "verdict_notes", []))}</div>
</section>
<div class="cards">{_cards(a, sure, half)}</div>
{f'<div class="warn" id="warnings"><b>Warnings</b><ul>{warned}</ul></div>' if warned else ''}"""


def _attacks_sections(a: Assessment) -> str:
    """The threat model (each attack run, explained) and the attack rates (chart and
    table, highest first), with the attacks not run and why."""
    from ..attacks import ATTACKS

    order = sorted(a.results.values(), key=lambda r: -r.rate)
    rates = {r.method: 100 * r.rate for r in order}
    skipped = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>"
                      for k, v in a.skipped.items())
    explain_attacks = "".join(
        f"<li><code>{html.escape(k)}</code>: {html.escape(ATTACKS[k].summary)}</li>"
        for k in a.settings["attacks"] if k in ATTACKS)
    return f"""<h2 id="threat">Threat model</h2>
<p>{html.escape(THREAT_MODEL)}</p>
<ul class="note">{explain_attacks}</ul>

<h2 id="attacks">Attacks</h2>
<div class="grid"><figure>{svg.bar_chart(rates, title="Records re-identified by attack (%)",
                                          unit=" %", highlight=a.worst.method)}</figure>
{html_table(_attack_table(order), left=("attack", "what it does"))}</div>
{f'<p class="note">Not run:</p><ul class="note">{skipped}</ul>' if skipped else ''}"""


def _measures_section(a: Assessment) -> str:
    """The utility and risk measures (two tables) and the notes on them."""
    util, risk = _measure_tables(a.measures)
    notes = "".join(f"<li>{html.escape(t)}</li>" for t in a.notes)
    return f"""<h2 id="utility">Utility and risk measures</h2>
<div class="grid">{html_table(util, left=("measure", "meaning")) if len(util) else ''}
{html_table(risk, left=("measure", "meaning")) if len(risk) else ''}</div>
<p class="note">IL1–IL5 are shown ×100 (%), like IL. IL1 and IL3–IL5 are relative changes
with no upper bound, so IL and Score can exceed 100.</p>
{f'<ul class="note">{notes}</ul>' if notes else ''}"""


def _records_sections(a: Assessment, include_records: bool) -> str:
    """The per-record risk histogram and the most exposed records (their values only with
    ``include_records``)."""
    counts, edges = np.histogram(a.records["max_risk"].to_numpy(), bins=np.linspace(0, 1, 11))
    top = _exposed_records(a, include_records)
    return f"""<h2 id="records">Per-record risk</h2>
<div class="grid"><figure>{svg.histogram(counts.tolist(), edges.tolist(),
                                          title="Per-record risk (best attack)",
                                          xlabel="probability of re-identification",
                                          ylabel="records")}</figure></div>
<h2 id="exposed">Most exposed records</h2>
<p class="note">Risk = probability that the best attack links the record to its released
version; share = fraction of attacks that do so with probability above 0.5. Record = row
number in the attacker's file (from 0){'' if include_records else '; record values are left out of this report (--include-records adds them)'}.</p>
<div class="scroll">{html_table(top, left=("best attack",))}</div>"""


def _reproduction_sections(a: Assessment, inputs: Sequence[Mapping[str, Any]] | None,
                           command: str | None) -> str:
    """The input files (SHA-256), the reproducing command, the settings and the risk
    bands."""
    files = input_rows(inputs)
    return f"""<h2 id="inputs">Inputs and reproduction</h2>
{f'<table><thead><tr><th class="l">file</th><th class="l">name</th><th class="l">SHA-256</th></tr></thead><tbody>{files}</tbody></table>' if files else '<p class="note">Inputs given as data frames (no files).</p>'}
{f'<p>Command: <code>{html.escape(command)}</code></p>' if command else ''}

<h2 id="settings">Settings</h2>
{html_table(_settings_table(a), left=("setting", "value"))}
<p class="note">Risk bands on the worst case: {html.escape(_bands_text(a.settings.get("max_risk")))} (the
acceptable level is the data owner's policy decision). Generated by linkrisk.</p>"""



#: what each threat model's section measures (the overall verdict's table)
THREATS = {"identity": ("Identity disclosure", "#verdict"),
           "attribute": ("Attribute disclosure", "#attribute"),
           "synthetic": ("Synthetic data", "#synthetic")}


def overall_verdict(sections: Sequence[Mapping[str, Any]], max_risk: float | None) -> str:
    """The overall verdict when more than one threat model is assessed: the worst of the
    sections' verdicts, and one row per section (its figure, band and, with ``max_risk``,
    whether it exceeds the limit). Empty for a single section (its own verdict is the
    overall one)."""
    if len(sections) < 2:
        return ""
    worst = max(sections, key=lambda d: d["risk"])
    band, colour = verdict_band(100 * worst["risk"], max_risk)
    rows = []
    for d in sections:
        b, c = verdict_band(100 * d["risk"], max_risk)
        name, ref = THREATS.get(d["threat"], (d["threat"], "#"))
        rows.append(f'<tr><td class="l"><a href="{ref}">{html.escape(name)}</a></td>'
                    f'<td class="l">{html.escape(str(d["measure"]))}</td>'
                    f'<td>{100 * d["risk"]:.2f} %</td>'
                    f'<td class="l" style="color:{c}"><b>{html.escape(b)}</b></td></tr>')
    over = [d for d in sections if d.get("exceeds")]
    limit = ("" if max_risk is None else
             "<p>Above the acceptable " + html.escape(fmt(max_risk)) + " %: " + (
                 html.escape(", ".join(THREATS.get(d["threat"], (d["threat"],))[0].lower()
                                       for d in over)) if over else "none") + ".</p>")
    wname = THREATS.get(worst["threat"], (worst["threat"],))[0]
    return f"""<section id="overall" class="verdict" style="background:{colour}">
<div class="big">{100 * worst['risk']:.1f} %</div>
<div><p><b>Overall risk level: {html.escape(band)}</b> — the worst of the {len(sections)}
threat models assessed ({html.escape(wname.lower())}).</p>{limit}</div></section>
<table id="sections"><thead><tr><th class="l">threat model</th><th class="l">figure</th>
<th>value</th><th class="l">level</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"""


def _linkability_section(a: Assessment) -> str:
    """Re-identification beside anonymeter's linkability (``assess(linkability=True)``),
    with what each figure means."""
    lk = getattr(a, "linkability", None)
    if not lk:
        return ""
    w = a.worst
    aux = lk.get("aux_cols") or [[], []]
    rows = [("true re-identification (worst case, " + w.method + ")", 100 * w.rate,
             "the share of attacker records linked to their own released record (true pairs "
             f"by {a.settings['truth']}): what a data owner must bound")]
    if "dbrl" in a.results and w.method != "dbrl":
        rows.append(("true re-identification (dbrl, all QIs)", 100 * a.results["dbrl"].rate,
                     "the same for distance-based linkage on all QIs"))
    rows.append(("anonymeter linkability", 100 * float(lk["risk"]),
                 "the share of attacker records whose two halves of QIs point to the same "
                 "released record (nearest neighbour of each half), right or wrong; it needs "
                 "no truth, so it is what can be measured on synthetic data, and it is no "
                 "bound on re-identification"))
    body = "".join(f'<tr><td class="l">{html.escape(k)}</td><td>{v:.2f} %</td>'
                   f'<td class="l">{html.escape(m)}</td></tr>' for k, v, m in rows)
    lo, hi = lk.get("ci", (None, None))
    ci = "" if lo is None else f" (95 % interval {100 * lo:.2f}–{100 * hi:.2f} %)"
    return f"""<h2 id="linkability">Re-identification and anonymeter's linkability</h2>
<table><thead><tr><th class="l">figure</th><th>value</th><th class="l">what it means</th></tr></thead>
<tbody>{body}</tbody></table>
<p class="note">Linkability{html.escape(ci)}: {lk['n_success']:,} of {lk['n_attacks']:,} records
linked, random baseline {100 * float(lk['baseline_rate']):.2f} %; halves
{html.escape(', '.join(map(str, aux[0])))} | {html.escape(', '.join(map(str, aux[1])))}.
It does not enter the verdict.</p>"""


def _attribute_section(a: Assessment) -> str:
    """The attribute-disclosure section (counts, never values): its verdict, l-diversity
    and t-closeness per sensitive column, and the values inferred through each attack's
    links."""
    att = getattr(a, "attribute", None)
    if not att:
        return ""
    head = _attribute_verdict(a.attribute_worst, a.settings.get("max_risk"))
    rows = []
    for s, d in (att.get("l_diversity") or {}).items():
        t = (att.get("t_closeness") or {}).get(s, {})
        rows.append({"sensitive": s, "min distinct l": d.get("min_distinct"),
                     "min entropy l": d.get("min_entropy"),
                     "min recursive (c=2) l": d.get("min_recursive"),
                     "t-closeness": t.get("t"), "ground": t.get("ground", ""),
                     "homogeneous patterns": d.get("homogeneous_patterns"),
                     "their records": d.get("homogeneous_records")})
    div = (html_table(pd.DataFrame(rows).fillna("—"), left=("sensitive", "ground"))
           if rows else "")
    inf = _inferred_table(att.get("linked") or {})
    note = f'<p class="note">{html.escape(att["note"])}</p>' if att.get("note") else ""
    base = att.get("majority_share") or {}
    if base:
        note += ("<p class=\"note\">Without any link, guessing the most frequent value is "
                 "right for " + html.escape("; ".join(f"{k}: {100 * v:.2f} %"
                                                     for k, v in base.items()))
                 + " of the records: the inference rates above compare with it.</p>")
    return f"""<h2 id="attribute">Attribute disclosure</h2>
<p>Threat model: the attacker links as above and reads the sensitive value
({html.escape(', '.join(map(str, att.get('sensitive', []))))}) of the released record
they linked to; a value is inferred when it equals the original one (numeric: within the
tolerance), whether or not the link is the right record. Key patterns of the release
({html.escape(', '.join(map(str, att.get('keys', []))) or 'no categorical QI')}) with one
sensitive value disclose it without any link (homogeneous patterns). Counts only: no
sensitive value is shown.</p>
{head}
{f'<div class="scroll">{inf}</div>' if inf else ''}
{f'<h3>l-diversity and t-closeness of the key patterns</h3><div class="scroll">{div}</div>' if div else ''}
{note}"""


def _attribute_verdict(aw: Mapping[str, Any] | None, mr: float | None) -> str:
    """The attribute-disclosure verdict box of the worst inference (empty without one)."""
    if aw is None:
        return ""
    pct = 100 * aw["rate"]
    band, colour = verdict_band(pct, mr)
    limit = ("" if mr is None else f" The release is <b>{'above' if pct > mr else 'within'}"
             f"</b> the acceptable {fmt(mr)} %.")
    return (f'<div class="verdict" style="background:{colour}"><div class="big">'
            f'{pct:.1f} %</div><div><p><b>Attribute disclosure: '
            f'{html.escape(str(aw["sensitive"]))} inferred for {aw["inferred"]:,} records '
            f'through {html.escape(str(aw["attack"]))}\'s links</b> ({pct:.2f} %). Risk '
            f'level: <b>{html.escape(band)}</b>.{limit}</p></div></div>')


def _inferred_table(linked: Mapping[str, Mapping[str, Any]]) -> str:
    """The values inferred through each attack's links, per sensitive column (highest
    share first); empty without any."""
    rows = []
    for name, per in linked.items():
        for sensitive, v in per.items():
            rows.append({"attack": name, "sensitive": sensitive, "inferred": v["inferred"],
                         "inferred %": round(100 * v["rate"], 2),
                         "of them re-identified": round(v.get("inferred_reidentified",
                                                              float("nan")), 2),
                         "without identity": round(v.get("inferred_without_identity",
                                                         float("nan")), 2),
                         "tolerance": "exact" if not v.get("tolerance_percent")
                         else f"±{fmt(v['tolerance_percent'])} %"})
    rows.sort(key=lambda r: -r["inferred %"])
    return (html_table(pd.DataFrame(rows), left=("attack", "sensitive", "tolerance"))
            if rows else "")


def _attacker(a: Assessment) -> str:
    """', for an attacker who knows PTOTVAL alone,' when a QI subset gives the worst case."""
    if getattr(a, "worst_scenario", None) is None or a.worst.qi == a.settings["qi"]:
        return ""
    return f", for {html.escape(a.worst_attacker)},"


def _scenarios_section(a: Assessment, top: int = 15) -> str:
    """Attacker scenarios: the full QI set, the user scenarios and the search's ``top``
    worst (table), and which attribute drives the risk (table and bar chart)."""
    search = getattr(a, "scenario_search", None)
    if not search or len(a.scenarios) < 2:
        return ""
    full = [sc for sc in a.scenarios if sc.kind == "all QIs"]
    user = [sc for sc in a.scenarios if sc.kind == "user"]
    rest = sorted((sc for sc in a.scenarios if sc.kind not in ("all QIs", "user")),
                  key=lambda sc: -sc.rate)[:top]
    rows = pd.DataFrame([{"scenario": sc.name, "how found": sc.kind,
                          "QIs": ", ".join(map(str, sc.qi)), "best attack": sc.attack,
                          "re-identified %": round(100 * sc.rate, 2),
                          "attacks": "all" if sc.complete else "fast"}
                         for sc in full + user + rest])
    greedy = " → ".join(f"{html.escape(str(q))} ({100 * r:.1f} %)"
                        for q, r in search.get("greedy", []))
    out = [f"""<h2 id="scenarios">Attacker scenarios</h2>
<p class="note">An attacker who knows fewer attributes can do better than one who knows them
all (noisy attributes drown an exact one). The worst case is over the QI sets below:
{search['scenarios_scored']:,} sets scored by the search ({html.escape(str(search['strategy']))},
at most {search['max_scenarios']:,}) with the fast attacks
({html.escape(', '.join(search['fast_attacks']))}), every attack on the worst one and on the
user scenarios; {search['attacks_run']:,} attacks in {search['seconds']:.1f} s.</p>
<div class="scroll">{html_table(rows, left=("scenario", "how found", "QIs", "best attack", "attacks"))}</div>
{f'<p class="note">Greedy search: {greedy}.</p>' if greedy else ''}"""]
    d = a.drivers
    if d is not None and len(d):
        alone = {str(r["qi"]): float(r["alone %"]) for _, r in d.iterrows()
                 if pd.notna(r["alone %"])}
        out.append(f"""<h3>Which attribute drives the risk</h3>
<p class="note">Per QI: the best fast attack's rate with that QI alone, without it (all the
others) and on all QIs; the records it drives are those whose link probability falls most
when it is left out.</p>
<div class="grid"><figure>{svg.bar_chart(alone, title="Re-identified with the QI alone (%)",
                                          unit=" %", xmax=100)}</figure>
{html_table(d.round(2), left=("qi",))}</div>""")
    return "\n".join(out)


def _attack_table(order: Sequence[Any]) -> pd.DataFrame:
    """The report's attack table: one row per attack result, highest rate first."""
    from ..attacks import ATTACKS

    return pd.DataFrame([{"attack": r.method,
                         "what it does": ATTACKS[r.method].summary,
                         "re-identified %": round(100 * r.rate, 2),
                         "correct links": round(float(r.correct_links), 2),
                         "mean |C(a)|": round(float(r.per_record["candidates"].mean()), 2),
                         "seconds": round(r.seconds, 2)} for r in order])


def _measure_tables(m: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The report's utility and risk tables (every row in %, IL1..IL5 shown ×100)."""
    util_keys = [k for k in ("IL1", "IL2", "IL3", "IL4", "IL5", "IL", "PIL(Q)", "PIL(m)",
                             "PIL(v)", "PIL(c)", "PIL(r)", "PIL") if k in m]
    risk_keys = [k for k in ("DLD", "PLD", "RSLD", "ID", "DR", "Score", "worst_case_%")
                 if k in m]
    explain = {"IL1": "mean relative change of values", "IL2": "relative change of means",
               "IL3": "relative change of covariances", "IL4": "relative change of variances",
               "IL5": "mean change of correlations", "IL": "mean of IL1..IL5",
               "PIL(Q)": "quantiles", "PIL(m)": "means", "PIL(v)": "variances",
               "PIL(c)": "covariances", "PIL(r)": "correlations",
               "PIL": "probabilistic information loss",
               "DLD": "distance-based linkage (dbrl)", "PLD": "probabilistic linkage (prl)",
               "RSLD": "rank-swap linkage (rsrl)", "ID": "interval disclosure",
               "DR": "disclosure risk", "Score": "(IL + DR) / 2, lower is better",
               "worst_case_%": "worst attack"}
    # IL1..IL5 are fractions: shown ×100 so that every row of the table is in %
    scale = {k: 100.0 for k in ("IL1", "IL2", "IL3", "IL4", "IL5")}
    util = pd.DataFrame([{"measure": k, "value": round(float(m[k]) * scale.get(k, 1.0), 4),
                          "unit": "%", "meaning": explain[k]} for k in util_keys])
    risk = pd.DataFrame([{"measure": k, "value": round(float(m[k]), 4),
                          "unit": "" if k == "Score" else "%", "meaning": explain[k]}
                         for k in risk_keys])
    return util, risk


def _exposed_records(a: Assessment, include_records: bool) -> pd.DataFrame:
    """The 20 most exposed records (their QI values only with ``include_records``)."""
    from ..measures import records_at_risk

    s = a.settings
    top = records_at_risk(a.records, 20).copy()
    keep = ["max_risk", "best_attack", "share"] + (
        [c for c in top.columns if c in s["qi"]] if include_records else [])
    top = top[[c for c in keep if c in top.columns]]
    top.insert(0, "record", top.index)
    return top.rename(columns={"max_risk": "risk", "best_attack": "best attack",
                               "share": "share of attacks"})


def _settings_table(a: Assessment) -> pd.DataFrame:
    """The report's settings table."""
    s = a.settings
    mr = s.get("max_risk")
    return pd.DataFrame([
        {"setting": "quasi-identifiers used", "value": ", ".join(map(str, s["qi"]))},
        {"setting": "attribute kinds", "value": ", ".join(f"{k}: {v}" for k, v in s["kinds"].items())},
        {"setting": "records (attacker / released)", "value": f"{s['n_attacker']:,} / {s['n_released']:,}"},
        {"setting": "linkage direction", "value": s["direction"]},
        {"setting": "blocking keys", "value": ", ".join(s.get("block") or []) or "none"},
        {"setting": "truth", "value": s["truth"]},
        {"setting": "attacks", "value": ", ".join(s["attacks"])},
        {"setting": "attack parameters", "value": "; ".join(
            f"{k}: {', '.join(f'{p}={v}' for p, v in d.items())}" for k, d in s["params"].items()) or "defaults"},
        {"setting": "rank-swap p", "value": "—" if s["rank_swap_p"] is None else str(s["rank_swap_p"])},
        {"setting": "acceptable worst case (--max-risk)", "value": "not set" if mr is None else f"{fmt(mr)} %"},
        {"setting": "seed / memory budget", "value": f"{s['seed']} / {s['memory_budget'] / 2**20:.0f} MiB"},
        {"setting": "linkrisk / date", "value": f"{s['linkrisk']} / {s['date']}"},
        {"setting": "run time", "value": f"{a.seconds:.1f} s"},
    ])



def input_rows(inputs: Sequence[Mapping[str, Any]] | None) -> str:
    """The rows of the report's input-file table (role, name, SHA-256)."""
    return "".join(f"<tr><td class=\"l\">{html.escape(str(f.get('role', '')))}</td>"
                   f"<td class=\"l\">{html.escape(str(f.get('name', '')))}</td>"
                   f"<td class=\"l\"><code>{html.escape(str(f.get('sha256', '')))}</code></td></tr>"
                   for f in (inputs or []))


def _cards(a: Assessment, sure: int, half: int) -> str:
    """The summary cards under the verdict."""
    m = a.measures
    return "".join(
        f'<div class="card"><div class="v">{v}</div><div class="k">{html.escape(k)}</div></div>'
        for k, v in [("records certainly re-identified", f"{sure:,}"),
                     ("records with risk ≥ 0.5", f"{half:,}"),
                     ("attacks run", f"{len(a.results)}"),
                     ("attacks not run", f"{len(a.skipped)}"),
                     *([("information loss IL", f"{fmt(m['IL'])} %")] if "IL" in m else []),
                     *([("Score", fmt(m["Score"]))] if "Score" in m else [])])


def _bands_text(max_risk: float | None) -> str:
    if max_risk is None:
        return "low < 1 %, moderate < 5 %, high otherwise (illustrative defaults; set --max-risk)"
    return (f"low ≤ {fmt(max_risk / 2)} %, moderate ≤ {fmt(max_risk)} %, above the limit "
            "otherwise (--max-risk)")
