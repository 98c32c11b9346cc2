"""The sparse solver's certificate-and-repair rounds (engine/matching/solver.py) on
problems whose k-NN graph misses optimal edges: integer coordinates (many exactly tied
costs), the repaired matching's cost equals scipy's dense optimum and its final duals
certify it for every pair of the complete problem."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from linkrisk.engine.matching import solver


def _points(n_a: int, n_b: int, seed: int, spread: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer points: the release is the original moved by integer noise (square) or with
    other records added (rectangular)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, spread, (n_a, 3)).astype(float)
    b = a[:min(n_a, n_b)] + rng.integers(-2, 3, (min(n_a, n_b), 3))
    if n_b > n_a:
        b = np.vstack([b, rng.integers(0, spread, (n_b - n_a, 3))])
    return a, rng.permutation(b)


def _spy_duals(monkeypatch) -> list:
    """Record (pw, sa, tol) of every repair loop (the solver's order and final duals)."""
    seen = []
    real = solver._repair_rounds

    def spy(pw, sa, lists, rep, complete, delta, tol, max_rounds, stages):
        ok = real(pw, sa, lists, rep, complete, delta, tol, max_rounds, stages)
        seen.append((pw, sa, tol))
        return ok

    monkeypatch.setattr(solver, "_repair_rounds", spy)
    return seen


@pytest.mark.parametrize("metric,root", [("l1", False), ("sqeuclidean", True)])
@pytest.mark.parametrize("n_a,n_b,seed,spread", [(1500, 1500, 0, 12), (1200, 1200, 1, 30),
                                                 (400, 520, 2, 10)])
def test_repaired_matching_is_scipys_optimum_and_certified(monkeypatch, metric, root, n_a,
                                                           n_b, seed, spread):
    a, b = _points(n_a, n_b, seed, spread)
    seen = _spy_duals(monkeypatch)
    r = solver.min_cost_matching(a, b, metric=metric, root=root, solver="sparse", k=1,
                                 k_list=2, screen=False, seed=seed)
    c = cdist(a, b, "cityblock" if metric == "l1" else "euclidean")
    ri, ci = linear_sum_assignment(c)
    want = c[ri, ci].sum()
    assert r.certified and r.info["rounds"] > 1 and r.info["repaired_edges"] > 0
    assert r.total_cost == pytest.approx(want, rel=1e-12, abs=1e-9)
    matched = r.link >= 0
    assert np.unique(r.link[matched]).size == min(n_a, n_b)
    np.testing.assert_allclose(r.cost[matched], c[matched, r.link[matched]], rtol=1e-12)
    # the certificate, checked on every pair: c̄ = c − u − v ≥ −tol (v ≤ 0, and v = 0 on
    # free columns, in the rectangular case), c̄ = 0 on the matching
    (pw, sa, tol), = seen  # pw: both files in the solver's (seeded) order
    full = cdist(pw.x, pw.y, "cityblock" if metric == "l1" else "euclidean")
    assert (full - sa.u[:, None] - sa.v[None, :]).min() >= -tol
    rows = np.arange(sa.n_rows)
    assert np.abs(full[rows, sa.col4row] - sa.u - sa.v[sa.col4row]).max() <= tol
    if not sa.square:
        assert sa.v.max() <= 0 and (sa.v[sa.row4col < 0] == 0).all()

