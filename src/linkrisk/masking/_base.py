"""Shared pieces of the masking methods: RNG, default columns and parameter checks. The
frame, column, kind and numeric-matrix checks are those of :mod:`linkrisk.data`, shared
with the attacks and the measures.

Every check raises :class:`~linkrisk.errors.LinkriskError` with one line saying what is
wrong and how to fix it, so the CLI can print it as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data import check_columns, infer_kind
from ..errors import LinkriskError
from ..params import Param, as_params, coerce_param  # noqa: F401  (coerce_param: re-export)

SeedLike = int | np.random.Generator | None


def as_rng(seed: SeedLike) -> np.random.Generator:
    """``np.random.default_rng(seed)``; a Generator is used as is (and advanced)."""
    if isinstance(seed, bool) or not (
        seed is None or isinstance(seed, (int, np.integer, np.random.Generator))
    ):
        raise LinkriskError(f"seed must be a non-negative integer or a numpy Generator, got {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (ValueError, TypeError) as exc:
        raise LinkriskError(f"invalid seed {seed!r}: use a non-negative integer") from exc


# ---------------------------------------------------------------- column kinds / checks

def default_columns(df: pd.DataFrame, rule: str, exclude: Sequence[str] = ()) -> list[str]:
    """Columns masked when the caller gives none.

    numeric: numeric columns; categorical: non-numeric ones; ordered: ordered Categoricals,
    else numeric columns; any: non-numeric columns, else numeric ones. ``exclude`` (e.g.
    confidential or strata columns) is never included.
    """
    kinds = {c: infer_kind(df[c]) for c in df.columns if c not in set(exclude)}
    num = [c for c, k in kinds.items() if k == "numeric"]
    cat = [c for c, k in kinds.items() if k != "numeric"]
    if rule == "numeric":
        return num
    if rule == "categorical":
        return cat
    if rule == "ordered":
        return [c for c, k in kinds.items() if k == "ordinal"] or num
    return cat or num


def frame_like(df: pd.DataFrame, columns: Sequence[str], values: np.ndarray,
               keep_dtype: bool = False) -> pd.DataFrame:
    """Masked values as a DataFrame with ``df``'s index. ``keep_dtype`` restores each input
    column's dtype (for methods that release original values, e.g. swapping)."""
    out = pd.DataFrame(values, index=df.index, columns=list(columns))
    if keep_dtype:
        for c in columns:
            out[c] = out[c].astype(df[c].dtype)
    return out


# ---------------------------------------------------------------- parameter checks

def require(method: str, name: str, value: Any, hint: str) -> None:
    if value is None:
        raise LinkriskError(f"{method} needs parameter {name} ({hint})")


def check_k(method: str, k: int, n: int) -> None:
    if k < 1 or k > n:
        raise LinkriskError(
            f"{method}: k={k} is out of range; the group size k must satisfy 1 <= k <= n = {n}"
        )


def confidential_columns(df: pd.DataFrame, confidential: Sequence[str] | None,
                         columns: Sequence[str], method: str) -> list[str]:
    """Validate the confidential (regressor) columns: given, present, numeric, disjoint."""
    if not confidential:
        raise LinkriskError(
            f"{method} needs confidential=[...]: the confidential attributes the masked QIs are "
            "regressed on (e.g. confidential=['v3','v4'])"
        )
    conf = check_columns(df, confidential, what="confidential")
    overlap = [c for c in conf if c in set(columns)]
    if overlap:
        raise LinkriskError(
            f"{method}: {overlap} listed both in columns and in confidential; a column is either "
            "masked (QI) or confidential, not both"
        )
    return conf
