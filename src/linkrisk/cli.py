"""Command-line interface: a thin layer over the public API (``linkrisk --help``).

Conventions shared by every command:

- exit codes: 0 success; 2 a problem with the input or the options (one ``error:`` line
  on stderr, no traceback, no output file touched); 3 ``assess --max-risk`` exceeded;
  130 interrupted (Ctrl-C: one line, temporary files removed, no partial output);
- ``--method/-m`` names the attack(s) (``attack``, ``assess``) or the masking method
  (``mask``); ``--json`` prints the results as JSON on stdout instead of the table
  (``attack``, ``assess``, ``demo``); files are written with ``-o/--output`` (and
  ``--per-record``), atomically, never over an existing file without ``--force``; every
  output path is checked before any computation;
- warnings (columns left out of the default QIs, codes read as categories …) are one
  ``warning:`` line each on stderr; progress goes to stderr, as a bar at a terminal and
  as a plain line every few seconds otherwise.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import secrets
import shlex
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

import linkrisk
from linkrisk import check_seed, parse_params, parse_percent
from linkrisk.errors import LinkriskError, LinkriskWarning

if TYPE_CHECKING:
    import pandas as pd

# The heavy parts (pandas, file I/O, the attacks and their numba kernels) are imported by
# the commands that use them, so that ``linkrisk --help`` and a command's option errors
# answer at once (issue 43; ``python benchmarks/coldstart.py``).

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="linkrisk: how many records of a masked (anonymized) file can an "
                       "attacker re-identify by record linkage?")
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
INPUT_HELP = ("data file (CSV, Parquet, Stata .dta, SPSS .sav, SAS .sas7bdat/.xpt), a built-in "
              "dataset name (census, eia, …), or - for CSV on stdin")



def _exception_classes(name: str) -> tuple[type, ...]:
    """click's exception class ``name`` as typer raises it: typer ≥ 0.2x vendors click
    (``typer._click``, with Exit/Abort in ``typer``), older typer uses click itself."""
    found: list[type] = []
    for mod in ("typer", "typer.exceptions", "typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and cls not in found:
            found.append(cls)
    return tuple(found)


_ABORT = _exception_classes("Abort")
_EXIT = _exception_classes("Exit")
_USAGE = _exception_classes("ClickException")
#: the arguments of this run (for the report's "command to reproduce")
_ARGV: list[str] | None = None
#: seconds between plain progress lines when stderr is not a terminal
PLAIN_EVERY = 5.0


class Interrupted(Exception):
    """Ctrl-C (SIGINT) or SIGTERM: raised by our signal handler so that click does not
    turn it into its own "Aborted!" and every ``finally`` (temporary files) still runs."""


def _version(value: bool) -> None:
    if value:
        print(f"linkrisk {linkrisk.__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False
          ) -> None:
    """linkrisk: how many records of a masked (anonymized) file can an attacker
    re-identify by record linkage?"""


# ------------------------------------------------------------------ helpers
def sha256(path: str | Path) -> str | None:
    """SHA-256 of a file's bytes (None for stdin or a non-file)."""
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def _not_a_file(spec: str) -> str:
    return "— (standard input)" if str(spec) == "-" else "— (built-in dataset)"


def command_line() -> str:
    """The command that reproduces this run."""
    args = _ARGV if _ARGV is not None else sys.argv[1:]
    return shlex.join(["linkrisk", *args])


def merge_kinds(kinds: str | None, nominal: str | None) -> dict[str, str]:
    """``--kinds a=ordinal,b=numeric`` plus the ``--nominal c,d`` shorthand."""
    k = linkrisk.parse_kinds(kinds)
    for c in linkrisk.parse_columns(nominal) or []:
        if k.get(c, "nominal") != "nominal":
            raise LinkriskError(f"{c!r} is given two kinds (--kinds {c}={k[c]} and --nominal)")
        k[c] = "nominal"
    return k


COMPILE_NOTE = ("compiling linkrisk's numeric kernels for this machine (up to a minute, once: "
                "later runs load them from numba's cache)")


@contextmanager
def compile_notice(prog: Progress | None = None) -> Iterator[None]:
    """Tell the user when numba compiles kernels (the first run after an install: up to a
    minute of silence otherwise). Numba fires ``numba:compile`` only on a cache miss, so a
    run that loads its kernels from the cache shows nothing. With ``prog``, a line of the
    rich display counts the kernels while one compiles; else one plain line, once."""
    from numba.core import event

    class Notice(event.Listener):
        depth = done = 0
        task = None

        def on_start(self, ev: event.Event) -> None:
            self.depth += 1
            if self.depth > 1:
                return  # a kernel's callees compile inside its own event
            if prog is None:
                if not self.done:
                    err.print(COMPILE_NOTE + " …", soft_wrap=True)
            elif self.task is None:
                self.task = prog.add_task("compiling kernels (first run only)", total=None,
                                          count="kernel 1")
            else:
                prog.update(self.task, visible=True, count=f"kernel {self.done + 1}")

        def on_end(self, ev: event.Event) -> None:
            self.depth -= 1
            if self.depth == 0:
                self.done += 1
                if prog is not None and self.task is not None:
                    prog.update(self.task, visible=False)

    with event.install_listener("numba:compile", Notice()):
        yield


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str], Callable[[int, int], None]]]:
    """Yields a factory ``make(label)`` of ``(done, total)`` callbacks on stderr: a rich bar
    at a terminal, else one plain line every :data:`PLAIN_EVERY` seconds per task. Either
    way a first run's kernel compilation is announced (:func:`compile_notice`)."""
    if not enabled:
        yield lambda label: (lambda done, total: None)
        return
    if not err.is_terminal:
        def make_plain(label: str) -> Callable[[int, int], None]:
            t0 = time.monotonic()
            last = [t0]

            def cb(done: int, total: int) -> None:
                now = time.monotonic()
                if now - last[0] >= PLAIN_EVERY and total:
                    last[0] = now
                    err.print(f"{escape(label)}: {done:,}/{total:,} records "
                              f"({100 * done / total:.0f} %), {now - t0:.0f} s", soft_wrap=True)
            return cb
        with compile_notice():
            yield make_plain
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.fields[count]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err,
                  transient=True) as prog:
        def make(label: str) -> Callable[[int, int], None]:
            task = prog.add_task(escape(label), total=None, count="")

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=done, total=total,
                            count=f"{done:,}/{total:,} records" if total else "")
            return cb
        with compile_notice(prog):
            yield make


def rate_table(results: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=escape(title), title_justify="left")
    for col, just in (("attack", "left"), ("records", "right"), ("correct links", "right"),
                      ("re-identified", "right"), ("seconds", "right")):
        t.add_column(col, justify=just)
    for r in results:
        t.add_row(r["method"], f"{r['n']:,}", f"{r['correct_links']:,.2f}",
                  f"{100 * r['rate']:.2f} %", f"{r['seconds']:.2f}")
    return t


def scenario_table(res: Any, top: int = 8) -> None:
    """The attacker scenarios of an assessment: the full QI set, the user scenarios and the
    search's ``top`` worst."""
    if not res.scenario_search or len(res.scenarios) < 2:
        return
    t = Table(title=f"attacker scenarios ({res.scenario_search['scenarios_scored']} QI sets "
                    f"scored, {res.scenario_search['seconds']:.1f} s)")
    for c in ("scenario", "QIs", "best attack", "re-identified %"):
        t.add_column(c, justify="right" if c.endswith("%") else "left")
    full = [sc for sc in res.scenarios if sc.kind == "all QIs"]
    user = [sc for sc in res.scenarios if sc.kind == "user"]
    rest = sorted((sc for sc in res.scenarios if sc.kind not in ("all QIs", "user")),
                  key=lambda sc: -sc.rate)[:top]
    for sc in full + user + rest:
        t.add_row(escape(sc.name if sc.kind != "all QIs" else "all QIs"),
                  escape(", ".join(map(str, sc.qi)) if len(sc.qi) <= 4 else f"{len(sc.qi)} QIs"),
                  escape(sc.attack), f"{100 * sc.rate:.2f}")
    out.print(t)


def say_skipped(skipped: dict[str, str]) -> None:
    for name, why in skipped.items():
        err.print(f"[yellow]not run[/] {escape(name)}: {escape(why)}", soft_wrap=True)


# ------------------------------------------------------------------ commands
QI_HELP = ("QI columns a,b,c (default: every column both files share but --ids; assess also "
           "leaves out id-like and weight-like ones)")
IDS_HELP = ("id column(s) in both files that pair the records (default: row order, "
            "checked first)")
KINDS_HELP = "kind overrides: col=numeric|ordinal|nominal,..."
NOMINAL_HELP = "columns to read as nominal categories: a,b (shorthand for --kinds a=nominal)"
ROW_ORDER_HELP = ("trust that row i of the release is the masked row i of the original "
                  "(skip the check)")
#: --memory: the engine's default budget, resolved once for this machine (docs/methods.md,
#: "Working memory")
_BUDGET = linkrisk.DEFAULT_MEMORY_BUDGET
MEMORY_DEFAULT = f"{_BUDGET // 2**20}MiB" if _BUDGET % 2**20 == 0 else str(_BUDGET)
MEMORY_HELP = ("engine working-memory budget, e.g. 2GiB (default: 1/8 of available memory "
               f"within 256 MiB–4 GiB, or $LINKRISK_MEMORY; here {_BUDGET / 2**30:.1f} GiB)")


@app.command()
def attack(
    original: Annotated[str, typer.Argument(help=INPUT_HELP)],
    masked: Annotated[str, typer.Argument(help="released (masked) file, same forms")],
    method: Annotated[str, typer.Option("--method", "-m",
                                        help="attack(s) a,b,c, or 'all' (every attack that "
                                             "applies to the files)")] = "dbrl",
    qi: Annotated[str | None, typer.Option(help=QI_HELP)] = None,
    ids: Annotated[str | None, typer.Option(help=IDS_HELP)] = None,
    kinds: Annotated[str | None, typer.Option(help=KINDS_HELP)] = None,
    nominal: Annotated[str | None, typer.Option(help=NOMINAL_HELP)] = None,
    direction: Annotated[str, typer.Option(help="original->masked or masked->original")] = "original->masked",
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                                                    help="attack parameter name=value")] = None,
    memory: Annotated[str, typer.Option(help=MEMORY_HELP)] = MEMORY_DEFAULT,
    seed: Annotated[int, typer.Option(help="seed for tie breaking of reported links (>= 0)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the results as JSON on stdout "
                                                         "instead of the table")] = False,
    per_record: Annotated[Path | None, typer.Option(help="write per-record outcomes (CSV) here")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --per-record output")] = False,
    assume_row_order: Annotated[bool, typer.Option("--assume-row-order", help=ROW_ORDER_HELP)] = False,
    backend: Annotated[str, typer.Option(help="local, or dask: nearest-set attacks run "
                                              "block-wise on a Dask cluster")] = "local",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address "
                                                       "(default: a local cluster)")] = None,
) -> None:
    """Link MASKED back to ORIGINAL and count correct links for each attack."""
    import pandas as pd

    from linkrisk.fileio import atomic_write_text, check_output, input_label, read_inputs

    settings = linkrisk.LinkSettings(qi=qi, ids=ids, kinds=merge_kinds(kinds, nominal),
                            direction=direction, memory_budget=memory, seed=seed,
                            backend=backend, scheduler=scheduler,
                            assume_row_order=assume_row_order)
    chosen = "all" if method.strip() == "all" else linkrisk.resolve_methods(method)
    params = parse_params(param)
    check_output(per_record, force, what="--per-record file")
    a, b = read_inputs(original, masked, text_columns=ids)
    with progress_bar() as bar:  # one bar per attack; failures are listed, then reported
        res = linkrisk.attack(a, b, chosen, settings=settings, progress_for=bar,
                              errors="collect", **params)
    results = res.to_dicts()
    if per_record is not None and res:
        frames = [r.per_record.add_prefix(f"{m}_") for m, r in res.items()]
        atomic_write_text(per_record, pd.concat(frames, axis=1).to_csv(), force=force)
    if as_json:
        print(json.dumps(results, indent=2))
    elif results:
        out.print(rate_table(results, f"{input_label(original)} → {input_label(masked)}: "
                                      f"{len(res.qi)} QIs, "
                                      f"{res.direction}"))
        out.print(f"QIs used: {escape(', '.join(map(str, res.qi)))}", soft_wrap=True)
        out.print(f"truth: {escape(res.truth)}", soft_wrap=True)
    say_skipped(res.skipped)
    if res.failed:
        name, why = next(iter(res.failed.items()))
        raise LinkriskError(f"{name}: {why}" + (f" (and {len(res.failed) - 1} more attacks "
                                                 "failed)" if len(res.failed) > 1 else ""))


@app.command("assess")
def assess_cmd(
    original: Annotated[str, typer.Argument(help=INPUT_HELP)],
    masked: Annotated[str, typer.Argument(help="released (masked) file, same forms")],
    method: Annotated[str | None, typer.Option("--method", "-m",
                                               help="attacks a,b,c, or 'all' (default: every "
                                                    "attack that applies)")] = None,
    attacks: Annotated[str | None, typer.Option("--attacks", hidden=True)] = None,
    qi: Annotated[str | None, typer.Option(help=QI_HELP)] = None,
    ids: Annotated[str | None, typer.Option(help=IDS_HELP)] = None,
    kinds: Annotated[str | None, typer.Option(help=KINDS_HELP)] = None,
    nominal: Annotated[str | None, typer.Option(help=NOMINAL_HELP)] = None,
    rank_swap_p: Annotated[float | None, typer.Option(
        help="the release was rank swapped with this p (or at most): adds rsrl, rsrl_union")] = None,
    max_risk: Annotated[str | None, typer.Option(
        help="acceptable worst case, e.g. 5%: sets the verdict bands; exit code 3 when "
             "the worst case exceeds it")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write the HTML report here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the results as JSON on stdout "
                                                         "instead of the table")] = False,
    include_records: Annotated[bool, typer.Option(
        "--include-records", help="put the QI values of the most exposed records in the "
                                  "report (it then carries a confidentiality banner)")] = False,
    assume_row_order: Annotated[bool, typer.Option("--assume-row-order", help=ROW_ORDER_HELP)] = False,
    memory: Annotated[str, typer.Option(help=MEMORY_HELP)] = MEMORY_DEFAULT,
    seed: Annotated[int, typer.Option(help="seed for tie breaking of reported links (>= 0)")] = 0,
    force: Annotated[bool, typer.Option("--force", help="overwrite the report")] = False,
    weights: Annotated[str | None, typer.Option(
        help="sampling-weight column of the released file (population risk)")] = None,
    household: Annotated[str | None, typer.Option(
        help="household-id column of the released file (household risk)")] = None,
    suda_max_size: Annotated[int | None, typer.Option(
        help="largest minimal sample unique SUDA2 looks for (default: all keys)")] = None,
    scenarios: Annotated[str, typer.Option(
        "--scenarios", help="attacker scenarios searched for the worst case: all (every QI, "
                            "every pair, greedy), greedy, none")] = "all",
    max_scenarios: Annotated[int | None, typer.Option(
        "--max-scenarios", help="most QI sets the scenario search scores (default 500)")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", help="what an intruder may hold, 'name=a,b,c' (repeatable): every "
                           "attack runs on it, one row each")] = None,
    synthetic: Annotated[bool, typer.Option(
        "--synthetic", help="the release is synthetic (no record pairs with an original "
                            "one): DCR, membership inference, anonymeter's attacks")] = False,
    holdout: Annotated[str | None, typer.Option(
        "--holdout", help="with --synthetic: original records the generator never saw "
                          "(control set)")] = None,
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", help="sensitive columns a,b: attribute disclosure (l-diversity, "
                            "t-closeness, inference through links); with --synthetic the "
                            "inference attack's secrets")] = None,
    linkability: Annotated[bool, typer.Option(
        "--linkability", help="also run anonymeter's linkability attack on the release and "
                              "show it beside true re-identification")] = False,
) -> None:
    """Run every applicable attack and the risk/utility measures; print a verdict and write
    an HTML report (-o). With categorical QIs also the frequency and population risk of the
    release (k-anonymity, individual and household risk, SUDA2)."""
    from linkrisk.fileio import atomic_write_text, check_output, input_label, read_inputs

    if method is not None and attacks is not None and method != attacks:
        raise LinkriskError("give the attacks once, with --method")
    chosen = method or attacks or "all"
    if chosen.strip() != "all":
        linkrisk.resolve_methods(chosen)
    limit = None if max_risk is None else parse_percent(max_risk)
    settings = linkrisk.LinkSettings(qi=qi, ids=ids, kinds=merge_kinds(kinds, nominal),
                                     memory_budget=memory, seed=seed,
                            assume_row_order=assume_row_order, screen_qi=True)
    check_output(output, force, what="report")
    sens = [c.strip() for c in sensitive.split(",") if c.strip()] if sensitive else None
    if synthetic:
        if linkability:
            raise LinkriskError("--linkability is for masked releases: a synthetic release's "
                                "report has anonymeter's linkability already")
        _assess_synthetic(original, masked, holdout, qi, sens, seed, limit, as_json,
                          output, force)
        return
    if holdout is not None:
        raise LinkriskError("--holdout is for synthetic releases: add --synthetic")
    a, b = read_inputs(original, masked, text_columns=ids)
    with progress_bar() as bar:
        res = linkrisk.assess(a, b, attacks="all" if chosen.strip() == "all" else chosen,
                              settings=settings, rank_swap_p=rank_swap_p, progress=bar,
                              max_risk=limit, weights=weights, household=household,
                              suda_max_size=suda_max_size, scenarios=scenarios,
                              max_scenarios=max_scenarios, user_scenarios=scenario or None,
                              sensitive=sens, linkability=linkability)
    if output is not None:
        inputs = [{"role": role, "name": str(p), "sha256": sha256(p) or _not_a_file(p)}
                  for role, p in (("original", original), ("released", masked))]
        atomic_write_text(output, res.to_html(f"{input_label(masked)}: disclosure-risk report",
                                              include_records=include_records,
                                              inputs=inputs, command=command_line()),
                          force=force)
        err.print(f"wrote {escape(str(output))}" + (" (with record values: confidential)"
                                                    if include_records else ""), soft_wrap=True)
    w = res.worst
    pct = 100 * w.rate
    if as_json:
        d = res.to_dict()
        d["inputs"] = [{"role": role, "name": str(p), "sha256": sha256(p)}
                       for role, p in (("original", original), ("released", masked))]
        d["command"] = command_line()
        print(json.dumps(d, indent=2))
    else:
        out.print(rate_table([r.to_dict() for r in sorted(res.results.values(),
                                                          key=lambda r: -r.rate)],
                             f"{input_label(original)} → {input_label(masked)}: "
                             f"{len(res.settings['qi'])} QIs"))
        m = res.measures
        shown = [f"{k} {m[k]:.2f}{'' if k == 'Score' else ' %'}"
                 for k in ("IL", "PIL", "ID", "DR", "Score") if k in m]
        if shown:
            out.print("measures: " + ", ".join(shown))
        top = linkrisk.records_at_risk(res.records, 1)
        out.print(f"QIs used: {escape(', '.join(map(str, res.settings['qi'])))}", soft_wrap=True)
        scenario_table(res)
        out.print(f"Worst case: {escape(res.worst_attacker)}, [bold]{escape(w.method)}[/] "
                  f"re-identifies {pct:.2f} % of the "
                  f"records ({w.correct_links:,.2f} of {w.n:,}); "
                  f"{int((res.records['max_risk'] >= 1).sum()):,} records are linked with "
                  "certainty" + (f"; most exposed: record {top.index[0]}" if len(top) else "")
                  + f". Truth: {escape(res.settings['truth'])}.", soft_wrap=True)
        for line in res.verdict_notes:
            out.print(f"[bold]{escape(line[0].upper() + line[1:])}.[/]", soft_wrap=True)
        if res.frequency is not None:
            f = res.frequency.summary
            out.print(f"Population register ({len(res.frequency.keys)} categorical keys): "
                      f"{f['sample_uniques']:,} sample uniques, "
                      f"{f['k_anonymity_violations']['3']:,} records violate 3-anonymity; "
                      f"expected re-identifications {f['global_risk_ER']:,.2f} "
                      f"({f['global_risk_pct']:.3f} %"
                      + (", with sampling weights)" if res.frequency.weights else
                         ", risk 1/f_k)")
                      + (f"; household risk {f['hier_risk_ER']:,.2f}"
                         if "hier_risk_ER" in f else "") + ".", highlight=False,
                      soft_wrap=True)
    if res.attribute is not None and not as_json:
        out.print(escape(attribute_text(res.attribute)), soft_wrap=True, highlight=False)
    if res.linkability is not None and not as_json:
        lk = res.linkability
        out.print(escape(f"True re-identification (worst case, {w.method}): {pct:.2f} %: "
                         "attacker records linked to their own released record.\n"
                         f"anonymeter linkability: {100 * lk['risk']:.2f} % "
                         f"[{100 * lk['ci'][0]:.2f}, {100 * lk['ci'][1]:.2f}]: attacker "
                         "records whose two halves of QIs point to the same released record, "
                         "right or wrong (no truth needed; no bound on re-identification)."),
                  soft_wrap=True, highlight=False)
    say_skipped(res.skipped)
    if limit is not None:
        tail = "".join(f"; {escape(t)}" for t in res.verdict_notes)
        secs = res.sections
        what = {"identity": "worst case", "attribute": "attribute disclosure"}
        for d in secs:
            name = what.get(d["threat"], d["threat"]) + (
                f" ({d['sensitive']} through {d['attack']})" if d["threat"] == "attribute"
                else "")
            line = (f"{escape(name)} {100 * d['risk']:.2f} % "
                    f"{'>' if d['exceeds'] else '≤'} --max-risk {limit:g} %")
            if d["exceeds"]:
                err.print(f"[bold red]above the limit:[/] {line}"
                          + (tail if d["threat"] == "identity" else ""), soft_wrap=True)
            else:
                err.print(f"within the limit: {line}"
                          + (tail if d["threat"] == "identity" else ""), soft_wrap=True)
        if res.exceeds:
            raise typer.Exit(3)


def attribute_text(att: dict) -> str:
    """The report's attribute-disclosure section (counts, never values)."""
    lines = [f"Attribute disclosure (sensitive: {', '.join(att['sensitive'])}; keys: "
             f"{', '.join(att['keys']) or 'none'})"]
    for s, d in att.get("l_diversity", {}).items():
        t = att["t_closeness"][s]
        lines.append(f"  {s}: l-diversity min distinct {d['min_distinct']:g}, entropy "
                     f"{d['min_entropy']:.3f}, recursive (c=2) {d['min_recursive']}; "
                     f"t-closeness {t['t']:.3f} ({t['ground']}); value disclosed without "
                     f"identity: {d['homogeneous_records']:,} records in "
                     f"{d['homogeneous_patterns']:,} homogeneous patterns")
    for name, per in att.get("linked", {}).items():
        lines.append(f"  through {name}'s links: " + "; ".join(
            f"{s} inferred for {v['inferred']:,} records ({100 * v['rate']:.2f} %"
            + (f", ±{v['tolerance_percent']:g} %" if v.get("tolerance_percent") else "") + ")"
            for s, v in per.items()))
    if att.get("note"):
        lines.append(f"  note: {att['note']}")
    return "\n".join(lines)


def _assess_synthetic(original: str, release: str, holdout: str | None, qi: str | None,
                      sens: list[str] | None, seed: int, limit: float | None,
                      as_json: bool, output: Path | None = None, force: bool = False) -> None:
    """``assess --synthetic``: the synthetic-data section and its verdict (and its HTML
    report with ``-o``)."""
    from linkrisk.fileio import atomic_write_text, input_label, read_inputs

    specs = [original, release] + ([holdout] if holdout else [])
    frames = read_inputs(*specs)
    res = linkrisk.assess(frames[0], frames[1], qi=linkrisk.parse_columns(qi), synthetic=True,
                          holdout=frames[2] if holdout else None, sensitive=sens, seed=seed,
                          max_risk=limit)
    if output is not None:
        inputs = [{"role": role, "name": str(p), "sha256": sha256(p) or _not_a_file(p)}
                  for role, p in (("original", original), ("synthetic", release),
                                  *((("holdout", holdout),) if holdout else ()))]
        atomic_write_text(output, res.to_html(f"{input_label(release)}: synthetic-data risk "
                                              "report", inputs=inputs,
                                              command=command_line()), force=force)
        err.print(f"wrote {escape(str(output))}", soft_wrap=True)
    if as_json:
        print(json.dumps(res.to_dict(), indent=2, default=float))
    else:
        out.print(escape(res.text()), soft_wrap=True, highlight=False)
    if limit is not None:
        wname, wrisk = res.worst
        line = (f"synthetic data ({wname}) {100 * wrisk:.2f} % "
                f"{'>' if res.exceeds else '≤'} --max-risk {limit:g} %")
        err.print(("[bold red]above the limit:[/] " if res.exceeds else "within the limit: ")
                  + escape(line), soft_wrap=True)
        if res.exceeds:
            raise typer.Exit(3)


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
                             force=force, progress=bar(f"study {config}"))
    err.print(f"{res.tasks:,} replications ({res.cached:,} from the cache); wrote "
              + ", ".join(escape(str(f)) for f in res.files), soft_wrap=True)
    att = res.summary[res.summary["kind"] == "attack"]
    best = att.sort_values("mean", ascending=False).head(10)
    t = Table(title=escape(f"study {res.study.name}: strongest attacks (mean % re-identified)"),
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


@app.command("choose")
def choose_cmd(
    original: Annotated[str, typer.Argument(help=INPUT_HELP)],
    method: Annotated[list[str] | None, typer.Option(
        "--method", "-m", help="METHOD:PARAM=GRID[/PARAM=GRID], GRID a comma list of values, "
                               "a..b (6 values) or a..b:step; repeat for several methods "
                               "(default: the standard ones for the data kind)")] = None,
    max_risk: Annotated[str | None, typer.Option(
        help="risk limit in %, e.g. 5%: the upper 95 % bound of worst-case re-identification "
             "must not exceed it (default: no limit, least Score)")] = None,
    risk_attacks: Annotated[str | None, typer.Option(
        help="attacks a,b,c whose maximum is the worst-case risk (default: every one that "
             "applies, with rsrl/rsrl_union for rank swaps)")] = None,
    risk: Annotated[str, typer.Option(
        "--risk", help="the risk axis: identity (worst-case re-identification), attribute "
                       "(records whose --sensitive value is inferred through the attacks' "
                       "links) or both (the larger)")] = "identity",
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", help="sensitive columns a,b for --risk attribute/both (not masked, "
                            "not known to the attacker)")] = None,
    replications: Annotated[int, typer.Option(help="seeded replications per point of a "
                                                   "random method")] = 5,
    qi: Annotated[str | None, typer.Option(help="QIs a,b,c masked and known to the attacker "
                                                "(default: all but --confidential, id-like and "
                                                "weight-like columns)")] = None,
    confidential: Annotated[str | None, typer.Option(
        help="confidential columns a,b (not masked; enables IPSO)")] = None,
    ordered: Annotated[bool, typer.Option(help="take categorical QIs as ordered (enables "
                                               "top/bottom coding, recoding by width)")] = False,
    seed: Annotated[int, typer.Option(help="seed of the sweep")] = 0,
    processes: Annotated[int | None, typer.Option(help="worker processes (default 2)")] = None,
    cache: Annotated[Path, typer.Option(help="cache of completed replications (a rerun "
                                             "resumes from it)")] = Path(".linkrisk-cache"),
    data_dir: Annotated[Path | None, typer.Option(help="reference data folder")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o",
                                                help="HTML report with the map")] = None,
    png: Annotated[Path | None, typer.Option(help="the risk–utility map as PNG")] = None,
    csv: Annotated[Path | None, typer.Option(help="table of every point, CSV")] = None,
    parquet: Annotated[Path | None, typer.Option(help="table of every point, Parquet")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the table, recommendation and "
                                                     "settings as JSON on stdout instead of "
                                                     "the table (as attack and assess)")] = False,
    json_out: Annotated[Path | None, typer.Option("--json-file", help="write the table, "
                                                  "recommendation and settings as JSON here")
                        ] = None,
    write_release: Annotated[Path | None, typer.Option(
        help="write the recommended release here (CSV/Parquet) with a JSON sidecar "
             "<path>.json")] = None,
    force: Annotated[bool, typer.Option(help="overwrite existing output files")] = False,
) -> None:
    """Sweep masking methods × parameters, draw the risk–utility map and recommend the
    release with the least information loss under a risk limit."""
    from linkrisk import parse_method, sidecar_path
    from linkrisk.fileio import atomic_write_text, check_output

    grids = [parse_method(m) for m in method or []]  # grid errors before any work
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

    t0 = time.perf_counter()
    last = [0.0, -1]

    def plain(done: int, total: int) -> None:  # progress lines when stderr is not a TTY
        now = time.perf_counter() - t0
        if done in (0, total) or now - last[0] >= 10 or done * 10 // max(total, 1) > last[1]:
            last[0], last[1] = now, done * 10 // max(total, 1)
            err.print(f"choose: {done}/{total} replications ({now:.0f} s)", highlight=False)

    with progress_bar() as bar:
        cb = bar("choose") if err.is_terminal else plain
        res = linkrisk.choose(original, grids or None, max_risk=max_risk,
                              risk_attacks=risk_attacks, replications=replications, qi=qi,
                              confidential=confidential, ordered=ordered, seed=seed,
                              processes=processes, cache_dir=cache, data_dir=data_dir,
                              progress=cb, risk=risk, sensitive=sensitive)
    secs = time.perf_counter() - t0
    err.print(escape(f"{res.tasks:,} replications ({res.cached:,} from the cache {cache}) in "
                     f"{secs:.0f} s"), highlight=False)
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
        from linkrisk.fileio import atomic_path

        with atomic_path(parquet, force=force) as tmp:
            table.assign(value=table["value"].astype(str)).to_parquet(tmp, index=False)
        written.append(parquet)
    if json_out is not None:
        written.append(atomic_write_text(json_out, json.dumps(res.to_dict(), indent=2),
                                         force=force))
    if as_json:
        print(json.dumps(res.to_dict(), indent=2))
        if write_release is not None and res.best is not None:
            written += list(res.write_release(write_release, force=force))
        if written:
            err.print(escape("wrote " + ", ".join(str(p) for p in written)), highlight=False)
        return
    t = Table(title=f"choose {res.settings['original']}: {len(res.points)} points, "
                    f"{res.settings['replications']} replications (mean ± sd)",
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
    if write_release is not None:
        if res.best is None:
            err.print("no release written: no point meets the limit", highlight=False)
        else:
            written += list(res.write_release(write_release, force=force))
    if written:
        err.print(escape("wrote " + ", ".join(str(p) for p in written)), highlight=False)


def _value(v: Any) -> str:
    """A swept parameter value as written in a config: 10, not 10.0."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@app.command("mask")
def mask_cmd(
    input: Annotated[str, typer.Argument(help=INPUT_HELP)],
    method: Annotated[str, typer.Option("--method", "-m", help="masking method "
                                                               "(linkrisk methods)")],
    output: Annotated[str, typer.Option("--output", "-o", help="where to write the release "
                                        "(format by suffix: .csv[.gz], .parquet, .dta, .sav, "
                                        ".xpt; - for CSV on stdout)")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                                                    help="method parameter name=value")] = None,
    columns: Annotated[str | None, typer.Option(help="columns to mask (default: all numeric "
                                                     "but id columns)")] = None,
    ids: Annotated[str | None, typer.Option(help="id column(s) a,b: never masked unless named "
                                                 "in --columns (id-like columns, unique per "
                                                 "record, are left unmasked too)")] = None,
    seed: Annotated[int | None, typer.Option(help="random seed (>= 0; default: a fresh one, "
                                                  "printed)")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite OUTPUT")] = False,
) -> None:
    """Mask INPUT with a protection method and write the release to OUTPUT."""
    from linkrisk.fileio import check_output, read_inputs, write_table

    methods = linkrisk.catalog.METHODS
    if method not in methods:
        raise LinkriskError(f"unknown masking method {method!r}; choose from {', '.join(methods)}")
    params = parse_params(param)
    drawn = seed is None
    seed = check_seed(secrets.randbelow(2**31) if drawn else seed)
    check_output(output, force, table=True, what="release")
    (df,) = read_inputs(input)
    with compile_notice():
        res = linkrisk.mask(df, method, columns=linkrisk.parse_columns(columns), seed=seed, ids=ids,
                            **params)
    same = [c for c in res.columns if c in df.columns and _same(df[c], res[c])]
    if len(same) == res.shape[1]:
        warnings.warn(f"the release equals the input on every column ({len(res):,} record"
                      f"{'s' if len(res) != 1 else ''}): nothing was masked", LinkriskWarning,
                      stacklevel=1)
    write_table(res, output, force=force, like=df)
    where = "stdout" if output == "-" else escape(str(output))
    err.print(f"wrote {where} ({len(res):,} record{'s' if len(res) != 1 else ''}, "
              f"method {method}, seed {seed}"
              + (f": drawn, pass --seed {seed} to repeat this release)" if drawn else ")"),
              soft_wrap=True)


def _same(a: pd.Series, b: pd.Series) -> bool:
    try:
        return bool(((a.to_numpy() == b.to_numpy()) | (a.isna().to_numpy()
                                                        & b.isna().to_numpy())).all())
    except (TypeError, ValueError):
        return False


@app.command()
def demo(
    n: Annotated[int, typer.Option(help="records in the synthetic file")] = 2000,
    m: Annotated[int, typer.Option(help="attributes")] = 8,
    seed: Annotated[int, typer.Option(help="seed of data and masking (>= 0)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the results as JSON on stdout "
                                                         "instead of the table")] = False,
) -> None:
    """Mask a built-in synthetic file a few ways and attack each release (no files needed)."""
    settings = linkrisk.LinkSettings(seed=seed)
    if n < 10 or m < 1:
        raise LinkriskError("the demo needs --n ≥ 10 records and --m ≥ 1 attributes")
    orig = linkrisk.datasets.synthetic(n, m, seed=settings.seed)
    releases = [("noise", {"a": 0.25}), ("noise", {"a": 1.0}), ("rank_swap", {"p": 5}),
                ("microaggregation_ir", {"k": 5}), ("mdav", {"k": 3})]
    attacks = ["dbrl", "mahalanobis", "rbrl_sum", "rbrl_max"]
    rows = []
    with progress_bar() as bar:
        for i, (meth, prm) in enumerate(releases):
            rel = linkrisk.mask(orig, meth, seed=settings.seed + 1 + i, **prm)
            label = f"{meth}({', '.join(f'{k}={v}' for k, v in prm.items())})"
            res = linkrisk.attack(orig, rel, attacks, settings=settings,
                                  progress_for=lambda att, label=label: bar(f"{label} {att}"))
            rows += [{"masking": label, "attack": att, "rate": r.rate,
                      "correct_links": r.correct_links} for att, r in res.items()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title=f"linkrisk demo: synthetic file, {n:,} records × {m} attributes "
                    f"(% of records re-identified)", title_justify="left")
    t.add_column("release")
    for att in attacks:
        t.add_column(att, justify="right")
    for label in dict.fromkeys(r["masking"] for r in rows):
        t.add_row(escape(label), *[f"{100 * r['rate']:.1f}" for r in rows if r["masking"] == label])
    out.print(t)
    worst = max(rows, key=lambda r: r["rate"])
    out.print(f"Worst case: {worst['attack']} re-identifies {100 * worst['rate']:.1f} % of the "
              f"records released with {escape(worst['masking'])}.")


@app.command()
def methods(
    markdown: Annotated[bool, typer.Option("--markdown", help="print the Markdown tables of "
                                           "docs/methods.md instead")] = False,
) -> None:
    """List the attacks and masking methods with their parameters (docs/methods.md)."""
    catalog = linkrisk.catalog
    if markdown:
        print(catalog.markdown_all(), end="")
        return

    def params_cell(params: Any) -> str:
        return "\n".join(escape(f"{p.name}: {p.shown_type} = {p.shown_default}")
                         for p in params.values()) or "—"

    t = Table(title="attacks", title_justify="left", show_lines=True)
    for c in ("name", "kinds", "parameters (type = default)", "what"):
        t.add_column(c)
    for spec in linkrisk.ATTACKS.values():
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
    ds = linkrisk.datasets
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
        linkrisk.datasets.locate(name, d)
    except LinkriskError:
        return False
    return True


@app.command()
def warmup() -> None:
    """Compile the numeric kernels of every attack and masking method now (a few minutes,
    once per install: later runs load them from numba's cache instead of compiling on
    first use). Running it again only loads them."""
    import os

    t0 = time.perf_counter()
    where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside linkrisk's sources"
    err.print(f"compiling into numba's cache ({escape(where)}) …", soft_wrap=True)
    with compile_notice():
        steps = linkrisk.warmup(progress=lambda label: err.print(escape(label), soft_wrap=True))
    err.print(f"done: {len(steps)} steps in {time.perf_counter() - t0:.1f} s", soft_wrap=True)


@app.command()
def serve(
    port: Annotated[int, typer.Option(help="port (default: a free one)")] = 0,
    host: Annotated[str, typer.Option(help="address to listen on; other than loopback, "
                                           "files are read by path only under --root")] = "127.0.0.1",
    root: Annotated[Path | None, typer.Option(help="the one folder files may be read from "
                                                   "by path when --host is not loopback")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="do not open a browser")] = False,
    jobs: Annotated[int, typer.Option(help="jobs that run at once (the others queue)")] = 2,
    max_upload: Annotated[str, typer.Option(help="largest upload, e.g. 2GiB (larger files: "
                                                 "open them by path)")] = "2GiB",
) -> None:
    """Start the web app on this machine and print its address (with its access token):
    assess, mask and choose from a browser; the data never leaves the machine."""
    import linkrisk.app as web  # says which extra to install when it is missing

    web.require()
    web.serve(host, port, root=root, open_browser=not no_browser, max_jobs=jobs,
              max_upload=max_upload)


# ------------------------------------------------------------------ entry point
def _fail(msg: str, code: int) -> None:
    err.print(f"[bold red]error:[/] {escape(msg)}", soft_wrap=True)
    sys.exit(code)


@contextmanager
def _signals_and_warnings() -> Iterator[None]:
    """SIGINT/SIGTERM raise :class:`Interrupted`; warnings become ``warning:`` lines."""
    def on_signal(signum: int, frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None,
             line: Any = None) -> None:
        err.print(f"[yellow]warning:[/] {escape(str(message))}", soft_wrap=True)

    old = {}
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            old[s] = signal.signal(s, on_signal)
        except ValueError:  # not the main thread (embedded use): leave signals alone
            pass
    old_show = warnings.showwarning
    warnings.showwarning = show
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            warnings.simplefilter("always", LinkriskWarning)
            yield
    finally:
        warnings.showwarning = old_show
        for s, h in old.items():
            signal.signal(s, h)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one ``error:`` line on stderr and exit code 2
    (usage errors are reported by click the same way); Ctrl-C/SIGTERM exit 130 with one
    line; anything else is a bug and keeps its traceback."""
    global _ARGV
    _ARGV = list(sys.argv[1:] if argv is None else argv)
    with _signals_and_warnings():
        try:
            rv = app(args=_ARGV, prog_name="linkrisk", standalone_mode=False)
        except LinkriskError as exc:
            _fail(str(exc), 2)
        except (Interrupted, KeyboardInterrupt, *_ABORT) as exc:
            term = isinstance(exc, Interrupted) and str(exc) == "SIGTERM"
            _fail(f"{'terminated' if term else 'interrupted'}; no output was written",
                  143 if term else 130)
        except _EXIT as exc:
            sys.exit(exc.exit_code)
        except _USAGE as exc:  # usage errors: one line (the help when no argument at all)
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()
                sys.exit(exc.exit_code)
            ctx = getattr(exc, "ctx", None)
            where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            _fail(exc.format_message() + where, exc.exit_code)
        except MemoryError:
            _fail("out of memory; lower --memory or link fewer records", 1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
