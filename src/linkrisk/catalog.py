"""The catalogue of attacks and masking methods, built from the two registries.

``linkrisk methods`` prints it as tables, ``linkrisk methods --markdown`` and
``python scripts/gen_methods_doc.py`` as the Markdown tables of docs/methods.md. The
parameter tables in that document sit between marker comments and are regenerated from
the same :class:`~linkrisk.params.Param` declarations that validate the parameters, so the
document cannot drift from the code (a test compares them)::

    <!-- BEGIN params attack dbrl -->   … generated …   <!-- END params -->
    <!-- BEGIN table attacks -->        … generated …   <!-- END table -->
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .attacks import ATTACKS
from .masking import METHODS, MethodSpec
from .params import Param, params_table

#: the registries by the name used in the markers
REGISTRIES = {"attack": ATTACKS, "masking": METHODS}

_BLOCK = re.compile(r"(<!-- BEGIN (params|table) ([a-z_]+)(?: ([a-z0-9_]+))? -->\n)"
                    r"(.*?)"
                    r"(<!-- END \2 -->)", re.S)


def _cell(text: str) -> str:
    """Markdown table cell: pipes escaped, no line breaks."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def params_markdown(params: Mapping[str, Param]) -> str:
    """The parameter table of one attack or masking method (or a sentence when it has
    none)."""
    if not params:
        return "No parameters.\n"
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for name, typ, default, text in params_table(params):
        lines.append(f"| `{name}` | {_cell(typ)} | {_cell(default)} | {_cell(text)} |")
    return "\n".join(lines) + "\n"


def _param_list(params: Mapping[str, Param]) -> str:
    return ", ".join(f"`{p}`" for p in params) or "—"


def attacks_markdown() -> str:
    """Overview table of every registered attack."""
    lines = ["| attack | attribute kinds | parameters | what it does |", "|---|---|---|---|"]
    for s in ATTACKS.values():
        kinds = ", ".join(s.kinds) + ("" if s.mixed or len(s.kinds) == 1
                                      else " (not numeric and categorical together)")
        lines.append(f"| [`{s.name}`](#{_anchor('attack', s.name)}) | {kinds} | "
                     f"{_param_list(s.params)} | {_cell(s.summary)} |")
    return "\n".join(lines) + "\n"


def masks_label(spec: MethodSpec) -> str:
    """Which columns a masking method masks when ``columns=None``."""
    return {"numeric": "numeric", "categorical": "categorical", "ordered":
            "ordinal, else numeric", "any": "categorical, else numeric"}[spec.columns_rule]


def masking_markdown() -> str:
    """Overview table of every registered masking method."""
    lines = ["| method | masks | random | parameters | what it does |", "|---|---|---|---|---|"]
    for s in METHODS.values():
        lines.append(f"| [`{s.name}`](#{_anchor('masking', s.name)}) | {masks_label(s)} | "
                     f"{'no' if s.deterministic else 'yes (seed)'} | {_param_list(s.params)} "
                     f"| {_cell(s.summary)} |")
    return "\n".join(lines) + "\n"


def _anchor(registry: str, name: str) -> str:
    return f"{registry}-{name.replace('_', '-')}"


def block(kind: str, what: str, name: str | None = None) -> str:
    """The generated content of one marker block."""
    if kind == "table":
        if what == "attacks":
            return attacks_markdown()
        if what == "masking":
            return masking_markdown()
        raise ValueError(f"unknown table {what!r}")
    reg = REGISTRIES.get(what)
    if reg is None or name not in reg:
        raise ValueError(f"marker names an unknown {what} {name!r}")
    return params_markdown(reg[name].params)


def render(text: str) -> str:
    """``text`` with every marker block regenerated. Raises ``ValueError`` when a
    registered attack or masking method has no parameter block, or a block names
    something that is not registered."""
    seen: dict[str, set[str]] = {k: set() for k in REGISTRIES}

    def repl(m: re.Match[str]) -> str:
        kind, what, name = m.group(2), m.group(3), m.group(4)
        if kind == "params":
            seen.setdefault(what, set()).add(name or "")
        return m.group(1) + block(kind, what, name) + m.group(6)

    out = _BLOCK.sub(repl, text)
    missing = [f"{k} {n}" for k, reg in REGISTRIES.items() for n in reg if n not in seen[k]]
    no_anchor = [f'<a id="{_anchor(k, n)}"></a>' for k, reg in REGISTRIES.items() for n in reg
                 if f'<a id="{_anchor(k, n)}"></a>' not in out]
    if no_anchor:
        raise ValueError("the overview tables link to missing sections; add " +
                         ", ".join(no_anchor))
    if missing:
        raise ValueError("no parameter block for " + ", ".join(missing) + "; add "
                         "'<!-- BEGIN params attack NAME -->' … '<!-- END params -->'")
    return out


def markdown_all() -> str:
    """Every generated table, for ``linkrisk methods --markdown``."""
    parts = ["## Attacks\n\n", attacks_markdown()]
    for s in ATTACKS.values():
        parts += [f"\n### `{s.name}`\n\n{s.summary}\n\n", params_markdown(s.params)]
    parts += ["\n## Masking methods\n\n", masking_markdown()]
    for s in METHODS.values():
        parts += [f"\n### `{s.name}`\n\n{s.summary}\n\n", params_markdown(s.params)]
    return "".join(parts)


__all__ = ["REGISTRIES", "attacks_markdown", "block", "markdown_all", "masking_markdown",
           "masks_label", "params_markdown", "render"]
