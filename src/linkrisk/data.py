"""Preparing quasi-identifier (QI) matrices (files are read by :mod:`linkrisk.fileio`).

Conventions (notation of docs/methods.md): the attacker's file A holds original records, the released
file B masked ones. Unless id columns are given, row i of A is the true source of row i of
B. Attribute kinds are ``numeric``, ``ordinal`` (ordered categories) and ``nominal``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import LinkriskError

KINDS = ("numeric", "ordinal", "nominal")


def parse_columns(spec: str | Sequence[str] | None) -> list[str] | None:
    """Accept ``"a,b,c"`` or a list of names; ``None``/empty means "not given"."""
    if spec is None:
        return None
    if isinstance(spec, str):
        cols = [c.strip() for c in spec.split(",") if c.strip()]
    else:
        cols = [str(c) for c in spec]
    return cols or None


def select_qi(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    qi: str | Sequence[str] | None = None,
    ids: str | Sequence[str] | None = None,
) -> list[str]:
    """The QI columns: those named, or (default) every column common to both files except
    the id columns. Raises when a named column is missing from either file."""
    id_cols = parse_columns(ids) or []
    cols = parse_columns(qi)
    if cols is None:
        cols = [c for c in original.columns if c in set(masked.columns) and c not in id_cols]
        if not cols:
            raise LinkriskError(
                "the two files have no column in common; name the QI columns with --qi "
                "(files must use the same column names)"
            )
        return cols
    for name, df in (("original", original), ("masked", masked)):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise LinkriskError(
                f"QI column(s) {', '.join(map(repr, missing))} not in the {name} file "
                f"(it has: {', '.join(map(str, df.columns[:12]))}{' …' if df.shape[1] > 12 else ''})"
            )
    if len(set(cols)) != len(cols):
        raise LinkriskError("a QI column is named twice")
    return cols


def infer_kind(s: pd.Series) -> str:
    """``ordinal`` for ordered Categoricals, ``nominal`` for other non-numeric columns,
    ``numeric`` for numbers (booleans count as nominal)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "ordinal" if s.dtype.ordered else "nominal"
    if pd.api.types.is_bool_dtype(s):
        return "nominal"
    if pd.api.types.is_numeric_dtype(s):
        return "numeric"
    return "nominal"


def attribute_kinds(
    df: pd.DataFrame, cols: Sequence[str], kinds: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Kind of each column: inferred, overridden by ``kinds`` (``{"col": "ordinal"}``)."""
    kinds = dict(kinds or {})
    for c, k in kinds.items():
        if k not in KINDS:
            raise LinkriskError(f"unknown attribute kind {k!r} for {c!r}; use one of {', '.join(KINDS)}")
        if c not in cols:
            raise LinkriskError(f"kind given for {c!r}, which is not a QI column")
    return {c: kinds.get(c, infer_kind(df[c])) for c in cols}


def parse_kinds(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse ``"a=ordinal,b=nominal"`` (CLI form) or pass a mapping through."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return dict(spec)
    out = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise LinkriskError(f"--kinds expects col=kind pairs, got {part!r}")
        c, k = part.split("=", 1)
        out[c.strip()] = k.strip()
    return out


def numeric_matrix(df: pd.DataFrame, cols: Sequence[str], *, what: str = "file") -> np.ndarray:
    """The QI columns as a C-contiguous float64 matrix, refusing non-numeric values and NaN
    with a message naming the column and the first offending row."""
    if len(df) == 0:
        raise LinkriskError(f"the {what} has no rows")
    out = np.empty((len(df), len(cols)), dtype=np.float64)
    for j, c in enumerate(cols):
        s = df[c]
        if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
            conv = pd.to_numeric(s, errors="coerce")
            bad = conv.isna() & s.notna()
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise LinkriskError(
                    f"column {c!r} of the {what} is not numeric (row {i}: {s.iloc[i]!r}); "
                    "this attack needs numeric QIs: choose numeric columns with --qi"
                )
            s = conv
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(v).any():
            i = int(np.flatnonzero(np.isnan(v))[0])
            raise LinkriskError(
                f"column {c!r} of the {what} has missing values (first at row {i}); "
                "impute or drop them before linking"
            )
        if not np.isfinite(v).all():
            i = int(np.flatnonzero(~np.isfinite(v))[0])
            raise LinkriskError(f"column {c!r} of the {what} has an infinite value at row {i}")
        out[:, j] = v
    return out


def truth_from_ids(
    a: pd.DataFrame, b: pd.DataFrame, ids: str | Sequence[str] | None
) -> np.ndarray:
    """For each row of A, the row of B that is its true image (−1 when it has none).

    Without id columns truth is row order, which needs equal sizes."""
    id_cols = parse_columns(ids)
    if id_cols is None:
        if len(a) != len(b):
            raise LinkriskError(
                f"the files have {len(a)} and {len(b)} rows: without id columns truth is row "
                "order, which needs equal sizes; give the id column(s) with --ids"
            )
        return np.arange(len(a), dtype=np.int64)
    for name, df in (("original", a), ("masked", b)):
        missing = [c for c in id_cols if c not in df.columns]
        if missing:
            raise LinkriskError(f"id column(s) {missing} not in the {name} file")
    ka = pd.MultiIndex.from_frame(a[id_cols]) if len(id_cols) > 1 else pd.Index(a[id_cols[0]])
    kb = pd.MultiIndex.from_frame(b[id_cols]) if len(id_cols) > 1 else pd.Index(b[id_cols[0]])
    for name, k in (("original", ka), ("masked", kb)):
        if k.has_duplicates:
            raise LinkriskError(f"id values repeat in the {name} file; ids must identify records")
    return kb.get_indexer(ka).astype(np.int64)
