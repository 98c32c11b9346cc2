"""What the commands print and how: the two consoles (results on stdout, everything else
on stderr), progress and the first-run compile notice, the shared tables, and the
command line of this run (for a report's "command to reproduce")."""

from __future__ import annotations

import hashlib
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
#: the arguments of this run (for the report's "command to reproduce")
_ARGV: list[str] | None = None
#: seconds between plain progress lines when stderr is not a terminal
PLAIN_EVERY = 5.0


def remember_argv(argv: list[str]) -> None:
    """Record the arguments of this run for :func:`command_line`."""
    global _ARGV
    _ARGV = list(argv)


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


def input_records(inputs: Iterable[tuple[str, str | Path]], *, labelled: bool = True
                  ) -> list[dict[str, Any]]:
    """The input files of a run as a report lists them: role, name and SHA-256 of each
    ``(role, path)``; for stdin or a built-in dataset the SHA-256 is None, or with
    ``labelled`` a note of what it is."""
    return [{"role": role, "name": str(p),
             "sha256": sha256(p) or (_not_a_file(p) if labelled else None)}
            for role, p in inputs]


def command_line() -> str:
    """The command that reproduces this run."""
    args = _ARGV if _ARGV is not None else sys.argv[1:]
    return shlex.join(["linkrisk", *args])


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


