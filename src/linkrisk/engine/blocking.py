"""Blocking (docs/methods.md, "Blocking"): records are compared only with the records of
the other file that agree exactly on the blocking keys.

Both files carry a block code per record (:class:`Blocks`; −1: a missing key, compared
with nothing). The engines run per block on the whole files' transformed matrices
(standardization, ranks, covariances stay those of the unblocked attack; only the
candidate sets shrink):

* nearest sets (:func:`blocked_nearest_sets`): the blocks with at most ``cap`` released
  records (the kernels' tie buffer, so that no buffer can overflow and the link is the
  plain :func:`~linkrisk.engine.nearest.rules.pick` among the tied records) are scored
  together in one compiled pass (:func:`_window_sets`: every A record against the window
  of its block in B sorted by block, with the engine's pair arithmetic and tie rule), so
  that many small blocks do not cost one Python call each; larger blocks go through
  :func:`~linkrisk.engine.nearest.nearest_sets` (all its paths), one call per block, or
  through a caller's ``run`` (the Dask backend distributes them);
* global matching (:func:`blocked_matching`): one min-cost matching per block
  (rectangular when the block's sizes differ: the surplus records are not linked),
  AGDBRL's row limits sliced per block; :func:`assembled_matching` puts the blocks'
  matchings together (also those of gdbrl's dense missing-value costs).

A record's tie-breaking link is seeded by its row id in the whole file, and the candidates
of a block are in file order, so a block's result is the unblocked engine's on that block
alone, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np

from .matching.solver import Matching, min_cost_matching
from .nearest import NearestSets, Pairwise, nearest_sets
from .nearest.kernels import pair_score
from .nearest.missing import Build, nearest_sets_missing
from .nearest.rules import RTOL, Progress, settle

#: a block's sub-problem: (A rows, B rows, truth within the block, row ids)
Problem = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Blocks:
    """The block of every record: ``a[i]`` of the attacker's row i, ``b[j]`` of the
    released row j (int64 codes shared by both files; −1: a key is missing, the record is
    compared with nothing). ``keys``: the blocking columns."""

    a: np.ndarray
    b: np.ndarray
    keys: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Number of blocks with records on both sides."""
        return int(np.intersect1d(self.a[self.a >= 0], self.b[self.b >= 0]).size)

    def linkable(self, truth: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Whether each attacker record (``rows``, default all) has its true partner in its
        own block: False for no partner, a partner in another block or a missing key."""
        ca = self.a if rows is None else self.a[rows]
        t = np.asarray(truth, np.int64)
        return (t >= 0) & (ca >= 0) & (self.b[np.where(t >= 0, t, 0)] == ca)

    def groups(self, rows: np.ndarray | None = None
               ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per block with records on both sides, in code order: (positions in ``rows``,
        released rows), both ascending (file order)."""
        ca = self.a if rows is None else self.a[rows]
        sa, sb = _split(ca), _split(self.b)
        return [(sa[c], sb[c]) for c in sorted(sa.keys() & sb.keys())]


def _split(codes: np.ndarray) -> dict[int, np.ndarray]:
    """code → the positions having it (ascending), for codes ≥ 0."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    first = np.searchsorted(sc, 0)
    u, start = np.unique(sc[first:], return_index=True)
    bounds = np.append(start, sc.size - first) + first
    return {int(c): order[bounds[i]:bounds[i + 1]] for i, c in enumerate(u)}


def local_truth(truth: np.ndarray, b_rows: np.ndarray) -> np.ndarray:
    """``truth`` (rows of the whole released file) as positions in ``b_rows`` (ascending);
    −1 where the partner is not among them."""
    t = np.asarray(truth, np.int64)
    pos = np.searchsorted(b_rows, t)
    ok = (t >= 0) & (pos < b_rows.size)
    ok[ok] = b_rows[pos[ok]] == t[ok]
    return np.where(ok, pos, -1)


@nb.njit(cache=True, parallel=True)
def _window_sets(x, y, ia, ib, start, end, truth, rid, code, degree, kxx, kyy, tflat, toff,
                 tsize, rtol, seed, out_min, out_count, out_true, out_link):
    """Row ``x[ia[p]]`` against the released rows ``y[ib[start[p]:end[p]]]`` (file order):
    scores with the engine's pair arithmetic, settled with its tie rule."""
    for p in nb.prange(ia.shape[0]):
        i = ia[p]
        size = end[p] - start[p]
        cand = ib[start[p]:end[p]]
        score = np.empty(size)
        for t in range(size):
            score[t] = pair_score(x[i], y[cand[t]], code, degree, kxx[i], kyy[cand[t]],
                                  tflat, toff, tsize)
        out_min[p], out_count[p], out_true[p], out_link[p] = settle(
            cand, score, size, truth[p], rtol, seed, rid[p])


def empty_sets(n: int) -> NearestSets:
    """The sets of ``n`` rows compared with nothing (count 0, link −1, scores ∞), to be
    filled block by block."""
    return NearestSets(np.full(n, np.inf), np.zeros(n, np.int64), np.zeros(n, bool),
                       np.full(n, np.inf), np.full(n, -1, np.int64))


def _small_blocks(pw: Pairwise, small: Sequence[tuple[np.ndarray, np.ndarray]],
                  truth: np.ndarray, rid: np.ndarray, seed: int, out: NearestSets) -> None:
    """Every small block in one compiled pass; results written into ``out``."""
    ia = np.concatenate([g[0] for g in small])
    ib = np.concatenate([g[1] for g in small])
    b_start = np.cumsum([0] + [g[1].size for g in small])[:-1]
    reps = [g[0].size for g in small]
    start = np.repeat(b_start, reps).astype(np.int64)
    end = start + np.repeat([g[1].size for g in small], reps).astype(np.int64)
    n = ia.size
    mn, cnt = np.empty(n), np.empty(n, np.int64)
    hit, lnk = np.empty(n, np.bool_), np.empty(n, np.int64)
    tr = truth[ia]
    _window_sets(pw.x, pw.y, ia, ib, start, end, tr, rid[ia], pw.code, pw.degree, pw.kxx,
                 pw.kyy, *pw.tabs, RTOL, seed, mn, cnt, hit, lnk)
    out.min_score[ia], out.count[ia], out.true_in_set[ia], out.link[ia] = mn, cnt, hit, lnk
    has = tr >= 0
    out.true_score[ia[has]] = pw.pair_scores(ia[has], tr[has])


class _Problems(Sequence):
    """The large blocks' sub-problems, each made when it is read (not all copies at once)."""

    def __init__(self, pw: Pairwise, groups: list[tuple[np.ndarray, np.ndarray]],
                 truth: np.ndarray, rid: np.ndarray) -> None:
        self.pw, self.groups, self.truth, self.rid = pw, groups, truth, rid

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, i: int) -> Problem:  # type: ignore[override]
        ia, ib = self.groups[i]
        return (self.pw.x[ia], self.pw.y[ib], local_truth(self.truth[ia], ib), self.rid[ia])


def blocked_nearest_sets(
    a: np.ndarray,
    b: np.ndarray,
    blocks: Blocks,
    *,
    metric: str = "sqeuclidean",
    truth: np.ndarray | None = None,
    row_ids: np.ndarray | None = None,
    degree: int = 2,
    tables: Any = None,
    seed: int = 0,
    progress: Progress | None = None,
    cap: int = 32,
    run: Callable[[Sequence[Problem]], list[NearestSets]] | None = None,
    **kw: Any,
) -> NearestSets:
    """:func:`~linkrisk.engine.nearest.nearest_sets` with the candidates of every row of
    ``a`` restricted to the rows of ``b`` in its block. ``row_ids`` (default 0..n_a−1): the
    rows of the whole attacker file that ``a`` holds (their blocks and tie-breaking seeds);
    ``truth``: rows of ``b``, a partner in another block counts as none. A row whose block
    has no released record has no candidate (count 0, link −1). ``run(problems)``: solves
    the large blocks' sub-problems (default: :func:`nearest_sets` one after the other with
    ``kw``); the small ones are scored together (:func:`_window_sets`)."""
    n_a = a.shape[0]
    rid = (np.arange(n_a, dtype=np.int64) if row_ids is None
           else np.ascontiguousarray(row_ids, dtype=np.int64))
    t = np.full(n_a, -1, np.int64) if truth is None else np.asarray(truth, np.int64)
    truth = np.where(blocks.linkable(t, rid), t, -1)
    pw = Pairwise.build(a, b, metric, degree=degree, tables=tables, transpose=False)
    out = empty_sets(n_a)
    groups = blocks.groups(rid)
    small = [g for g in groups if g[1].size <= cap]
    large = [g for g in groups if g[1].size > cap]
    if small:
        _small_blocks(pw, small, truth, rid, seed, out)
    done = sum(g[0].size for g in small)
    if progress is not None and small:
        progress(done, n_a)
    problems = _Problems(pw, large, truth, rid)
    sub_kw = dict(kw, degree=degree, tables=tables, seed=seed, cap=cap)
    if run is None:
        def run(ps: Sequence[Problem]) -> list[NearestSets]:
            res = []
            for x, y, tr, ids in ps:
                res.append(nearest_sets(x, y, metric=metric, truth=tr, row_ids=ids, **sub_kw))
                if progress is not None:
                    progress(done + sum(r.count.size for r in res), n_a)
            return res
    for (ia, ib), res in zip(large, run(problems), strict=True):
        place_block(out, res, ia, ib)
    return out


def place_block(out: NearestSets, res: NearestSets, ia: np.ndarray, ib: np.ndarray) -> None:
    """A block's result (rows ``ia``, links into ``ib``) written into ``out``."""
    out.min_score[ia], out.count[ia], out.true_in_set[ia] = (res.min_score, res.count,
                                                              res.true_in_set)
    out.true_score[ia] = res.true_score
    out.link[ia] = np.where(res.link >= 0, ib[np.maximum(res.link, 0)], -1)


def blocked_missing_sets(obs_a: np.ndarray, obs_b: np.ndarray, build: Build, blocks: Blocks,
                         *, truth: np.ndarray, **kw: Any) -> NearestSets:
    """:func:`~linkrisk.engine.nearest.missing.nearest_sets_missing` within blocks: one
    call per block, ``build`` still indexing the whole files (``kw``: its options)."""
    out = empty_sets(obs_a.shape[0])
    truth = np.where(blocks.linkable(truth), truth, -1)
    for ia, ib in blocks.groups():
        def sub(r: np.ndarray, s: np.ndarray, cols: np.ndarray, ia: np.ndarray = ia,
                ib: np.ndarray = ib) -> Any:
            return build(ia[r], ib[s], cols)
        res = nearest_sets_missing(obs_a[ia], obs_b[ib], sub, row_ids=ia,
                                   truth=local_truth(truth[ia], ib), **kw)
        place_block(out, res, ia, ib)
    return out


def blocked_matching(pw: Pairwise, blocks: Blocks, *, row_limit: np.ndarray | None = None,
                     progress: Progress | None = None, **kw: Any) -> Matching:
    """One :func:`~linkrisk.engine.matching.min_cost_matching` per block on the rows of
    ``pw`` (the whole files under the attack's metric; ``kw`` its options: metric, root,
    seed, …), assembled by :func:`assembled_matching`. ``row_limit``: the per-row limits
    of the whole attacker file (the AGDBRL graphs), each block taking its rows'."""
    groups = blocks.groups()
    solved = ((ia, ib, min_cost_matching(pw.x[ia], pw.y[ib], row_limit=(
        None if row_limit is None else row_limit[ia]), **kw)) for ia, ib in groups)
    return assembled_matching(pw.x.shape[0], solved, len(groups),
                              expected=kw.get("ties") == "expected", progress=progress)


def assembled_matching(n_a: int, solved: Iterable[tuple[np.ndarray, np.ndarray, Matching]],
                       count: int, *, expected: bool = False,
                       progress: Progress | None = None) -> Matching:
    """The matchings of ``count`` blocks, ``solved`` one after the other as (A rows, B rows,
    the block's matching in positions of those rows), as one matching of the whole files:
    records of a block without a partner there (or of no block) are not linked (``link``
    −1, cost NaN). Certified when every block is; costs, edges and gap bounds add up;
    ``expected``: the blocks' candidate sets (ties="expected") are assembled too."""
    link = np.full(n_a, -1, np.int64)
    cost = np.full(n_a, np.nan)
    cands: list[np.ndarray | None] = [None] * n_a if expected else []
    total, gap, edges, k, certified, solvers = 0.0, 0.0, 0, 0, True, set()
    for g, (ia, ib, res) in enumerate(solved):
        ok = res.link >= 0
        link[ia[ok]] = ib[res.link[ok]]
        cost[ia] = res.cost
        total += res.total_cost
        gap += res.gap_bound
        edges += res.n_edges
        k = max(k, res.k)
        certified &= bool(res.certified)
        solvers.add(res.solver)
        if expected and res.cand_indptr is not None:
            for p, i in enumerate(ia):
                cands[i] = ib[res.cand_indices[res.cand_indptr[p]:res.cand_indptr[p + 1]]]
        if progress is not None:
            progress(g + 1, count)
    out = Matching(link=link, cost=cost, total_cost=total, certified=certified,
                   solver="+".join(sorted(solvers)) or "none", k=k, n_edges=edges,
                   gap_bound=gap, info={"blocks_solved": count})
    if expected:
        lists = [c if c is not None else np.empty(0, np.int64) for c in cands]
        out.cand_indptr = np.cumsum([0] + [c.size for c in lists]).astype(np.int64)
        out.cand_indices = (np.concatenate(lists).astype(np.int64) if lists
                            else np.empty(0, np.int64))
    return out
