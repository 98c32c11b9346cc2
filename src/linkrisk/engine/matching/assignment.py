"""Sparse linear assignment with dual potentials, and allowed-edge pruning.

:class:`SparseAssignment` solves min Σ c_{i,σ(i)} over the matchings σ that match every row
of a sparse bipartite graph (rows ≤ columns) with the shortest-augmenting-path method of
Jonker & Volgenant (1987, "A shortest augmenting path algorithm for dense and sparse linear
assignment problems", Computing 38:325–340): initial reductions, augmenting row reduction
and then, for every row still free, a Dijkstra search in reduced costs
c̄_ij = c_ij − u_i − v_j ≥ 0 until a free column is reached, a dual update and an
augmentation (the dual update of Crouse 2016, IEEE TAES 52(4)). It keeps the dual
potentials (u, v) it maintains: c̄ ≥ 0 on every edge and c̄ = 0 on the matching, which is
LP duality's proof that the matching is optimal *on the graph*; the global attack extends
that proof to the complete bipartite graph.

Square problems start from column prices of an ε-scaling auction (Bertsekas 1988, "The
auction algorithm: a distributed relaxation method for the assignment problem", Annals of
Operations Research 14:105–123): with near-optimal prices almost every row's cheapest
column is distinct, and the exact shortest-path phase only fixes local conflicts (far
fewer and shorter paths than from the column reduction). The final duals are
*flattened* (:meth:`SparseAssignment.flatten`) before they are used as a certificate.

When rows < columns the problem is the rectangular one (dummy rows of constant cost, see
:mod:`linkrisk.engine.matching`): v starts at 0 and only decreases, so v ≤ 0 with v_j = 0 on
free columns, the dual conditions of that LP (no auction start: its phases would leave
free columns with v < 0).

The solver can be warm-started after edges are added: rows whose new edges have negative
reduced cost get u_i lowered to their new minimum, which frees their matched column, and
only those rows are re-augmented (rectangular problems restart). Flattened duals make every
row's augmenting path search far (their tight edges form a spanning forest), so after a
round that frees more rows :meth:`SparseAssignment.rewarm` goes back to the duals the last
flattening started from (optimal for the same matching, few tight edges) and frees the
rows whose added edges violate those instead.

:func:`allowed_edges` implements Tassa (2012, "Finding all maximally-matchable edges in a
bipartite graph", Theoretical Computer Science 423:50–58): given one perfect matching M, an
edge outside M lies in some perfect matching iff its two ends are in one strongly connected
component of the digraph that orients M's edges column → row and the others row → column.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

from ..nearest.rules import Progress
from .prefetch import prefetch

#: after :meth:`SparseAssignment.rewarm`, the freed rows bid in an auction only when more
#: than this many were freed; fewer are settled by the row reduction and shortest paths
#: alone, which then cost less than an auction, in which the evictions spread to many
#: more rows than were freed
SETTLE_PATHS = 100

# ---------------------------------------------------------------------------------------
# compiled core
# ---------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _init_square(indptr, indices, cost, u, v, col4row, row4col):
    """Column reduction v_j = min_i c_ij, row reduction u_i = min_j (c_ij − v_j), then a
    greedy matching of each row to its argmin column if still free."""
    n = indptr.shape[0] - 1
    v[:] = np.inf
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            if cost[e] < v[j]:
                v[j] = cost[e]
    for j in range(v.shape[0]):
        if v[j] == np.inf:
            v[j] = 0.0
    _init_rows(indptr, indices, cost, u, v, col4row, row4col)


@nb.njit(cache=True)
def _init_rows(indptr, indices, cost, u, v, col4row, row4col):
    """Every row's u_i = min_j (c_ij − v_j), matched to its argmin column if still free
    (see :func:`_init_subset`)."""
    _init_subset(np.arange(indptr.shape[0] - 1), indptr, indices, cost, u, v, col4row,
                 row4col)


@nb.njit(inline="always", fastmath={"nnan", "nsz"})
def _first_min(buf, d):
    """(smallest of buf[:d], its first position): a vectorized minimum, then a scan to
    its first occurrence (no NaN here; ±inf allowed)."""
    m = np.inf
    for q in range(d):
        m = min(m, buf[q])
    p = 0
    while p < d - 1 and buf[p] != m:
        p += 1
    return m, p


#: rows whose bids an auction phase (:func:`_auction`) computes together, in
#: parallel, on the same prices. 10⁶ rows, the first ε-phase (2.5·10⁶ bids): 1.29–1.37 s
#: one by one, 0.75–0.76 s in batches of 1,024 on 2 threads (1.15–1.42 s on one: the
#: batch's reads of the graph overlap), 0.81–0.82 s in batches of 4,096
BID_BATCH = 1024
#: ... while at least this many rows are queued; fewer bid one at a time (a phase ends with
#: a long tail of a few rows evicting each other: in that phase 594,392 of 2,583,921 bids
#: were made one by one with 256 here, 218,942 of 2,491,766 with 16)
BID_BATCH_MIN = 16


@nb.njit(inline="always")
def _bid(i, indptr, indices, cost, v, eps, buf):
    """Row i's bid on the prices v: (its column j1 of smallest c_ij − v_j, the first in
    edge order, and v_j1 lowered by the gap to the second smallest plus ε), or (−1, 0)
    when the row has no finite edge. ``buf`` holds at least the row's degree."""
    lo = indptr[i]
    d = indptr[i + 1] - lo
    if d == 0:
        return -1, 0.0
    ci = cost[lo:lo + d]
    ii = indices[lo:lo + d]
    for q in range(d):
        buf[q] = ci[q] - v[ii[q]]
    m1, p = _first_min(buf, d)
    if m1 == np.inf:
        return -1, 0.0  # no finite edge (as the branchy pass: no bid)
    j1 = ii[p]
    buf[p] = np.inf
    m2, _ = _first_min(buf, d)
    return j1, v[j1] - ((m2 - m1 if m2 < np.inf else 0.0) + eps)


@nb.njit(parallel=True, cache=True)
def _bids(rows, nr, indptr, indices, cost, v, eps, bufs, out_j, out_v):
    """The bids of rows[:nr] on the same prices v, in parallel (one buffer row of
    ``bufs`` per thread); the rows ``AHEAD`` places on in the batch are prefetched."""
    for t in nb.prange(nr):
        if t + AHEAD < nr:
            _prefetch_edges(rows[t + AHEAD], indptr, indices, cost)
        out_j[t], out_v[t] = _bid(rows[t], indptr, indices, cost, v, eps,
                                  bufs[nb.get_thread_id()])


@nb.njit(cache=True)
def _auction(indptr, indices, cost, v, col4row, row4col, eps, max_steps, touched,
             n_threads):
    """One ε-phase of the forward auction algorithm (Bertsekas 1988) in the duals' terms:
    every row, starting unassigned, takes the column j1 of its smallest c_ij − v_j (the
    first in edge order) and lowers v_j1 by (second smallest − smallest) + ε, evicting the
    previous owner. Ends with every row assigned and ε-complementary slackness, or after
    ``max_steps`` bids (a price war on a barely feasible graph). Only the unassigned rows
    bid (a warm start keeps the others' columns); every row that bids is marked in
    ``touched``. Returns the rows left.

    While at least BID_BATCH_MIN rows are queued, the next BID_BATCH of them bid together,
    in parallel on the same prices (the synchronous auction of Bertsekas & Castañon 1991,
    "Parallel synchronous and asynchronous implementations of the auction algorithm",
    Parallel Computing 17:707–732); the bids are then applied in queue order, each taking
    its column unless a batch-mate's bid took it first at a lower v_j1 (then the row bids
    again later). A winning bid keeps ε-complementary slackness: prices only fall, so the
    row's other reduced costs are at least those it bid on. Nothing depends on the number
    of threads or their timing: the same prices and assignment for any ``n_threads``
    (``n_threads`` ≥ the largest thread id + 1: one bid buffer each). Fewer queued rows
    (a phase's tail, a few rows evicting each other) bid one at a time on the current
    prices (Gauss–Seidel), with the rows ``AHEAD`` and 2·``AHEAD`` places on in the
    queue prefetched (their edges and ``indptr`` entry: bids waited on that memory,
    :mod:`.prefetch`).

    A bid gathers the row's reduced costs into a buffer and takes two vectorized minima:
    the same bid as one branchy pass keeping the two smallest, without its branches."""
    n = indptr.shape[0] - 1
    dmax = 0
    for i in range(n):
        dmax = max(dmax, indptr[i + 1] - indptr[i])
    bufs = np.empty((n_threads, max(dmax, 1)), np.float64)
    cap = n + 1
    queue = np.empty(cap, np.int64)
    head = 0
    size = 0
    for i in range(n):
        if col4row[i] < 0:
            queue[size] = i
            size += 1
    rows = np.empty(BID_BATCH, np.int64)
    bj = np.empty(BID_BATCH, np.int64)
    bv = np.empty(BID_BATCH, np.float64)
    stamp = np.full(row4col.shape[0], -1, np.int64)  # the last batch that took column j
    batches = 0
    steps = 0
    while size > 0 and steps < max_steps:
        batches += 1
        nr = min(size, BID_BATCH, max_steps - steps)
        if size < BID_BATCH_MIN:
            nr = 1
        for t in range(nr):
            rows[t] = queue[head]
            head += 1
            if head == cap:
                head = 0
        size -= nr
        steps += nr
        if nr == 1:
            if size > 2 * AHEAD:
                _prefetch_row(queue, head + AHEAD - 1, head + 2 * AHEAD - 1, cap, indptr,
                              indices, cost)
            bj[0], bv[0] = _bid(rows[0], indptr, indices, cost, v, eps, bufs[0])
        else:
            _bids(rows, nr, indptr, indices, cost, v, eps, bufs, bj, bv)
        for t in range(nr):
            i = rows[t]
            touched[i] = True
            j1 = bj[t]
            if j1 < 0:
                continue
            if stamp[j1] != batches or bv[t] < v[j1]:
                # v_j1 as bid on (no batch-mate took j1: the serial bid), or outbid
                stamp[j1] = batches
                v[j1] = bv[t]
                i0 = row4col[j1]
                row4col[j1] = i
                col4row[i] = j1
                if i0 < 0:
                    continue
                col4row[i0] = -1
            else:
                i0 = i  # outbid within the batch: bids again on the new prices
            q = head + size
            queue[q - cap if q >= cap else q] = i0
            size += 1
    return size


#: queue places between a bid and the row whose edges it prefetches (the row 2·AHEAD
#: places on gets its ``indptr`` entry prefetched): the row's memory is requested a few
#: bids before it is read; 1, 4 and 8 places were no faster than 2
AHEAD = 2


@nb.njit(inline="always")
def _prefetch_row(queue, q1, q2, cap, indptr, indices, cost):
    """Prefetch the edges of the row at queue place ``q1`` and the ``indptr`` entry of the
    row at place ``q2`` (places wrap around the circular queue of ``cap``)."""
    prefetch(indptr, queue[q2 - cap if q2 >= cap else q2])
    _prefetch_edges(queue[q1 - cap if q1 >= cap else q1], indptr, indices, cost)


@nb.njit(inline="always")
def _prefetch_edges(r, indptr, indices, cost):
    """Prefetch the edges (columns and costs) of row ``r``."""
    lo = indptr[r]
    hi = indptr[r + 1]
    # one prefetch per cache line of 8 entries, and the row's last line
    for e in range(lo, hi, 8):
        prefetch(cost, e)
        prefetch(indices, e)
    if hi > lo:
        prefetch(cost, hi - 1)
        prefetch(indices, hi - 1)


@nb.njit(cache=True)
def _unassign_slack(rows, indptr, indices, cost, v, col4row, row4col, eps):
    """Unassign the given rows whose column is more than eps above their row minimum of
    c_ij − v_j (they violate ε-complementary slackness for the next, smaller ε)."""
    for p in range(rows.shape[0]):
        i = rows[p]
        j0 = col4row[i]
        if j0 < 0:
            continue
        best = np.inf
        own = np.inf
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            r = cost[e] - v[j]
            if r < best:
                best = r
            if j == j0:
                own = r
        if own > best + eps:
            col4row[i] = -1
            row4col[j0] = -1


@nb.njit(cache=True)
def _lower_rows(rows, indptr, indices, cost, u, v, col4row, row4col, free_tol):
    """u_i := min_j (c_ij − v_j) for the given rows where that is more than ``free_tol``
    below u_i, and the row is freed (see :meth:`SparseAssignment.add_edges`)."""
    for p in range(rows.shape[0]):
        i = rows[p]
        m = np.inf
        for e in range(indptr[i], indptr[i + 1]):
            m = min(m, cost[e] - v[indices[e]])
        if m < u[i] - free_tol:
            u[i] = m
            j = col4row[i]
            if j >= 0:
                col4row[i] = -1
                row4col[j] = -1


@nb.njit(cache=True)
def _init_subset(rows, indptr, indices, cost, u, v, col4row, row4col):
    """:func:`_init_rows` for the given (unassigned) rows only."""
    for p in range(rows.shape[0]):
        i = rows[p]
        best = np.inf
        bj = -1
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            r = cost[e] - v[j]
            # prefer a free column among equal minima: fewer augmentations later
            if r < best or (r == best and bj >= 0 and row4col[bj] >= 0 and row4col[j] < 0):
                best = r
                bj = j
        u[i] = best if bj >= 0 else 0.0
        if bj >= 0 and row4col[bj] < 0:
            row4col[bj] = i
            col4row[i] = bj


@nb.njit(cache=True)
def _row_reduction(free_rows, indptr, indices, cost, u, v, col4row, row4col, max_steps):
    """JV's augmenting row reduction: a free row takes the column of its smallest reduced
    cost c_ij − v_j and lowers that column's v by the gap to its second smallest (a bid of
    the auction algorithm with ε = 0), evicting the previous owner, which bids next. v only
    decreases, so c̄ ≥ 0 is kept; a tie (no gap) sends the evicted row to the back of the
    queue, and ``max_steps`` bounds the work (ties can make rows chase each other)."""
    cap = free_rows.shape[0] + max_steps + 1
    queue = np.empty(cap, np.int64)
    # the rows whose u may be stale at the end: the free rows and every evicted row
    seen = np.empty(cap, np.int64)
    nseen = free_rows.shape[0]
    queue[:nseen] = free_rows
    seen[:nseen] = free_rows
    head = 0
    tail = nseen
    steps = 0
    while head < tail and steps < max_steps:
        i = queue[head]
        head += 1
        steps += 1
        m1, m2, j1, j2 = _two_smallest(i, indptr, indices, cost, v)
        if j1 < 0:
            continue
        i0 = row4col[j1]
        if m1 < m2:
            if m2 < np.inf:
                v[j1] -= m2 - m1
            u[i] = m2 if m2 < np.inf else m1
        else:
            u[i] = m1
            if i0 >= 0 and j2 >= 0:
                j1 = j2
                i0 = row4col[j2]
        if i0 == i:
            continue
        row4col[j1] = i
        col4row[i] = j1
        if i0 >= 0:
            col4row[i0] = -1
            if nseen < cap:
                seen[nseen] = i0
                nseen += 1
            if m1 < m2:
                # progress was made: the evicted row bids at once
                head -= 1
                queue[head] = i0
            elif tail < cap:
                queue[tail] = i0
                tail += 1
    _restore_rows(seen[:nseen], indptr, indices, cost, u, v, col4row)


@nb.njit(inline="always")
def _two_smallest(i, indptr, indices, cost, v):
    """(m1, m2, j1, j2): row i's two smallest reduced costs c_ij − v_j and their columns
    (the first in edge order among equal values; −1 when missing)."""
    m1 = np.inf
    m2 = np.inf
    j1 = -1
    j2 = -1
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        r = cost[e] - v[j]
        if r < m2:
            if r < m1:
                m2 = m1
                j2 = j1
                m1 = r
                j1 = j
            else:
                m2 = r
                j2 = j
    return m1, m2, j1, j2


@nb.njit(cache=True)
def _restore_rows(rows, indptr, indices, cost, u, v, col4row):
    """The duals' invariants after :func:`_row_reduction`, for the rows that bid or were
    evicted: matched rows tight, free rows at their row minimum. Any other row kept its
    column, whose v did not move (a bid on it would have evicted the row), and its
    u = c_ij − v_j exactly (every caller's state: row minima, polish, add_edges frees the
    rows it lowers)."""
    for p in range(rows.shape[0]):
        i = rows[p]
        j = col4row[i]
        if j >= 0:
            for e in range(indptr[i], indptr[i + 1]):
                if indices[e] == j:
                    u[i] = cost[e] - v[j]
                    break
        else:
            best = np.inf
            for e in range(indptr[i], indptr[i + 1]):
                r = cost[e] - v[indices[e]]
                if r < best:
                    best = r
            u[i] = best if best < np.inf else 0.0


# ---------------------------------------------------------------------------------------
# binary min-heap of node ids, keyed by key[·]; pos[·] is each node's place (−1: out).
# Order: smaller key first, on equal keys a node with free[·] set first (the shortest-path
# search ends at a free column; the flattening passes no free node)
# ---------------------------------------------------------------------------------------
@nb.njit(inline="always")
def _less(key, free, a, b):
    """Heap order: smaller distance first; on equal distance a free column first (it ends
    the search at once)."""
    return key[a] < key[b] or (key[a] == key[b] and free[a] and not free[b])


@nb.njit(inline="always")
def _swap(heap, pos, p, q):
    """Exchange the heap's entries at places p and q, and their places in ``pos``."""
    a_ = heap[p]
    heap[p] = heap[q]
    heap[q] = a_
    pos[heap[p]] = p
    pos[heap[q]] = q


@nb.njit(inline="always")
def _sift_up(heap, pos, key, free, q):
    """Move heap[q] up to its place (after a push or a decrease of its key)."""
    while q > 0:
        par = (q - 1) >> 1
        if not _less(key, free, heap[q], heap[par]):
            return
        _swap(heap, pos, q, par)
        q = par


@nb.njit(inline="always")
def _sift_down(heap, pos, key, free, q, size):
    """Move heap[q] down the heap of its first ``size`` entries."""
    while True:
        lft = 2 * q + 1
        if lft >= size:
            return
        c = lft
        if lft + 1 < size and _less(key, free, heap[lft + 1], heap[lft]):
            c = lft + 1
        if not _less(key, free, heap[c], heap[q]):
            return
        _swap(heap, pos, q, c)
        q = c


@nb.njit(inline="always")
def _pop(heap, pos, key, free, size):
    """Remove and return the top of a heap of ``size`` entries (``size`` − 1 remain)."""
    top = heap[0]
    pos[top] = -1
    size -= 1
    if size > 0:
        last = heap[size]
        heap[0] = last
        pos[last] = 0
        _sift_down(heap, pos, key, free, 0, size)
    return top


@nb.njit(cache=True)
def _augment(rows, indptr, indices, cost, u, v, col4row, row4col, d, pred, done, hpos, heap,
             touched, sr, sc, stats):
    """Shortest augmenting path from each free row in ``rows`` (JV 1987 / Crouse 2016
    dual update). Returns the number of rows processed before a row found no free column
    (== len(rows) on success)."""
    free = row4col < 0  # refreshed per search (see _search)
    for p in range(rows.shape[0]):
        r = rows[p]
        if col4row[r] >= 0:
            continue
        sink, minval, nt, nsr, nsc, hsize = _search(r, indptr, indices, cost, u, v, row4col,
                                                    d, pred, done, hpos, heap, touched, sr,
                                                    sc, free)
        stats[0] += nsc
        stats[1] = max(stats[1], nsc)
        stats[2] += nt
        if sink >= 0:
            _apply_path(r, sink, minval, sr[:nsr], sc[:nsc], u, v, col4row, row4col, d, pred)
        # reset the search state touched by this row
        for q in range(nt):
            j = touched[q]
            d[j] = np.inf
            done[j] = False
            hpos[j] = -1
        for q in range(hsize):
            hpos[heap[q]] = -1
        if sink < 0:
            return p
    return rows.shape[0]


@nb.njit(cache=True)
def _search(r, indptr, indices, cost, u, v, row4col, d, pred, done, hpos, heap, touched,
            sr, sc, free):
    """Dijkstra in reduced costs from the free row r until a free column is settled.
    Returns (that column or −1 when none is reachable, its distance, the number of columns
    reached (listed in ``touched``), of rows scanned (``sr``), of columns settled (``sc``),
    and the heap's size left). d, pred, done, hpos: the search state, reset by the
    caller."""
    nt = 0
    nsr = 0
    nsc = 0
    hsize = 0
    i = r
    minval = 0.0
    while True:
        sr[nsr] = i
        nsr += 1
        ui = u[i]
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            if done[j]:
                continue
            rc = cost[e] - ui - v[j]
            if rc < 0.0:
                rc = 0.0  # round-off only: duals are feasible on the graph
            dj = minval + rc
            if dj < d[j]:
                if d[j] == np.inf:
                    touched[nt] = j
                    nt += 1
                    free[j] = row4col[j] < 0
                d[j] = dj
                pred[j] = i
                if hpos[j] < 0:  # push, then sift up (also a decrease-key)
                    heap[hsize] = j
                    hpos[j] = hsize
                    hsize += 1
                _sift_up(heap, hpos, d, free, hpos[j])
        if hsize == 0:
            return -1, minval, nt, nsr, nsc, 0
        j = _pop(heap, hpos, d, free, hsize)
        hsize -= 1
        minval = d[j]
        done[j] = True
        sc[nsc] = j
        nsc += 1
        if row4col[j] < 0:
            return j, minval, nt, nsr, nsc, hsize
        i = row4col[j]
        if hsize > 0 and row4col[heap[0]] >= 0:
            # the row after i, unless row i's edges lower another column below it
            _prefetch_edges(row4col[heap[0]], indptr, indices, cost)


@nb.njit(cache=True)
def _apply_path(r, sink, minval, sr, sc, u, v, col4row, row4col, d, pred):
    """After a search from row r reached the free column ``sink`` at distance ``minval``:
    the dual update (rows scanned ``sr``, columns settled ``sc``), which keeps c̄ ≥ 0 and
    makes the path tight, then the augmentation along ``pred``."""
    u[r] += minval
    for q in range(1, sr.shape[0]):
        i = sr[q]
        u[i] += minval - d[col4row[i]]
    for q in range(sc.shape[0]):
        j = sc[q]
        v[j] -= minval - d[j]
    j = sink
    while True:
        i = pred[j]
        row4col[j] = i
        nxt = col4row[i]
        col4row[i] = j
        j = nxt
        if i == r:
            break


@nb.njit(cache=True)
def _flatten(indptr, indices, cost, u, v, col4row, row4col, cap):
    """Replace optimal duals by the largest ones with v_σ(i) ≤ cap[i] (σ the matching).

    With φ_l = v_σ(l) the duals of a fixed optimal matching σ are the solutions of the
    difference constraints φ_l − φ_i ≤ c_{iσ(l)} − c_{iσ(i)} (one per edge); the largest
    solution with φ ≤ cap is φ = shortest-path distance from a super source joined to
    every node l by an edge of length cap[l], and it is the largest in every component at
    once. Computed by one multi-source Dijkstra on the reduced costs of the current duals
    (Johnson reweighting: they are ≥ 0).

    cap = 0 gives the flattest duals (the smallest spread max φ − min φ), which make
    u_i + v_j small for pairs far apart: what the certificate's bound needs. cap = the
    v of an earlier certificate gives, after a re-solve, the duals with v nowhere above it
    and every u_i as small as that allows: the bounds that certificate left stay valid and
    only the rows whose u_i the new matching forces up need a new scan."""
    n = indptr.shape[0] - 1
    big = -np.inf
    for i in range(n):
        if v[col4row[i]] - cap[i] > big:
            big = v[col4row[i]] - cap[i]
    d = np.empty(n)
    heap = np.empty(n, np.int64)
    pos = np.empty(n, np.int64)
    done = np.zeros(n, np.bool_)
    free = np.zeros(n, np.bool_)  # no tie rule: the order of smaller distance only
    for i in range(n):
        d[i] = big - (v[col4row[i]] - cap[i])  # reweighted super-source edge, ≥ 0
        heap[i] = i
        pos[i] = i
    size = n
    for q0 in range(size // 2 - 1, -1, -1):  # heapify
        _sift_down(heap, pos, d, free, q0, size)
    while size > 0:
        i = _pop(heap, pos, d, free, size)
        size -= 1
        done[i] = True
        if size > 0:
            # the next row to settle, unless row i's edges lower another below it
            _prefetch_edges(heap[0], indptr, indices, cost)
        di = d[i]
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            lrow = row4col[j]
            if lrow < 0 or done[lrow]:
                continue
            rc = cost[e] - u[i] - v[j]
            if rc < 0.0:
                rc = 0.0
            nd = di + rc
            if nd < d[lrow]:
                d[lrow] = nd
                _sift_up(heap, pos, d, free, pos[lrow])
    for i in range(n):
        j = col4row[i]
        phi = d[i] - big + v[j]  # undo the reweighting
        if phi > cap[i]:
            phi = cap[i]
        u[i] += v[j] - phi
        v[j] = phi


@nb.njit(cache=True)
def _reduced(indptr, indices, cost, u, v, out):
    n = indptr.shape[0] - 1
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            out[e] = cost[e] - u[i] - v[indices[e]]


# ---------------------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------------------
def to_csr(rows: np.ndarray, cols: np.ndarray, costs: np.ndarray, n_rows: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COO edges → CSR (indptr, indices, costs), sorted by (row, column), duplicate pairs
    dropped (a pair's cost is the same wherever it was found)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    costs = np.asarray(costs, np.float64)
    key = rows * (int(cols.max()) + 1 if cols.size else 1) + cols
    order = np.argsort(key, kind="stable")
    key = key[order]
    keep = np.ones(key.shape[0], bool)
    keep[1:] = key[1:] != key[:-1]
    order = order[keep]
    r, c, w = rows[order], cols[order], costs[order]
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n_rows), out=indptr[1:])
    return indptr, np.ascontiguousarray(c), np.ascontiguousarray(w)


#: spare entries at the end of a candidate graph's arrays, as a fraction of its edges
#: (:func:`merge_csr` with ``room``): the spine and the repair rounds' edges then merge in
#: place (:func:`merge_into`) instead of into fresh arrays, whose first touch (page
#: faults) costs more than the merge itself; spare entries never written take no memory
GRAPH_ROOM = 0.25


def merge_csr(ip: np.ndarray, ix: np.ndarray, w: np.ndarray, jp: np.ndarray, jx: np.ndarray,
              jw: np.ndarray, room: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of two CSR graphs over the same rows, each sorted by (row, column) without
    duplicates, in the same form (a pair in both keeps the first graph's cost). With
    ``room`` > 0 the columns and costs are the leading views of buffers with that fraction
    of spare entries, which :func:`merge_into` can merge into later."""
    return _merge_new(ip, ix, w, jp, jx, jw, _merged_ptr(ip, ix, jp, jx), room)


def _merge_new(ip, ix, w, jp, jx, jw, ptr: np.ndarray, room: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`merge_csr` into fresh arrays, given the union's row pointers."""
    m = int(ptr[-1])
    cap = m + int(room * m)
    out_x = np.empty(cap, np.int64)[:m] if cap > m else np.empty(m, np.int64)
    out_w = np.empty(cap, np.float64)[:m] if cap > m else np.empty(m, np.float64)
    _merge_fill(ip, ix, w, jp, jx, jw, ptr, out_x, out_w)
    return ptr, out_x, out_w


def merge_into(ip: np.ndarray, ix: np.ndarray, w: np.ndarray, jp: np.ndarray, jx: np.ndarray,
               jw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`merge_csr` of the same graphs, written over the first one's columns and costs
    when both are the leading views of buffers with room for the union (as ``merge_csr``
    with ``room`` makes them); else a new ``merge_csr`` with :data:`GRAPH_ROOM`. In place,
    rows go from the last to the first and each is merged from its end backwards: an
    entry moves only to the right (by the edges added to the rows before it, and to its
    own row after it), so none is overwritten before it is read. ``ix`` and ``w`` must
    not be used afterwards."""
    bx, bw = ix.base, w.base
    ptr = _merged_ptr(ip, ix, jp, jx)
    m = int(ptr[-1])
    if not (_leading(ix, bx) and _leading(w, bw) and bx.shape == bw.shape
            and m <= bx.shape[0]):
        return _merge_new(ip, ix, w, jp, jx, jw, ptr, GRAPH_ROOM)  # ptr: not counted twice
    _merge_back(ip, bx, bw, jp, jx, jw, ptr)
    return ptr, bx[:m], bw[:m]


def _leading(a: np.ndarray, b: object) -> bool:
    """Whether ``a`` is a leading slice of the 1-D array ``b`` (same dtype and start)."""
    return (isinstance(b, np.ndarray) and b.ndim == 1 and a.ndim == 1 and b.dtype == a.dtype
            and b.flags.c_contiguous and a.ctypes.data == b.ctypes.data)


def _merged_ptr(ip, ix, jp, jx) -> np.ndarray:
    """The union's row pointers (see :func:`merge_csr`)."""
    ptr = np.zeros(ip.shape[0], np.int64)
    _merge_count(ip, ix, jp, jx, ptr)
    np.cumsum(ptr, out=ptr)
    return ptr


@nb.njit(cache=True)
def _merge_back(ip, bx, bw, jp, jx, jw, ptr):
    """The union of (ip, bx, bw) and (jp, jx, jw) written over bx, bw at ``ptr`` (see
    :func:`merge_into`); stops at the first row, from the end, before which nothing was
    added."""
    for i in range(ip.shape[0] - 2, -1, -1):
        a0, b0 = ip[i], jp[i]
        a, b, p = ip[i + 1] - 1, jp[i + 1] - 1, ptr[i + 1] - 1
        if b < b0 and p == a:
            break  # nothing added to this row or before it: they all stay where they are
        while a >= a0 or b >= b0:
            if b < b0 or (a >= a0 and bx[a] > jx[b]):
                bx[p] = bx[a]
                bw[p] = bw[a]
                a -= 1
            elif a < a0 or jx[b] > bx[a]:
                bx[p] = jx[b]
                bw[p] = jw[b]
                b -= 1
            else:  # in both: the first graph's cost
                bx[p] = bx[a]
                bw[p] = bw[a]
                a -= 1
                b -= 1
            p -= 1


@nb.njit(parallel=True, cache=True)
def _merge_count(ip, ix, jp, jx, ptr):
    """ptr[i + 1] = the size of row i of the union (rows in parallel); the caller sums
    them up."""
    for i in nb.prange(ip.shape[0] - 1):
        a, ae, b, be = ip[i], ip[i + 1], jp[i], jp[i + 1]
        if a == ae or b == be:
            ptr[i + 1] = ae - a + be - b
            continue
        cnt = 0
        while a < ae or b < be:
            if b >= be or (a < ae and ix[a] < jx[b]):
                a += 1
            elif a >= ae or jx[b] < ix[a]:
                b += 1
            else:
                a += 1
                b += 1
            cnt += 1
        ptr[i + 1] = cnt


@nb.njit(parallel=True, cache=True)
def _merge_fill(ip, ix, w, jp, jx, jw, ptr, out_x, out_w):
    # rows in parallel (ptr fixes where each goes); a row that only one graph has is
    # copied whole: a repair round adds few edges to a graph of millions, and the merge's
    # data-dependent branches cost several times a copy
    for i in nb.prange(ip.shape[0] - 1):
        a, ae, b, be = ip[i], ip[i + 1], jp[i], jp[i + 1]
        p = ptr[i]
        if b == be:
            out_x[p:p + ae - a] = ix[a:ae]
            out_w[p:p + ae - a] = w[a:ae]
            continue
        if a == ae:
            out_x[p:p + be - b] = jx[b:be]
            out_w[p:p + be - b] = jw[b:be]
            continue
        while a < ae or b < be:
            if b >= be or (a < ae and ix[a] < jx[b]):
                out_x[p] = ix[a]
                out_w[p] = w[a]
                a += 1
            elif a >= ae or jx[b] < ix[a]:
                out_x[p] = jx[b]
                out_w[p] = jw[b]
                b += 1
            else:
                out_x[p] = ix[a]
                out_w[p] = w[a]
                a += 1
                b += 1
            p += 1


def _lap(times: dict, name: str, t0: float) -> float:
    """times[name] += seconds since t0; returns now."""
    t = time.perf_counter()
    times[name] = times.get(name, 0.0) + t - t0
    return t


class SparseAssignment:
    """Minimum-cost row-saturating matching on a sparse graph, with dual potentials.

    ``indptr/indices/cost``: CSR graph, n_rows ≤ n_cols, finite costs. After
    :meth:`solve` (True when every row is matched): ``col4row``, ``row4col`` (−1 = free),
    ``u``, ``v`` with c_ij − u_i − v_j ≥ 0 on every edge (up to round-off) and = 0 on the
    matching."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, cost: np.ndarray,
                 n_cols: int):
        self.n_rows = indptr.shape[0] - 1
        self.n_cols = int(n_cols)
        if self.n_rows > self.n_cols:
            raise ValueError("SparseAssignment needs n_rows <= n_cols (transpose the problem)")
        self.square = self.n_rows == self.n_cols
        self._set_graph(indptr, indices, cost)
        self.u = np.zeros(self.n_rows)
        self.v = np.zeros(self.n_cols)
        self.col4row = np.full(self.n_rows, -1, np.int64)
        self.row4col = np.full(self.n_cols, -1, np.int64)
        nc = self.n_cols
        self._work = (np.full(nc, np.inf), np.empty(nc, np.int64), np.zeros(nc, np.bool_),
                      np.full(nc, -1, np.int64), np.empty(nc, np.int64),
                      np.empty(nc, np.int64), np.empty(self.n_rows + 1, np.int64),
                      np.empty(nc, np.int64), np.zeros(3, np.int64))
        self.started = False
        #: seconds per phase of the last :meth:`solve` (and :meth:`flatten`), and counts
        self.phase_times: dict[str, float | int] = {}
        self.augmentations = 0
        self.auction = True
        # cold ε-scaling from 0.002·scale (the cost range of the graph): a coarser start
        # (0.05·scale) made the first solve on the screened graphs slower
        self.eps0, self.eps_div, self.eps_end = 0.002, 5.0, 1e-7
        self.warm_eps0 = 1e-3    # restart(keep_prices=True)
        self.rewarm_eps0 = 1e-5  # the freed rows' auction after rewarm()
        self.settle_paths = SETTLE_PATHS
        self._settle = False
        self._prices: np.ndarray | None = None
        self._raw: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._added: list[np.ndarray] = []
        #: added edges whose reduced cost is ≥ −free_tol free no row (see :meth:`add_edges`)
        self.free_tol = 0.0

    def _set_graph(self, indptr: np.ndarray, indices: np.ndarray, cost: np.ndarray) -> None:
        self.indptr = np.ascontiguousarray(indptr, np.int64)
        self.indices = np.ascontiguousarray(indices, np.int64)
        self.cost = np.ascontiguousarray(cost, np.float64)

    @property
    def n_edges(self) -> int:
        return int(self.indices.shape[0])

    def solve(self, progress: Progress | None = None, batch: int = 4096) -> bool:
        """Match every row (warm: only the currently free ones). False if some row cannot
        be matched (the graph has no row-saturating matching)."""
        if self.started and (self.col4row >= 0).all():
            return True  # nothing to do (phase_times keep the last solve's)
        pt = self.phase_times = {}
        t = self._start(pt, time.perf_counter())
        t = _lap(pt, "start", t)
        # augmenting row reduction (cold and warm starts): cheap local bidding settles most
        # free rows; it only lowers v
        free = np.flatnonzero(self.col4row < 0)
        for _ in range(2):  # two passes, as JV
            if free.size == 0:
                break
            _row_reduction(free, self.indptr, self.indices, self.cost, self.u, self.v,
                           self.col4row, self.row4col, 4 * free.shape[0] + 16)
            free = np.flatnonzero(self.col4row < 0)
        t = _lap(pt, "row_reduction", t)
        pt["free"] = free.shape[0]
        total = free.shape[0]
        for lo in range(0, total, batch):
            chunk = free[lo:lo + batch]
            done = _augment(chunk, self.indptr, self.indices, self.cost, self.u, self.v,
                            self.col4row, self.row4col, *self._work)
            self.augmentations += int(done)
            if done < chunk.shape[0]:
                return False
            if progress is not None:
                progress(min(lo + batch, total), total)
        _lap(pt, "augment", t)
        pt["scanned"] = int(self._work[-1][0])  # rows reached by the searches
        self._work[-1][:] = 0
        return True

    def _start(self, pt: dict, t: float) -> float:
        """The start of :meth:`solve`: a cold start (initial duals and matching, from the
        auction's prices above 1,000 rows) or, after :meth:`rewarm`, the freed rows' bids;
        returns the time of the last lap of ``pt``."""
        if not self.started:
            if self.square and self._prices is not None:
                # restart(keep_prices=True): the auction starts at the last optimal prices,
                # so its coarse phases (most of a cold start's bids) are skipped
                self.v[:] = self._prices
                self._prices = None
                _init_rows(self.indptr, self.indices, self.cost, self.u, self.v, self.col4row,
                           self.row4col)
                if self.auction and self.n_rows > 1000:
                    self._auction_prices(self.warm_eps0)
            elif self.square:
                _init_square(self.indptr, self.indices, self.cost, self.u, self.v,
                             self.col4row, self.row4col)
                t = _lap(pt, "init", t)
                if self.auction and self.n_rows > 1000:
                    self._auction_prices(self.eps0)
            else:
                self.v[:] = 0.0
                _init_rows(self.indptr, self.indices, self.cost, self.u, self.v, self.col4row,
                           self.row4col)
            self.started = True
        elif self._settle:
            # after rewarm(): the freed rows bid first (see warm_auction), unless so few
            # were freed that the row reduction and shortest paths settle them for less
            # than the auction's spread (SETTLE_PATHS)
            self._settle = False
            if (self.auction and self.n_rows > 1000
                    and int((self.col4row < 0).sum()) > self.settle_paths):
                self.warm_auction(self.rewarm_eps0)
            t = _lap(pt, "auction", t)
        return t

    def _auction_prices(self, eps0: float) -> None:
        """Near-optimal column duals by ε-scaling auction (ε from eps0·scale down to
        1e-7·scale), then a fresh start from them (row minima, greedy matching): the
        shortest-path phase that follows only has to fix local conflicts instead of
        searching far for free columns."""
        lo, hi, _ = finite_range(self.cost)
        if lo > hi:
            return  # no finite cost
        scale = float(hi - lo) or 1.0
        eps = eps0 * scale
        n = self.n_rows
        touched = np.zeros(n, np.bool_)  # unused here: every row bids
        pt = getattr(self, "phase_times", {})
        ph = 0
        while eps > self.eps_end * scale:
            self.col4row[:] = -1
            self.row4col[:] = -1
            t = time.perf_counter()
            left = _auction(self.indptr, self.indices, self.cost, self.v,
                            self.col4row, self.row4col, eps, 40 * n, touched,
                            nb.config.NUMBA_NUM_THREADS)
            _lap(pt, "auction", t)
            ph += 1
            pt["phases"] = ph
            if left:
                break  # price war: keep the prices reached, finish with shortest paths
            eps /= self.eps_div
        self.col4row[:] = -1
        self.row4col[:] = -1
        _init_rows(self.indptr, self.indices, self.cost, self.u, self.v, self.col4row,
                   self.row4col)

    def add_edges(self, rows: np.ndarray, cols: np.ndarray, costs: np.ndarray) -> None:
        """Add edges and restore dual feasibility for them: a row whose new minimum reduced
        cost is below −``free_tol`` gets u_i lowered to it (square problems: the row is
        freed and re-augmented by the next :meth:`solve`); rectangular problems restart,
        since a freed column would keep a negative v. Edges within ``free_tol`` of tight
        (round-off of the solver's sums, exact ties) join as they are, as the graph's own
        non-matched edges carry that round-off after :meth:`polish`: a caller that checks
        reduced costs with that tolerance loses nothing, and no row is re-augmented for
        them."""
        # merge row by row (both sorted by column): no re-sort of the whole graph, whose
        # global argsort costs seconds and gigabytes per repair round at 10⁶ rows
        # (in place when the graph's arrays have room: no fresh memory to fault in)
        self._set_graph(*merge_into(self.indptr, self.indices, self.cost,
                                    *to_csr(rows, cols, costs, self.n_rows)))
        if not self.started:
            return
        if not self.square:
            self.started = False
            self.col4row[:] = -1
            self.row4col[:] = -1
            return
        rows = np.unique(np.asarray(rows, np.int64))
        self._added.append(rows)
        self._lower_rows(rows)

    def _lower_rows(self, rows: np.ndarray) -> None:
        """u_i := min_j c̄-feasible value for the given rows; a row whose u falls by more
        than ``free_tol`` is freed."""
        _lower_rows(np.ascontiguousarray(rows, np.int64), self.indptr, self.indices,
                    self.cost, self.u, self.v, self.col4row, self.row4col, self.free_tol)

    def rewarm(self) -> None:
        """Go back to the duals the last :meth:`flatten` started from (optimal for the
        matching it kept, but not flat: few tight edges, so augmenting paths stay short)
        and free the rows whose added edges violate them; the next :meth:`solve` is a
        warm start from there, in which the freed rows first bid (:meth:`warm_auction`
        from ε = ``rewarm_eps0``·scale; square problems of more than 1,000 rows, as the
        cold start's auction, when more than ``settle_paths`` rows were freed). Falls back
        to :meth:`restart` without such duals."""
        if self._raw is None:
            self.restart()
            return
        u, v, c4r = self._raw
        self.u[:] = u
        self.v[:] = v
        self.col4row[:] = c4r
        self.row4col[:] = -1
        self.row4col[c4r] = np.arange(self.n_rows)
        self.polish()  # u = c − v on the matching, exactly (the row reduction relies on it)
        self._raw = None
        if self._added:
            self._lower_rows(np.unique(np.concatenate(self._added)))
        self._added = []
        self._settle = True

    def warm_auction(self, eps0: float) -> None:
        """Settle the free rows of a warm start (rows matched with zero slack, e.g. after
        :meth:`rewarm`) by ε-scaling auction phases in which only they and the rows they
        evict bid, from ε = ``eps0``·scale down to the cold start's finest ε; then every row
        that bid is unmatched and gets its row minimum (c̄ ≥ 0 again, exactly), and
        :meth:`solve` settles the few conflicts by shortest paths."""
        free = self.col4row < 0
        if not free.any() or not self.square:
            return
        scale = self._scale()
        eps = eps0 * scale
        touched = np.zeros(self.n_rows, np.bool_)
        n = self.n_rows
        while True:
            left = _auction(self.indptr, self.indices, self.cost, self.v,
                            self.col4row, self.row4col, eps, 40 * n, touched,
                            nb.config.NUMBA_NUM_THREADS)
            eps /= self.eps_div
            if left or eps <= self.eps_end * scale:
                break
            _unassign_slack(np.flatnonzero(touched), self.indptr, self.indices, self.cost,
                            self.v, self.col4row, self.row4col, eps)
        rows = np.flatnonzero(touched | (self.col4row < 0))
        cols = self.col4row[rows]
        self.row4col[cols[cols >= 0]] = -1
        self.col4row[rows] = -1
        _init_subset(rows, self.indptr, self.indices, self.cost, self.u, self.v,
                     self.col4row, self.row4col)
        self.phase_times["bid_rows"] = int(rows.shape[0])

    def _scale(self) -> float:
        lo, hi, _ = finite_range(self.cost)
        return (float(hi - lo) or 1.0) if lo <= hi else 1.0

    def restart(self, keep_prices: bool = False) -> None:
        """Forget the matching and duals: the next :meth:`solve` starts afresh — from the
        current column prices v with ``keep_prices`` (square problems; the ε-scaling
        auction then starts at ``warm_eps0``, prices that are optimal for a graph with
        fewer edges are near-optimal for this one)."""
        self._prices = (self._raw[1] if self._raw is not None else self.v.copy()) \
            if keep_prices and self.square else None
        self._raw = None
        self._added = []
        self._settle = False
        self.started = False
        self.col4row[:] = -1
        self.row4col[:] = -1
        self.u[:] = 0.0
        self.v[:] = 0.0

    def flatten(self, below: np.ndarray | None = None) -> None:
        """Re-normalise the (optimal) duals to the flattest ones (v ≤ 0), or with
        ``below`` (per column) to the largest ones with v ≤ ``below``: after a re-solve,
        the duals that move least from an earlier certificate's (see :func:`_flatten`;
        these keep the duals :meth:`rewarm` goes back to, and the edges added since).
        Square problems only (a rectangular problem needs v = 0 on free columns)."""
        if self.square and (self.col4row >= 0).all():
            if below is None:  # the duals rewarm() goes back to (``below`` keeps them)
                self._raw = (self.u.copy(), self.v.copy(), self.col4row.copy())
                self._added = []
            t = time.perf_counter()
            cap = np.zeros(self.n_rows) if below is None else below[self.col4row]
            _flatten(self.indptr, self.indices, self.cost, self.u, self.v, self.col4row,
                     self.row4col, np.ascontiguousarray(cap, np.float64))
            _lap(self.phase_times, "flatten", t)

    def polish(self) -> None:
        """u_i := c_{i,σ(i)} − v_{σ(i)} exactly, so matched edges are tight to the bit (the
        search's accumulated round-off moves to the non-matched edges' reduced costs, which
        the certificate checks with a tolerance)."""
        rows = np.flatnonzero(self.col4row >= 0)
        self.u[rows] = self.matched_cost()[rows] - self.v[self.col4row[rows]]

    def matched_cost(self) -> np.ndarray:
        """c_{i,σ(i)} per row (NaN when unmatched)."""
        out = np.full(self.n_rows, np.nan)
        _matched_cost(self.indptr, self.indices, self.cost, self.col4row, out)
        return out

    def reduced_costs(self) -> np.ndarray:
        """c̄_e = c_e − u_i − v_j for every edge, in CSR order."""
        out = np.empty(self.n_edges)
        _reduced(self.indptr, self.indices, self.cost, self.u, self.v, out)
        return out


@nb.njit(cache=True)
def finite_range(cost):
    """(smallest, largest, largest |·|) of the finite entries of ``cost`` in one pass,
    without the copy of ``cost[np.isfinite(cost)]`` (+inf, −inf, 0 when there is none)."""
    lo = np.inf
    hi = -np.inf
    ab = 0.0
    for e in range(cost.shape[0]):
        c = cost[e]
        if np.isfinite(c):
            lo = min(lo, c)
            hi = max(hi, c)
            ab = max(ab, abs(c))
    return lo, hi, ab


@nb.njit(cache=True)
def _matched_cost(indptr, indices, cost, col4row, out):
    """out[i] = cost of the edge (i, col4row[i]) (a row's columns are distinct); no
    edge-sized temporaries, which :meth:`SparseAssignment.polish` would allocate every
    round."""
    for i in range(indptr.shape[0] - 1):
        j = col4row[i]
        if j >= 0:
            for e in range(indptr[i], indptr[i + 1]):
                if indices[e] == j:
                    out[i] = cost[e]
                    break


def has_full_matching(indptr: np.ndarray, indices: np.ndarray, n_cols: int
                      ) -> tuple[bool, np.ndarray]:
    """Hopcroft–Karp (scipy): whether every row can be matched, and a maximum matching
    (column of each row, −1 free)."""
    n = indptr.shape[0] - 1
    g = csr_matrix((np.ones(indices.shape[0], np.int8), indices, indptr), shape=(n, n_cols))
    m = maximum_bipartite_matching(g, perm_type="column")
    return bool((m >= 0).all()), m


def allowed_edges(indptr: np.ndarray, indices: np.ndarray, col4row: np.ndarray, n_cols: int,
                  releasable: np.ndarray | None = None) -> np.ndarray:
    """Per CSR edge: does it lie in some row-saturating matching? (Tassa 2012.)

    Alternating digraph on rows (0..n−1), columns (n..n+n'−1) and one extra node F: matched
    edges column → row, other edges row → column. An edge (i, j) outside the matching is
    allowed iff it closes an alternating cycle, i.e. i and j share a strongly connected
    component. With rows < columns an alternating path may also end at a free column,
    releasing the column it started from: free columns → F and F → every matched column
    that may be released (``releasable``, default all; for the optimal matchings among the
    tight edges only columns with v_j = 0 may be released, since the cost changes by
    −v_j)."""
    n = indptr.shape[0] - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    matched = col4row[rows] == indices
    src = [rows[~matched], n + col4row]
    dst = [n + indices[~matched], np.arange(n)]
    is_free = np.ones(n_cols, bool)
    is_free[col4row] = False
    if is_free.any():
        f = n + n_cols
        rel = col4row if releasable is None else col4row[releasable[col4row]]
        src += [n + np.flatnonzero(is_free), np.full(rel.shape[0], f)]
        dst += [np.full(int(is_free.sum()), f), n + rel]
    s, t = np.concatenate(src), np.concatenate(dst)
    size = n + n_cols + 1
    g = csr_matrix((np.ones(s.shape[0], np.int8), (s, t)), shape=(size, size))
    _, lab = connected_components(g, directed=True, connection="strong")
    return matched | (lab[rows] == lab[n + indices])


def dense_assignment(cost: np.ndarray) -> np.ndarray:
    """Minimum-cost assignment on a dense matrix (every row of the smaller side matched):
    the column of each row (−1 for rows left unmatched when rows > columns), with
    :class:`SparseAssignment` on the complete bipartite graph. Among several optimal
    assignments the one returned depends only on this module's code and the matrix's
    order, never on another library's version (scipy's ``linear_sum_assignment`` changed
    its choice among tied optima between releases, and on files in row order it favoured
    the identity): callers that must not favour any pairing pass the matrix in a seeded
    random order. Needs 8 bytes per pair besides the matrix (column indices)."""
    cost = np.asarray(cost, dtype=np.float64)
    flip = cost.shape[0] > cost.shape[1]
    c = np.ascontiguousarray(cost.T if flip else cost)
    n_r, n_c = c.shape
    indptr = np.arange(n_r + 1, dtype=np.int64) * n_c
    indices = np.tile(np.arange(n_c, dtype=np.int64), n_r)
    sa = SparseAssignment(indptr, indices, c.ravel(), n_c)
    if not sa.solve():  # a complete graph always has a row-saturating matching
        raise ValueError("the cost matrix has no finite assignment")
    if not flip:
        return sa.col4row.copy()
    link = np.full(cost.shape[0], -1, np.int64)
    link[sa.col4row] = np.arange(n_r)
    return link
