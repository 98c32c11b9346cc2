"""Rank-swap-specific record linkage: ``rsrl`` and ``rsrl_union``
(docs/methods.md, ``rsrl``).

Rank swapping (Moore 1996) exchanges each value only with values whose rank in the
original column is at most ⌊p·n/100⌋ positions away. An attacker who holds the original
records and knows p (or an upper bound) can therefore discard every released record
whose value of some attribute lies outside that rank window (Nin, Herranz & Torra 2008,
"Rethinking rank swapping to decrease disclosure risk", DKE 64(1)):

    W_j(a) = { b : |rank_orig(b_j) − rank_orig(a_j)| ≤ ⌊p·n/100⌋ },  C(a) = ∩_j W_j(a).

If |C(a)| = 1 the link is *certain*; otherwise DBRL (squared Euclidean on per-file
standardized attributes) restricted to C(a) chooses; an empty intersection falls back to
plain DBRL. ``rsrl_union`` is the variant for p-distribution and p-bucket swapping, whose
swaps may leave the window: each released record counts how many W_j(a) contain it and
DBRL is restricted to the records of maximal count.

Ranks with duplicates: a value v occupies the original-rank positions
[#{x < v}, #{x ≤ v} − 1] of its column (a value absent from the original column sits
between two positions); two values are within the window when these position ranges are
at most ⌊p·n/100⌋ apart. This never excludes the true image of a record under standard
rank swapping, whatever positions the swap gave tied values.

Both windows are intervals of released values, so C(a) is found from per-attribute sorted
orders without ever forming the n×n score matrix; the work per record is the size of its
smallest window (``rsrl``) or the sum of its windows (``rsrl_union``).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..engine.nearest import RTOL, NearestSets
from ..engine.nearest.kernels import pair_score
from ..engine.nearest.rules import settle
from ..errors import LinkriskError
from ..params import Param
from .base import LinkContext, Outcome, register
from .distance import space


def rank_positions(values: np.ndarray, original: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each value, the range [lo, hi] of positions it occupies in the sorted
    ``original`` column (a value not in the column gets the two positions around it)."""
    s = np.sort(original)
    lo = np.searchsorted(s, values, side="left")
    hi = np.searchsorted(s, values, side="right") - 1
    absent = hi < lo
    lo = np.where(absent, lo - 1, lo)
    n = s.shape[0]
    return np.clip(lo, 0, n - 1).astype(np.int64), np.clip(hi, 0, n - 1).astype(np.int64)


def windows(a_pos: tuple[np.ndarray, np.ndarray], b_pos: tuple[np.ndarray, np.ndarray],
            w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per attribute: the order of B by value, each B record's place in that order, and for
    every A record the half-open range [start, end) of that order that is W_j(a).

    b ∈ W_j(a) ⇔ lo_b ≤ hi_a + w and hi_b ≥ lo_a − w; lo_b and hi_b both grow with b's
    value, so the set is contiguous in the sorted order."""
    (alo, ahi), (blo, bhi) = a_pos, b_pos
    n_a, m = alo.shape
    n_b = blo.shape[0]
    order = np.empty((m, n_b), np.int64)
    place = np.empty((m, n_b), np.int64)
    start = np.empty((m, n_a), np.int64)
    end = np.empty((m, n_a), np.int64)
    for j in range(m):
        o = np.lexsort((bhi[:, j], blo[:, j]))
        order[j] = o
        place[j, o] = np.arange(n_b)
        start[j] = np.searchsorted(bhi[o, j], alo[:, j] - w, side="left")
        end[j] = np.searchsorted(blo[o, j], ahi[:, j] + w, side="right")
    return order, place, start, end


@nb.njit(cache=True)
def _restricted_dbrl(a, b, order, place, start, end, truth, rid, union, rtol, seed,
                     blocked, block_a, block_b, out_min, out_count, out_true, out_ts, out_link,
                     out_size):
    """For each A row: the restricted set (intersection, or maximal-count records for the
    union variant) among the records of its block (``block_a[i] == block_b[b]``, tested
    only when ``blocked``: unblocked, the window scan does no extra gather), then the DBRL candidate set inside it with the common tie rule.
    ``out_size`` = size of the restricted set (0: empty, caller falls back to DBRL)."""
    n_a, m = a.shape
    n_b = b.shape[0]
    tflat, toff, tsize = np.zeros(1), np.zeros(m, np.int64), np.zeros(m, np.int64)
    buf = np.empty(n_b, np.int64)
    score = np.empty(n_b)
    cnt = np.zeros(n_b, np.int32)
    for i in range(n_a):
        size = 0
        ba = block_a[i]
        if union:
            top = 0
            for j in range(m):
                for k in range(start[j, i], end[j, i]):
                    bi = order[j, k]
                    if blocked and block_b[bi] != ba:
                        continue
                    if cnt[bi] == 0:
                        buf[size] = bi
                        size += 1
                    cnt[bi] += 1
                    if cnt[bi] > top:
                        top = cnt[bi]
            keep = 0
            for t in range(size):
                bi = buf[t]
                if cnt[bi] == top:
                    buf[keep] = bi
                    keep += 1
                cnt[bi] = 0
            size = keep
        else:
            js = 0
            for j in range(1, m):
                if end[j, i] - start[j, i] < end[js, i] - start[js, i]:
                    js = j
            for k in range(start[js, i], end[js, i]):
                bi = order[js, k]
                ok = not blocked or block_b[bi] == ba
                for j in range(m):
                    if ok and j != js:
                        p = place[j, bi]
                        if p < start[j, i] or p >= end[j, i]:
                            ok = False
                            break
                if ok:
                    buf[size] = bi
                    size += 1
        out_size[i] = size
        if size == 0:
            continue
        # the candidates in file order, scored and settled by the engine's rules
        cand = np.sort(buf[:size])
        for t in range(size):
            score[t] = pair_score(a[i], b[cand[t]], 0, 2, 0.0, 0.0, tflat, toff, tsize)
        out_min[i], out_count[i], out_true[i], out_link[i] = settle(
            cand, score, size, truth[i], rtol, seed, rid[i])
        tr = truth[i]
        out_ts[i] = (pair_score(a[i], b[tr], 0, 2, 0.0, 0.0, tflat, toff, tsize)
                     if tr >= 0 else np.inf)


def _rank_swap_attack(ctx: LinkContext, p: float, union: bool) -> Outcome:
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise LinkriskError(f"p must be a number in (0, 100], got {p!r}") from None
    if not 0 < p <= 100:
        raise LinkriskError(f"p is a percentage of the records and must be in (0, 100], got {p}")
    a_raw, b_raw = ctx.numeric()
    forward = ctx.direction == "original->masked"
    orig = a_raw if forward else b_raw
    n = orig.shape[0]
    w = int(math.floor(p * n / 100.0))
    m = orig.shape[1]

    def positions(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.empty(x.shape, np.int64)
        hi = np.empty(x.shape, np.int64)
        for j in range(m):
            lo[:, j], hi[:, j] = rank_positions(x[:, j], orig[:, j])
        return lo, hi

    order, place, start, end = windows(positions(a_raw), positions(b_raw), w)
    sp = space(ctx, "sqeuclidean")
    n_a = ctx.n_a
    out_min = np.full(n_a, np.inf)
    out_count = np.zeros(n_a, np.int64)
    out_true = np.zeros(n_a, np.bool_)
    out_ts = np.full(n_a, np.inf)
    out_link = np.full(n_a, -1, np.int64)
    size = np.zeros(n_a, np.int64)
    truth = np.ascontiguousarray(ctx.truth, np.int64)
    rid = np.arange(n_a, dtype=np.int64)
    blk = ctx.blocks
    if blk is not None:  # a true partner in another block is not linkable
        truth = np.where(blk.linkable(truth), truth, -1)
    block_a = np.zeros(n_a, np.int64) if blk is None else blk.a
    # a missing key (−1) matches nothing, not another missing key
    block_b = np.zeros(ctx.n_b, np.int64) if blk is None else np.where(blk.b < 0, -2, blk.b)
    _restricted_dbrl(sp.a, sp.b, order, place, start, end, truth, rid, union, RTOL, ctx.seed,
                     blk is not None, block_a, block_b, out_min, out_count, out_true, out_ts,
                     out_link, size)
    empty = np.flatnonzero(size == 0)
    if empty.size:  # no released record in every window: plain DBRL for those records
        sub = ctx.nearest(sp.a[empty], sp.b, sp.metric, rows=empty).sets
        out_min[empty], out_count[empty], out_link[empty] = sub.min_score, sub.count, sub.link
        out_true[empty], out_ts[empty] = sub.true_in_set, sub.true_score
    if ctx.progress is not None:
        ctx.progress(n_a, n_a)
    certain = size == 1
    extra = {"p": p, "window": w, "certain_links": int(certain.sum()),
             "certain_correct": int((certain & out_true).sum()),
             "fallback_dbrl": int(empty.size),
             "mean_restricted_size": float(size[size > 0].mean()) if (size > 0).any() else 0.0}
    return Outcome(NearestSets(out_min, out_count, out_true, out_ts, out_link), extra)


_P = Param("p", float, 5.0, help="the swapping parameter p (% of n) or an upper bound of it: "
                                "windows of ±⌊p·n/100⌋ original ranks")


@register("rsrl", "rank-swap-specific RL: DBRL inside the intersection of the rank windows",
          params=(_P,))
def rsrl(ctx: LinkContext, p: float = 5.0) -> Outcome:
    """RSRL (Nin, Herranz & Torra 2008): C(a) = ∩_j W_j(a) with W_j(a) the released records
    whose attribute j has original rank within ±⌊p·n/100⌋ of a_j's; |C(a)| = 1 is a
    certain link, otherwise DBRL restricted to C(a) (empty C(a): plain DBRL). ``p``: the
    swapping parameter (or an upper bound of it) in percent. ``extra``: ``certain_links``,
    ``certain_correct``, ``fallback_dbrl``, ``window``."""
    return _rank_swap_attack(ctx, p, union=False)


@register("rsrl_union", "rank-swap RL for p-distribution/p-bucket swapping: "
          "DBRL among records in the most rank windows", params=(_P,))
def rsrl_union(ctx: LinkContext, p: float = 5.0) -> Outcome:
    """RSRL for p-distribution and p-bucket rank swapping (Nin, Herranz & Torra 2008): each
    released record b counts #{j : b ∈ W_j(a)}; DBRL is restricted to the records of
    maximal count. Same ``p`` and ``extra`` as :func:`rsrl` (a certain link is a single
    record of maximal count)."""
    return _rank_swap_attack(ctx, p, union=True)
