"""Typed parameter declarations shared by the attack and masking registries.

Every registered attack (:data:`linkrisk.attacks.ATTACKS`) and masking method
(:data:`linkrisk.masking.METHODS`) declares its parameters as :class:`Param` objects: name,
type, default, allowed values and a one-line description. :func:`coerce_params` is the one
place where user values (Python objects, or strings from the command line) are checked
against a declaration: unknown names, wrong types and values outside ``choices`` raise
:class:`~linkrisk.errors.LinkriskError` with one line. The same declarations feed
``linkrisk methods`` and the parameter tables of ``docs/methods.md``
(``python scripts/gen_methods_doc.py``).

This module imports nothing from linkrisk but the error class, so both registries can use it
without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import LinkriskError

#: the types a parameter may declare; ``list`` is a list of column names, ``object`` a
#: value the method checks itself (a number or a label, a mapping, a matrix …)
PARAM_TYPES = (int, float, str, bool, list, object)

_TYPE_NAMES = {int: "integer", float: "number", str: "string", bool: "true/false",
               list: "column list", object: "value"}


@dataclass(frozen=True)
class Param:
    """One declared parameter of an attack or a masking method.

    Parameters
    ----------
    name : str
        The keyword name in the Python API (also ``--param name=value`` on the CLI).
    type : type
        ``int``, ``float``, ``str``, ``bool``, ``list`` (column names; a comma-separated
        string is split) or ``object`` (passed as is and checked by the method).
    default : Any
        The value used when the parameter is not given; ``None`` means "not set" (the
        method then applies the rule stated in ``help``).
    help : str
        One line for ``linkrisk methods`` and docs/methods.md.
    choices : tuple
        Allowed values of a ``str`` parameter (compared case-insensitively; ``None`` is
        always allowed when the default is ``None``).
    required : bool
        The method refuses to run without it (the method's own check raises).
    type_name : str
        How the type is shown, when the plain type name says too little (e.g.
        ``"number or 'owner'"``).
    """

    name: str
    type: type = object
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    required: bool = False
    type_name: str = ""

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise TypeError(f"parameter {self.name!r}: type must be one of {PARAM_TYPES}")

    @property
    def shown_type(self) -> str:
        """The type as shown to users (``type_name`` or the plain type's name)."""
        return self.type_name or _TYPE_NAMES[self.type]

    @property
    def shown_default(self) -> str:
        """The default as shown to users: ``required``, ``—`` (not set) or the value."""
        if self.required:
            return "required"
        if self.default is None:
            return "—"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, str):
            return repr(self.default)
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)


def as_params(decl: Iterable[Param] | Mapping[str, Any]) -> dict[str, Param]:
    """A declaration as an ordered ``{name: Param}``: from Params, from another such
    mapping, or from a legacy ``{name: type}`` mapping."""
    if isinstance(decl, Mapping):
        out = {}
        for k, v in decl.items():
            out[k] = v if isinstance(v, Param) else Param(k, v)
        return out
    out = {}
    for p in decl:
        if not isinstance(p, Param):
            raise TypeError(f"expected Param, got {p!r}")
        if p.name in out:
            raise TypeError(f"parameter {p.name!r} declared twice")
        out[p.name] = p
    return out


def _typename(t: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false",
            list: "a list of column names"}.get(t, "a value")


def coerce_param(owner: str, name: str, value: Any, typ: type) -> Any:
    """Coerce one value to its declared type (CLI values may arrive as strings).

    ``None`` and ``object`` parameters pass unchanged; a mapping given to a non-list
    parameter is coerced value by value (per-column values, e.g.
    ``threshold={"age": 80}``).

    Parameters
    ----------
    owner : str
        The attack or masking method, named in the error message.
    name : str
        The parameter's name.
    value : Any
        The caller's value.
    typ : type
        The declared type: ``int`` (whole numbers, also "3" or 3.0), ``float``, ``str``,
        ``bool`` (also "true"/"false"/"yes"/"no"/"1"/"0"), ``list`` (a comma-separated
        string is split) or ``object``.

    Returns
    -------
    Any
        The value as ``typ``.

    Raises
    ------
    LinkriskError
        When the value does not fit the type (one line naming ``owner`` and ``name``).
    """
    if value is None or typ is object:
        return value
    if isinstance(value, Mapping) and typ is not list:
        # per-column values, e.g. threshold={"age": 80, "income": 1e5}
        return {k: coerce_param(owner, f"{name}[{k!r}]", v, typ) for k, v in value.items()}
    bad = LinkriskError(f"{owner}: parameter {name} must be {_typename(typ)}, got {value!r}")
    if typ is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        raise bad
    if typ is int:
        if isinstance(value, (bool, np.bool_)):
            raise bad
        if isinstance(value, (int, np.integer)):
            return int(value)
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise bad from None
        if not np.isfinite(f) or f != int(f):
            raise bad
        return int(f)
    if typ is float:
        if isinstance(value, (bool, np.bool_)):
            raise bad
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise bad from None
        if np.isnan(f):
            raise bad
        return f
    if typ is str:
        if isinstance(value, str):
            return value
        raise bad
    if typ is list:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple, pd.Index, np.ndarray)):
            return list(value)
        raise bad
    return value


def _check_choice(owner: str, p: Param, value: Any) -> None:
    if not p.choices or value is None or isinstance(value, Mapping):
        return
    norm = str(value).strip().lower()
    if not any(norm == str(c).lower() for c in p.choices if c is not None):
        shown = ", ".join(str(c) for c in p.choices if c is not None)
        raise LinkriskError(f"{owner}: parameter {p.name} must be one of {shown}, "
                            f"got {value!r}")


def coerce_params(owner: str, declared: Mapping[str, Param], given: Mapping[str, Any],
                  *, fill_defaults: bool = True) -> dict[str, Any]:
    """Check ``given`` against ``declared`` and return the values to call with.

    Unknown names raise (listing the accepted ones); each value is coerced to its
    declared type and checked against ``choices``. With ``fill_defaults`` the declared
    defaults that are not ``None`` are added for the parameters not given.

    Parameters
    ----------
    owner : str
        The attack or masking method, named in error messages.
    declared : Mapping[str, Param]
        Its declaration (``spec.params``).
    given : Mapping[str, Any]
        The caller's values.
    fill_defaults : bool
        Add declared non-``None`` defaults for missing parameters.

    Returns
    -------
    dict
        name → coerced value, given parameters first.
    """
    unknown = [k for k in given if k not in declared]
    if unknown:
        raise LinkriskError(
            f"{owner}: unknown parameter {', '.join(map(repr, unknown))}; "
            f"{owner} accepts {', '.join(declared) or 'no parameters'}"
        )
    out: dict[str, Any] = {}
    for k, v in given.items():
        p = declared[k]
        val = coerce_param(owner, k, v, p.type)
        _check_choice(owner, p, val)
        out[k] = val
    if fill_defaults:
        for k, p in declared.items():
            if k not in out and p.default is not None:
                out[k] = p.default
    return out


def params_table(declared: Mapping[str, Param]) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) rows of a declaration, in declaration order;
    ``choices`` are appended to the description."""
    rows = []
    for p in declared.values():
        text = p.help
        if p.choices:
            opts = ", ".join(f"`{c}`" if c is not None else "`None`" for c in p.choices)
            text = f"{text}; one of {opts}" if text else f"One of {opts}"
        rows.append((p.name, p.shown_type, p.shown_default, text))
    return rows


__all__ = ["PARAM_TYPES", "Param", "as_params", "coerce_param", "coerce_params",
           "params_table"]
