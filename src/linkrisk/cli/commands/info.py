"""The commands that need no file: ``demo``, ``methods``, ``datasets`` and ``warmup``."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import linkrisk
from linkrisk.cli import options as opt
from linkrisk.cli.console import compile_notice, err, out, progress_bar
from linkrisk.errors import LinkriskError


def demo(
    n: Annotated[int, typer.Option(help="records in the synthetic file")] = 2000,
    m: Annotated[int, typer.Option(help="attributes")] = 8,
    seed: Annotated[int, typer.Option(help="seed of data and masking (>= 0)")] = 0,
    as_json: opt.AsJson = False,
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


def _background_warmup() -> None:
    """``warmup --background``: nice 19, the attacks' kernels only, and nothing when
    another process is compiling into the same cache (``exclusive``)."""
    import os

    with contextlib.suppress(OSError):
        os.nice(19)
    linkrisk.warmup(masking=False, exclusive=True)


def _found(name: str, d: Path) -> bool:
    try:
        linkrisk.datasets.locate(name, d)
    except LinkriskError:
        return False
    return True


def warmup(
    background: Annotated[bool, typer.Option(
        "--background", help="what a cold command starts by itself: the attacks' kernels "
        "only, at the lowest CPU priority, silently, one process per cache "
        "(LINKRISK_BACKGROUND_COMPILE=0 turns that off)")] = False,
) -> None:
    """Compile the numeric kernels of every attack and masking method now (a few minutes,
    once per install: later runs load them from numba's cache instead of compiling on
    first use). Running it again only loads them."""
    import os

    if background:
        _background_warmup()
        return
    t0 = time.perf_counter()
    where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside linkrisk's sources"
    err.print(f"compiling into numba's cache ({escape(where)}) …", soft_wrap=True)
    with compile_notice():
        steps = linkrisk.warmup(progress=lambda label: err.print(escape(label), soft_wrap=True))
    err.print(f"done: {len(steps)} steps in {time.perf_counter() - t0:.1f} s", soft_wrap=True)

