"""Sparse assignment (engine/matching/assignment.py): warm starts after added edges — plain
(flattened duals, freed rows re-augmented), :meth:`SparseAssignment.rewarm` (back to the
duals before flattening) and a restart from the last prices — against scipy's dense
assignment on graphs with ties."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from linkrisk.engine.matching.assignment import SparseAssignment, dense_assignment, to_csr


def _graph(n: int, deg: int, rng: np.random.Generator, levels: int):
    """A random square graph holding a perfect matching (the identity), each row ``deg``
    more random columns; integer costs in [0, levels) (many ties); the full edge list
    beside it (rows, cols, costs) with a second batch of edges held back."""
    perm = rng.permutation(n)
    rows = np.concatenate([np.arange(n), np.repeat(np.arange(n), deg)])
    cols = np.concatenate([perm, rng.integers(0, n, n * deg)])
    key = np.unique(rows * n + cols)  # each pair once
    rows, cols = key // n, key % n
    costs = rng.integers(0, levels, rows.shape[0]).astype(np.float64)
    # hold back 30 % of the edges, never those of the perfect matching perm
    held = (rng.random(rows.shape[0]) < 0.3) & (cols != perm[rows])
    return (rows, cols, costs), held


def _optimum(n: int, rows, cols, costs) -> float:
    c = np.full((n, n), 1e9)
    c[rows, cols] = costs
    r, s = linear_sum_assignment(c)
    assert (c[r, s] < 1e9).all()
    return float(c[r, s].sum())


def _check(sa: SparseAssignment, want: float) -> None:
    assert (sa.col4row >= 0).all()
    assert np.unique(sa.col4row).size == sa.n_rows
    assert np.nansum(sa.matched_cost()) == pytest.approx(want, abs=1e-9)
    rc = sa.reduced_costs()
    assert rc.min() >= -1e-9  # dual feasible on the graph
    r = np.repeat(np.arange(sa.n_rows), np.diff(sa.indptr))
    on = sa.col4row[r] == sa.indices
    assert np.abs(rc[on]).max() <= 1e-9  # complementary slackness


@pytest.mark.parametrize("n,deg,levels,seed", [(60, 3, 4, 0), (200, 4, 3, 1),
                                               (1300, 3, 20, 2), (1300, 5, 5, 3)])
@pytest.mark.parametrize("mode", ["warm", "rewarm", "rewarm-paths", "mixed", "prices"])
def test_warm_starts_equal_scipy_with_ties(n, deg, levels, seed, mode):
    rng = np.random.default_rng(seed)
    (rows, cols, costs), held = _graph(n, deg, rng, levels)
    # n > 1000: the cold start goes through the auction prices
    sa = SparseAssignment(*to_csr(rows[~held], cols[~held], costs[~held], n), n)
    if mode == "rewarm-paths":
        sa.settle_paths = n  # the freed rows settled by shortest paths, without an auction
    assert sa.solve()
    _check(sa, _optimum(n, rows[~held], cols[~held], costs[~held]))
    sa.flatten()
    sa.polish()
    _check(sa, _optimum(n, rows[~held], cols[~held], costs[~held]))
    have = ~held
    batches = np.array_split(rng.permutation(np.flatnonzero(held)), 3)
    freed = bids = 0
    for step, b in enumerate(batches):
        sa.add_edges(rows[b], cols[b], costs[b])
        have[b] = True
        if mode in ("rewarm", "rewarm-paths") or (mode == "mixed" and step == 1):
            sa.rewarm()  # back to the duals before the last flatten, re-freeing rows
            assert sa.started
        elif mode == "prices":
            freed += int((sa.col4row < 0).sum())
            sa.restart(keep_prices=True)  # a fresh start from the last prices
            assert not sa.started
        freed += int((sa.col4row < 0).sum())
        assert sa.solve()
        bids += sa.phase_times.get("bid_rows", 0)
        want = _optimum(n, rows[have], cols[have], costs[have])
        _check(sa, want)
        if mode != "warm":
            sa.flatten()
            sa.polish()
            _check(sa, want)
    assert freed > 0  # the added edges violated the duals: warm starts were exercised
    # above 1,000 rows a rewarm settles the freed rows by an auction first (here more than
    # SETTLE_PATHS rows are freed), unless settle_paths says shortest paths alone
    assert (bids > 0) == (n > 1000 and mode in ("rewarm", "mixed"))


def test_rewarm_without_flattened_duals_restarts():
    rng = np.random.default_rng(4)
    (rows, cols, costs), held = _graph(80, 3, rng, 5)
    sa = SparseAssignment(*to_csr(rows[~held], cols[~held], costs[~held], 80), 80)
    assert sa.solve()
    sa.add_edges(rows[held], cols[held], costs[held])
    sa.rewarm()  # no flatten yet: a fresh start
    assert not sa.started
    assert sa.solve()
    _check(sa, _optimum(80, rows, cols, costs))


@pytest.mark.parametrize("shape", [(40, 40), (25, 40), (40, 25)])
@pytest.mark.parametrize("levels", [0, 3])
def test_dense_assignment_is_optimal(shape, levels):
    """Same total cost as scipy's assignment, on continuous costs and on costs with many
    ties (few distinct values, negative too); every row of the smaller side matched to a
    distinct column."""
    rng = np.random.default_rng(sum(shape) + levels)
    c = rng.normal(size=shape)
    if levels:
        c = np.round(c * levels) / levels
    link = dense_assignment(c)
    r, k = linear_sum_assignment(c)
    ok = link >= 0
    assert ok.sum() == min(shape)
    assert np.unique(link[ok]).size == ok.sum()
    assert c[np.flatnonzero(ok), link[ok]].sum() == pytest.approx(c[r, k].sum(), abs=1e-9)


def test_edges_within_free_tol_free_no_row():
    """An added edge whose reduced cost is negative by less than ``free_tol`` (round-off,
    exact ties) joins the graph without freeing its row; one beyond it frees the row, and
    the warm start reaches the optimum of the larger graph."""
    rng = np.random.default_rng(6)
    n = 120
    (rows, cols, costs), held = _graph(n, 3, rng, 1000)
    costs = costs / 7.0  # not integers: the solver's sums carry round-off
    sa = SparseAssignment(*to_csr(rows[~held], cols[~held], costs[~held], n), n)
    sa.free_tol = 1e-6
    assert sa.solve()
    sa.polish()
    free_cols = np.setdiff1d(np.arange(n), cols[~held][rows[~held] == 0])
    j, j2 = free_cols[0], free_cols[1]
    # row 0 gets a new column at reduced cost −free_tol / 2: nothing is freed
    c = sa.u[0] + sa.v[j] - 0.5e-6
    sa.add_edges(np.array([0]), np.array([j]), np.array([c]))
    assert (sa.col4row >= 0).all() and sa.reduced_costs().min() >= -1e-6
    # ... and one at −2·free_tol: the row is freed, the warm start finds the new optimum
    c2 = sa.u[0] + sa.v[j2] - 2e-6
    sa.add_edges(np.array([0]), np.array([j2]), np.array([c2]))
    assert sa.col4row[0] == -1
    assert sa.solve()
    r = np.concatenate([rows[~held], [0, 0]])
    k = np.concatenate([cols[~held], [j, j2]])
    w = np.concatenate([costs[~held], [c, c2]])
    assert np.nansum(sa.matched_cost()) == pytest.approx(_optimum(n, r, k, w), abs=1e-5)


def _auction_reference(indptr, indices, cost, v, col4row, row4col, eps, max_steps, batch,
                       batch_min):
    """The auction phase in plain Python: bids by one branchy pass per row keeping the two
    smallest reduced costs (the loop the vectorized bids replaced); with ``batch_min`` or
    more rows queued, the next ``batch`` bid on the same prices and are applied in order,
    a bid losing only to a batch-mate's that took its column at a lower price."""
    n = indptr.shape[0] - 1
    queue = [i for i in range(n) if col4row[i] < 0]
    steps = 0
    while queue and steps < max_steps:
        nr = 1 if len(queue) < batch_min else min(len(queue), batch, max_steps - steps)
        rows, queue = queue[:nr], queue[nr:]
        steps += nr
        bids = []
        for i in rows:
            m1 = m2 = np.inf
            j1 = -1
            for e in range(indptr[i], indptr[i + 1]):
                r = cost[e] - v[indices[e]]
                if r < m2:
                    if r < m1:
                        m2, m1, j1 = m1, r, indices[e]
                    else:
                        m2 = r
            bids.append((j1, v[j1] - ((m2 - m1 if m2 < np.inf else 0.0) + eps)))
        taken = set()
        for i, (j1, price) in zip(rows, bids, strict=True):
            if j1 < 0:
                continue
            if j1 in taken and not price < v[j1]:
                queue.append(i)  # outbid by a batch-mate
                continue
            taken.add(j1)
            v[j1] = price
            i0 = row4col[j1]
            row4col[j1], col4row[i] = i, j1
            if i0 >= 0:
                col4row[i0] = -1
                queue.append(i0)
    return len(queue)


@pytest.mark.parametrize("levels,eps", [(3, 0.5), (50, 0.01), (10**6, 1e-3)])
@pytest.mark.parametrize("n", [300, 3000])
def test_auction_bids_equal_the_reference(levels, eps, n):
    """The auction's bids (a gathered buffer, two vectorized minima; batches bid in
    parallel on the same prices) are those of the plain-Python reference: same prices to
    the bit and same assignment, on graphs with many equal reduced costs, rows of one edge
    and a row whose edges are all infinite; with one thread or two. n = 3,000 queues more
    than a batch (BID_BATCH rows); both sizes end in the one-by-one tail."""
    import numba as nb

    from linkrisk.engine.matching import assignment as A

    rng = np.random.default_rng(levels)
    (rows, cols, costs), _ = _graph(n, 6, rng, levels)
    keep = (rows % 7 != 3) | (cols == rows)  # some rows keep a single edge
    rows, cols, costs = rows[keep], cols[keep], costs[keep] / levels
    ip, ix, c = to_csr(rows, cols, costs, n)
    c[ip[5]:ip[6]] = np.inf  # a row that cannot bid
    threads = nb.get_num_threads()
    try:
        for max_steps in (40 * n, 77, 2 * n + 5):  # a finished phase and two cut short
            want = [np.zeros(n), np.full(n, -1, np.int64), np.full(n, -1, np.int64)]
            left = _auction_reference(ip, ix, c, *want, eps, max_steps, A.BID_BATCH,
                                      A.BID_BATCH_MIN)
            for t in sorted({1, threads}):
                nb.set_num_threads(t)
                got = [np.zeros(n), np.full(n, -1, np.int64), np.full(n, -1, np.int64)]
                touched = np.zeros(n, np.bool_)
                assert A._auction(ip, ix, c, *got, eps, max_steps, touched,
                                  nb.config.NUMBA_NUM_THREADS) == left
                for g, w in zip(got, want, strict=True):
                    assert np.array_equal(g, w)
                assert touched.sum() > 0
    finally:
        nb.set_num_threads(threads)


def test_auction_phase_keeps_eps_complementary_slackness():
    """A finished phase (batched bids included) leaves every row assigned to a column
    within ε of its smallest reduced cost, each column to at most one row."""
    import numba as nb

    from linkrisk.engine.matching import assignment as A

    n, eps = 5000, 0.01
    rng = np.random.default_rng(5)
    (rows, cols, costs), _ = _graph(n, 8, rng, 10**6)
    ip, ix, c = to_csr(rows, cols, costs / 10**6, n)
    v = np.zeros(n)
    c4r, r4c = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    assert A._auction(ip, ix, c, v, c4r, r4c, eps, 40 * n, np.zeros(n, np.bool_),
                      nb.config.NUMBA_NUM_THREADS) == 0
    assert (c4r >= 0).all() and np.array_equal(r4c[c4r], np.arange(n))
    red = c - v[ix]
    own = np.array([red[ip[i]:ip[i + 1]][ix[ip[i]:ip[i + 1]] == c4r[i]][0] for i in range(n)])
    best = np.minimum.reduceat(red, ip[:-1])
    assert (own <= best + eps * (1 + 1e-9)).all()


def test_finite_range_equals_numpy_on_the_finite_entries():
    from linkrisk.engine.matching.assignment import finite_range

    rng = np.random.default_rng(2)
    c = rng.standard_normal(1000) * 5
    c[rng.random(1000) < 0.2] = np.inf
    c[:3] = [-np.inf, np.nan, np.inf]
    f = c[np.isfinite(c)]
    assert finite_range(c) == (f.min(), f.max(), np.abs(f).max())
    assert finite_range(np.array([np.inf, np.nan])) == (np.inf, -np.inf, 0.0)


@pytest.mark.parametrize("n,deg,levels,seed", [(200, 4, 3, 1), (1300, 3, 20, 2)])
def test_flatten_below_a_cap_moves_the_duals_least(n, deg, levels, seed):
    """After added edges and a warm re-solve, ``flatten(below=v_ref)`` keeps the matching
    optimal and its duals feasible with v ≤ v_ref everywhere, and each v_σ(l) is as large
    as that allows: at its cap, or held down by a tight edge of another row (the largest
    solution of the duals' difference constraints)."""
    rng = np.random.default_rng(seed)
    (rows, cols, costs), held = _graph(n, deg, rng, levels)
    sa = SparseAssignment(*to_csr(rows[~held], cols[~held], costs[~held], n), n)
    assert sa.solve()
    sa.flatten()
    sa.polish()
    v_ref = sa.v.copy()
    sa.add_edges(rows[held], cols[held], costs[held])
    assert (sa.col4row < 0).any()
    assert sa.solve()
    sa.flatten(below=v_ref)
    sa.polish()
    _check(sa, _optimum(n, rows, cols, costs))
    assert (sa.v <= v_ref).all()
    rc = sa.reduced_costs()
    r = np.repeat(np.arange(n), np.diff(sa.indptr))
    other_tight = (np.abs(rc) <= 1e-9) & (sa.col4row[r] != sa.indices)
    held_down = np.zeros(n, bool)
    held_down[sa.indices[other_tight]] = True
    assert (np.isclose(sa.v, v_ref, rtol=0, atol=1e-9) | held_down).all()
