"""Correct links of a one-to-one matching, averaged over the records it cannot tell apart.

A global attack (gdbrl, prl with ``one_to_one``) returns one optimal matching σ. When a
file holds identical records (coded or rounded data: Household, Adult, any file after
PRAM or recoding), every permutation of identical records maps σ to another matching of
the same cost, and which of them the solver returns is a seeded draw. The draw's count of
correct links moves with the seed (Household after PRAM: gdbrl 6.20–6.33 %, prl one-to-one
4.15–4.67 % over a few seeds), so a verdict would rest on it. We report its expectation
over those permutations instead, which no seed and no CPU moves.

Classes: P(a) = the attacker records with a's values on every QI (and a's block, when
the linkage is blocked), Q(b) likewise in the release. Identical values give identical
costs in every attack (per-file standardization, category tables and comparisons act on
values), so permuting records within a class keeps the cost. With f(P, Q) = #{a' ∈ P :
σ(a') ∈ Q}, a uniformly random member of P takes each of P's links and a uniformly random
member of Q is each one's partner, so for a with true partner t:

    P(σ'(a) = t) = f(P(a), Q(t)) / (|P(a)| · |Q(t)|),

and the expected correct links are the sum over a. With all classes single records this
is χ(σ(a) = t), the draw itself. A finer partition than "identical values" (e.g. when
two spellings are one category to the attack but two values here) only averages less; it
is never wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..grouping import row_groups
from .base import LinkContext


def record_classes(df: pd.DataFrame, cols: Sequence[str], block: np.ndarray | None = None
                   ) -> np.ndarray | None:
    """Class number per row: rows with equal values in ``cols`` (missing equals missing)
    and equal ``block`` codes (−1: a missing key) share one. None when every row is its
    own class (continuous files usually have a column whose values are all distinct: then
    the others are not read)."""
    n = df.shape[0]
    codes, size = [], []
    for c in cols:
        k, uniq = pd.factorize(df[c], use_na_sentinel=False)
        if len(uniq) == n:
            return None
        codes.append(k)
        size.append(len(uniq))
    if block is not None:
        codes.append(np.asarray(block, np.int64) + 1)
        size.append(int(codes[-1].max(initial=0)) + 1)
    if n == 0 or not codes:
        return None
    ids, g = row_groups(np.column_stack(codes).astype(np.int64), np.asarray(size))
    return None if g == n else ids


def expected_correct(link: np.ndarray, truth: np.ndarray, ca: np.ndarray, cb: np.ndarray
                     ) -> np.ndarray:
    """Per attacker record, the probability that a matching drawn uniformly from the
    permutations of σ = ``link`` (−1: a dummy) within the classes ``ca`` (attacker
    records) and ``cb`` (released records) links it to its true partner ``truth`` (−1:
    none, probability 0)."""
    size_a, size_b = np.bincount(ca), np.bincount(cb)
    kb = np.int64(size_b.shape[0])
    linked = link >= 0
    keys, flow = np.unique(ca[linked] * kb + cb[link[linked]], return_counts=True)
    p = np.zeros(link.shape[0])
    has = np.flatnonzero(truth >= 0)
    if has.size and keys.size:
        q = ca[has] * kb + cb[truth[has]]
        pos = np.minimum(np.searchsorted(keys, q), keys.size - 1)
        hit = keys[pos] == q
        r = has[hit]
        p[r] = flow[pos[hit]] / (size_a[ca[r]] * size_b[cb[truth[r]]])
    return p


def orbit_probabilities(ctx: LinkContext, link: np.ndarray, truth: np.ndarray
                        ) -> np.ndarray | None:
    """:func:`expected_correct` for the classes of identical records of ``ctx`` (its QIs,
    and its blocks when blocked); ``truth`` the true partners the attack scores against.
    None when every record of both files is its own class (the draw is then exact)."""
    blocks = ctx.blocks
    ca = record_classes(ctx.a_df, ctx.qi, None if blocks is None else blocks.a)
    cb = record_classes(ctx.b_df, ctx.qi, None if blocks is None else blocks.b)
    if ca is None and cb is None:  # every record its own class: the draw is exact
        return None
    return expected_correct(np.asarray(link, np.int64), np.asarray(truth, np.int64),
                            np.arange(ctx.n_a) if ca is None else ca,
                            np.arange(ctx.n_b) if cb is None else cb)
