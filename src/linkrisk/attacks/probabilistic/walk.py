"""prl's compiled subset walk over the 2^m attribute subsets (pattern counts and
candidate sets share it).

The numpy walk (:func:`linkrisk.grouping.subset_walk`) relabels all n + n' rows for each of
the 2^m subsets. The compiled walk visits the same subsets in the same depth-first order
but carries only the rows that can still matter below the subset S:

* rows of *shared* groups (value combinations on S present in both files): a row whose
  group on S has no partner in the other file has none on any superset of S (groups only
  split), so it adds to no pair count and is in no candidate set below S;
* for the candidate sets, A rows that can still reach their tie threshold: with every
  walked attribute's agreement lowering the score, the lowest score in the subtree of S (S
  plus any of the attributes after its last one) is that of S plus all of them
  (floating-point addition is monotone, and the table sums in one fixed order), so a row
  whose threshold is below it is dropped (for the minimum, the threshold of the best score
  found so far, which only falls).

A subtree left without rows is skipped whole. The visits, their order and the draws are
those of the numpy walk; rows are kept in ascending order inside each group (a stable
counting sort per group), so a group's B members are in B order (the group's last rows).

Pair counts: the subtrees of the two-attribute subsets are parallel tasks
(:func:`count_kernel`); a pair of a small group is counted once, under its exact pattern
on the later attributes, and these counts are spread over the subsets they imply by one
superset sum (:func:`fold_finished`). Candidate sets (:mod:`.candidates`): one walk. The
minimum walk (parallel tasks too, ``min_walk``) records every group it meets within the A
row's current threshold, which bounds the final one from above: (a, S, number of B rows,
the drawn B row). The events of the tied subsets, replayed in the walk's order
(``replay_walk``), are the numpy walk's draws. The former second, collecting walk
(:func:`walk_kernel` with ``COLLECT``) is kept as ``group_sets(walk="walks")``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...engine.nearest import RTOL
from ...engine.nearest.rules import splitmix

# The numpy walk above relabels all n + n' rows for each of the 2^m subsets. The compiled
# walk visits the same subsets in the same depth-first order but carries only the rows that
# can still matter below the subset S:
# * rows of *shared* groups (value combinations on S present in both files): a row whose
#   group on S has no partner in the other file has none on any superset of S (groups only
#   split), so it adds to no pair count and is in no candidate set below S;
# * for the candidate sets, A rows that can still reach their tie threshold: with every
#   walked attribute's agreement lowering the score, the lowest score in the subtree of S
#   (S plus any of the attributes after its last one) is that of S plus all of them
#   (floating-point addition is monotone, and the table sums in one fixed order), so a row
#   whose threshold is below it is dropped (for the minimum, the threshold of the best score
#   found so far, which only falls).
# A subtree left without rows is skipped whole. The visits, their order and the draws are
# those of the numpy walk; rows are kept in ascending order inside each group (a stable
# counting sort per group), so a group's B members are in B order (the group's last rows).
# Pair counts: the subtrees of the two-attribute subsets are parallel tasks; a pair of a
# small group is counted once, under its exact pattern on the later attributes, and these
# counts are spread over the subsets they imply by one superset sum (fold_finished).
# Candidate sets: one walk. The minimum walk (parallel tasks too, min_walk) records every
# group it meets within the A row's current threshold, which bounds the final one from
# above: (a, S, number of B rows, the drawn B row). The events of the tied subsets, replayed
# in the walk's order (replay_walk), are the numpy walk's draws. The former second, collecting
# walk is kept as group_sets(walk="walks").

COUNT, MIN, COLLECT = 0, 1, 2


#: groups with at most this many (a, b) pairs are finished on the spot by comparing the pairs
#: on the attributes left (pair counts; minimum with the events of the tied groups; not in
#: the collecting walk of walk="walks", whose draws follow the walk)
SMALL = 64
_SMALL_COUNT = SMALL
SMALL_MIN = SMALL
#: row numbers in the count walk (int64 from 2^31 rows)
_ROWS = np.int32


#: the subset walk's hash stream: splitmix(x, WALK) = mix(x·φ + 0x632BE59BD9B4E019), the
#: engine's tie-breaking hash (:func:`~linkrisk.engine.nearest.rules.splitmix`) keyed by x
WALK = 0x632BE59BD9B4E019 - 1


@nb.njit(cache=True)
def _finish(grp, k, n_a, child, j, codes, score_k, rtol, fin, best, thr_of, mode, evs):
    """The whole subtree of ``child`` for one small group (``grp[:k]``, ascending): every
    (a, b) pair agrees on ``child`` and on a set M of the later attributes, so it adds one to
    "agree on at least child ∪ T" for each non-empty T ⊆ M (``COUNT``), and its best score
    in the subtree is that of child ∪ M (``MIN``, scores being monotone). With events on
    (``MIN``), a records the group of child ∪ M it would meet in the walk for each M
    scoring within its threshold: the B rows agreeing with a on exactly M (when child ∪ M
    is tied at the end, no B row agrees on more: it would score below the minimum)."""
    m = codes.shape[1]
    ev_on = evs[2].size > 0
    mk, bb = evs[3], evs[4]
    for x in range(k):
        i = grp[x]
        if i >= n_a:
            continue
        nbr = 0
        for y in range(k):
            b = grp[y]
            if b < n_a:
                continue
            mask = 0
            for t in range(j + 1, m):
                if codes[i, t] == codes[b, t]:
                    mask |= 1 << t
            if mode == COUNT:
                if mask:
                    fin[(j << m) | child | mask] += 1
            else:
                sc = score_k[child | mask]
                if sc < best[i]:
                    best[i] = sc
                    _lower(thr_of, i, sc + rtol * abs(sc))
                if ev_on:
                    mk[nbr] = mask
                    bb[nbr] = b
                    nbr += 1
        if mode != COUNT and ev_on:
            for y in range(nbr):
                mask = mk[y]
                if not score_k[child | mask] <= thr_of[i]:
                    continue
                c = 0
                seen = False
                for z in range(nbr):
                    if mk[z] == mask:
                        if z < y:
                            seen = True
                            break
                        c += 1
                if not seen:
                    pick = walk_draw(evs[2], i, child | mask, c)
                    for z in range(y, nbr):
                        if mk[z] == mask:
                            if pick == 0:
                                walk_event(evs, i, child | mask, c, bb[z] - n_a)
                                break
                            pick -= 1


@nb.njit(inline="always")
def _lower(thr_of, i, t):
    """Lower the pruning threshold of row i to t. In the parallel minimum walk ``thr_of`` is
    shared by the threads (each keeps its own best scores): a concurrent write may leave a
    higher value, but every value written is the threshold of a score the row reaches, so
    it bounds its final threshold from above, which is all pruning and recording need."""
    if t < thr_of[i]:
        thr_of[i] = t


@nb.njit(inline="always")
def walk_draw(base, i, s, c):
    """The numpy walk's pick among the c B rows of a's group on S (only the index; whether
    the group is kept is decided when a's tied groups are replayed in walk order)."""
    h = splitmix(base[i] + np.uint64(s), WALK)
    return np.int64(splitmix(h, WALK) % np.uint64(c))


@nb.njit(inline="always")
def walk_event(evs, i, s, c, b):
    """Append (a, S, c, candidate link) to the growing event table ``evs[0][0]``."""
    ev, nev = evs[0], evs[1]
    e = nev[0]
    tab = ev[0]
    if e == tab.shape[0]:
        grown = np.empty((2 * e, 4), np.int64)
        grown[:e] = tab
        ev[0] = grown
        tab = grown
    tab[e, 0] = i
    tab[e, 1] = s
    tab[e, 2] = c
    tab[e, 3] = b
    nev[0] = e + 1


@nb.njit(cache=True)
def refine(rows, seg, codes, j, size_j, n_a, bound, thr_of, count_a, count_b, slot, values,
            small, kept, lim, mode, child, score_k, rtol, fin, best, rcodes, evs):
    """Split every group (``rows[seg[g]:seg[g+1]]``) by attribute ``j``, keeping the
    sub-groups with rows of both files, where an A row counts only if
    ``bound ≤ thr_of[row]`` (no filter when ``thr_of`` is empty); sub-groups with at most
    ``lim`` pairs are finished by :func:`_finish`. Returns (rows,
    segment starts with the end appended, Σ over all shared sub-groups of |A|·|B|).
    ``count_a``, ``count_b``, ``slot`` (−1), ``values``, ``small`` and ``kept`` are
    scratch (:func:`walk_scratch`), left as they came."""
    n = rows.size
    codes_j = codes[:, j]
    out = np.empty(n, rows.dtype)
    starts = np.empty(n + 1, np.int64)
    filtered = thr_of.size > 0
    small_base = n + 1  # slots from `small_base` on are in the small-group buffer
    placed = 0
    n_groups = 0
    pairs = 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        _tally(rows, s0, s1, codes_j, n_a, filtered, bound, thr_of, count_a, count_b, values,
               kept)
        # the values to visit: every code for a large group, the group's own rows otherwise
        by_code = s1 - s0 > size_j
        n_values = size_j if by_code else s1 - s0
        placed, n_groups, n_small, group_pairs = _number_shared(
            values, n_values, by_code, count_a, count_b, slot, lim, small_base, starts,
            placed, n_groups)
        pairs += group_pairs
        _place(rows, s0, s1, values, kept, slot, small_base, small, out)
        if n_small > 0:
            _finish_small(values, n_values, by_code, count_a, count_b, slot, small_base, small,
                          n_a, child, j, rcodes, score_k, rtol, fin, best, thr_of, mode, evs)
        _reset(values, n_values, by_code, count_a, count_b, slot)
    starts[n_groups] = placed
    return out[:placed], starts[:n_groups + 1], pairs


@nb.njit(inline="always")
def _tally(rows, s0, s1, codes_j, n_a, filtered, bound, thr_of, count_a, count_b, values,
           kept):
    """Count the group's rows per value of attribute j (A rows only if kept: each row's
    filter is read once, since in the parallel minimum walk another thread may lower
    ``thr_of`` meanwhile and the placement must match the counts)."""
    for r in range(s0, s1):
        row = rows[r]
        value = codes_j[row]
        values[r - s0] = value
        kept[r - s0] = row >= n_a or not filtered or bound <= thr_of[row]
        if row >= n_a:
            count_b[value] += 1
        elif kept[r - s0]:
            count_a[value] += 1


@nb.njit(inline="always")
def _number_shared(values, n_values, by_code, count_a, count_b, slot, lim, small_base,
                   starts, placed, n_groups):
    """Give each value shared by both files its slot: sub-groups of more than ``lim`` pairs
    one after the other in the output (a new segment each), the others in the small-group
    buffer. Returns (rows placed, segments, small sub-groups, pairs of the shared
    sub-groups)."""
    small_used = 0
    n_small = 0
    pairs = 0
    for r in range(n_values):
        value = r if by_code else values[r]
        if slot[value] == -1 and count_a[value] > 0 and count_b[value] > 0:
            pairs += count_a[value] * count_b[value]
            if count_a[value] * count_b[value] <= lim:
                slot[value] = small_base + small_used
                small_used += count_a[value] + count_b[value]
                n_small += 1
            else:
                slot[value] = placed
                starts[n_groups] = placed
                n_groups += 1
                placed += count_a[value] + count_b[value]
    return placed, n_groups, n_small, pairs


@nb.njit(inline="always")
def _place(rows, s0, s1, values, kept, slot, small_base, small, out):
    """Put each kept row of a shared value at its value's next slot (ascending order)."""
    for r in range(s0, s1):
        value = values[r - s0]
        at = slot[value]
        if at >= 0 and kept[r - s0]:
            if at >= small_base:
                small[at - small_base] = rows[r]
            else:
                out[at] = rows[r]
            slot[value] = at + 1


@nb.njit(inline="always")
def _finish_small(values, n_values, by_code, count_a, count_b, slot, small_base, small, n_a,
                  child, j, rcodes, score_k, rtol, fin, best, thr_of, mode, evs):
    """:func:`_finish` each small sub-group: they lie one after the other in ``small``,
    each ending at its value's slot."""
    for r in range(n_values):
        value = r if by_code else values[r]
        if slot[value] >= small_base and count_a[value] > 0:
            end = slot[value] - small_base
            k = count_a[value] + count_b[value]
            _finish(small[end - k:end], k, n_a, child, j, rcodes, score_k, rtol, fin, best,
                    thr_of, mode, evs)
            count_a[value] = 0  # finished once


@nb.njit(inline="always")
def _reset(values, n_values, by_code, count_a, count_b, slot):
    """Clear the scratch entries of the group's values."""
    if by_code:
        count_a[:n_values] = 0
        count_b[:n_values] = 0
        slot[:n_values] = -1
    else:
        for r in range(n_values):
            value = values[r]
            count_a[value] = 0
            count_b[value] = 0
            slot[value] = -1


@nb.njit(cache=True)
def _leaf_pairs(rows, seg, codes, j, size_j, n_a, ca, cb):
    """Σ |A|·|B| over the sub-groups of :func:`refine` by the last attribute ``j`` (pair
    counts), without building them: they have no children."""
    col = codes[:, j]
    pairs = 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        for r in range(s0, s1):
            i = rows[r]
            if i >= n_a:
                cb[col[i]] += 1
            else:
                ca[col[i]] += 1
        if s1 - s0 > size_j:
            for c in range(size_j):
                pairs += ca[c] * cb[c]
                ca[c] = 0
                cb[c] = 0
        else:
            for r in range(s0, s1):
                c = col[rows[r]]
                pairs += ca[c] * cb[c]
                ca[c] = 0
                cb[c] = 0
    return pairs


@nb.njit(cache=True)
def _collect(s, rows, seg, n_a, sc, thr, base, count, link):
    """The tied groups of S: count and reservoir-sampled link, the numpy walk's draws."""
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        c = 0
        for r in range(s0, s1):
            c += rows[r] >= n_a
        for r in range(s0, s1):
            i = rows[r]
            if i >= n_a or not sc <= thr[i]:
                continue
            count[i] += c
            h = splitmix(base[i] + np.uint64(s), WALK)
            u = np.float64(h >> np.uint64(11)) * 2.0**-53
            if not u * np.float64(count[i]) < np.float64(c):
                continue
            pick = np.int64(splitmix(h, WALK) % np.uint64(c))
            for t in range(s0, s1):  # the pick-th B member in B order
                if rows[t] >= n_a:
                    if pick == 0:
                        link[i] = rows[t] - n_a
                        break
                    pick -= 1


@nb.njit(cache=True)
def walk_scratch(codes, size):
    big = 0
    for j in range(size.size):
        big = max(big, size[j])
    n = codes.shape[0]
    return (np.zeros(big, np.int64), np.zeros(big, np.int64), np.full(big, -1, np.int64),
            np.empty(n, codes.dtype), np.empty(n, np.int64), np.empty(n, np.bool_))


@nb.njit(cache=True)
def dfs(codes, size, n_a, mode, rows, seg, s, first, score_k, rtol, best, thr_of, thr,
         base, count, link, at_least, fin, rcodes, evs, small_lim=SMALL):
    """The walk below the subset ``s`` (its rows and groups: ``rows``, ``seg``), children
    from attribute ``first`` on, in depth-first order: ``COUNT`` adds to ``at_least``
    (pairs agreeing on at least S), ``MIN`` lowers ``best`` to each A row's minimal score
    (and, with events on, records each group met within the row's current threshold: see
    :func:`replay_walk`), ``COLLECT`` accumulates the tied groups."""
    m = codes.shape[1]
    ca, cb, pos, buf, small, ok = walk_scratch(codes, size)
    full = (1 << m) - 1
    lim = small_lim if mode != COLLECT else 0
    rows_l = [rows]
    seg_l = [seg]
    subset = np.zeros(m + 1, np.int64)
    nxt = np.zeros(m + 1, np.int64)
    subset[0] = s
    nxt[0] = first
    depth = 0
    while depth >= 0:
        s = subset[depth]
        rows, seg = rows_l[depth], seg_l[depth]
        j = nxt[depth]
        if j >= m:
            depth -= 1
            continue
        nxt[depth] = j + 1
        child = s | (1 << j)
        bound = score_k[child | (full & ~((1 << (j + 1)) - 1))] if mode != COUNT else 0.0
        if j == m - 1 and mode == COUNT:  # no children: count in place
            at_least[child] += _leaf_pairs(rows, seg, codes, j, size[j], n_a, ca, cb)
            continue
        r2, s2, pairs = refine(rows, seg, codes, j, size[j], n_a, bound, thr_of, ca, cb, pos,
                                buf, small, ok, lim, mode, child, score_k, rtol, fin, best,
                                rcodes, evs)
        if mode == COUNT:
            at_least[child] += pairs
        if r2.size == 0:
            continue  # nothing below: no pair agrees on this subset or any superset
        if mode == MIN:
            group_min(r2, s2, n_a, child, score_k[child], rtol, best, thr_of, evs)
        elif mode == COLLECT:
            _collect(child, r2, s2, n_a, score_k[child], thr, base, count, link)
        depth += 1
        if depth < len(rows_l):
            rows_l[depth] = r2
            seg_l[depth] = s2
        else:
            rows_l.append(r2)
            seg_l.append(s2)
        subset[depth] = child
        nxt[depth] = j + 1


@nb.njit(nogil=True, cache=True)
def group_min(rows, seg, n_a, s, sc, rtol, best, thr_of, evs):
    """The minimum walk at the subset S (score ``sc``) with its shared groups (``rows``,
    ``seg``): lower each A row's best score to sc, and (events on) record the group of each
    A row within its current threshold with its drawn B row."""
    ev_on = evs[2].size > 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        c = 0  # B rows: the group's last rows (ascending, B after A)
        while c < s1 - s0 and rows[s1 - 1 - c] >= n_a:
            c += 1
        for r in range(s0, s1 - c):
            i = rows[r]
            if ev_on and sc <= thr_of[i]:
                walk_event(evs, i, s, c, rows[s1 - c + walk_draw(evs[2], i, s, c)] - n_a)
            if sc < best[i]:
                best[i] = sc
                _lower(thr_of, i, sc + rtol * abs(sc))


@nb.njit(nogil=True, cache=True)
def walk_events(n, n_a, base):
    """An empty event table (events on when ``base`` is given) and its scratch."""
    on = base.size > 0
    return ([np.empty((max(1024, n_a // 16) if on else 0, 4), np.int64)], np.zeros(1, np.int64),
            base, np.empty(n if on else 0, np.int64), np.empty(n if on else 0, np.int64))


@nb.njit(cache=True)
def walk_kernel(codes, rcodes, size, n_a, mode, score_k, rtol, best, thr, base, count, link,
                 small_lim):
    """The sequential walk from the root (minimum and draws: their order matters).
    The minimum walk of the candidate sets is :func:`min_walk` (tasks, events); this one
    (``MIN`` without events, then ``COLLECT``) is kept as ``group_sets(walk="walks")``."""
    n = codes.shape[0]
    rows = np.arange(n)
    seg = np.array([0, n], np.int64)
    evs = walk_events(n, n_a, base[:0])
    if mode == MIN:
        thr_of = np.full(n_a, np.inf)  # threshold of the best score so far
        for i in range(n_a):
            if score_k[0] < best[i]:
                best[i] = score_k[0]
            thr_of[i] = best[i] + rtol * abs(best[i])
    else:
        thr_of = thr
        _collect(0, rows, seg, n_a, score_k[0], thr, base, count, link)
    i0 = np.empty(0, np.int64)
    dfs(codes, size, n_a, mode, rows, seg, 0, 0, score_k, rtol, best, thr_of, thr, base,
         count, link, i0, i0, rcodes, evs, small_lim)


@nb.njit(parallel=True, cache=True)
def count_kernel(codes, rcodes, size, n_a, tasks, at_least, fin, small_lim, rows):
    """Pair counts of "agree on at least S" for every S: the subsets of one or two
    attributes here, the subtree of each two-attribute subset {i, j} as one parallel task
    (the subtrees are disjoint, so are the entries they write). Pairs of small groups go to
    ``fin`` (see :func:`fold_finished`)."""
    n, m = codes.shape
    seg = np.array([0, n], np.int64)
    f = np.empty(0)
    i0 = np.empty(0, np.int64)
    evs = ([np.empty((0, 4), np.int64)], np.zeros(1, np.int64), np.empty(0, np.uint64), i0, i0)
    at_least[0] = n_a * (n - n_a)
    for t in nb.prange(tasks.shape[0] + m):
        ca, cb, pos, buf, small, ok = walk_scratch(codes, size)
        if t >= tasks.shape[0]:  # a one-attribute subset
            j = t - tasks.shape[0]
            _, _, pairs = refine(rows, seg, codes, j, size[j], n_a, 0.0, f, ca, cb, pos, buf,
                                  small, ok, 0, COUNT, 1 << j, f, 0.0, fin, f, rcodes, evs)
            at_least[1 << j] = pairs
            continue
        i, j = tasks[t, 0], tasks[t, 1]
        r1, s1, _ = refine(rows, seg, codes, i, size[i], n_a, 0.0, f, ca, cb, pos, buf,
                            small, ok, 0, COUNT, 1 << i, f, 0.0, fin, f, rcodes, evs)
        child = (1 << i) | (1 << j)
        r2, s2, pairs = refine(r1, s1, codes, j, size[j], n_a, 0.0, f, ca, cb, pos, buf,
                                small, ok, small_lim, COUNT, child, f, 0.0, fin, f, rcodes, evs)
        at_least[child] += pairs
        if r2.size > 0:
            dfs(codes, size, n_a, COUNT, r2, s2, child, j + 1, f, 0.0, f, f, f,
                 np.empty(0, np.uint64), i0, i0, at_least, fin, rcodes, evs, small_lim)


def run_walk(codes: np.ndarray, size: np.ndarray, n_a: int, mode: int,
              score_k: np.ndarray | None = None, best: np.ndarray | None = None,
              thr: np.ndarray | None = None, base: np.ndarray | None = None,
              count: np.ndarray | None = None, link: np.ndarray | None = None,
              at_least: np.ndarray | None = None, small_lim: int | None = None
              ) -> None:
    """The compiled walk (:func:`count_kernel`, :func:`walk_kernel`); codes are stored
    column by column (for the refinements) and row by row (for the small groups) in the
    narrowest unsigned type that holds them. ``small_lim``: most pairs of a group finished
    pair by pair (default ``_SMALL_COUNT`` / ``SMALL_MIN``; 0 refines every group; tests)."""
    n, m = codes.shape
    if n_a == 0 or n_a == n:
        return
    size = np.ascontiguousarray(size, dtype=np.int64)
    if mode == COUNT:
        # Pair counts do not depend on the order of the attributes, the walk's cost does:
        # a subset is refined from its parent (itself without its last attribute), and the
        # first attributes are in the parents of most subsets, so the walk takes them from
        # the most selective (fewest agreeing pairs) to the least; the counts are mapped
        # back to the original attribute bits.
        agree = [int(np.bincount(codes[:n_a, j], minlength=size[j])
                     @ np.bincount(codes[n_a:, j], minlength=size[j])) for j in range(m)]
        order = np.argsort(agree, kind="stable")
        walked = np.zeros(1 << m, np.int64)
        _count_walk(codes[:, order], size[order], n_a, walked, small_lim)
        orig = np.zeros(1 << m, np.int64)
        sub = np.arange(1 << m)
        for k in range(m):
            orig |= ((sub >> k) & 1) << int(order[k])
        at_least[orig] = walked
        return
    codes, rcodes, size = narrow_rows(codes, size)
    f, i, u = np.empty(0), np.empty(0, np.int64), np.empty(0, np.uint64)
    walk_kernel(codes, rcodes, size, n_a, mode, score_k, RTOL, f if best is None else best,
                 f if thr is None else thr, u if base is None else base,
                 i if count is None else count, i if link is None else link,
                 SMALL_MIN if small_lim is None else small_lim)


def _count_walk(codes: np.ndarray, size: np.ndarray, n_a: int, at_least: np.ndarray,
                small_lim: int | None) -> None:
    """Pair counts of "agree on at least S" by the compiled walk, attributes in the given
    order (:func:`count_kernel`, :func:`fold_finished`)."""
    n, m = codes.shape
    codes, rcodes, size = narrow_rows(codes, size)
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    # largest subtrees first, so that the parallel tasks finish together
    pairs.sort(key=lambda t: t[1])
    tasks = np.array(pairs, np.int64).reshape(-1, 2)
    fin = np.zeros(m << m, np.int64)
    count_kernel(codes, rcodes, size, n_a, tasks, at_least, fin,
                  _SMALL_COUNT if small_lim is None else small_lim,
                  np.arange(n, dtype=_ROWS if n < 2**31 else np.int64))
    fold_finished(fin, at_least, m)


def narrow_rows(codes: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(column-major codes, row-major codes, sizes) in the narrowest unsigned type."""
    size = np.ascontiguousarray(size, dtype=np.int64)
    top = int(size.max(initial=1))
    dt = np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.int64
    codes = np.asfortranarray(codes.astype(dt))
    return codes, np.ascontiguousarray(codes), size


def fold_finished(fin: np.ndarray, at_least: np.ndarray, m: int) -> None:
    """Add the pairs finished in small groups to ``at_least``. ``fin[j·2^m + X]`` counts
    the pairs finished below a subset C whose last attribute is j, agreeing on X = C ∪ M with
    M the set of later attributes (> j) they agree on; such a pair agrees on at least C ∪ T
    for each T ⊆ M, T ≠ ∅ (T = ∅ is counted with its group). Summing ``fin[j]`` over the
    supersets in the bits above j gives, at S, the pairs with C = S's bits up to j and
    T = S's bits above j ⊆ M: added where T ≠ ∅, i.e. S ≥ 2^(j+1)."""
    g = fin.reshape(m, 1 << m)
    for j in range(m - 1):
        h = g[j]
        for t in range(j + 1, m):
            v = h.reshape(-1, 2, 1 << t)
            v[:, 0, :] += v[:, 1, :]
        at_least[1 << (j + 1):] += h[1 << (j + 1):]
