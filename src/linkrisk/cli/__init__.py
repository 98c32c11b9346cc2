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

Layout: this module holds the Typer app, its entry point :func:`main` and the
registration of the commands; ``options.py`` the options several commands share (the
one place for a new one), ``console.py`` what the commands print (consoles, progress,
shared tables), ``commands/`` one module per command or group of commands.
"""

from __future__ import annotations

import importlib
import signal
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.markup import escape

import linkrisk
from linkrisk.cli.commands.assess import assess_cmd
from linkrisk.cli.commands.attack import attack
from linkrisk.cli.commands.choose import choose_cmd
from linkrisk.cli.commands.info import datasets, demo, methods, warmup
from linkrisk.cli.commands.mask import mask_cmd
from linkrisk.cli.commands.serve import serve
from linkrisk.cli.commands.study import study_cmd
from linkrisk.cli.console import (
    COMPILE_NOTE,
    command_line,
    compile_notice,
    err,
    out,
    progress_bar,
    remember_argv,
)
from linkrisk.cli.options import MEMORY_DEFAULT, MEMORY_HELP
from linkrisk.errors import LinkriskError, LinkriskWarning

#: what other code and the tests use (the progress interval, PLAIN_EVERY, is in
#: linkrisk.cli.console, where progress_bar reads it)
__all__ = ["COMPILE_NOTE", "MEMORY_DEFAULT", "MEMORY_HELP", "Interrupted", "app",
           "command_line", "compile_notice", "err", "main", "out", "progress_bar"]

# The heavy parts (pandas, file I/O, the attacks and their numba kernels) are imported by
# the commands that use them, so that ``linkrisk --help`` and a command's option errors
# answer at once (issue 43; ``python benchmarks/coldstart.py``).

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="linkrisk: how many records of a masked (anonymized) file can an "
                       "attacker re-identify by record linkage?")


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



# the commands, in the order of ``linkrisk --help``
app.command("attack")(attack)
app.command("assess")(assess_cmd)
app.command("study")(study_cmd)
app.command("choose")(choose_cmd)
app.command("mask")(mask_cmd)
app.command("demo")(demo)
app.command("methods")(methods)
app.command("datasets")(datasets)
app.command("warmup")(warmup)
app.command("serve")(serve)


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
    args = list(sys.argv[1:] if argv is None else argv)
    remember_argv(args)
    with _signals_and_warnings():
        try:
            rv = app(args=args, prog_name="linkrisk", standalone_mode=False)
        except LinkriskError as exc:
            _fail(str(exc), 2)
        except (Interrupted, KeyboardInterrupt, *_ABORT) as exc:
            term = isinstance(exc, Interrupted) and str(exc) == "SIGTERM"
            _fail(f"{'terminated' if term else 'interrupted'}; no output was written",
                  143 if term else 130)
        except _EXIT as exc:  # assess --max-risk exceeded (3) among them: a result too
            _compile_later()
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
    _compile_later()
    sys.exit(rv if isinstance(rv, int) else 0)


def _compile_later() -> None:
    """After a command that scanned small problems with numpy because their kernels were
    not compiled: compile those in the background for the next run, and say so once."""
    pid = linkrisk.warmup_in_background(only_if_needed=True)
    if pid is not None:
        err.print(f"note: compiling linkrisk's kernels in the background for later runs "
                  f"(pid {pid}, about a minute of one core at low priority; "
                  "LINKRISK_BACKGROUND_COMPILE=0 turns this off)", soft_wrap=True,
                  highlight=False)

