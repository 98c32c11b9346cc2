"""prl within blocks (docs/methods.md, "Blocking"), as record-linkage tools block
(recordlinkage's ``Index.block``, Splink's blocking rules): the candidate pairs are the
pairs of records in the same block (:class:`~linkrisk.engine.blocking.Blocks`).

* **Counts.** EM fits the agreement patterns of the same-block pairs only: their number
  per pattern, exact. With codes, the block is one more attribute that the walk of
  :mod:`.counts` compares first (bit 0), and the pairs agreeing on it are kept; with
  tolerances (or when the walk would cost more) the pairs of each block are compared
  (:func:`window_counts_kernel`, numpy on few pairs); with missing values the block
  attribute goes through :func:`~.counts.missing_pattern_counts` the same way.
* **Known match proportion.** Each block's smaller side has its sources in the other:
  p = Σ_k min(n_k, n'_k) / Σ_k n_k·n'_k (min(n, n')/(n·n') with one block).
* **Candidate sets.** Each record of A is linked among its block's records: the subset
  walk per block (:func:`~.candidates.group_sets`, its draws seeded by the row ids of the
  whole file), the engine's blocked search (:meth:`LinkContext.nearest`), the pair kernel
  over the block's records in file order (:func:`window_best_kernel`, the engine's tie
  rule) or one assignment per block (``one_to_one``). ``path="auto"`` chooses per block
  as the unblocked attack chooses on the whole files, so that one block holding every
  record gives the unblocked attack bit for bit.

Records with a missing key, or in a block without records on the other side, are compared
with nothing (count 0, link −1); a true partner in another block counts as none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba as nb
import numpy as np

from ...engine.blocking import Blocks, empty_sets, local_truth, place_block
from ...engine.nearest import RTOL, NearestSets
from ...engine.nearest.rules import settle, tie_threshold_np
from ...errors import LinkriskError
from ..base import LinkContext
from .candidates import engine_sets, group_sets, missing_sets
from .classification import assign
from .comparison import Comparison, missing_score, pair_pattern
from .counts import (
    NUMPY_MAX_PAIRS,
    compiled_walk_cost,
    missing_pattern_counts,
    pattern_counts,
)

_NONE = np.zeros(0)


@dataclass(frozen=True)
class Layout:
    """The blocks of a linkage as prl uses them: ``groups`` (A rows, B rows) per block
    with records on both sides; ``ib`` their B rows one block after the other, A row i's
    block being ``ib[start[i]:end[i]]`` (empty when it has none); ``truth`` with the
    partners in another block removed."""

    blocks: Blocks
    groups: list[tuple[np.ndarray, np.ndarray]]
    ib: np.ndarray
    start: np.ndarray
    end: np.ndarray
    truth: np.ndarray

    @property
    def pairs(self) -> int:
        """Number of same-block pairs."""
        return int(sum(ia.size * ib.size for ia, ib in self.groups))

    @property
    def known(self) -> float:
        """The known match proportion: Σ_k min(n_k, n'_k) / Σ_k n_k·n'_k."""
        return sum(min(ia.size, ib.size) for ia, ib in self.groups) / self.pairs


def layout(ctx: LinkContext) -> Layout:
    """:class:`Layout` of the context's blocks; refuses blocks that pair nothing."""
    blocks = ctx.blocks
    assert blocks is not None
    groups = blocks.groups()
    if not groups:
        raise LinkriskError("prl with blocking: no block has records of both files, so no "
                            "pair is compared; check the blocking keys (--block)")
    start, end = np.zeros(ctx.n_a, np.int64), np.zeros(ctx.n_a, np.int64)
    at = 0
    for ia, ib in groups:
        start[ia], end[ia] = at, at + ib.size
        at += ib.size
    ib = np.concatenate([g[1] for g in groups]).astype(np.int64)
    truth = np.where(blocks.linkable(ctx.truth), ctx.truth, -1)
    return Layout(blocks, groups, ib, start, end, truth)


def with_block(cmp: Comparison, lay: Layout) -> Comparison:
    """The records with a key, compared on the block first (bit 0: same block) and then on
    the attributes (bits 1…m)."""
    ra, rb = np.flatnonzero(lay.blocks.a >= 0), np.flatnonzero(lay.blocks.b >= 0)
    n_blocks = int(max(lay.blocks.a.max(initial=-1), lay.blocks.b.max(initial=-1))) + 1
    a = np.column_stack([lay.blocks.a[ra].astype(np.float64), cmp.a[ra]])
    b = np.column_stack([lay.blocks.b[rb].astype(np.float64), cmp.b[rb]])
    return Comparison(a, b, np.concatenate([[-1.0], cmp.tol]),
                      np.concatenate([[n_blocks], cmp.size]).astype(np.int64),
                      ["same block", *cmp.rule])


def _block_pairs(lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Every same-block pair as (A row, B row) arrays."""
    length = lay.end - lay.start
    rows = np.repeat(np.arange(length.size), length)
    first = np.cumsum(length) - length
    at = np.arange(rows.size) - np.repeat(first, length) + np.repeat(lay.start, length)
    return rows, lay.ib[at]


@nb.njit(parallel=True, cache=True)
def window_counts_kernel(a, b, ib, start, end, tol, n_pat, n_chunks):
    """Pattern counts of the pairs (i, ib[t]) for t in [start[i], end[i]): A's rows in
    ``n_chunks`` parallel chunks, each with its own histogram, summed."""
    n_a = a.shape[0]
    hist = np.zeros((n_chunks, n_pat), np.int64)
    step = (n_a + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        for i in range(c * step, min(n_a, (c + 1) * step)):
            for t in range(start[i], end[i]):
                hist[c, pair_pattern(a, b, i, ib[t], tol)] += 1
    return hist.sum(axis=0)


def blocked_counts(cmp: Comparison, lay: Layout) -> np.ndarray:
    """Number of same-block pairs showing each agreement pattern (int64, 2^m), exact."""
    m = cmp.a.shape[1]
    cb = with_block(cmp, lay)
    if cmp.coded and compiled_walk_cost(cb) <= float(lay.pairs) * m:
        return pattern_counts(cb)[1::2]
    if lay.pairs <= NUMPY_MAX_PAIRS:
        ia, ib = _block_pairs(lay)
        tol = np.where(cmp.tol > 0, cmp.tol, 0.0)
        agree = np.abs(cmp.a[ia] - cmp.b[ib]) <= tol
        return np.bincount((agree.astype(np.int64) << np.arange(m)).sum(axis=1),
                           minlength=1 << m).astype(np.int64)
    return window_counts_kernel(cmp.a, cmp.b, lay.ib, lay.start, lay.end, cmp.tol, 1 << m,
                                max(1, nb.get_num_threads() * 4))


def blocked_missing_counts(cmp: Comparison, lay: Layout
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.counts.missing_pattern_counts` of the same-block pairs: (observed, agree,
    counts), sorted by observed, then agree."""
    obs, agree, counts = missing_pattern_counts(with_block(cmp, lay))
    same = (agree & 1) == 1
    return obs[same] >> 1, agree[same] >> 1, counts[same]


@nb.njit(parallel=True, cache=True)
def window_best_kernel(a, b, ib, start, end, rows, tol, score, va, vd, truth, seed, rtol,
                       out_min, out_count, out_true, out_link):
    """:func:`~.candidates.pair_best_kernel` with the candidates of A row ``rows[p]`` its
    block's B rows ``ib[start:end]`` (file order); ``truth``: rows of B."""
    per_pair = va.size > 0
    for p in nb.prange(rows.size):
        i = rows[p]
        size = end[i] - start[i]
        cand = ib[start[i]:end[i]]
        sc = np.empty(size)
        for t in range(size):
            if per_pair:
                sc[t] = missing_score(a, b, i, cand[t], tol, va, vd)
            else:
                sc[t] = score[pair_pattern(a, b, i, cand[t], tol)]
        mn, cnt, _, link = settle(cand, sc, size, -1, rtol, seed, i)
        out_min[p], out_count[p], out_link[p] = mn, cnt, link
        k = truth[i]
        out_true[p] = np.inf
        if k >= 0:
            out_true[p] = (missing_score(a, b, i, k, tol, va, vd) if per_pair
                           else score[pair_pattern(a, b, i, k, tol)])


def _window_sets(ctx: LinkContext, cmp: Comparison, lay: Layout, rows: np.ndarray,
                 score: np.ndarray, va: np.ndarray, vd: np.ndarray, out: NearestSets) -> None:
    """The pair kernel over the blocks of A's ``rows``; results written into ``out``."""
    n = rows.size
    mn, ts = np.empty(n), np.empty(n)
    cnt, link = np.empty(n, np.int64), np.empty(n, np.int64)
    window_best_kernel(cmp.a, cmp.b, lay.ib, lay.start, lay.end, rows, cmp.tol, score, va,
                       vd, lay.truth, ctx.seed, RTOL, mn, cnt, ts, link)
    thr = tie_threshold_np(mn, RTOL)
    out.min_score[rows], out.count[rows], out.link[rows] = mn, cnt, link
    out.true_score[rows] = ts
    out.true_in_set[rows] = (lay.truth[rows] >= 0) & (ts <= thr)


def _rows_with(lay: Layout, per_block: list[str], name: str) -> np.ndarray:
    """The A rows (ascending) of the blocks whose candidates ``name`` finds."""
    return np.sort(np.concatenate([ia for (ia, _), p in zip(lay.groups, per_block, strict=True)
                                   if p == name]))


def _copy(out: NearestSets, res: NearestSets, rows: np.ndarray) -> None:
    """The engine's result for A's ``rows`` written into ``out``."""
    out.min_score[rows], out.count[rows], out.link[rows] = res.min_score, res.count, res.link
    out.true_score[rows], out.true_in_set[rows] = res.true_score, res.true_in_set


def blocked_sets(ctx: LinkContext, cmp: Comparison, lay: Layout, wa: np.ndarray,
                 wd: np.ndarray, score: np.ndarray, path: str,
                 choose: Callable[[tuple[int, int]], str]) -> tuple[NearestSets, str]:
    """The maximal-weight candidate sets within blocks (files without missing values), and
    how they were found: ``path`` as :func:`~.linkage.run_prl`'s, ``auto`` taking
    ``choose((n_k, n'_k))`` for each block."""
    out = empty_sets(ctx.n_a)
    every = np.arange(cmp.a.shape[1])
    keep = np.flatnonzero(wa != wd)
    per_block = [path if path != "auto" else choose((ia.size, ib.size))
                 for ia, ib in lay.groups]
    used = sorted(set(per_block))
    unknown = [p for p in used if p not in ("groups", "engine", "pairs")]
    if unknown:
        raise LinkriskError(f"unknown path {unknown[0]!r}")
    for (ia, ib), p in zip(lay.groups, per_block, strict=True):
        if p == "groups":
            res = group_sets(cmp.sub(ia, ib, every), score, local_truth(lay.truth[ia], ib),
                             ctx.seed, keep=keep, rows=ia)
            place_block(out, res, ia, ib)
    if "engine" in used:
        rows = _rows_with(lay, per_block, "engine")
        _copy(out, engine_sets(ctx, cmp, wa, wd, rows=rows), rows)
    if "pairs" in used:
        _window_sets(ctx, cmp, lay, _rows_with(lay, per_block, "pairs"), score, _NONE, _NONE,
                     out)
    return out, "+".join(used)


def blocked_missing_sets(ctx: LinkContext, cmp: Comparison, lay: Layout, wa: np.ndarray,
                         wd: np.ndarray, path: str) -> NearestSets:
    """:func:`~.candidates.missing_sets` within blocks: the engine's blocked search
    (``engine``) or the pair kernel over each block (``pairs``)."""
    if path == "engine":
        return missing_sets(ctx, cmp, wa, wd, "engine")
    if path != "pairs":
        raise LinkriskError(f"path {path!r} does not take missing values; use 'engine' or "
                            "'pairs'")
    out = empty_sets(ctx.n_a)
    rows = np.sort(np.concatenate([ia for ia, _ in lay.groups]))
    _window_sets(ctx, cmp, lay, rows, _NONE, -wa, -wd, out)
    return out


def blocked_assignment(ctx: LinkContext, cmp: Comparison, lay: Layout, score: np.ndarray | None,
                       grid: np.ndarray | None = None,
                       weights: tuple[np.ndarray, np.ndarray] | None = None) -> NearestSets:
    """``one_to_one``: one assignment per block (:func:`~.classification.assign` on the
    block's records, seeded by the attack's seed); the surplus records of a block are not
    linked."""
    out = empty_sets(ctx.n_a)
    every = np.arange(cmp.a.shape[1])
    for ia, ib in lay.groups:
        res = assign(cmp.sub(ia, ib, every), local_truth(lay.truth[ia], ib), ctx.seed,
                     ctx.memory_budget, score, grid, weights)
        place_block(out, res, ia, ib)
    return out
