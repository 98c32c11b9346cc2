"""``linkrisk attack``: link a release back to its original with chosen attacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

import linkrisk
from linkrisk import parse_params
from linkrisk.cli import options as opt
from linkrisk.cli.console import out, progress_bar, rate_table, say_skipped
from linkrisk.errors import LinkriskError


def attack(
    original: opt.Original,
    masked: opt.Masked,
    method: Annotated[str, typer.Option("--method", "-m",
                                        help="attack(s) a,b,c, or 'all' (every attack that "
                                             "applies to the files)")] = "dbrl",
    qi: opt.Qi = None,
    ids: opt.Ids = None,
    kinds: opt.Kinds = None,
    nominal: opt.Nominal = None,
    direction: Annotated[str, typer.Option(help="original->masked or masked->original")] = "original->masked",
    param: Annotated[list[str] | None, typer.Option("--param", "-p",
                                                    help="attack parameter name=value")] = None,
    memory: opt.Memory = opt.MEMORY_DEFAULT,
    seed: opt.LinkSeed = 0,
    as_json: opt.AsJson = False,
    per_record: Annotated[Path | None, typer.Option(help="write per-record outcomes (CSV) here")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --per-record output")] = False,
    assume_row_order: opt.AssumeRowOrder = False,
    block: opt.Block = None,
    backend: Annotated[str, typer.Option(help="local, or dask: nearest-set attacks run "
                                              "block-wise on a Dask cluster")] = "local",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address "
                                                       "(default: a local cluster)")] = None,
) -> None:
    """Link MASKED back to ORIGINAL and count correct links for each attack."""
    import pandas as pd

    from linkrisk.fileio import atomic_write_text, check_output, input_label, read_inputs

    link = opt.LinkOptions(qi=qi, ids=ids, kinds=kinds, nominal=nominal, memory=memory,
                           seed=seed, assume_row_order=assume_row_order, block=block)
    settings = link.settings(direction=direction, backend=backend, scheduler=scheduler)
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
