"""Command-line interface: a thin layer over the public API (``linkrisk --help``)."""

from __future__ import annotations

import json
import re
import signal
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import datasets as ds
from .attacks import ATTACKS, attack_params, make_context, resolve_methods, run_attack
from .data import parse_columns, parse_kinds
from .errors import LinkriskError
from .fileio import atomic_write_text, check_output, input_label, read_inputs, write_table

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="linkrisk: how many records of a masked (anonymized) file can an "
                       "attacker re-identify by record linkage?")
out = Console()
err = Console(stderr=True)
INPUT_HELP = ("data file (CSV, Parquet, Stata .dta, SPSS .sav, SAS .sas7bdat/.xpt), a built-in "
              "dataset name (census, eia, …), or - for CSV on stdin")


def parse_size(text: str) -> int:
    """'512MiB', '1.5GB', '2G' or a number of bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT]?)(i?[bB]?)\s*", text)
    if not m:
        raise LinkriskError(f"cannot read memory size {text!r}; write e.g. 512MiB or 2GiB")
    num = float(m.group(1))
    unit = m.group(2).upper()
    base = 1024 if m.group(3).lower().startswith("i") or not m.group(3) else 1000
    return int(num * base ** " KMGT".index(unit or " "))


def parse_value(v: str) -> Any:
    """CLI parameter value: int, float, bool, None, comma list of those, else the string."""
    if "," in v:
        return [parse_value(x) for x in v.split(",") if x != ""]
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def parse_params(items: list[str] | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise LinkriskError(f"--param expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = parse_value(v.strip())
    return params


@contextmanager
def progress_bar(enabled: bool = True):
    """A rich progress bar on stderr; yields a factory of ``(done, total)`` callbacks."""
    if not enabled:
        yield lambda label: None
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed:,}/{task.total:,} records"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err,
                  transient=True) as prog:
        def make(label: str):
            task = prog.add_task(label, total=None)

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=done, total=total)
            return cb
        yield make


def rate_table(results: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col, just in (("attack", "left"), ("records", "right"), ("correct links", "right"),
                      ("re-identified", "right"), ("seconds", "right")):
        t.add_column(col, justify=just)
    for r in results:
        t.add_row(r["method"], f"{r['n']:,}", f"{r['correct_links']:,.2f}",
                  f"{100 * r['rate']:.2f} %", f"{r['seconds']:.2f}")
    return t


@app.command()
def attack(
    original: Annotated[str, typer.Argument(help=INPUT_HELP)],
    masked: Annotated[str, typer.Argument(help="released (masked) file, same forms")],
    method: Annotated[str, typer.Option("--method", "-m",
                                        help="attack(s), comma-separated, or 'all'")] = "dbrl",
    qi: Annotated[str | None, typer.Option(help="QI columns a,b,c (default: all common)")] = None,
    ids: Annotated[str | None, typer.Option(help="id column(s) defining the truth "
                                                 "(default: row order)")] = None,
    kinds: Annotated[str | None, typer.Option(help="kind overrides: col=ordinal,col2=nominal")] = None,
    direction: Annotated[str, typer.Option(help="original->masked or masked->original")] = "original->masked",
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                                                    help="attack parameter name=value")] = None,
    memory: Annotated[str, typer.Option(help="engine working-memory budget")] = "512MiB",
    seed: Annotated[int, typer.Option(help="seed for tie breaking of reported links")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON list instead of a table")] = False,
    per_record: Annotated[Path | None, typer.Option(help="write per-record outcomes (CSV) here")] = None,
    force: Annotated[bool, typer.Option(help="overwrite --per-record output")] = False,
    backend: Annotated[str, typer.Option(help="local, or dask: nearest-set attacks run "
                                              "block-wise on a Dask cluster")] = "local",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address "
                                                       "(default: a local cluster)")] = None,
) -> None:
    """Link MASKED back to ORIGINAL and count correct links for each attack."""
    methods = resolve_methods(method)
    params = parse_params(param)
    accepted = {m: attack_params(m) for m in methods}
    unused = [k for k in params if not any(k in acc for acc in accepted.values())]
    if unused:
        raise LinkriskError(f"no chosen attack takes parameter {unused[0]!r}")
    if per_record is not None and per_record.exists() and not force:
        raise LinkriskError(f"{per_record} exists; pass --force to overwrite it")
    a, b = read_inputs(original, masked)
    results = []
    frames = []
    with progress_bar(sys.stderr.isatty() and not as_json) as bar:
        ctx, direction = make_context(a, b, qi, ids=ids, kinds=parse_kinds(kinds),
                                      direction=direction, memory_budget=parse_size(memory),
                                      seed=seed, backend=backend, scheduler=scheduler)
        if backend == "dask" and scheduler is None:  # one local cluster for all attacks
            from .engine.nearest.distributed import client_for

            ctx.scheduler, _ = client_for(None)
        for mth in methods:
            ctx.progress = bar(mth)
            mine = {k: v for k, v in params.items() if k in accepted[mth]}
            res = run_attack(ctx, mth, direction, **mine)
            results.append(res.to_dict())
            frames.append(res.per_record.add_prefix(f"{mth}_"))
    if per_record is not None:
        atomic_write_text(per_record, pd.concat(frames, axis=1).to_csv(), force=force)
    if as_json:
        print(json.dumps(results, indent=2))
    else:
        out.print(rate_table(results, f"{input_label(original)} → {input_label(masked)}: "
                                      f"{len(ctx.qi)} QIs, "
                                      f"{direction}"))


@app.command("assess")
def assess_cmd(
    original: Annotated[str, typer.Argument(help=INPUT_HELP)],
    masked: Annotated[str, typer.Argument(help="released (masked) file, same forms")],
    qi: Annotated[str | None, typer.Option(help="QI columns a,b,c (default: all common)")] = None,
    attacks: Annotated[str, typer.Option(help="attacks a,b,c or 'all' (every applicable)")] = "all",
    ids: Annotated[str | None, typer.Option(help="id column(s) defining the truth")] = None,
    kinds: Annotated[str | None, typer.Option(help="kind overrides: col=ordinal,...")] = None,
    rank_swap_p: Annotated[float | None, typer.Option(
        help="the release was rank swapped with this p (or at most): adds rsrl, rsrl_union")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write the HTML report here")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the results as JSON here")] = None,
    memory: Annotated[str, typer.Option(help="engine working-memory budget")] = "512MiB",
    seed: Annotated[int, typer.Option(help="seed for tie breaking of reported links")] = 0,
    force: Annotated[bool, typer.Option(help="overwrite the report / JSON files")] = False,
) -> None:
    """Run every applicable attack and the risk/utility measures; print a verdict and write
    an HTML report (-o) and JSON (--json)."""
    from .assessment import assess, records_at_risk

    for path in (output, json_out):
        if path is not None and path.exists() and not force:
            raise LinkriskError(f"{path} exists; pass --force to overwrite it")
    a, b = read_inputs(original, masked)
    with progress_bar(sys.stderr.isatty()) as bar:
        res = assess(a, b, qi, attacks, ids=parse_columns(ids), kinds=parse_kinds(kinds),
                     rank_swap_p=rank_swap_p, memory_budget=parse_size(memory), seed=seed,
                     progress=bar)
    if output is not None:
        atomic_write_text(output, res.to_html(f"{input_label(masked)}: disclosure-risk report"),
                          force=force)
        err.print(f"wrote {output}")
    if json_out is not None:
        atomic_write_text(json_out, json.dumps(res.to_dict(), indent=2), force=force)
        err.print(f"wrote {json_out}")
    out.print(rate_table([r.to_dict() for r in sorted(res.results.values(), key=lambda r: -r.rate)],
                         f"{input_label(original)} → {input_label(masked)}: "
                         f"{len(res.settings['qi'])} QIs"))
    for name, why in res.skipped.items():
        out.print(f"[yellow]not run[/] {name}: {why}", highlight=False)
    m = res.measures
    shown = [f"{k} {m[k]:.2f}" for k in ("IL", "PIL", "ID", "DR", "Score") if k in m]
    if shown:
        out.print("measures: " + ", ".join(shown))
    w = res.worst
    top = records_at_risk(res.records, 1)
    out.print(f"Worst case: [bold]{w.method}[/] re-identifies {100 * w.rate:.2f} % of the "
              f"records ({w.correct_links:,.1f} of {w.n:,}); "
              f"{int((res.records['max_risk'] >= 1).sum()):,} records are linked with certainty"
              + (f"; most exposed: record {top.index[0]}." if len(top) else "."))


@app.command("study")
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
    processes: Annotated[int | None, typer.Option(help="worker processes (default 2)")] = None,
    quick: Annotated[bool, typer.Option(help="the config's reduced [quick] grid")] = False,
    force: Annotated[bool, typer.Option(help="use an output folder holding another study")] = False,
) -> None:
    """Run a replicated study (grid of datasets × masking × parameters × attacks); resumes
    from the cache in its output folder."""
    from .experiments import study

    with progress_bar(sys.stderr.isatty()) as bar:
        res = study(config, data_dir=data_dir, out_dir=output, replications=replications,
                    processes=processes, quick=quick, force=force,
                    progress=bar(f"study {config}"))
    err.print(f"{res.tasks:,} replications ({res.cached:,} from the cache); wrote "
              + ", ".join(str(f) for f in res.files))
    att = res.summary[res.summary["kind"] == "attack"]
    best = att.sort_values("mean", ascending=False).head(10)
    t = Table(title=f"study {res.study.name}: strongest attacks (mean % re-identified)",
              title_justify="left")
    for c in ("dataset", "masking", "value", "QIs", "attack", "mean %", "95 % interval", "R"):
        t.add_column(c, justify="right" if c in ("mean %", "95 % interval", "R") else "left")
    for _, r in best.iterrows():
        t.add_row(str(r["dataset"]), str(r["masking"]), f"{r['param']}={r['value']}",
                  str(r["qi"]), str(r["name"]), f"{r['mean']:.2f}",
                  f"{r['ci_low']:.2f} – {r['ci_high']:.2f}", str(r["n"]))
    out.print(t)


@app.command("mask")
def mask_cmd(
    input: Annotated[str, typer.Argument(help=INPUT_HELP)],
    method: Annotated[str, typer.Option("--method", "-m", help="masking method")],
    output: Annotated[str, typer.Option("--output", "-o", help="where to write the release "
                                        "(format by suffix: .csv[.gz], .parquet, .dta, .sav, "
                                        ".xpt; - for CSV on stdout)")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                                                    help="method parameter name=value")] = None,
    columns: Annotated[str | None, typer.Option(help="columns to mask (default: all numeric)")] = None,
    seed: Annotated[int | None, typer.Option(help="random seed")] = None,
    force: Annotated[bool, typer.Option(help="overwrite OUTPUT")] = False,
) -> None:
    """Mask INPUT with a protection method and write the release to OUTPUT."""
    from .masking import mask

    check_output(output, force, table=True)
    (df,) = read_inputs(input)
    res = mask(df, method, columns=parse_columns(columns), seed=seed, **parse_params(param))
    write_table(res, output, force=force, like=df)
    err.print(f"wrote {'stdout' if output == '-' else output} ({len(res):,} records, "
              f"method {method})")


@app.command()
def demo(
    n: Annotated[int, typer.Option(help="records in the synthetic file")] = 2000,
    m: Annotated[int, typer.Option(help="attributes")] = 8,
    seed: Annotated[int, typer.Option(help="seed of data and masking")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Mask a built-in synthetic file a few ways and attack each release (no files needed)."""
    from .masking import mask

    orig = ds.synthetic(n, m, seed=seed)
    releases = [("noise", {"a": 0.25}), ("noise", {"a": 1.0}), ("rank_swap", {"p": 5}),
                ("microaggregation_ir", {"k": 5}), ("mdav", {"k": 3})]
    attacks = ["dbrl", "mahalanobis", "rbrl_sum", "rbrl_max"]
    rows = []
    with progress_bar(sys.stderr.isatty() and not as_json) as bar:
        for i, (meth, prm) in enumerate(releases):
            rel = mask(orig, meth, seed=seed + 1 + i, **prm)
            ctx, direction = make_context(orig, rel, seed=seed)
            label = f"{meth}({', '.join(f'{k}={v}' for k, v in prm.items())})"
            for att in attacks:
                ctx.progress = bar(f"{label} {att}")
                r = run_attack(ctx, att, direction)
                rows.append({"masking": label, "attack": att, "rate": r.rate,
                             "correct_links": r.correct_links})
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=f"linkrisk demo: synthetic file, {n:,} records × {m} attributes "
                    f"(% of records re-identified)", title_justify="left")
    t.add_column("release")
    for att in attacks:
        t.add_column(att, justify="right")
    for label in dict.fromkeys(r["masking"] for r in rows):
        t.add_row(label, *[f"{100 * r['rate']:.1f}" for r in rows if r["masking"] == label])
    out.print(t)
    worst = max(rows, key=lambda r: r["rate"])
    out.print(f"Worst case: {worst['attack']} re-identifies {100 * worst['rate']:.1f} % of the "
              f"records released with {worst['masking']}.")


@app.command()
def methods(
    markdown: Annotated[bool, typer.Option("--markdown", help="print the Markdown tables of "
                                           "docs/methods.md instead")] = False,
) -> None:
    """List the attacks and masking methods with their parameters (docs/methods.md)."""
    from rich.markup import escape

    from . import catalog

    if markdown:
        print(catalog.markdown_all(), end="")
        return

    def params_cell(params: Any) -> str:
        return "\n".join(escape(f"{p.name}: {p.shown_type} = {p.shown_default}")
                         for p in params.values()) or "—"

    t = Table(title="attacks", title_justify="left", show_lines=True)
    for c in ("name", "kinds", "parameters (type = default)", "what"):
        t.add_column(c)
    for spec in ATTACKS.values():
        kinds = ", ".join(spec.kinds) + ("" if spec.mixed else "\n(not mixed)")
        t.add_row(spec.name, kinds, params_cell(spec.params), escape(spec.summary))
    out.print(t)
    t = Table(title="masking methods", title_justify="left", show_lines=True)
    for c in ("name", "masks", "parameters (type = default)", "what"):
        t.add_column(c)
    for spec in catalog.METHODS.values():
        t.add_row(spec.name, catalog.masks_label(spec), params_cell(spec.params),
                  escape(spec.summary))
    out.print(t)
    out.print("Definitions, defaults and references: docs/methods.md")


@app.command()
def datasets(
    data_dir: Annotated[Path | None, typer.Option(help="folder overriding the packaged "
                                                       "files (default: $LINKRISK_DATA)")] = None,
) -> None:
    """List the reference datasets that ship with linkrisk: source, licence, size and the
    attributes the literature uses (docs/datasets.md)."""
    d = ds.resolve_data_dir(data_dir)
    out.print("reference datasets: linkrisk.datasets.load(NAME); sources and licences in "
              "docs/datasets.md", highlight=False)
    for name, ref in ds.REFERENCE.items():
        where = ""
        if d is not None:
            where = "  \\[found]" if _found(name, d) else "  [bold red]\\[missing][/]"
        out.print(f"\n[bold]{name}[/]  {ref.title}: {ref.rows:,} records × {ref.columns} "
                  f"columns, {ref.distinct:,} distinct{where}", highlight=False)
        g = Table.grid(padding=(0, 1))
        g.add_column(style="dim", no_wrap=True)
        g.add_column()
        for label, text in (("  returns", ref.attributes), ("  source", ref.source),
                            ("  licence", ref.licence)):
            g.add_row(label, escape(text))
        out.print(g, highlight=False)
    out.print("\nfiles: " + ("packaged with linkrisk (linkrisk/reference/*.csv.gz); "
                             "--data-dir or LINKRISK_DATA overrides them" if d is None else
                             f"the override folder {escape(str(d))}"), highlight=False)


def _found(name: str, d: Path) -> bool:
    try:
        ds.locate(name, d)
    except LinkriskError:
        return False
    return True


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM unwinds like an exception, so that temporary output files are removed."""
    raise SystemExit(128 + signum)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. how a file was read) as one line on stderr, not Python's two."""
    err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2 (usage errors are
    reported by click the same way); anything else is a bug and keeps its traceback."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    warnings.showwarning = _show_warning
    try:
        app()
    except LinkriskError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except MemoryError:
        err.print("[bold red]error:[/] out of memory; lower --memory or link fewer records",
                  soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
