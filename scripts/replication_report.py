#!/usr/bin/env python
"""Generate docs/replication.md: every published cell next to linkrisk's replication.

Reads the committed results of the ``replicate`` study (``docs/studies/replicate``:
``summary.csv`` with the ``published`` column, ``results.csv``, ``readings.csv`` written by
scripts/replication_readings.py and ``run.json``, the command and wall time of the full run)
and the published cells shipped in the package, and writes one Markdown document: per
table a reading paragraph and one row per published cell (setting, published value,
linkrisk mean ± sd over the replications, 95 % t-interval, verdict), the categorical
setting, the readings of ambiguous settings, and a closing note with the counts per table
and the diagnosis of every cell that differs.

    python scripts/replication_report.py [--results docs/studies/replicate]
                                         [--out docs/replication.md]

Verdicts (in percentage points of the records, the unit of the rank-based paper; the global
paper's counts of 1080 are compared in % too): **reproduced** — the published value lies in
linkrisk's 95 % interval, or within ±1 point (the papers round); **close** — within 3 points
or 5 % of the published value; **differs** — otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

TABLES = [
    ("rbrl", 1, "Rank-based paper, Table 1 — independent additive noise, sd = a·sd_j"),
    ("rbrl", 2, "Rank-based paper, Table 2 — standard rank swapping, p % of n"),
    ("rbrl", 3, "Rank-based paper, Table 3 — p-distribution rank swapping (Census)"),
    ("rbrl", 4, "Rank-based paper, Table 4 — multiplicative noise U(1−b, 1+b)"),
    ("rbrl", 5, "Rank-based paper, Table 5 — individual-ranking microaggregation"),
    ("gdbrl", 2, "Global-linkage paper, Table 2 — Census, Euclidean distance"),
    ("gdbrl", 6, "Global-linkage paper, Table 6 — Census, Euclidean / L1 / Mahalanobis"),
]


def verdict(pub: float, mean: float, lo: float, hi: float) -> str:
    """reproduced / close / differs (module docstring)."""
    diff = abs(mean - pub)
    if (lo - 1e-9 <= pub <= hi + 1e-9) or diff <= 1.0 + 1e-9:
        return "reproduced"
    if diff <= 3.0 or diff <= 0.05 * abs(pub):
        return "close"
    return "differs"


def _fmt(v: float, counts: bool) -> str:
    return f"{v * 10.8:.1f}" if counts else f"{v:.1f}"


def cells(results: Path) -> pd.DataFrame:
    """The 339 published cells joined with linkrisk's summary."""
    from linkrisk.experiments.published import load_published, value_key

    pub = load_published()
    summ = pd.read_csv(results / "summary.csv", keep_default_na=False,
                       na_values={"mean": [""], "std": [""], "ci_low": [""], "ci_high": [""]})
    summ["value_key"] = summ["value"].map(value_key)
    look = {(r["dataset"], r["masking"], r["value_key"], r["name"]): r
            for _, r in summ.iterrows()}
    out = []
    for _, p in pub.iterrows():
        s = look.get((p["dataset_label"], p["masking_label"], p["value_key"], p["attack_label"]))
        if s is None:
            raise SystemExit(f"no linkrisk result for published cell {dict(p)}")
        n = int(s["n"])
        mean, sd = float(s["mean"]), float(s["std"]) if n > 1 else 0.0
        lo, hi = float(s["ci_low"]), float(s["ci_high"])
        out.append({**p.to_dict(), "n": n, "mean": mean, "sd": sd, "lo": lo, "hi": hi,
                    "diff": mean - p["published_pct"],
                    "verdict": verdict(p["published_pct"], mean, lo, hi)})
    return pd.DataFrame(out)


def _table(part: pd.DataFrame, counts: bool) -> list[str]:
    unit = "links of 1080" if counts else "%"
    head = ["dataset", "masking", "setting", "attack", f"published ({unit})",
            f"linkrisk mean ± sd ({unit})", "n", "95 % interval", "Δ (points)", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, c in part.iterrows():
        if c["n"] == 0:  # every replication refused the attack (error in results.csv)
            value, interval, diff = "— (refused: singular covariance)", "—", "—"
        else:
            value = f"{_fmt(c['mean'], counts)} ± {_fmt(c['sd'], counts)}"
            interval = (f"{_fmt(c['lo'], counts)} – {_fmt(c['hi'], counts)}" if c["n"] > 1
                        else "(deterministic)")
            diff = f"{c['diff']:+.1f}"
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in [
            c["dataset"], c["masking"], c["parameter"] or "—", c["attack"],
            f"{c['published']:g}", value, str(c["n"]), interval, diff,
            f"**{c['verdict']}**" if c["verdict"] == "differs" else c["verdict"]]) + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="docs/studies/replicate")
    ap.add_argument("--out", default="docs/replication.md")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import replication_text as text

    res = Path(args.results)
    c = cells(res)
    run = json.loads((res / "run.json").read_text()) if (res / "run.json").exists() else {}
    readings = (pd.read_csv(res / "readings.csv") if (res / "readings.csv").exists()
                else pd.DataFrame())
    summ = pd.read_csv(res / "summary.csv", keep_default_na=False)
    md = [text.INTRO, ""]
    counts_rows = []
    for study, table, title in TABLES:
        part = c[(c["study"] == study) & (c["table"] == table)]
        k = part["verdict"].value_counts()
        counts_rows.append((title, len(part), *(int(k.get(v, 0)) for v in
                                                ("reproduced", "close", "differs"))))
        md += [f"## {title}", "", text.READING[(study, table)].strip(), "",
               f"Verdicts: {int(k.get('reproduced', 0))} reproduced, "
               f"{int(k.get('close', 0))} close, {int(k.get('differs', 0))} differs "
               f"(of {len(part)} cells).", ""]
        md += _table(part, study == "gdbrl") + [""]
    # categorical setting (no published cells in the transcription)
    cat = summ[summ["masking"] == "gdbrl-cat pram"]
    md += ["## Global-linkage paper, categorical setting — PRAM on distinct Household / Adult",
           "", text.CATEGORICAL.strip(), "",
           "| dataset | attack | linkrisk mean ± sd (%) | records linked (mean) | n | 95 % interval (%) |",
           "|---|---|---|---|---|---|"]
    sizes = {"household (493 distinct)": 493, "adult (8688 distinct)": 8688}
    for _, r in cat.iterrows():
        nrec = sizes.get(r["dataset"], math.nan)
        md.append(f"| {r['dataset']} | {r['name']} | {float(r['mean']):.2f} ± "
                  f"{float(r['std'] or 0):.2f} | {float(r['mean']) * nrec / 100:.1f} of {nrec} | "
                  f"{r['n']} | {float(r['ci_low']):.2f} – {float(r['ci_high']):.2f} |")
    md.append("")
    # extra columns of the study that are not published cells
    md += ["## Readings of the ambiguous settings", "", text.READINGS_INTRO.strip(), ""]
    if len(readings):
        for exp, part in readings.groupby("experiment", sort=False):
            md += [f"### {exp}", "", "| reading | setting | attack | linkrisk mean ± sd (%) | "
                   "n | published (%) | Δ |", "|---|---|---|---|---|---|---|"]
            for _, r in part.iterrows():
                pubv = r["published"]
                md.append(f"| {r['reading']} | {r['setting']} | {r['attack']} | "
                          f"{r['mean']:.1f} ± {r['std']:.1f} | {r['n']} | "
                          + (f"{pubv:.1f} | {r['mean'] - pubv:+.1f} |" if pubv == pubv
                             else "— | — |"))
            md.append("")
    extra = summ[(summ["masking"].isin(["gdbrl noise"]) & (summ["name"] == "dbrl (raw)"))
                 | (summ["masking"] == "gdbrl rank_swap_pdist (distance/p/nofree)")]
    if len(extra):
        md += ["### Alternative readings run inside the replicate study", "",
               "| masking | setting | attack | linkrisk mean ± sd (%) | links of 1080 | n |",
               "|---|---|---|---|---|---|"]
        for _, r in extra.iterrows():
            md.append(f"| {r['masking']} | {r['param']}={r['value']} | {r['name']} | "
                      f"{float(r['mean']):.1f} ± {float(r['std'] or 0):.1f} | "
                      f"{float(r['mean']) * 10.8:.1f} | {r['n']} |")
        md.append("")
    # closing note
    md += ["## Closing note", "", "| table | cells | reproduced | close | differs |",
           "|---|---|---|---|---|"]
    tot = np.zeros(4, int)
    for title, *nums in counts_rows:
        tot += np.array(nums)
        md.append(f"| {title} | " + " | ".join(map(str, nums)) + " |")
    md.append("| **all** | " + " | ".join(f"**{x}**" for x in tot) + " |")
    md += ["", "### Diagnosis of every cell that differs", ""]
    diff = c[c["verdict"] == "differs"]
    for (study, table, mk), part in diff.groupby(["study", "table", "masking_label"],
                                                 sort=False):
        cellsdesc = "; ".join(
            f"{r['dataset']} {r['parameter'] or ''} {r['attack']}: {r['published']:g} vs "
            + ("refused" if r["n"] == 0 else _fmt(r["mean"], study == "gdbrl"))
            for _, r in part.iterrows())
        md += [f"- **{study} Table {table}, {mk}** ({len(part)} cells: {cellsdesc}). "
               + text.DIAGNOSIS.get(mk, "No diagnosis recorded.").strip(), ""]
    md += ["### The full run", "", text.RUN.format(**{
        "command": run.get("command", "(not recorded)"),
        "wall": run.get("wall", "(not recorded)"),
        "tasks": run.get("tasks", "?"),
        "machine": run.get("machine", "")}).strip(), ""]
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(md) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}: {len(c)} cells, {int(tot[1])} reproduced, {int(tot[2])} close, "
          f"{int(tot[3])} differs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
