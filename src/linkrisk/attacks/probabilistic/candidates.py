"""prl's candidate sets: each record's maximal-weight set C(a) (docs/methods.md,
Conventions).

Every a is linked to its maximal-weight candidate set C(a) (score −w, the common tie
rule), correct = χ(true(a) ∈ C(a))/|C(a)|. Since w depends only on the pattern and is
additive, C(a) is found without enumerating pairs when every attribute's agreement raises
the weight (m_j > u_j; attributes with m_j = u_j weigh nothing and are skipped): the best
pattern of a is the maximal-weight subset S on which some b agrees with a, and the tied
sets are whole groups of B (same values on S) — the subset walk of :mod:`.walk`,
O(2^m·(n+n')) (:func:`group_sets`, ``extra["candidate_search"] = "groups"``). Otherwise
the engine's ``mixed`` metric scores pairs with per-attribute tables of −w_j (exact ties,
:func:`engine_sets`), and with tolerances a compiled pair kernel does (:func:`pair_sets`).
With missing comparisons (weight 0) the sets come from the engine's pattern-pair search
or the pair kernel (:func:`missing_sets`). The one-to-one links are in
:mod:`.classification`.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from ...engine.nearest import RTOL, NearestSets, Tables
from ...engine.nearest.rules import settle, splitmix, splitmix_np, tie_threshold_np
from ...errors import LinkriskError
from ...grouping import subset_walk
from ..base import LinkContext
from .comparison import (
    Comparison,
    missing_score,
    pair_pattern,
    pattern_blocks,
    stack_columns,
    true_patterns,
)
from .walk import (
    COLLECT,
    MIN,
    SMALL_MIN,
    WALK,
    dfs,
    group_min,
    narrow_rows,
    refine,
    run_walk,
    walk_draw,
    walk_event,
    walk_events,
    walk_scratch,
)

_NONE = np.zeros(0)


def walk_base(rows: np.ndarray, seed: int) -> np.ndarray:
    """Each row's start on the subset walk's hash stream: splitmix(row ^ splitmix(seed,
    WALK), WALK), with the engine's :func:`~linkrisk.engine.nearest.rules.splitmix_np`
    (the compiled walks continue it with :func:`~linkrisk.engine.nearest.rules.splitmix`)."""
    return splitmix_np(rows ^ splitmix_np(np.full(rows.shape[0], seed, np.uint64), WALK),
                       WALK)


@nb.njit(nogil=True, cache=True)
def _min_task(codes, rcodes, size, n_a, i, j, score_k, rtol, best, thr_of, base, small_lim):
    """One task of the minimum walk (with events when ``base`` is given): the subset {j}
    alone (``i < 0``) or the whole subtree of {i, j}. Tasks are disjoint parts of the walk
    and may run in any order: the minimum does not depend on it, pruning only uses the
    (valid, if looser) thresholds found so far, and the events are replayed in walk order."""
    n, m = codes.shape
    rows = np.arange(n)
    seg = np.array([0, n], np.int64)
    evs = walk_events(n, n_a, base)
    ca, cb, pos, buf, small, ok = walk_scratch(codes, size)
    full = (1 << m) - 1
    i0 = np.empty(0, np.int64)
    f = np.empty(0)
    u = np.empty(0, np.uint64)
    if i >= 0:  # the rows of {i}'s groups, filtered by {i}'s subtree bound
        rows, seg, _ = refine(rows, seg, codes, i, size[i], n_a,
                               score_k[(1 << i) | (full & ~((1 << (i + 1)) - 1))], thr_of,
                               ca, cb, pos, buf, small, ok, 0, MIN, 1 << i, score_k, rtol, i0,
                               best, rcodes, evs)
    child = (1 << j) | (1 << i if i >= 0 else 0)
    r2, s2, _ = refine(rows, seg, codes, j, size[j], n_a,
                        score_k[child | (full & ~((1 << (j + 1)) - 1))], thr_of, ca, cb, pos,
                        buf, small, ok, small_lim if i >= 0 else 0, MIN, child, score_k, rtol,
                        i0, best, rcodes, evs)
    group_min(r2, s2, n_a, child, score_k[child], rtol, best, thr_of, evs)
    if i >= 0 and r2.size > 0:
        dfs(codes, size, n_a, MIN, r2, s2, child, j + 1, score_k, rtol, best, thr_of, f, u,
             i0, i0, i0, i0, rcodes, evs, small_lim)
    tab = evs[0][0]
    k = 0
    for e in range(evs[1][0]):  # drop the events already above their row's threshold
        if score_k[tab[e, 1]] <= thr_of[tab[e, 0]]:
            tab[k] = tab[e]
            k += 1
    return tab[:k].copy()  # the tight table: the buffer is freed


@nb.njit(nogil=True, cache=True)
def _min_root(n_b, score_k, rtol, best, thr_of, base):
    """The root of the minimum walk (the empty subset: every B row) and its events."""
    n_a = best.size
    evs = walk_events(n_a + n_b, n_a, base)
    for i in range(n_a):
        if score_k[0] < best[i]:
            best[i] = score_k[0]
        thr_of[i] = best[i] + rtol * abs(best[i])
        if evs[2].size > 0 and score_k[0] <= thr_of[i]:
            walk_event(evs, i, 0, n_b, walk_draw(base, i, 0, n_b))
    return evs[0][0][:evs[1][0]].copy()


def min_walk(codes: np.ndarray, size: np.ndarray, n_a: int, score_k: np.ndarray,
              best: np.ndarray, base: np.ndarray, small_lim: int | None = None
              ) -> np.ndarray:
    """The minimum walk with events (:func:`_min_task`), its tasks shared by
    ``numba.get_num_threads()`` threads, each with its own best scores (merged by minimum)
    and all sharing the pruning thresholds (:func:`_lower`). Lowers ``best``; returns the
    event table (its order depends on the threads; :func:`replay_walk` sorts it)."""
    n, m = codes.shape
    if n_a == 0 or n_a == n:
        return np.empty((0, 4), np.int64)
    codes, rcodes, size = narrow_rows(codes, size)
    lim = SMALL_MIN if small_lim is None else small_lim
    thr_of = np.empty(n_a)
    tables = [_min_root(n - n_a, score_k, RTOL, best, thr_of, base)]
    # the subtree of {i, j} has 2^(m-1-j) subsets: largest first, then the single subsets
    tasks = [(i, j) for j in range(m) for i in range(j)] + [(-1, j) for j in range(m)]
    n_threads = max(1, min(nb.get_num_threads(), len(tasks)))
    states = [(best.copy(), thr_of) for _ in range(n_threads)]  # thresholds shared
    lock = threading.Lock()
    queue = iter(tasks)

    def worker(w: int) -> list[np.ndarray]:
        out = []
        b, t = states[w]
        while True:
            with lock:
                task = next(queue, None)
            if task is None:
                return out
            out.append(_min_task(codes, rcodes, size, n_a, task[0], task[1], score_k, RTOL,
                                 b, t, base, lim))

    if n_threads == 1:
        tables += worker(0)
    else:
        with ThreadPoolExecutor(n_threads) as ex:
            for part in ex.map(worker, range(n_threads)):
                tables += part
    for b, _ in states:
        np.minimum(best, b, out=best)
    return np.concatenate(tables)


@nb.njit(cache=True)
def walk_order(k):
    """rank[S]: position of the subset S in the walk's depth-first order (S, then the
    subtrees of S ∪ {j} for j above S's last attribute, in increasing j)."""
    rank = np.empty(1 << k, np.int64)
    stack = np.empty(k + 1, np.int64)  # subset at each depth
    nxt = np.empty(k + 1, np.int64)    # next attribute to add at each depth
    rank[0] = 0
    stack[0] = 0
    nxt[0] = 0
    depth = 0
    r = 1
    while depth >= 0:
        j = nxt[depth]
        if j >= k:
            depth -= 1
            continue
        nxt[depth] = j + 1
        child = stack[depth] | (1 << j)
        rank[child] = r
        r += 1
        depth += 1
        stack[depth] = child
        nxt[depth] = j + 1
    return rank


@nb.njit(cache=True)
def replay_walk(ev, rank, score_k, thr, base, count, link):
    """The tied groups of each A row from the events of the minimum walk, in the walk's
    order: an event (a, S, c, b) is a's group on S with c B rows and b the pick-th of them
    (:func:`walk_draw`); those with score_k[S] ≤ thr[a] are the groups :func:`_collect` meets,
    so counting them and keeping each with probability c / (count so far) in walk order
    gives the same counts and links as the collecting walk."""
    n_ev = ev.shape[0]
    span = np.int64(rank.size)
    key = np.empty(n_ev, np.int64)
    k = 0
    for e in range(n_ev):
        i, s = ev[e, 0], ev[e, 1]
        if score_k[s] <= thr[i]:
            key[k] = i * span + rank[s]
            ev[k] = ev[e]
            k += 1
    order = np.argsort(key[:k])
    for o in range(k):
        e = order[o]
        i, s, c = ev[e, 0], ev[e, 1], ev[e, 2]
        count[i] += c
        h = splitmix(base[i] + np.uint64(s), WALK)
        u = np.float64(h >> np.uint64(11)) * 2.0**-53
        if u * np.float64(count[i]) < np.float64(c):
            link[i] = ev[e, 3]


def group_sets(cmp: Comparison, score: np.ndarray, truth: np.ndarray, seed: int,
               rtol: float = RTOL, keep: np.ndarray | None = None,
               walk: str = "compiled", rows: np.ndarray | None = None) -> NearestSets:
    """Minimal-score (maximal-weight) candidate sets by the subset walk, valid when every
    attribute's agreement lowers the score by more than the tie window: then for each a
    the tied subsets S on which some b agrees with a are exactly the agreement patterns of
    C(a), and their groups of B are disjoint. One walk: the minimum, recording the groups it
    meets, then the tied groups replayed in walk order
    (count and a reservoir-sampled uniform link). ``keep``: the attributes to walk; the
    others must score agreement and disagreement identically (they are left out of the
    walk and scored as disagreeing, which gives the same bits). ``walk``: ``"compiled"``
    (the pruned compiled minimum walk with events, :func:`min_walk`, and :func:`replay_walk`:
    same subsets, order and draws), ``"walks"`` (the compiled minimum walk, then a
    compiled collecting walk, :func:`walk_kernel`) or ``"numpy"`` (the plain numpy walk,
    kept as the reference computation). ``rows``: the attacker file's rows that ``cmp.a``
    holds (default 0..n_a−1), whose ids seed the draws (one block of a blocked linkage)."""
    n_a, m = cmp.a.shape
    keep = np.arange(m) if keep is None else np.flatnonzero(np.isin(np.arange(m), keep))
    codes = stack_columns(cmp)[:, keep]
    size = cmp.size[keep]
    full = (((np.arange(1 << keep.size)[:, None] >> np.arange(keep.size)) & 1)
            << keep).sum(axis=1)
    score_k = score[full]  # score of each walked subset as a full pattern
    best = np.full(n_a, np.inf)
    count = np.zeros(n_a, np.int64)
    link = np.full(n_a, -1, np.int64)
    base = walk_base(np.arange(n_a, dtype=np.uint64) if rows is None
                     else np.asarray(rows).astype(np.uint64), seed)
    if walk == "compiled":  # one walk: the minimum, recording the groups met (events)
        events = min_walk(codes, size, n_a, score_k, best, base)
        thr = tie_threshold_np(best, rtol)
        replay_walk(events, walk_order(keep.size), score_k, thr, base, count, link)
    elif walk == "walks":  # the minimum, then a second walk collecting the tied groups
        run_walk(codes, size, n_a, MIN, score_k=score_k, best=best)
        thr = tie_threshold_np(best, rtol)
        run_walk(codes, size, n_a, COLLECT, score_k=score_k, thr=thr, base=base,
                  count=count, link=link)
    else:
        thr = _numpy_walks(codes, size, n_a, score_k, rtol, base, best, count, link)
    return _group_result(cmp, score, truth, best, count, link, thr)


def _numpy_walks(codes: np.ndarray, size: np.ndarray, n_a: int, score_k: np.ndarray,
                 rtol: float, base: np.ndarray, best: np.ndarray, count: np.ndarray,
                 link: np.ndarray) -> np.ndarray:
    """:func:`group_sets` by two plain numpy subset walks (the reference computation): the
    minimum into ``best``, then the tied groups into ``count`` and ``link``. Returns the
    tie thresholds."""

    def find_min(subset: int, group_of: np.ndarray, n_groups: int) -> None:
        in_b = np.bincount(group_of[n_a:], minlength=n_groups)
        np.minimum(best, np.where(in_b[group_of[:n_a]] > 0, score_k[subset], np.inf),
                   out=best)

    subset_walk(codes, size, find_min)
    thr = tie_threshold_np(best, rtol)

    def collect(subset: int, group_of: np.ndarray, n_groups: int) -> None:
        in_b = np.bincount(group_of[n_a:], minlength=n_groups)
        partners = in_b[group_of[:n_a]]
        hit = np.flatnonzero((partners > 0) & (score_k[subset] <= thr))
        if hit.size == 0:
            return
        partners = partners[hit]
        count[hit] += partners
        h = splitmix_np(base[hit] + np.uint64(subset), WALK)
        u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
        take = u * count[hit] < partners  # reservoir over groups: keep with prob c / total
        if not take.any():
            return
        hit, partners, h = hit[take], partners[take], h[take]
        pick = (splitmix_np(h, WALK) % partners.astype(np.uint64)).astype(np.int64)
        b_in_group_order = np.argsort(group_of[n_a:], kind="stable")
        group_start = np.cumsum(in_b) - in_b
        link[hit] = b_in_group_order[group_start[group_of[hit]] + pick]

    subset_walk(codes, size, collect)
    return thr


def _group_result(cmp: Comparison, score: np.ndarray, truth: np.ndarray, best: np.ndarray,
                  count: np.ndarray, link: np.ndarray, thr: np.ndarray) -> NearestSets:
    ts = np.full(cmp.a.shape[0], np.inf)
    ok = truth >= 0
    if ok.any():
        ts[ok] = score[true_patterns(cmp, truth)[ok]]
    return NearestSets(best, count, ok & (ts <= thr), ts, link)


def engine_sets(ctx: LinkContext, cmp: Comparison, wa: np.ndarray, wd: np.ndarray,
                rows: np.ndarray | None = None) -> NearestSets:
    """Candidate sets through the engine's ``mixed`` metric: per-attribute tables with −w_j
    (−w_agree on the diagonal), i.e. the score of a pair is −w. ``rows``: only these rows
    of A (:meth:`~linkrisk.attacks.base.LinkContext.nearest`'s ``rows``)."""
    tabs = []
    for j in range(cmp.a.shape[1]):
        size = int(cmp.size[j])
        tabs.append(np.where(np.eye(size, dtype=bool), -wa[j], -wd[j]))
    if rows is not None:
        return ctx.nearest(cmp.a[rows], cmp.b, "mixed", rows=rows,
                           tables=Tables.from_list(tabs)).sets
    return ctx.nearest(cmp.a, cmp.b, "mixed", tables=Tables.from_list(tabs)).sets


def pair_sets(ctx: LinkContext, cmp: Comparison, score: np.ndarray) -> NearestSets:
    n_a = cmp.a.shape[0]
    out_min, out_true = np.empty(n_a), np.empty(n_a)
    out_count, out_link = np.empty(n_a, np.int64), np.empty(n_a, np.int64)
    for r0, r1 in pattern_blocks(n_a):  # row i's link depends on (seed, i) only: same result
        pair_best_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, score, _NONE, _NONE,
                          ctx.truth[r0:r1], ctx.seed, RTOL, out_min[r0:r1], out_count[r0:r1],
                          out_true[r0:r1], out_link[r0:r1], r0)
        if ctx.progress is not None:
            ctx.progress(r1, n_a)
    thr = tie_threshold_np(out_min, RTOL)
    return NearestSets(out_min, out_count, (ctx.truth >= 0) & (out_true <= thr), out_true,
                       out_link)


@nb.njit(parallel=True, cache=True)
def pair_best_kernel(a, b, tol, score, va, vd, truth, seed, rtol, out_min, out_count,
                      out_true, out_link, i0=0):
    """C(a) = {b : score[γ(a,b)] ≤ min + rtol·|min|} for every a (global row i0 + i),
    settled by the engine's rules (:func:`~linkrisk.engine.nearest.rules.settle`: link =
    the pick-th member in B order). With ``va``/``vd`` (−w_agree, −w_disagree; empty
    otherwise) the score is summed per pair, a missing comparison adding 0."""
    n_a, n_b = a.shape[0], b.shape[0]
    ids = np.arange(n_b)
    per_pair = va.size > 0
    for i in nb.prange(n_a):
        sc = np.empty(n_b)
        for k in range(n_b):
            if per_pair:
                sc[k] = missing_score(a, b, i, k, tol, va, vd)
            else:
                sc[k] = score[pair_pattern(a, b, i, k, tol)]
        mn, cnt, _, link = settle(ids, sc, n_b, -1, rtol, seed, i0 + i)
        t = truth[i]
        out_true[i] = sc[t] if t >= 0 else np.inf
        out_min[i] = mn
        out_count[i] = cnt
        out_link[i] = link


def missing_sets(ctx: LinkContext, cmp: Comparison, wa: np.ndarray, wd: np.ndarray,
                 path: str) -> NearestSets:
    """Maximal-weight candidate sets with missing comparisons: ``engine`` (the pattern-pair
    search of :mod:`~linkrisk.engine.nearest.missing` with the ``mixed`` tables of −w_j
    on the attributes observed in both; nothing in common: score 0) or ``pairs``."""
    if path == "engine":
        from ...engine.nearest.missing import space_build

        tabs = [np.where(np.eye(int(cmp.size[j]), dtype=bool), -wa[j], -wd[j])
                for j in range(cmp.a.shape[1])]
        build = space_build(cmp.a, cmp.b, "mixed", rescaled=np.zeros(cmp.a.shape[1], bool),
                            tables=Tables.from_list(tabs))
        return ctx.nearest_missing(~np.isnan(cmp.a), ~np.isnan(cmp.b), build).sets
    if path != "pairs":
        raise LinkriskError(f"path {path!r} does not take missing values; use 'engine' or "
                            "'pairs'")
    n_a = cmp.a.shape[0]
    out_min, out_true = np.empty(n_a), np.empty(n_a)
    out_count, out_link = np.empty(n_a, np.int64), np.empty(n_a, np.int64)
    for r0, r1 in pattern_blocks(n_a):
        pair_best_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, _NONE, -wa, -wd, ctx.truth[r0:r1],
                          ctx.seed, RTOL, out_min[r0:r1], out_count[r0:r1], out_true[r0:r1],
                          out_link[r0:r1], r0)
        if ctx.progress is not None:
            ctx.progress(r1, n_a)
    thr = tie_threshold_np(out_min, RTOL)
    return NearestSets(out_min, out_count, (ctx.truth >= 0) & (out_true <= thr), out_true,
                       out_link)
