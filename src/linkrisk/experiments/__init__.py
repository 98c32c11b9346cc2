"""Studies: replicated experiments comparing attacks across masking methods
(docs/methods.md, Measures: replications).

``linkrisk.study("rank-vs-distance")`` (or ``linkrisk study NAME``) expands
a grid of datasets × masking methods × parameter values × attacks × QI subsets, runs R
replications per cell in worker processes with a resumable cache, and writes a tidy
results table, a summary (mean, std and 95 % t-interval of correct-link %), a Markdown
table, an HTML page and line plots.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import fileio
from ..attacks.settings import block_keys
from ..datasets import resolve_data_dir
from ..errors import LinkriskError
from ..fileio import atomic_write_text
from .config import Study, builtin_names, load_config
from .runner import default_processes, expand, replication_seeds, run_tasks

GROUP = ["dataset", "masking", "param", "value", "qi", "kind", "name"]


@dataclass
class StudyResult:
    """``rows``: one per (cell, replication, attack or measure); ``summary``: mean, std,
    95 % interval per cell; ``files``: what was written; ``cached``: replications reused."""

    study: Study
    rows: pd.DataFrame
    summary: pd.DataFrame
    files: list[Path]
    cached: int
    tasks: int


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1), n and the 95 % t-interval of ``result`` per cell."""
    from scipy.stats import t as student

    r = rows.copy()
    r["value"] = r["value"].map(lambda v: "" if v is None or (isinstance(v, float)
                                                               and math.isnan(v)) else v)
    g = r.groupby(GROUP, sort=False, dropna=False)["result"]
    s = g.agg(n="count", mean="mean", std="std").reset_index()
    half = np.where(s["n"] > 1, student.ppf(0.975, np.maximum(s["n"] - 1, 1))
                    * s["std"] / np.sqrt(s["n"]), 0.0)
    s["ci_low"], s["ci_high"] = s["mean"] - half, s["mean"] + half
    return s


def _published(row: pd.Series) -> str:
    """' (published X)' when the study carries the literature's value for this cell."""
    v = row.get("published")
    return "" if v is None or pd.isna(v) else f" (published {v:.1f})"


def markdown(summary: pd.DataFrame, study: Study) -> str:
    """One Markdown table per dataset × masking method: rows = parameter values (× QI
    subsets), columns = attacks and measures, cells = mean ± std."""
    out = [f"# Study `{study.name}`", "", study.description.strip(), ""]
    if study.block:
        out += [f"Blocking keys: {', '.join(study.block)} (every attack compares records "
                "only within blocks of equal keys).", ""]
    for (ds, mk), part in summary.groupby(["dataset", "masking"], sort=False):
        param = part["param"].iloc[0]
        out += [f"## {ds}: {mk}", ""]
        names = list(dict.fromkeys(part["name"]))
        head = [param or "setting", "QIs", *names]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for (value, qi), cell in part.groupby(["value", "qi"], sort=False):
            vals = {r["name"]: (f"{r['mean']:.2f}" + (f" ± {r['std']:.2f}" if r["n"] > 1 else "")
                                + _published(r))
                    for _, r in cell.iterrows()}
            out.append("| " + " | ".join([str(value), str(qi)]
                                         + [vals.get(n, "") for n in names]) + " |")
        out.append("")
    out.append("Attacks: % of records correctly re-identified; measures as in docs/methods.md. "
               "mean ± std over replications"
               + ("; in parentheses the published value (%) where the literature reports "
                  "the cell (docs/replication.md)." if "published" in summary else "."))
    return "\n".join(out) + "\n"


def plot(summary: pd.DataFrame, path: Path, title: str) -> Path | None:
    """Rate vs parameter, one line per attack (× QI subset), one panel per dataset ×
    masking method, shaded 95 % interval."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    att = summary[summary["kind"] == "attack"]
    panels = list(dict.fromkeys(zip(att["dataset"], att["masking"], strict=True)))
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax, (ds, mk) in zip(axes.ravel(), panels, strict=False):
        part = att[(att["dataset"] == ds) & (att["masking"] == mk)]
        values = list(dict.fromkeys(part["value"]))
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        multi_qi = part["qi"].nunique() > 1
        for (name, qi), line in part.groupby(["name", "qi"], sort=False):
            x = line["value"].astype(float) if numeric else line["value"].map(values.index)
            label = f"{name} ({qi})" if multi_qi else name
            ax.plot(x, line["mean"], marker="o", ms=3.5, label=label)
            if (line["n"] > 1).any():
                ax.fill_between(x, line["ci_low"], line["ci_high"], alpha=0.15)
        if not numeric:
            ax.set_xticks(range(len(values)))
            ax.set_xticklabels([str(v) for v in values])
        ax.set_title(f"{ds}: {mk}", fontsize=10)
        ax.set_xlabel(part["param"].iloc[0] or "setting")
        ax.set_ylabel("re-identified (%)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2 if part["name"].nunique() * part["qi"].nunique() > 5 else 1)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
    return path


def study(
    config: str | Path | Mapping[str, Any],
    *,
    data_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    replications: int | None = None,
    processes: int | None = None,
    quick: bool = False,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    block: str | Sequence[str] | None = None,
) -> StudyResult:
    """Run a study (a TOML/YAML path, a built-in name or a parsed mapping).

    ``replications`` overrides the config's R (random masking methods; deterministic ones
    run once); ``processes`` worker processes (default 2); ``quick`` uses the config's
    ``[quick]`` reduction. Results go to ``out_dir`` (default ``study-<name>``):
    ``results.csv`` (tidy, one row per replication and attack/measure), ``summary.csv``
    (+ ``summary.parquet`` with pyarrow), ``summary.md``, ``index.html``, ``rates.png`` and
    ``cache/`` (completed replications: a rerun skips them). An ``out_dir`` holding another
    study is refused unless ``force``. Reference datasets are read from the files packaged
    with linkrisk; ``data_dir`` (else ``$LINKRISK_DATA``) names a folder overriding them.
    ``block``: blocking keys (``"region,sex"`` or a list; replaces the study file's
    ``block`` setting) of every attack: records are
    compared only within blocks of equal keys (docs/methods.md, "Blocking"); the keys are
    released unmasked and are not QIs (a dataset naming one as a QI or masked column is
    refused); ``study.json`` and the summaries name them."""
    st = load_config(config, quick=quick)
    keys = block_keys(block)
    if keys:  # the argument (--block) replaces the study file's keys
        st = dataclasses.replace(st, block=keys)
    # the reference files ship with linkrisk; a folder (argument or $LINKRISK_DATA) only
    # overrides them, and a bad one is refused here, before any work
    data_dir = resolve_data_dir(data_dir)
    if replications is not None and int(replications) < 1:
        raise LinkriskError("replications must be at least 1")
    out = Path(out_dir or f"study-{st.name}{'-quick' if quick else ''}")
    meta = {"name": st.name, "source": st.source, "quick": quick, "seed": st.seed,
            "replications": int(replications or st.replications)}
    if st.block:
        meta["block"] = list(st.block)
    meta_path = _claim_folder(out, meta, force)
    tasks = expand(st, None if data_dir is None else str(data_dir), replications)
    # mark the folder first: a run that stops half-way (Ctrl-C, a failing cell) resumes
    atomic_write_text(meta_path, json.dumps(meta, indent=2), force=True)
    rows, cached = run_tasks(tasks, out / "cache", processes or default_processes(), progress)
    summary = summarize(rows)
    if st.published:
        from .published import attach_published

        # a sampled dataset (quick runs) is not the published file: no comparison there
        summary = attach_published(summary, skip={d.label for d in st.datasets if d.sample})
    files = [meta_path, *_write_results(out, st, rows, summary)]
    return StudyResult(st, rows, summary, files, cached, len(tasks))


def _claim_folder(out: Path, meta: dict[str, Any], force: bool) -> Path:
    """Check that the study may write to ``out`` (empty, or holding this very study, or
    ``force``), create it and return the path of its ``study.json``."""
    meta_path = out / "study.json"
    if meta_path.exists() and not force:
        old = json.loads(meta_path.read_text())
        if {k: old.get(k) for k in ("name", "quick")} != {k: meta[k] for k in ("name", "quick")}:
            raise LinkriskError(f"{out} holds results of study {old.get('name')!r}; choose "
                                "another output folder or pass --force")
    elif not meta_path.exists() and out.exists() and any(out.iterdir()) and not force:
        raise LinkriskError(f"{out} exists and is not a study folder; choose another output "
                            "folder or pass --force")
    if not fileio.writable_dir(out):
        raise LinkriskError(f"cannot write the study's results to {out.absolute()}: the folder "
                            "(or its parent) is not writable; pass --output DIR (out_dir=) in "
                            "a writable place")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LinkriskError(f"cannot create the study's folder {out}: {exc.strerror or exc}; "
                            "pass --output DIR (out_dir=) in a writable place") from exc
    return meta_path


def _write_results(out: Path, st: Study, rows: pd.DataFrame, summary: pd.DataFrame
                   ) -> list[Path]:
    """Write the tables, the Markdown summary, the plot and the HTML page; the files
    written."""
    files = [atomic_write_text(out / "results.csv", rows.to_csv(index=False), force=True),
             atomic_write_text(out / "summary.csv", summary.to_csv(index=False), force=True)]
    try:
        summary.assign(value=summary["value"].astype(str)).to_parquet(out / "summary.parquet")
        files.append(out / "summary.parquet")
    except ImportError:
        pass
    md = markdown(summary, st)
    files.append(atomic_write_text(out / "summary.md", md, force=True))
    png = plot(summary, out / "rates.png", f"{st.name}: correct links (%) vs masking parameter")
    if png is not None:
        files.append(png)
    files.append(atomic_write_text(out / "index.html", _html(st, summary, png is not None),
                                   force=True))
    return files


def _html(st: Study, summary: pd.DataFrame, has_plot: bool) -> str:
    import html

    tables = []
    for (ds, mk), part in summary.groupby(["dataset", "masking"], sort=False):
        piv = part.pivot_table(index=["value", "qi"], columns="name", values="mean",
                               sort=False).round(2)
        tables.append(f"<h2>{html.escape(str(ds))}: {html.escape(str(mk))}</h2>"
                      + piv.to_html(border=0, classes="t"))
    img = '<img src="rates.png" alt="rates vs parameter">' if has_plot else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(st.name)}"
            "</title><style>body{font-family:sans-serif;max-width:1300px;margin:auto;padding:20px}"
            "table.t{border-collapse:collapse}table.t td,table.t th{border:1px solid #ccc;"
            "padding:3px 8px;text-align:right}img{max-width:100%}</style></head><body>"
            f"<h1>Study {html.escape(st.name)}</h1><p>{html.escape(st.description)}</p>"
            + (f"<p>Blocking keys: {html.escape(', '.join(st.block))}</p>" if st.block else "")
            + img
            + "".join(tables) + "<p>Cells: mean over replications (see summary.csv for std "
            "and 95 % intervals).</p></body></html>")


__all__ = ["Study", "StudyResult", "builtin_names", "load_config", "replication_seeds",
           "study", "summarize"]
