"""``linkrisk assess``: every applicable attack, the risk and utility measures, a verdict
and the HTML report; ``--synthetic`` for synthetic releases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

import linkrisk
from linkrisk import parse_percent
from linkrisk.cli import options as opt
from linkrisk.cli.console import (
    command_line,
    err,
    input_records,
    out,
    progress_bar,
    rate_table,
    say_skipped,
    scenario_table,
)
from linkrisk.errors import LinkriskError

# the options of assess alone (the shared ones are in linkrisk.cli.options)
Method = Annotated[str | None, typer.Option("--method", "-m",
                                            help="attacks a,b,c, or 'all' (default: every "
                                                 "attack that applies)")]
Attacks = Annotated[str | None, typer.Option("--attacks", hidden=True)]
RankSwapP = Annotated[float | None, typer.Option(
    help="the release was rank swapped with this p (or at most): adds rsrl, rsrl_union")]
MaxRisk = Annotated[str | None, typer.Option(
    help="acceptable worst case, e.g. 5%: sets the verdict bands; exit code 3 when "
         "the worst case exceeds it")]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="write the HTML report here")]
IncludeRecords = Annotated[bool, typer.Option(
    "--include-records", help="put the QI values of the most exposed records in the "
                              "report (it then carries a confidentiality banner)")]
Force = Annotated[bool, typer.Option("--force", help="overwrite the report")]
Weights = Annotated[str | None, typer.Option(
    help="sampling-weight column of the released file (population risk)")]
Household = Annotated[str | None, typer.Option(
    help="household-id column of the released file (household risk)")]
SudaMaxSize = Annotated[int | None, typer.Option(
    help="largest minimal sample unique SUDA2 looks for (default: all keys)")]
Scenarios = Annotated[str, typer.Option(
    "--scenarios", help="attacker scenarios searched for the worst case: all (every QI, "
                        "every pair, greedy), greedy, none")]
MaxScenarios = Annotated[int | None, typer.Option(
    "--max-scenarios", help="most QI sets the scenario search scores (default 500)")]
Scenario = Annotated[list[str] | None, typer.Option(
    "--scenario", help="what an intruder may hold, 'name=a,b,c' (repeatable): every "
                       "attack runs on it, one row each")]
Synthetic = Annotated[bool, typer.Option(
    "--synthetic", help="the release is synthetic (no record pairs with an original "
                        "one): DCR, membership inference, anonymeter's attacks")]
Holdout = Annotated[str | None, typer.Option(
    "--holdout", help="with --synthetic: original records the generator never saw "
                      "(control set)")]
Sensitive = Annotated[str | None, typer.Option(
    "--sensitive", help="sensitive columns a,b: attribute disclosure (l-diversity, "
                        "t-closeness, inference through links); with --synthetic the "
                        "inference attack's secrets")]
Linkability = Annotated[bool, typer.Option(
    "--linkability", help="also run anonymeter's linkability attack on the release and "
                          "show it beside true re-identification")]


def assess_cmd(
    original: opt.Original,
    masked: opt.Masked,
    method: Method = None,
    attacks: Attacks = None,
    qi: opt.Qi = None,
    ids: opt.Ids = None,
    kinds: opt.Kinds = None,
    nominal: opt.Nominal = None,
    rank_swap_p: RankSwapP = None,
    max_risk: MaxRisk = None,
    output: Output = None,
    as_json: opt.AsJson = False,
    include_records: IncludeRecords = False,
    assume_row_order: opt.AssumeRowOrder = False,
    block: opt.Block = None,
    memory: opt.Memory = opt.MEMORY_DEFAULT,
    seed: opt.LinkSeed = 0,
    force: Force = False,
    weights: Weights = None,
    household: Household = None,
    suda_max_size: SudaMaxSize = None,
    scenarios: Scenarios = "all",
    max_scenarios: MaxScenarios = None,
    scenario: Scenario = None,
    synthetic: Synthetic = False,
    holdout: Holdout = None,
    sensitive: Sensitive = None,
    linkability: Linkability = False,
) -> None:
    """Run every applicable attack and the risk/utility measures; print a verdict and write
    an HTML report (-o). With categorical QIs also the frequency and population risk of the
    release (k-anonymity, individual and household risk, SUDA2)."""
    from linkrisk.fileio import check_output, read_inputs

    chosen = _attack_names(method, attacks)
    limit = None if max_risk is None else parse_percent(max_risk)
    link = opt.LinkOptions(qi=qi, ids=ids, kinds=kinds, nominal=nominal, memory=memory,
                           seed=seed, assume_row_order=assume_row_order, block=block)
    settings = link.settings(screen_qi=True)
    check_output(output, force, what="report")
    sens = [c.strip() for c in sensitive.split(",") if c.strip()] if sensitive else None
    if synthetic:
        _assess_synthetic(original, masked, holdout, qi, sens, seed, limit, as_json,
                          output, force, linkability=linkability)
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
        _write_report(res, output, original, masked, include_records, force)
    _show(res, original, masked, as_json, limit)


def _write_report(res: Any, output: Path, original: str, masked: str, include_records: bool,
                  force: bool) -> None:
    """Write the HTML report of a masked release (``-o``) and say so on stderr."""
    from linkrisk.fileio import atomic_write_text, input_label

    inputs = input_records((("original", original), ("released", masked)))
    atomic_write_text(output, res.to_html(f"{input_label(masked)}: disclosure-risk report",
                                          include_records=include_records,
                                          inputs=inputs, command=command_line()),
                      force=force)
    err.print(f"wrote {escape(str(output))}" + (" (with record values: confidential)"
                                                if include_records else ""), soft_wrap=True)


def _attack_names(method: str | None, attacks: str | None) -> str:
    """The attacks asked for (``--method``, or the hidden old spelling ``--attacks``),
    checked; ``all`` when none."""
    if method is not None and attacks is not None and method != attacks:
        raise LinkriskError("give the attacks once, with --method")
    chosen = method or attacks or "all"
    if chosen.strip() != "all":
        linkrisk.resolve_methods(chosen)
    return chosen


def _show(res: Any, original: str, masked: str, as_json: bool, limit: float | None) -> None:
    """Print the assessment: JSON (with the inputs and the command) or the tables and
    text; then the attacks that did not run and, with ``--max-risk``, the verdict (exit
    code 3 above the limit)."""
    if as_json:
        d = res.to_dict()
        d["inputs"] = input_records((("original", original), ("released", masked)),
                                    labelled=False)
        d["command"] = command_line()
        print(json.dumps(d, indent=2))
    else:
        _print_assessment(res, original, masked)
    _print_sections(res, as_json)
    if limit is not None:
        _check_limit(res, limit)


def _print_assessment(res: Any, original: str, masked: str) -> None:
    """The table of attacks, the measures, the scenarios, the worst case and the verdict
    notes, and the population register's frequency risk when there is one."""
    from linkrisk.fileio import input_label

    w = res.worst
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
              f"re-identifies {100 * w.rate:.2f} % of the "
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


def _print_sections(res: Any, as_json: bool) -> None:
    """After the table (not with ``--json``): attribute disclosure and anonymeter's
    linkability beside true re-identification; then the attacks that did not run."""
    if res.attribute is not None and not as_json:
        out.print(escape(attribute_text(res.attribute)), soft_wrap=True, highlight=False)
    if res.linkability is not None and not as_json:
        lk = res.linkability
        out.print(escape(f"True re-identification (worst case, {res.worst.method}): "
                         f"{100 * res.worst.rate:.2f} %: "
                         "attacker records linked to their own released record.\n"
                         f"anonymeter linkability: {100 * lk['risk']:.2f} % "
                         f"[{100 * lk['ci'][0]:.2f}, {100 * lk['ci'][1]:.2f}]: attacker "
                         "records whose two halves of QIs point to the same released record, "
                         "right or wrong (no truth needed; no bound on re-identification)."),
                  soft_wrap=True, highlight=False)
    say_skipped(res.skipped)


def _check_limit(res: Any, limit: float) -> None:
    """``--max-risk``: one line per threat on stderr, within or above the limit; exit code
    3 when the assessment exceeds it."""
    tail = "".join(f"; {escape(t)}" for t in res.verdict_notes)
    what = {"identity": "worst case", "attribute": "attribute disclosure"}
    for d in res.sections:
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
                      as_json: bool, output: Path | None = None, force: bool = False, *,
                      linkability: bool = False) -> None:
    """``assess --synthetic``: the synthetic-data section and its verdict (and its HTML
    report with ``-o``); ``--linkability`` is refused (the section has it already)."""
    from linkrisk.fileio import atomic_write_text, input_label, read_inputs

    if linkability:
        raise LinkriskError("--linkability is for masked releases: a synthetic release's "
                            "report has anonymeter's linkability already")
    specs = [original, release] + ([holdout] if holdout else [])
    frames = read_inputs(*specs)
    res = linkrisk.assess(frames[0], frames[1], qi=linkrisk.parse_columns(qi), synthetic=True,
                          holdout=frames[2] if holdout else None, sensitive=sens, seed=seed,
                          max_risk=limit)
    if output is not None:
        inputs = input_records((("original", original), ("synthetic", release),
                                *((("holdout", holdout),) if holdout else ())))
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

