"""``linkrisk mask``: mask a file with a protection method and write the release."""

from __future__ import annotations

import secrets
import warnings
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

import linkrisk
from linkrisk import check_seed, parse_params
from linkrisk.cli import options as opt
from linkrisk.cli.console import compile_notice, err
from linkrisk.errors import LinkriskError, LinkriskWarning

if TYPE_CHECKING:
    import pandas as pd


def mask_cmd(
    input: Annotated[str, typer.Argument(help=opt.INPUT_HELP)],
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
