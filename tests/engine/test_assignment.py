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
