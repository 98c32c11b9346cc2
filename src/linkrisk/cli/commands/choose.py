"""``linkrisk choose``: sweep masking methods × parameters, recommend a release and write
the map, the tables and the release."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import linkrisk
from linkrisk.cli import options as opt
from linkrisk.cli.console import err, out, progress_bar
from linkrisk.errors import LinkriskError

# the options of choose alone (the shared ones are in linkrisk.cli.options)
Method = Annotated[list[str] | None, typer.Option(
    "--method", "-m", help="METHOD:PARAM=GRID[/PARAM=GRID], GRID a comma list of values, "
                           "a..b (6 values) or a..b:step; repeat for several methods "
                           "(default: the standard ones for the data kind)")]
MaxRisk = Annotated[str | None, typer.Option(
    help="risk limit in %, e.g. 5%: the upper 95 % bound of worst-case re-identification "
         "must not exceed it (default: no limit, least Score)")]
RiskAttacks = Annotated[str | None, typer.Option(
    help="attacks a,b,c whose maximum is the worst-case risk (default: every one that "
         "applies, with rsrl/rsrl_union for rank swaps)")]
Risk = Annotated[str, typer.Option(
    "--risk", help="the risk axis: identity (worst-case re-identification), attribute "
                   "(records whose --sensitive value is inferred through the attacks' "
                   "links) or both (the larger)")]
Sensitive = Annotated[str | None, typer.Option(
    "--sensitive", help="sensitive columns a,b for --risk attribute/both (not masked, "
                        "not known to the attacker)")]
Replications = Annotated[int, typer.Option(help="seeded replications per point of a "
                                               "random method")]
Qi = Annotated[str | None, typer.Option(help="QIs a,b,c masked and known to the attacker "
                                             "(default: all but --confidential, id-like and "
                                             "weight-like columns)")]
Confidential = Annotated[str | None, typer.Option(
    help="confidential columns a,b (not masked; enables IPSO)")]
Ordered = Annotated[bool, typer.Option(help="take categorical QIs as ordered (enables "
                                            "top/bottom coding, recoding by width)")]
Seed = Annotated[int, typer.Option(help="seed of the sweep")]
Cache = Annotated[Path, typer.Option(help="cache of completed replications (a rerun "
                                          "resumes from it)")]
DataDir = Annotated[Path | None, typer.Option(help="reference data folder")]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="HTML report with the map")]
Png = Annotated[Path | None, typer.Option(help="the risk–utility map as PNG")]
Csv = Annotated[Path | None, typer.Option(help="table of every point, CSV")]
Parquet = Annotated[Path | None, typer.Option(help="table of every point, Parquet")]
AsJson = Annotated[bool, typer.Option("--json", help="print the table, recommendation and "
                                                     "settings as JSON on stdout instead of "
                                                     "the table (as attack and assess)")]
JsonOut = Annotated[Path | None, typer.Option("--json-file", help="write the table, "
                                              "recommendation and settings as JSON here")]
WriteRelease = Annotated[Path | None, typer.Option(
    help="write the recommended release here (CSV/Parquet) with a JSON sidecar "
         "<path>.json")]
Force = Annotated[bool, typer.Option(help="overwrite existing output files")]


def choose_cmd(
    original: opt.Original,
    method: Method = None,
    max_risk: MaxRisk = None,
    risk_attacks: RiskAttacks = None,
    risk: Risk = "identity",
    sensitive: Sensitive = None,
    replications: Replications = 5,
    qi: Qi = None,
    confidential: Confidential = None,
    ordered: Ordered = False,
    block: opt.Block = None,
    seed: Seed = 0,
    processes: opt.Processes = None,
    cache: Cache = Path(".linkrisk-cache"),
    data_dir: DataDir = None,
    output: Output = None,
    png: Png = None,
    csv: Csv = None,
    parquet: Parquet = None,
    as_json: AsJson = False,
    json_out: JsonOut = None,
    write_release: WriteRelease = None,
    force: Force = False,
) -> None:
    """Sweep masking methods × parameters, draw the risk–utility map and recommend the
    release with the least information loss under a risk limit."""
    from linkrisk import parse_method

    grids = [parse_method(m) for m in method or []]  # grid errors before any work
    _check_outputs(output, png, csv, parquet, json_out, write_release, force)
    t0 = time.perf_counter()
    with progress_bar() as bar:
        cb = bar("choose") if err.is_terminal else _plain_progress(t0)
        res = linkrisk.choose(original, grids or None, max_risk=max_risk,
                              risk_attacks=risk_attacks, replications=replications, qi=qi,
                              confidential=confidential, ordered=ordered, seed=seed,
                              processes=processes, cache_dir=cache, data_dir=data_dir,
                              progress=cb, risk=risk, sensitive=sensitive, block=block)
    secs = time.perf_counter() - t0
    err.print(escape(f"{res.tasks:,} replications ({res.cached:,} from the cache {cache}) in "
                     f"{secs:.0f} s"), highlight=False)
    written = _write_outputs(res, output, png, csv, parquet, json_out, force)
    if as_json:
        print(json.dumps(res.to_dict(), indent=2))
        if write_release is not None and res.best is not None:
            written += list(res.write_release(write_release, force=force))
    else:
        _print_choice(res)
        if write_release is not None:
            if res.best is None:
                err.print("no release written: no point meets the limit", highlight=False)
            else:
                written += list(res.write_release(write_release, force=force))
    if written:
        err.print(escape("wrote " + ", ".join(str(p) for p in written)), highlight=False)


def _check_outputs(output: Path | None, png: Path | None, csv: Path | None,
                   parquet: Path | None, json_out: Path | None, write_release: Path | None,
                   force: bool) -> None:
    """Every output path, and what writing it needs (matplotlib, pyarrow), is checked
    before the sweep: no two outputs on one path, none over an existing file without
    ``--force``."""
    from linkrisk import sidecar_path
    from linkrisk.fileio import check_output

    outs = [p for p in (output, png, csv, parquet, json_out, write_release) if p is not None]
    if write_release is not None:
        outs.append(sidecar_path(write_release))
    if len(set(map(str, outs))) != len(outs):
        raise LinkriskError("two outputs have the same path")
    for p in outs:
        check_output(p, force)
    if write_release is not None:
        check_output(write_release, force, table=True, what="release")
    if output is not None or png is not None:
        linkrisk.require_matplotlib()
    if parquet is not None:
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise LinkriskError("--parquet needs pyarrow: pip install 'linkrisk[parquet]'") from exc


def _plain_progress(t0: float) -> Callable[[int, int], None]:
    """Progress lines when stderr is not a terminal: at the start and the end, every
    tenth of the replications and at least every 10 s."""
    last = [0.0, -1]

    def plain(done: int, total: int) -> None:
        now = time.perf_counter() - t0
        if done in (0, total) or now - last[0] >= 10 or done * 10 // max(total, 1) > last[1]:
            last[0], last[1] = now, done * 10 // max(total, 1)
            err.print(f"choose: {done}/{total} replications ({now:.0f} s)", highlight=False)
    return plain


def _write_outputs(res: Any, output: Path | None, png: Path | None, csv: Path | None,
                   parquet: Path | None, json_out: Path | None, force: bool) -> list[Path]:
    """Write the HTML report, the PNG map, the points table (CSV, Parquet) and the JSON
    file that were asked for; the paths written."""
    from linkrisk.fileio import atomic_path, atomic_write_text

    written = []
    if output is not None:
        atomic_write_text(output, res.to_html(), force=force)
        written.append(output)
    if png is not None:
        written.append(res.plot(png, force=force))
    table = res.table()
    if csv is not None:
        written.append(atomic_write_text(csv, table.to_csv(index=False), force=force))
    if parquet is not None:
        with atomic_path(parquet, force=force) as tmp:
            table.assign(value=table["value"].astype(str)).to_parquet(tmp, index=False)
        written.append(parquet)
    if json_out is not None:
        written.append(atomic_write_text(json_out, json.dumps(res.to_dict(), indent=2),
                                         force=force))
    return written


def _print_choice(res: Any) -> None:
    """The table of points, the headline, the reasons and the notes."""
    keys = res.settings.get("block")
    t = Table(title=f"choose {res.settings['original']}: {len(res.points)} points, "
                    f"{res.settings['replications']} replications (mean ± sd)"
                    + (f", within blocks of {', '.join(keys)}" if keys else ""),
              title_justify="left")
    for c in ("point", "IL %", "worst-case %", "95 % high", "deciding attack", "Score", ""):
        t.add_column(c, justify="left" if c in ("point", "deciding attack", "") else "right")

    def pm(r: Any, k: str) -> str:
        return f"{r[k + '_mean']:.2f}" + (f" ± {r[k + '_sd']:.2f}" if r["n"] > 1 else "")

    for _, r in res.points.iterrows():
        mark = "← recommended" if r["recommended"] else ("" if r["feasible"] else "over limit")
        t.add_row(escape(str(r["point"])), pm(r, "IL"), pm(r, "risk"), f"{r['risk_hi']:.2f}",
                  str(r["deciding_attack"]), f"{r['Score_mean']:.2f}", mark)
    out.print(t)
    out.print(escape(res.headline()), highlight=False)
    for line in res.reasons:
        out.print(escape(f"  - {line}"), highlight=False)
    for note in res.notes:
        out.print(f"[yellow]note[/] {escape(note)}", highlight=False)
