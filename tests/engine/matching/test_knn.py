"""Exact k-NN lists and the other scans of engine/knn.py against brute force; the sparse
assignment solver and Tassa's allowed edges against enumeration / scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from linkrisk.engine import Tables
from linkrisk.engine.matching.assignment import SparseAssignment, allowed_edges, to_csr
from linkrisk.engine.matching.knn import (
    Pairwise,
    count_within,
    dense_costs,
    knn,
    kth_cost,
    pair_costs,
    scan_gated,
    within_graph,
)
from linkrisk.errors import LinkriskError


def _scores(x, y, metric, degree=2, tables=None):
    """Brute-force score matrices, same definitions as the engine."""
    if metric == "sqeuclidean":
        return cdist(x, y, "sqeuclidean")
    if metric == "l1":
        return cdist(x, y, "cityblock")
    if metric == "linf":
        return cdist(x, y, "chebyshev")
    if metric == "kernel":
        kxx = (1 + (x * x).sum(1)) ** degree
        kyy = (1 + (y * y).sum(1)) ** degree
        return kxx[:, None] + kyy[None, :] - 2 * (1 + x @ y.T) ** degree
    if metric == "mixed":
        out = np.zeros((x.shape[0], y.shape[0]))
        for j in range(x.shape[1]):
            L = tables.size[j]
            if L == 0:
                out += (x[:, j, None] - y[None, :, j]) ** 2
            else:
                t = tables.flat[tables.off[j]:tables.off[j] + L * L].reshape(L, L)
                out += t[x[:, j].astype(int)][:, y[:, j].astype(int)]
        return out
    raise AssertionError(metric)


def _data(metric, n_x, n_y, seed):
    rng = np.random.default_rng(seed)
    if metric == "mixed":
        x = np.column_stack([rng.integers(0, 3, n_x), rng.integers(0, 4, n_x),
                             rng.integers(0, 3, n_x)]).astype(float)
        y = np.column_stack([rng.integers(0, 3, n_y), rng.integers(0, 4, n_y),
                             rng.integers(0, 3, n_y)]).astype(float)
        # an asymmetric table (masking-aware style, with an impossible pair = inf)
        t1 = rng.integers(0, 3, (4, 4)).astype(float)
        t1[0, 3] = np.inf
        tables = Tables.from_list([None, t1, 1.0 - np.eye(3)])
        return x, y, {"tables": tables}
    # integer-valued data: many exact ties
    x = rng.integers(-3, 4, (n_x, 3)).astype(float)
    y = rng.integers(-3, 4, (n_y, 3)).astype(float)
    if metric == "kernel":
        x, y = x / 3, y / 3
        return x, y, {"degree": 2}
    return x, y, {}


def _brute_knn(s, k):
    """The k smallest of each row by (score, index): a stable argsort; +inf entries are
    not neighbours."""
    order = np.argsort(s, axis=1, kind="stable")[:, :k]
    sc = np.take_along_axis(s, order, 1)
    return np.where(np.isinf(sc), -1, order), sc


METRICS = ["sqeuclidean", "l1", "linf", "kernel", "mixed"]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("shape", [(300, 260), (40, 90)])
def test_knn_equals_brute_force(metric, shape):
    x, y, kw = _data(metric, *shape, seed=1)
    pw = Pairwise.build(x, y, metric, **kw)
    s = dense_costs(pw)  # the engine's bits, so that near-ties order as in the kernel
    np.testing.assert_allclose(s, _scores(x, y, metric, **kw), rtol=1e-12, atol=1e-12)
    for k in (1, 5, 17):
        nn = knn(pw, k)
        kf, kb = min(k, y.shape[0]), min(k, x.shape[0])
        fi, fs = _brute_knn(s, kf)
        bi, bs = _brute_knn(s.T, kb)
        assert np.array_equal(nn.fwd_idx, fi)
        assert np.array_equal(nn.bwd_idx, bi)
        np.testing.assert_allclose(nn.fwd_score, fs, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(nn.bwd_score, bs, rtol=1e-12, atol=1e-12)


def test_knn_ties_keep_lowest_index_and_blocks_do_not_matter():
    # all records identical: every score ties, lists must be 0..k-1
    x = np.zeros((1000, 2))
    y = np.zeros((700, 2))
    nn = knn(Pairwise.build(x, y), 4, threads=2)
    assert (nn.fwd_idx == np.arange(4)).all()
    assert (nn.bwd_idx == np.arange(4)).all()
    nn1 = knn(Pairwise.build(x, y), 4, threads=1)
    assert np.array_equal(nn.bwd_idx, nn1.bwd_idx)


def test_knn_forward_only():
    x, y, _ = _data("l1", 50, 60, 2)
    nn = knn(Pairwise.build(x, y, "l1"), 3, kb=0)
    assert nn.bwd_idx.shape == (60, 0)
    assert np.array_equal(nn.fwd_idx, _brute_knn(cdist(x, y, "cityblock"), 3)[0])


@pytest.mark.parametrize("metric", ["sqeuclidean", "mixed"])
def test_swapped_gives_the_same_costs(metric):
    x, y, kw = _data(metric, 30, 40, 3)
    pw = Pairwise.build(x, y, metric, **kw)
    assert np.array_equal(dense_costs(pw.swapped()), dense_costs(pw).T)


def test_fast_squared_euclidean_path_gives_the_shared_kernels_bits():
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((37, 13)), rng.standard_normal((301, 13))
    for root in (False, True):
        pw = Pairwise.build(x, y, root=root)
        assert np.array_equal(dense_costs(pw), dense_costs(pw, reference=True))


@pytest.mark.parametrize("metric,m", [(metric, 3) for metric in METRICS]
                         + [("sqeuclidean", 13)])
@pytest.mark.parametrize("root", [False, True])
def test_pair_costs_have_the_scans_bits(metric, m, root):
    """pair_costs scores one pair at a time; its costs must equal the tiled scans' to the
    bit (m = 13: the register-blocked squared Euclidean path), since lists, bounds and
    certificates compare them."""
    if m == 13:
        rng = np.random.default_rng(4)
        x, y, kw = rng.standard_normal((40, 13)), rng.standard_normal((90, 13)), {}
    else:
        x, y, kw = _data(metric, 40, 90, 4)
    pw = Pairwise.build(x, y, metric, root=root, **kw)
    rng = np.random.default_rng(5)
    ia, ib = rng.integers(-1, 40, 3000), rng.integers(-1, 90, 3000)
    got = pair_costs(pw, ia, ib)
    ok = (ia >= 0) & (ib >= 0)
    assert np.isinf(got[~ok]).all()
    for ref in (dense_costs(pw), dense_costs(pw, reference=True)):
        assert np.array_equal(got[ok], ref[ia[ok], ib[ok]])


@pytest.mark.parametrize("root", [False, True])
def test_scans_equal_brute_force(root):
    x, y, _ = _data("sqeuclidean", 120, 150, 4)
    pw = Pairwise.build(x, y, root=root)
    c = cdist(x, y, "euclidean" if root else "sqeuclidean")
    np.testing.assert_allclose(dense_costs(pw), c, rtol=1e-12)
    rng = np.random.default_rng(0)
    # counts, explicit radius graph, k-th smallest cost, pair costs
    thr = np.quantile(c, 0.1, axis=1)
    np.testing.assert_array_equal(count_within(pw, thr), (c <= thr[:, None]).sum(1))
    np.testing.assert_array_equal(count_within(pw, thr, strict=True), (c < thr[:, None]).sum(1))
    ip, ix, w = within_graph(pw, thr)
    for i in (0, 33, 119):
        np.testing.assert_array_equal(ix[ip[i]:ip[i + 1]], np.flatnonzero(c[i] <= thr[i]))
        np.testing.assert_allclose(w[ip[i]:ip[i + 1]], c[i][c[i] <= thr[i]])
    kk = rng.integers(1, y.shape[0] + 1, x.shape[0])
    np.testing.assert_allclose(kth_cost(pw, kk), np.sort(c, 1)[np.arange(x.shape[0]), kk - 1])
    ia, ib = rng.integers(0, 120, 50), rng.integers(0, 150, 50)
    np.testing.assert_allclose(pair_costs(pw, ia, ib), c[ia, ib])


def _scan_thresholds(rng, r, key, spread, every, first):
    """Gated-scan thresholds for rows whose pair values are ``r``: a random quantile of
    each row (up to ``spread``), and on every ``every``-th row one exactly at a pair's
    value (strictly below: excluded) or one ulp above it (included), a column from
    ``first`` on that ``key`` lets the row scan: the pre-tests must not lose either."""
    theta = np.quantile(r, rng.uniform(0.0, spread, r.shape[0]), axis=1).diagonal().copy()
    for p in range(0, r.shape[0], every):
        j = rng.integers(first, r.shape[1])
        theta[p] = r[p, j] if p % 2 else np.nextafter(r[p, j], np.inf)
        key[j] = min(key[j], theta[p] - 1.0)
    return theta


@pytest.mark.parametrize("metric,screened", [("sqeuclidean", False), ("sqeuclidean", True),
                                             ("mixed", False), ("kernel", False)])
@pytest.mark.parametrize("seed", range(3))
def test_gated_scan_equals_brute_force_on_the_gated_columns(metric, screened, seed):
    x, y, kw = _data(metric, 90, 700, seed)     # > 10 blocks of columns, with ties
    if screened:
        # real-valued data (the float32 screen's case), rows far from the origin so that
        # its error bound matters
        rng = np.random.default_rng(seed)
        x = x + rng.standard_normal(x.shape) * 0.3 + 20.0
        y = y + rng.standard_normal(y.shape) * 0.3 + 20.0
    pw = Pairwise.build(x, y, metric, root=metric == "sqeuclidean", **kw)
    c = dense_costs(pw)
    rng = np.random.default_rng(seed)
    off = rng.integers(0, 4, y.shape[0]) * np.median(c) / 3   # tied offsets
    key = rng.standard_normal(y.shape[0])
    key[:5] = np.inf                                          # columns no row may scan
    # several chunks of rows (the tuning's scan_rows each), repeated rows
    rows = np.concatenate([rng.choice(90, 40, replace=False), [3, 3], rng.choice(90, 160)])
    r = c[rows] - off[None, :]
    theta = _scan_thresholds(rng, r, key, 0.2, 7, 5)
    gate = np.quantile(off, rng.uniform(0.0, 0.6, rows.size))
    gate[::7] = -1.0
    cmax = np.quantile(c, 0.5) if seed == 1 else np.inf
    scan, nxt = scan_gated(pw, rows, off, key, theta, gate, cmax=cmax, cap=5,
                           screened=screened)
    seen = (key[None, :] < theta[:, None]) & (off[None, :] > gate[:, None]) & (c[rows] <= cmax)
    rr = np.where(seen, r, np.inf)
    below = rr < theta[:, None]
    np.testing.assert_array_equal(scan.count, below.sum(1))
    np.testing.assert_allclose(scan.min, np.minimum(rr.min(1), theta), rtol=1e-12)
    for p in range(rows.size):
        got = scan.idx[p][scan.idx[p] >= 0]
        want = np.sort(rr[p][below[p]])[:5]
        np.testing.assert_allclose(scan.val[p, :got.size], want, rtol=1e-12)
        np.testing.assert_allclose(rr[p, got], want, rtol=1e-12)   # the columns hold them
        rest = np.setdiff1d(np.flatnonzero(seen[p]), got)
        assert rest.size == 0 or rr[p, rest].min() >= nxt[p] - 1e-12
    assert scan.count.sum() > 0 and (scan.count > 5).any()   # the cap was exercised


@pytest.mark.parametrize("m", [5, 13, 16, 20])
def test_gated_scan_register_pre_test_equals_the_loop_pre_test(monkeypatch, m):
    """The certificate scan's float32 pre-test on the register-blocked kernel (files of up
    to 16 attributes, padded) gives the same scan, bit for bit, as on the loop kernel:
    the same float32 scores and tests, so the same columns scored exactly, in the same
    order per row (m = 20: both take the loop kernel). Integer data (ties), thresholds at
    a pair's value and one ulp above, per-row prefixes that end inside a 32-column block,
    and gates."""
    import importlib

    K = importlib.import_module("linkrisk.engine.matching.knn")  # the module, not knn()
    rng = np.random.default_rng(m)
    x = rng.integers(0, 4, (150, m)).astype(float) + 10.0
    y = np.concatenate([x[:60] + rng.integers(-1, 2, (60, m)),
                        rng.integers(0, 4, (677, m)) + 10.0])  # 737: not whole blocks
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    c = dense_costs(pw)
    off = rng.integers(0, 3, y.shape[0]) * np.median(c) / 4
    key = rng.standard_normal(y.shape[0])
    rows = np.concatenate([rng.choice(150, 100, replace=False), [7, 7]])
    theta = _scan_thresholds(rng, c[rows] - off[None, :], key, 0.3, 5, 0)
    gate = np.quantile(off, rng.uniform(0.0, 0.6, rows.size))
    args = (pw, rows, off, key, theta, gate)
    got, gnxt = scan_gated(*args, cap=4, screened=True)
    monkeypatch.setattr(K, "SCAN_REGISTER", False)
    want, wnxt = scan_gated(*args, cap=4, screened=True)
    for f in ("min", "count", "idx", "val"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    np.testing.assert_array_equal(gnxt, wnxt)
    assert want.count.sum() > 0 and (want.count > 4).any()


def test_gated_scan_screen_refuses_other_costs():
    x, y, _ = _data("sqeuclidean", 10, 20, 0)
    with pytest.raises(LinkriskError, match="Euclidean"):
        scan_gated(Pairwise.build(x, y, "l1"), np.arange(3), np.zeros(20), np.zeros(20),
                   np.ones(3), np.full(3, -1.0), screened=True)


# --------------------------------------------------------------------------------------
# sparse assignment
# --------------------------------------------------------------------------------------
def _full_graph(c):
    r, col = np.nonzero(np.isfinite(c))
    return to_csr(r, col, c[r, col], c.shape[0])


@pytest.mark.parametrize("seed", range(6))
def test_sparse_assignment_matches_scipy_with_feasible_duals(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    n2 = n + int(rng.integers(0, 4))
    c = rng.integers(0, 4, (n, n2)).astype(float)  # heavy ties
    c[rng.random(c.shape) < 0.3] = np.inf          # a sparse graph
    c[np.arange(n), np.arange(n)] = rng.integers(0, 4, n)  # keep it feasible
    sa = SparseAssignment(*_full_graph(c), n2)
    assert sa.solve()
    sa.polish()
    ri, ci = linear_sum_assignment(np.where(np.isinf(c), 1e9, c))
    assert c[np.arange(n), sa.col4row].sum() == pytest.approx(c[ri, ci].sum(), abs=1e-9)
    assert len(set(sa.col4row)) == n
    assert sa.reduced_costs().min() >= -1e-12
    assert np.allclose(sa.matched_cost() - sa.u - sa.v[sa.col4row], 0)
    if n2 > n:  # rectangular dual conditions
        assert sa.v.max() <= 0 and (sa.v[sa.row4col < 0] == 0).all()


def test_sparse_assignment_warm_start_after_adding_edges():
    rng = np.random.default_rng(7)
    n = 200
    c = rng.random((n, n))
    keep = np.argsort(c, 1)[:, :2]  # a thin graph first, plus the diagonal for feasibility
    rows = np.concatenate([np.repeat(np.arange(n), 2), np.arange(n)])
    cols = np.concatenate([keep.ravel(), np.arange(n)])
    sa = SparseAssignment(*to_csr(rows, cols, c[rows, cols], n), n)
    assert sa.solve()
    rest = np.nonzero(np.ones((n, n), bool))
    sa.add_edges(rest[0], rest[1], c[rest])
    assert sa.solve()
    sa.polish()
    ri, ci = linear_sum_assignment(c)
    assert c[np.arange(n), sa.col4row].sum() == pytest.approx(c[ri, ci].sum(), rel=1e-12)
    assert sa.reduced_costs().min() >= -1e-12


def test_infeasible_graph_is_reported():
    c = np.full((3, 3), np.inf)
    c[0, 0] = c[1, 0] = c[2, 1] = c[2, 2] = 1.0  # rows 0 and 1 both need column 0
    sa = SparseAssignment(*_full_graph(c), 3)
    assert not sa.solve()


@pytest.mark.parametrize("seed", range(8))
def test_allowed_edges_equal_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    n2 = n + int(rng.integers(0, 2))
    adj = rng.random((n, n2)) < 0.5
    perm = rng.permutation(n2)[:n]
    adj[np.arange(n), perm] = True  # some full matching exists
    r, c = np.nonzero(adj)
    ip, ix, _ = to_csr(r, c, np.zeros(r.shape[0]), n)
    ok = allowed_edges(ip, ix, perm, n2)
    want = np.zeros_like(adj)
    for p in itertools.permutations(range(n2), n):
        if adj[np.arange(n), p].all():
            want[np.arange(n), p] = True
    got = np.zeros_like(adj)
    got[np.repeat(np.arange(n), np.diff(ip))[ok], ix[ok]] = True
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_merge_csr_equals_sorting_the_union(seed):
    from linkrisk.engine.matching.assignment import merge_csr

    rng = np.random.default_rng(seed)
    n, n_c = 50, 40
    r1, c1 = rng.integers(0, n, 300), rng.integers(0, n_c, 300)
    r2, c2 = rng.integers(0, n, 120), rng.integers(0, n_c, 120)
    cost = rng.random((n, n_c))
    got = merge_csr(*to_csr(r1, c1, cost[r1, c1], n), *to_csr(r2, c2, cost[r2, c2], n))
    r, c = np.concatenate([r1, r2]), np.concatenate([c1, c2])
    want = to_csr(r, c, cost[r, c], n)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_list_graph_is_the_union_of_both_lists_within_delta():
    # the candidate graph built row by row equals sorting all list edges at once
    from linkrisk.engine.matching.assignment import merge_csr
    from linkrisk.engine.matching.solver import _cols_csr, _rows_csr

    rng = np.random.default_rng(3)
    n_r, n_c, k = 60, 70, 5
    fi = np.stack([rng.choice(n_c, k, replace=False) for _ in range(n_r)])
    bi = np.stack([rng.choice(n_r, k, replace=False) for _ in range(n_c)])
    fi[0, 3:] = -1  # short lists
    cost = rng.random((n_r, n_c))
    fc = np.where(fi >= 0, cost[np.arange(n_r)[:, None], np.maximum(fi, 0)], np.inf)
    bc = cost[bi, np.arange(n_c)[:, None]]
    delta = 0.8
    got = merge_csr(*_rows_csr(fi, fc, delta), *_cols_csr(bi, bc, delta, n_r))
    rows = np.concatenate([np.repeat(np.arange(n_r), k), bi.ravel()])
    cols = np.concatenate([fi.ravel(), np.repeat(np.arange(n_c), k)])
    ok = (cols >= 0) & (cost[rows, np.maximum(cols, 0)] <= delta)
    want = to_csr(rows[ok], cols[ok], cost[rows[ok], cols[ok]], n_r)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("kind", ["float64 root", "float64", "float32 root"])
def test_gated_pre_tests_never_drop_a_pair_at_the_threshold(kind):
    """The branch-free pre-tests of a block (no √; float32 scores with an error bound) say
    'maybe' for every pair whose exact r = fl(cost − off) is below θ, also when θ is one
    ulp above r, and 'no' far above it."""
    from linkrisk.engine.matching.knn import _any_below, _maybe32

    rng = np.random.default_rng(7)
    n = 100_000
    s = rng.uniform(0, 50, n) * 10.0 ** rng.integers(-3, 4, n)
    off = rng.uniform(-5, 0, n) * 10.0 ** rng.integers(-3, 3, n)
    root = "root" in kind
    r = (np.sqrt(s) if root else s) - off
    theta = np.nextafter(r, np.inf)
    if kind == "float32 root":
        # the float32 test, as the kernel calls it, on s rounded to float32 (error ≤ err)
        a32 = s.astype(np.float32)
        err = np.abs(a32.astype(np.float64) - s)

        def maybe(q, th):
            d = 2.0**-20 * (abs(th) + abs(off[q]))
            return _maybe32(a32[q], np.float32(off[q]), np.float32(th + d),
                            np.nextafter(np.float32(-np.inf), np.float32(0)),
                            np.float32(err[q] * (1 + 1e-4)))
    else:
        def maybe(q, th):
            return _any_below(s[q:q + 1], off[q:q + 1], th, -np.inf, root)
    assert [q for q in range(n) if not maybe(q, theta[q])] == []
    far = r - 0.5 * np.abs(r) - 1.0
    assert not any(maybe(q, far[q]) for q in range(0, n, 97))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("room", [0.0, 0.01, 0.5])
def test_merge_into_equals_merge_csr(seed, room):
    """In place (room for the union: the same buffers come back) or, without room, a new
    merge; either way the union of merge_csr. Edges are added to the first and last rows,
    to empty rows, and twice (a pair in both keeps the first graph's cost)."""
    from linkrisk.engine.matching.assignment import merge_csr, merge_into

    rng = np.random.default_rng(seed)
    n, n_c = 40, 30
    r1, c1 = rng.integers(0, n, 200), rng.integers(0, n_c, 200)
    r1[(r1 == 5) | (r1 == 6)] = 7  # rows 5 and 6 empty in the first graph
    r2 = np.concatenate([rng.integers(0, n, 30 + 10 * seed), [0, n - 1, 5], r1[:10]])
    c2 = np.concatenate([rng.integers(0, n_c, 30 + 10 * seed), [0, n_c - 1, 3], c1[:10]])
    cost1, cost2 = rng.random((n, n_c)), rng.random((n, n_c))
    g1 = to_csr(r1, c1, cost1[r1, c1], n)
    g2 = to_csr(r2, c2, cost2[r2, c2], n)
    want = merge_csr(*g1, *g2)
    base = merge_csr(*g1, *to_csr(r1[:0], c1[:0], cost1[0, :0], n), room=room)
    buf = base[1].base
    got = merge_into(*base, *g2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    fits = buf is not None and buf.shape[0] >= want[1].shape[0]
    assert np.shares_memory(got[1], buf) == fits if buf is not None else not fits
    assert fits == (room == 0.5)
    # a second merge into the result (in place again when it still fits)
    r3, c3 = rng.integers(0, n, 5), rng.integers(0, n_c, 5)
    want3 = merge_csr(*want, *to_csr(r3, c3, cost2[r3, c3], n))
    for g, w in zip(merge_into(*got, *to_csr(r3, c3, cost2[r3, c3], n)), want3, strict=True):
        np.testing.assert_array_equal(g, w)
