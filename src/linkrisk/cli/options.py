"""The options the commands share, declared once: their help texts, the ``Annotated``
types the command signatures use, and :class:`LinkOptions`, which turns the options of
every linking command into :class:`linkrisk.LinkSettings`.

A new option of ``attack``, ``assess`` (and the others that link files) goes here: an
``Annotated`` type below, a field of :class:`LinkOptions` passed on by
:meth:`LinkOptions.settings`, and one parameter line in each command that takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

import linkrisk
from linkrisk.errors import LinkriskError

INPUT_HELP = ("data file (CSV, Parquet, Stata .dta, SPSS .sav, SAS .sas7bdat/.xpt), a built-in "
              "dataset name (census, eia, …), or - for CSV on stdin")
QI_HELP = ("QI columns a,b,c (default: every column both files share but --ids; assess also "
           "leaves out id-like and weight-like ones)")
IDS_HELP = ("id column(s) in both files that pair the records (default: row order, "
            "checked first)")
KINDS_HELP = "kind overrides: col=numeric|ordinal|nominal,..."
NOMINAL_HELP = "columns to read as nominal categories: a,b (shorthand for --kinds a=nominal)"
BLOCK_HELP = ("blocking keys a,b: compare records only within blocks of equal values of "
              "these columns (known exactly; left out of the QIs)")
ROW_ORDER_HELP = ("trust that row i of the release is the masked row i of the original "
                  "(skip the check)")
#: --memory: the engine's default budget, resolved once for this machine (docs/methods.md,
#: "Working memory")
_BUDGET = linkrisk.DEFAULT_MEMORY_BUDGET
MEMORY_DEFAULT = f"{_BUDGET // 2**20}MiB" if _BUDGET % 2**20 == 0 else str(_BUDGET)
MEMORY_HELP = ("engine working-memory budget, e.g. 2GiB (default: 1/8 of available memory "
               f"within 256 MiB–4 GiB, or $LINKRISK_MEMORY; here {_BUDGET / 2**30:.1f} GiB)")


Original = Annotated[str, typer.Argument(help=INPUT_HELP)]
Masked = Annotated[str, typer.Argument(help="released (masked) file, same forms")]
Qi = Annotated[str | None, typer.Option(help=QI_HELP)]
Ids = Annotated[str | None, typer.Option(help=IDS_HELP)]
Kinds = Annotated[str | None, typer.Option(help=KINDS_HELP)]
Nominal = Annotated[str | None, typer.Option(help=NOMINAL_HELP)]
Memory = Annotated[str, typer.Option(help=MEMORY_HELP)]
LinkSeed = Annotated[int, typer.Option(help="seed for tie breaking of reported links (>= 0)")]
Block = Annotated[str | None, typer.Option(help=BLOCK_HELP)]
AssumeRowOrder = Annotated[bool, typer.Option("--assume-row-order", help=ROW_ORDER_HELP)]
AsJson = Annotated[bool, typer.Option("--json", help="print the results as JSON on stdout "
                                                     "instead of the table")]
Processes = Annotated[int | None, typer.Option(help="worker processes (default 2)")]


def merge_kinds(kinds: str | None, nominal: str | None) -> dict[str, str]:
    """``--kinds a=ordinal,b=numeric`` plus the ``--nominal c,d`` shorthand."""
    k = linkrisk.parse_kinds(kinds)
    for c in linkrisk.parse_columns(nominal) or []:
        if k.get(c, "nominal") != "nominal":
            raise LinkriskError(f"{c!r} is given two kinds (--kinds {c}={k[c]} and --nominal)")
        k[c] = "nominal"
    return k



@dataclass
class LinkOptions:
    """The options with which ``attack`` and ``assess`` link two files (QIs, ids, kinds,
    memory, seed, row order); :meth:`settings` makes them one
    :class:`linkrisk.LinkSettings`, so that every command reads them the same way."""

    qi: str | None = None
    ids: str | None = None
    kinds: str | None = None
    nominal: str | None = None
    memory: str = MEMORY_DEFAULT
    seed: int = 0
    assume_row_order: bool = False
    block: str | None = None

    def settings(self, **more: Any) -> linkrisk.LinkSettings:
        """The :class:`linkrisk.LinkSettings` of these options and the command's own
        settings ``more`` (``direction``, ``backend``, ``screen_qi`` …)."""
        return linkrisk.LinkSettings(qi=self.qi, ids=self.ids,
                                     kinds=merge_kinds(self.kinds, self.nominal),
                                     memory_budget=self.memory, seed=self.seed,
                                     assume_row_order=self.assume_row_order,
                                     block=self.block, **more)
