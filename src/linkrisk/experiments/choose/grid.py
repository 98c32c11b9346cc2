"""The grid of ``linkrisk choose``: the methods and parameter values swept (the points),
written ``METHOD:PARAM=GRID[/PARAM=GRID…]`` (:func:`parse_method`; syntax in the docstring
of :mod:`linkrisk.experiments.choose`), and the default grids of each data kind."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import LinkriskError

#: values of ``a..b`` without a step
DEFAULT_STEPS = 6
#: replications per point when not given
DEFAULT_REPLICATIONS = 5

#: default grids (method → {param: values}) per data kind (see module docstring)
NUMERIC_DEFAULTS: dict[str, dict[str, list[Any]]] = {
    "noise": {"a": [0.1, 0.2, 0.3, 0.5, 0.75, 1.0]},
    "rank_swap": {"p": [2, 5, 10, 15, 20]},
    "microaggregation_ir": {"k": [3, 5, 10, 20, 30]},
    "mdav": {"k": [3, 5, 10, 15, 20, 30]},
    "ipso": {"variant": ["A", "B", "C"]},  # only with confidential columns
}
CATEGORICAL_DEFAULTS: dict[str, dict[str, list[Any]]] = {
    "pram": {"pd": [0.9, 0.8, 0.7, 0.5, 0.3]},
    "global_recoding": {"width": [2, 3, 4, 6]},        # ordered categories
    "top_coding": {"quantile": [0.9, 0.8, 0.7, 0.5]},   # ordered categories
    "bottom_coding": {"quantile": [0.1, 0.2, 0.3, 0.5]},
    # suppression to k-anonymity (releases with missing values: docs/methods.md)
    "local_suppression": {"k": [2, 3, 5, 10]},
}
#: nominal categories: recode by keeping the n_groups − 1 most frequent ones
NOMINAL_RECODING = {"n_groups": [8, 6, 4, 2]}

_NUM = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number(text: str, where: str) -> float:
    if not _NUM.fullmatch(text.strip()):
        raise LinkriskError(f"{where}: {text!r} is not a number")
    return float(text)


def _is_int_text(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text.strip()) is not None


def parse_grid(text: str, typ: type = float, where: str = "grid") -> list[Any]:
    """Values of a grid: comma list of values, ``a..b`` (:data:`DEFAULT_STEPS` evenly
    spaced values) and ``a..b:step`` items (see the module docstring)."""
    out: list[Any] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            raise LinkriskError(f"{where}: empty value in {text!r}")
        if ".." in item:
            if typ not in (int, float):
                raise LinkriskError(f"{where}: a range needs a numeric parameter")
            rng, _, step_txt = item.partition(":")
            a_txt, _, b_txt = rng.partition("..")
            a, b = _number(a_txt, where), _number(b_txt, where)
            if b < a:
                raise LinkriskError(f"{where}: range {item!r} runs downwards; write a..b with "
                                    "a ≤ b")
            if step_txt:
                step = _number(step_txt, where)
                if step <= 0:
                    raise LinkriskError(f"{where}: the step of {item!r} must be positive")
                count = int(math.floor((b - a) / step + 1e-9)) + 1
                if count > 1000:
                    raise LinkriskError(f"{where}: {item!r} gives {count} values; at most 1000")
                vals = [a + i * step for i in range(count)]
            else:
                vals = list(np.linspace(a, b, DEFAULT_STEPS)) if b > a else [a]
            as_int = typ is int or (_is_int_text(a_txt) and _is_int_text(b_txt)
                                    and (not step_txt or _is_int_text(step_txt)))
            out += [int(round(v)) if as_int else float(f"{v:.10g}") for v in vals]
        elif typ is int:
            v = _number(item, where)
            if v != int(v):
                raise LinkriskError(f"{where}: {item!r} is not an integer")
            out.append(int(v))
        elif typ is float:
            v = _number(item, where)
            out.append(int(v) if _is_int_text(item) else v)
        else:
            out.append(item)
    return list(dict.fromkeys(out))


@dataclass
class MethodGrid:
    """One ``--method``: a masking method and the values of each of its parameters (the
    points are their Cartesian product; the first parameter is the swept one)."""

    method: str
    params: dict[str, list[Any]]

    def label(self) -> str:
        return self.method + (":" + "/".join(f"{k}={','.join(map(str, v))}"
                                             for k, v in self.params.items())
                              if self.params else "")


def parse_method(spec: str) -> MethodGrid:
    """Parse a method grid ``METHOD[:PARAM=GRID[/PARAM=GRID…]]`` (see the module docstring).

    Parameters
    ----------
    spec : str
        E.g. ``"rank_swap:p=2..20"``, ``"microaggregation_ir:k=3,5,10"``.

    Returns
    -------
    MethodGrid
        The method and the values of each swept parameter.
    """
    from ...masking import METHODS

    method, _, rest = spec.strip().partition(":")
    method = method.strip()
    if method not in METHODS:
        raise LinkriskError(f"--method {spec!r}: unknown masking method {method!r}; choose "
                            f"from {', '.join(METHODS)}")
    accepted = METHODS[method].params
    params: dict[str, list[Any]] = {}
    for part in (p for p in rest.split("/") if rest):
        name, eq, grid = part.partition("=")
        name = name.strip()
        if not eq or not grid.strip():
            raise LinkriskError(f"--method {spec!r}: write PARAM=VALUES, e.g. "
                                f"{method}:{next(iter(accepted), 'p')}=1..10")
        if name not in accepted:
            raise LinkriskError(f"--method {spec!r}: {method} has no parameter {name!r}; it "
                                f"takes {', '.join(accepted) or 'none'}")
        if name in params:
            raise LinkriskError(f"--method {spec!r}: {name} given twice")
        typ = getattr(accepted[name], "type", accepted[name])  # a declared Param's type
        if typ is list:
            params[name] = [[c.strip() for c in grid.split(",") if c.strip()]]
        else:
            params[name] = parse_grid(grid, typ if typ in (int, float) else str,
                                      f"--method {spec!r}")
    if not params:
        params = _default_grid(method)
        if params is None:
            raise LinkriskError(f"--method {spec!r}: {method} has no default grid; give one, "
                                f"e.g. {method}:{next(iter(accepted), 'p')}=…")
    return MethodGrid(method, params)


def _default_grid(method: str) -> dict[str, list[Any]] | None:
    grid = {**NUMERIC_DEFAULTS, **CATEGORICAL_DEFAULTS}.get(method)
    return {k: list(v) for k, v in grid.items()} if grid is not None else None


def default_methods(kind: str, *, ordered: bool, confidential: Sequence[str] | None
                    ) -> tuple[list[MethodGrid], list[str]]:
    """The default sweep for a data kind (``numeric`` or ``categorical``) and notes on what
    was left out and why."""
    notes: list[str] = []
    grids: list[MethodGrid] = []
    if kind == "numeric":
        for m, g in NUMERIC_DEFAULTS.items():
            if m == "ipso" and not confidential:
                notes.append("IPSO left out: it regresses the QIs on confidential attributes; "
                             "name them with --confidential to include it")
                continue
            params = {k: list(v) for k, v in g.items()}
            if m == "ipso":
                params["confidential"] = [list(confidential or [])]
            grids.append(MethodGrid(m, params))
        return grids, notes
    for m, g in CATEGORICAL_DEFAULTS.items():
        if not ordered and m in ("top_coding", "bottom_coding"):
            notes.append(f"{m} left out: the categories have no order to code from; pass "
                         "--ordered to take them as ordered (in their sorted order)")
            continue
        if m == "global_recoding" and not ordered:
            g = NOMINAL_RECODING
        grids.append(MethodGrid(m, {k: list(v) for k, v in g.items()}))
    return grids, notes


def parse_percent(text: str | float | None) -> float | None:
    """Parse a percentage: ``"5%"``, ``"5"`` or ``5`` → 5.0.

    Parameters
    ----------
    text : str or float, optional
        The percentage, in [0, 100].

    Returns
    -------
    float or None
        The value in %, ``None`` when ``text`` is None.
    """
    if text is None:
        return None
    s = str(text).strip().rstrip("%").strip()
    v = _number(s, "--max-risk")
    if not 0 <= v <= 100:
        raise LinkriskError(f"--max-risk {text!r}: a percentage between 0 and 100")
    return v


def choose_grids(methods: Sequence[str | MethodGrid] | None, kind: str, ordered: bool,
                  conf: list[str], notes: list[str]) -> list[MethodGrid]:
    """Stage 2 of :func:`~linkrisk.experiments.choose.choose`: the method grids (given or
    the defaults of the data kind), checked against the kind, the confidential columns filled in, no repeats."""
    from ...masking import METHODS

    if methods:
        grids = [m if isinstance(m, MethodGrid) else parse_method(m) for m in methods]
    else:
        grids, more = default_methods(kind, ordered=ordered, confidential=conf)
        notes += more
    for g in grids:
        mkind = METHODS[g.method].kind
        if mkind != kind:
            raise LinkriskError(f"{g.method} masks {mkind} attributes but the QIs are {kind}")
        if g.method in ("ipso", "data_shuffle"):
            if not conf and "confidential" not in g.params:
                raise LinkriskError(f"{g.method} needs the confidential columns: pass "
                                    "--confidential")
            g.params.setdefault("confidential", [list(conf)])
    labels = [g.label() for g in grids]
    dup = [x for x in labels if labels.count(x) > 1]
    if dup:
        raise LinkriskError(f"--method {dup[0]!r} is given twice")
    return grids




def fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)

