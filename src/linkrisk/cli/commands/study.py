"""``linkrisk study``: run a replicated study from a config and show its strongest
attacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import linkrisk
from linkrisk.cli import options as opt
from linkrisk.cli.console import err, out, progress_bar
from linkrisk.errors import LinkriskError


def study_cmd(
    config: Annotated[str, typer.Argument(help="study file (TOML/YAML) or built-in name "
                                               "(rank-vs-distance, rank-swap, synthetic, "
                                               "global, categorical)")],
    data_dir: Annotated[Path | None, typer.Option(help="folder overriding the packaged "
                                                       "reference files (default: "
                                                       "$LINKRISK_DATA)")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o",
                                                help="results folder (default: study-NAME)")] = None,
    replications: Annotated[int | None, typer.Option(help="replications of random masking "
                                                          "(default: the config's)")] = None,
    processes: opt.Processes = None,
    block: opt.Block = None,
    quick: Annotated[bool, typer.Option("--quick", help="the config's reduced [quick] grid")] = False,
    force: Annotated[bool, typer.Option("--force", help="use an output folder holding another "
                                                        "study")] = False,
) -> None:
    """Run a replicated study (grid of datasets × masking × parameters × attacks); resumes
    from the cache in its output folder."""
    if output is not None and output.exists() and not output.is_dir():
        raise LinkriskError(f"{output} is a file; the study writes a folder")
    if output is not None and not output.parent.is_dir():
        raise LinkriskError(f"cannot create {output}: directory {output.parent} does not exist")
    with progress_bar() as bar:
        res = linkrisk.study(config, data_dir=data_dir, out_dir=output,
                             replications=replications, processes=processes, quick=quick,
                             force=force, progress=bar(f"study {config}"), block=block)
    err.print(f"{res.tasks:,} replications ({res.cached:,} from the cache); wrote "
              + ", ".join(escape(str(f)) for f in res.files), soft_wrap=True)
    att = res.summary[res.summary["kind"] == "attack"]
    best = att.sort_values("mean", ascending=False).head(10)
    within = f", within blocks of {', '.join(res.study.block)}" if res.study.block else ""
    t = Table(title=escape(f"study {res.study.name}: strongest attacks (mean % re-identified"
                           f"{within})"),
              title_justify="left")
    for c in ("dataset", "masking", "value", "QIs", "attack", "mean %", "95 % interval", "R"):
        t.add_column(c, justify="right" if c in ("mean %", "95 % interval", "R") else "left")
    for _, r in best.iterrows():
        lo, hi = (min(max(float(r[c]), 0.0), 100.0) for c in ("ci_low", "ci_high"))
        t.add_row(escape(str(r["dataset"])), escape(str(r["masking"])),
                  escape(f"{r['param']}={_value(r['value'])}"),
                  escape(str(r["qi"])), escape(str(r["name"])), f"{r['mean']:.2f}",
                  f"{lo:.2f} – {hi:.2f}", str(r["n"]))
    out.print(t)



def _value(v: Any) -> str:
    """A swept parameter value as written in a config: 10, not 10.0."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)

