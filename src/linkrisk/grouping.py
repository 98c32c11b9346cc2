"""Grouping records into value patterns (shared by the attacks and the measures).

``relabel`` turns integer keys into dense group numbers; ``subset_walk`` visits every
subset S of the attributes with the rows numbered by their value combination on S, each
subset's grouping refining its parent's by one attribute (``prl``'s pattern counts and
SUDA2's minimal sample uniques are both built on it); ``row_groups`` numbers whole rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd


def relabel(key: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Dense group numbers 0..g−1 for integer keys in [0, bound)."""
    if key.size == 0:
        return key.astype(np.int64), 0
    if bound <= 4 * key.size + 1024:
        present = np.zeros(bound, bool)
        present[key] = True
        remap = np.cumsum(present) - 1
        return remap[key], int(remap[-1]) + 1
    ids, uniq = pd.factorize(key)
    return ids.astype(np.int64), len(uniq)


def row_groups(codes: np.ndarray, size: np.ndarray,
               cols: list[int] | None = None) -> tuple[np.ndarray, int]:
    """(ids, g): rows of the integer matrix ``codes`` (column j in [0, size[j])) numbered
    0..g−1 by their value combination on ``cols`` (default all columns)."""
    n = codes.shape[0]
    ids, g = np.zeros(n, np.int64), 1
    for j in (range(codes.shape[1]) if cols is None else cols):
        ids, g = relabel(ids * int(size[j]) + codes[:, j], g * int(size[j]))
    return ids, g


def subset_walk(codes: np.ndarray, size: np.ndarray,
                visit: Callable[[int, np.ndarray, int], None],
                max_size: int | None = None) -> None:
    """Call ``visit(S, ids, g)`` for every subset S ⊆ {0..m−1} (bitmask) of at most
    ``max_size`` attributes (default all), where ``ids`` numbers the rows of ``codes`` by
    their value combination on S (0..g−1). Depth-first: each subset's grouping refines its
    parent's by one attribute."""
    m = codes.shape[1]
    limit = m if max_size is None else max_size

    def rec(s: int, ids: np.ndarray, g: int, last: int, depth: int) -> None:
        visit(s, ids, g)
        if depth >= limit:
            return
        for j in range(last + 1, m):
            child, gc = relabel(ids * int(size[j]) + codes[:, j], g * int(size[j]))
            rec(s | (1 << j), child, gc, j, depth + 1)

    rec(0, np.zeros(codes.shape[0], np.int64), 1, -1, 0)
