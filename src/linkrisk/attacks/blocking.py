"""Blocking keys of a linkage (``LinkSettings.block``, docs/methods.md, "Blocking"): the
block of every record of both files, computed once for :func:`~linkrisk.attacks.make_context`.

The attacker knows the keys exactly: two records are in one block when every key has the
same category under the project's one rule, :func:`linkrisk.data.category_key` (``2``,
``2.0`` and ``"2"`` agree; text up to case and blanks). A record with a missing key is in
no block: it is compared with nothing and, when it has a true partner, counted as not
linkable. The engines then search within blocks (:mod:`linkrisk.engine.blocking`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..data import category_key
from ..engine.blocking import Blocks
from ..errors import LinkriskError


def check_keys(keys: Sequence[str], frames: Sequence[tuple[str, pd.DataFrame]],
               qi: Sequence[str] | None, ids: Sequence[str] | None) -> None:
    """Refuse keys missing from a file, or also named as QIs or ids, in one message."""
    for c in keys:
        for name, df in frames:
            if c not in df.columns:
                raise LinkriskError(f"blocking key {c!r} is not in the {name} file (block "
                                    "columns must be in both files)")
        for what, cols in (("QI", qi), ("id column", ids)):
            if cols is not None and c in cols:
                raise LinkriskError(f"{c!r} is both a blocking key and a {what}: records are "
                                    "compared only within blocks of equal keys, so a key is "
                                    "not also part of the distance or the truth")


def _key_codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """One column's category codes in both files (−1: missing), equal codes for equal
    :func:`category_key`."""
    codes, uniques = pd.factorize(pd.concat([a, b], ignore_index=True), use_na_sentinel=True)
    keys = [category_key(v) for v in uniques]
    key_code, _ = pd.factorize(pd.Index(keys, dtype=object))
    miss = np.array([k == category_key(None) for k in keys], bool)
    per_unique = np.where(miss, -1, key_code).astype(np.int64)
    out = np.where(codes >= 0, per_unique[np.maximum(codes, 0)] if per_unique.size else -1, -1)
    return out[:len(a)], out[len(a):]


def block_index(a_df: pd.DataFrame, b_df: pd.DataFrame, keys: Sequence[str],
                notes: list[str] | None = None) -> Blocks:
    """The :class:`~linkrisk.engine.blocking.Blocks` of the attacker's file ``a_df`` and the
    released file ``b_df`` on ``keys``; records with a missing key are named in ``notes``."""
    n_a = len(a_df)
    comb = np.zeros(n_a + len(b_df), np.int64)
    for c in keys:
        ca, cb = _key_codes(a_df[c], b_df[c])
        col = np.concatenate([ca, cb])
        joined = np.where((comb < 0) | (col < 0), -1, comb * (int(col.max()) + 1) + col)
        comb, _ = pd.factorize(joined)  # dense codes again, missing stays −1
        comb = np.where(joined < 0, -1, comb).astype(np.int64)
    blocks = Blocks(comb[:n_a], comb[n_a:], tuple(keys))
    miss_a, miss_b = int((blocks.a < 0).sum()), int((blocks.b < 0).sum())
    if (miss_a or miss_b) and notes is not None:
        notes.append(f"{miss_a:,} attacker and {miss_b:,} released records have a missing "
                     f"blocking key ({', '.join(keys)}): they are compared with nothing and "
                     "count as not linkable")
    return blocks
