"""gdbrl (global DBRL, docs/methods.md): exact minimum-cost perfect matching, restrictions,
approximations, padding, ties and the sparse solver's certificate."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

import linkrisk
from linkrisk.engine import min_cost_matching, nearest_sets, standardize
from linkrisk.errors import LinkriskError
from tests.attacks.test_orbit import class_average


def _df(x):
    x = np.asarray(x, float)
    x = x.reshape(len(x), -1)
    return pd.DataFrame(x, columns=[f"v{j}" for j in range(x.shape[1])])


def _int_pair(n, m=3, n2=None, seed=0, spread=4):
    """Integer-valued original and masked files: lots of exactly tied costs."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, spread, (n, m)).astype(float)
    n2 = n if n2 is None else n2
    base = a[:n2] if n2 <= n else np.vstack([a, rng.integers(0, spread, (n2 - n, m))])
    b = base + rng.integers(-1, 2, base.shape)
    return a, b


def _noisy(seed, n, m, noise):
    """A standard normal file of n × m and a copy with Gaussian noise of that σ."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, m))
    return a, a + noise * rng.standard_normal(a.shape)


def _dense_opt(c):
    ri, ci = linear_sum_assignment(c)
    return float(c[ri, ci].sum())


def _cost_of(c, link):
    ok = link >= 0
    return float(c[np.flatnonzero(ok), link[ok]].sum())


# --------------------------------------------------------------------------------------
# exactness
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_equals_enumeration_on_tiny_inputs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    a, b = _int_pair(n, m=2, seed=seed, spread=3)
    c = cdist(a, b)
    perms = list(itertools.permutations(range(n)))
    costs = np.array([c[np.arange(n), p].sum() for p in perms])
    best = costs.min()
    optimal = [p for p, v in zip(perms, costs, strict=True) if v <= best + 1e-9 * max(best, 1)]
    for solver in ("dense", "sparse"):
        r = min_cost_matching(a, b, root=True, solver=solver, k=1, k_list=1, seed=seed)
        assert r.total_cost == pytest.approx(best, rel=1e-9, abs=1e-12)
        assert tuple(r.link) in optimal and r.certified
    # ties="expected": C(a) = partners of a over all optimal matchings
    r = min_cost_matching(a, b, root=True, ties="expected", k=1, k_list=2, seed=seed)
    for i in range(n):
        want = sorted({p[i] for p in optimal})
        assert list(r.cand_indices[r.cand_indptr[i]:r.cand_indptr[i + 1]]) == want


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("n,n2,m,seed", [(400, 400, 2, 0), (1500, 1500, 3, 1), (2500, 2500, 2, 2),
                                         (700, 650, 3, 3), (600, 690, 2, 4)])
def test_sparse_certified_equals_dense_with_ties(n, n2, m, seed, screen):
    a, b = _int_pair(n, m=m, n2=n2, seed=seed, spread=6)
    c = cdist(a, b)
    best = _dense_opt(c)
    dense = min_cost_matching(a, b, root=True, solver="dense")
    sparse = min_cost_matching(a, b, root=True, solver="sparse", k=3, k_list=8, seed=seed,
                               screen=screen)
    assert sparse.info["screened"] is screen
    for r in (dense, sparse):
        assert r.certified
        assert r.total_cost == pytest.approx(best, rel=1e-9)
        assert _cost_of(c, r.link) == pytest.approx(best, rel=1e-9)
        ok = r.link >= 0
        assert ok.sum() == min(n, n2) and np.unique(r.link[ok]).size == ok.sum()
    assert sparse.gap_bound <= 1e-6 * best  # n·tol, tol = 1e-9·max edge cost


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("n", [800, 1500])  # 1500: auction start + flattened duals
def test_certificate_repairs_a_too_thin_graph(n, screen):
    # 1-NN lists: the graph optimum is not the global one, the certificate must say so and
    # the repair loop must reach the dense optimum
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, 2))
    b = a + 0.8 * rng.standard_normal(a.shape)
    r = min_cost_matching(a, b, root=True, solver="sparse", k=1, k_list=1, screen=screen)
    assert r.certified and r.info["rounds"] > 1 and r.info["repaired_edges"] > 0
    assert r.total_cost == pytest.approx(_dense_opt(cdist(a, b)), rel=1e-9)


@pytest.mark.parametrize("screen", [False, True])
def test_nearly_tight_pairs_found_by_the_certificate_join_the_graph(monkeypatch, screen):
    # every edge the certificate adds is either violating or inside the scan's slack
    # window (c_ij − v_j < θ_i), never a pair the scan could have bounded away; the
    # nearly tight ones are counted apart, and the optimum is the dense one
    from linkrisk.engine.matching import solver as matching

    seen = []
    real = matching._certify

    def spy(pw, pw_t, sa, lists, known, risen, delta, tol, stages):
        u, v = sa.u.copy(), sa.v.copy()
        out = real(pw, pw_t, sa, lists, known, risen, delta, tol, stages)
        if out[0] is not None:
            r, c, w = out[0]
            slack = w - u[r] - v[c]
            theta = matching.SCAN_SLACK * (np.abs(u[r]) + tol)
            assert (slack < theta + 1e-9).all()
            seen.append((out[2], int((slack < -tol).sum())))
        return out

    monkeypatch.setattr(matching, "_certify", spy)
    a, b = _noisy(12, 1500, 3, 0.6)
    r = min_cost_matching(a, b, root=True, solver="sparse", k=2, k_list=3, screen=screen)
    assert r.certified and r.info["rounds"] > 1
    assert r.total_cost == pytest.approx(_dense_opt(cdist(a, b)), rel=1e-9)
    assert r.info["near_edges"] == sum(n for n, _ in seen) > 0
    assert all(bad > 0 for _, bad in seen)  # edges are added only in a round that violates


def test_spine_is_a_perfect_matching_with_exact_costs():
    from linkrisk.engine.matching.solver import _spine
    from linkrisk.engine.nearest import Pairwise

    rng = np.random.default_rng(8)
    a = rng.standard_normal((700, 3)) * [3.0, 1.0, 0.2]
    b = rng.standard_normal((900, 3))  # rectangular: every row gets a distinct column
    pw = Pairwise.build(a, b, "sqeuclidean", root=True)
    ip, ix, w = _spine(pw, np.inf)
    assert (np.diff(ip) == 1).all() and np.unique(ix).size == 700
    np.testing.assert_allclose(w, cdist(a, b)[np.arange(700), ix], rtol=1e-12)
    # along the first principal direction (here the first axis) the pairing is monotone
    order = np.argsort(a[:, 0])
    assert np.corrcoef(a[order, 0], b[ix[order], 0])[0, 1] > 0.9
    ip, ix, w = _spine(pw, 1.0)  # edges beyond Δ are left out
    assert (w <= 1.0).all() and ix.size < 700


@pytest.mark.parametrize("screened", [False, True])
def test_graph_of_whole_lists_frees_them_and_keeps_every_entry(screened):
    # the union graph of the lists' first k entries; when k covers the lists their entries
    # are freed while the graph is built (its memory peak), and nothing is lost
    from linkrisk.engine.matching.knn import knn
    from linkrisk.engine.matching.screened_knn import knn_thresholds
    from linkrisk.engine.matching.solver import _Lists
    from linkrisk.engine.nearest import Pairwise

    a, b = _int_pair(300, m=3, n2=340, seed=5, spread=6)  # ties, rectangular
    pw = Pairwise.build(a, b, "sqeuclidean", root=True)
    c = cdist(a, b)

    def make():
        nn = knn_thresholds(pw, 6) if screened else knn(pw, 6, 6)
        return _Lists(nn, True, np.inf)

    lists = make()
    fi, bi, K = lists.fi.copy(), lists.bi.copy(), lists.K
    for k in (3, K):
        lists = make()
        (ip, ix, w), _ = lists.graph(k)
        want = {(i, int(j)) for i in range(300) for j in fi[i, :k] if j >= 0}
        want |= {(int(i), j) for j in range(340) for i in bi[j, :k] if i >= 0}
        rows = np.repeat(np.arange(300), np.diff(ip))
        assert set(zip(rows.tolist(), ix.tolist(), strict=True)) == want
        assert (np.diff(ix)[np.diff(rows) == 0] > 0).all()  # columns sorted in each row
        np.testing.assert_allclose(w, c[rows, ix], rtol=1e-12)
        freed = k >= K
        assert (lists.fi.shape[1] == 0) == freed and (lists.bi.shape[1] == 0) == freed
        if not freed:  # the prefix's graph leaves entries outside it to the certificate
            r, q = lists.below(np.full(300, 1e9), np.zeros(340), 0.0)
            assert r.size == np.isfinite(lists.fc).sum() + np.isfinite(lists.bc).sum()


@pytest.mark.parametrize("spine", [True, False])
def test_a_graph_without_perfect_matching_is_solved_in_one_pass_with_the_spine(monkeypatch,
                                                                               spine):
    # the attacker's records crowd the centre, the release's spread out: the union of the
    # 2-NN lists leaves the centre's surplus without partners (no perfect matching)
    from linkrisk.engine.matching import solver

    monkeypatch.setattr(solver, "SPINE", spine)
    rng = np.random.default_rng(9)
    a = 0.3 * rng.standard_normal((1200, 2))
    b = rng.standard_normal((1200, 2))
    r = min_cost_matching(a, b, root=True, solver="sparse", k=2, k_list=2, screen=False)
    assert r.certified
    assert r.total_cost == pytest.approx(_dense_opt(cdist(a, b)), rel=1e-9)
    if spine:
        assert r.info["knn_passes"] == 1
    else:  # the case needs the spine: without it the lists are computed again, wider
        assert r.info["knn_passes"] > 1


@pytest.mark.parametrize("rise_eps,risen_max,rise_cap",
                         [(0.0, 1.0, np.inf), (0.0, 0.0, np.inf), (0.001, 0.10, 0.02),
                          (0.0, 0.01, 0.0)])
def test_bounds_carried_over_fresh_starts(monkeypatch, rise_eps, risen_max, rise_cap):
    # every repair round restarts the solver; the row bounds survive the new duals through
    # column scans of the columns whose v rose (risen_max = 1: all of them) and a uniform
    # drop of the others (risen_max = 0: no column scans at all), or are dropped
    # (rise_cap = 0)
    from linkrisk.engine.matching import solver as matching

    monkeypatch.setattr(matching, "RESTART_FREE", 0.0)
    monkeypatch.setattr(matching, "RISE_EPS", rise_eps)
    monkeypatch.setattr(matching, "RISEN_MAX", risen_max)
    monkeypatch.setattr(matching, "RISE_CAP", rise_cap)
    rng = np.random.default_rng(11)
    for n in (900, 1600):
        a = rng.standard_normal((n, 2))
        b = a + 0.8 * rng.standard_normal(a.shape)
        r = min_cost_matching(a, b, root=True, solver="sparse", k=1, k_list=2)
        assert r.certified and r.info["restarts"] > 0
        assert r.total_cost == pytest.approx(_dense_opt(cdist(a, b)), rel=1e-9)


@pytest.mark.parametrize("screen", [False, True])
def test_row_bounds_stay_lower_bounds_across_fresh_starts(monkeypatch, screen):
    # after every certificate, each row's bound is a lower bound of c_ij − v_j over the
    # pairs outside both lists (c_ij > max(α_i, β_j)), outside the graph and outside the
    # risen columns (scanned from the column side), by brute force; every round restarts
    from linkrisk.engine.matching import solver as matching

    monkeypatch.setattr(matching, "RESTART_FREE", 0.0)
    seen = {"checks": 0, "risen": 0}
    real = matching._certify

    def cert(pw, pw_t, sa, lists, known, risen, delta, tol, stages):
        out = real(pw, pw_t, sa, lists, known, risen, delta, tol, stages)
        c = cdist(pw.x, pw.y)  # the solver's order of the records (seeded permutation)
        outside = c > np.maximum(lists.alpha[:, None], lists.beta[None, :])
        outside[:, risen] = False
        # the graph's edges, and those found now (they join it), have their own checks
        outside[np.repeat(np.arange(sa.n_rows), np.diff(sa.indptr)), sa.indices] = False
        if out[0] is not None:
            outside[out[0][0], out[0][1]] = False
        r = np.where(outside, c - sa.v[None, :], np.inf).min(axis=1)
        assert (known <= r + 1e-9).all()
        seen["checks"] += 1
        seen["risen"] += int(risen.sum())
        return out

    monkeypatch.setattr(matching, "_certify", cert)
    a, b = _noisy(21, 1200, 2, 0.8)
    r = min_cost_matching(a, b, root=True, solver="sparse", k=1, k_list=2, screen=screen)
    assert r.certified and r.info["restarts"] > 0 and seen["checks"] > 2
    assert seen["risen"] > 0
    assert r.total_cost == pytest.approx(_dense_opt(cdist(a, b)), rel=1e-9)


def test_transfer_bounds_keeps_the_most_risen_columns_within_the_room(monkeypatch):
    from linkrisk.engine.matching import solver as matching

    monkeypatch.setattr(matching, "RISE_EPS", 0.001)
    monkeypatch.setattr(matching, "RISEN_MAX", 0.10)
    monkeypatch.setattr(matching, "RISE_CAP", 0.02)
    rng = np.random.default_rng(3)
    rise = rng.uniform(-0.01, 0.015, 1000)
    risen = np.zeros(1000, bool)
    risen[:40] = True                      # 60 more fit in 10 %
    known = np.full(50, 1.0)
    matching._transfer_bounds(known, risen, rise, 1.0)
    rest = np.sort(rise[40:])[::-1]
    new = risen.copy()
    new[:40] = False
    assert risen[:40].all() and new.sum() == 60
    assert set(np.flatnonzero(new)) == set(40 + np.argsort(rise[40:])[::-1][:60])
    np.testing.assert_allclose(known, 1.0 - rest[60])   # drop = largest rise left out
    # few risers: only those above RISE_EPS join, the drop is at most RISE_EPS
    risen = np.zeros(1000, bool)
    known = np.full(50, 1.0)
    small = np.full(1000, 0.0005)
    small[[5, 9]] = 0.5
    matching._transfer_bounds(known, risen, small, 1.0)
    assert np.flatnonzero(risen).tolist() == [5, 9]
    np.testing.assert_allclose(known, 1.0 - 0.0005)
    # the room is full and others rose beyond the cap: bounds and risen set dropped
    known = np.full(50, 1.0)
    risen = np.zeros(1000, bool)
    risen[:100] = True
    matching._transfer_bounds(known, risen, np.full(1000, 0.05), 1.0)
    assert np.isneginf(known).all() and not risen.any()


def test_default_list_width_depends_on_the_screen():
    from linkrisk.engine.matching import solver as matching

    rng = np.random.default_rng(0)
    a = rng.standard_normal((400, 3))
    b = a + 0.3 * rng.standard_normal(a.shape)
    opt = _dense_opt(cdist(a, b))
    for screen, width in ((True, matching.SCREEN_K), (False, matching.DEFAULT_K_LIST)):
        r = min_cost_matching(a, b, root=True, solver="sparse", screen=screen)
        assert r.info["k_list"] == width and r.info["screened"] is screen
        assert r.certified and r.total_cost == pytest.approx(opt, rel=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_rectangular_ties_expected_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, n2 = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    a = rng.integers(0, 3, (n, 1)).astype(float)
    b = rng.integers(0, 3, (n2, 1)).astype(float)
    c = cdist(a, b)
    if n <= n2:
        sols = [dict(zip(range(n), p, strict=True)) for p in itertools.permutations(range(n2), n)]
    else:
        sols = [{p[j]: j for j in range(n2)} for p in itertools.permutations(range(n), n2)]
    costs = np.array([sum(c[i, j] for i, j in s.items()) for s in sols])
    optimal = [s for s, v in zip(sols, costs, strict=True) if v <= costs.min() + 1e-9]
    for solver in ("sparse", "graph"):
        r = min_cost_matching(a, b, root=True, solver=solver, ties="expected", k=1, k_list=2,
                              seed=seed)
        assert r.total_cost == pytest.approx(costs.min(), abs=1e-9)
        for i in range(n):
            want = sorted({s[i] for s in optimal if i in s})
            assert list(r.cand_indices[r.cand_indptr[i]:r.cand_indptr[i + 1]]) == want


@pytest.mark.parametrize("metric", ["sqeuclidean", "l1", "linf", "kernel"])
def test_other_metrics_sparse_equals_dense(metric):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, (500, 3)).astype(float) / 4
    b = a + rng.integers(-1, 2, a.shape) / 4
    d = min_cost_matching(a, b, metric=metric, solver="dense")
    s = min_cost_matching(a, b, metric=metric, solver="sparse", k=2, k_list=6)
    assert s.certified
    assert s.total_cost == pytest.approx(d.total_cost, rel=1e-9, abs=1e-9)


# --------------------------------------------------------------------------------------
# the definition's examples
# --------------------------------------------------------------------------------------
EX1 = ([(1, 0), (0, 1), (-1, 0), (0, -1)], [(0, 0), (0, 2.1), (-2.1, 0), (0, -2.1)])
EX2 = ([1, 2, 3, 4], [2, 3, 4, -0.1])


@pytest.mark.parametrize("ex,dbrl_rate,gdbrl_rate", [(EX1, 0.25, 1.0), (EX2, 0.25, 0.0)])
def test_spec_examples_on_raw_values(ex, dbrl_rate, gdbrl_rate):
    """The definition's examples are stated on raw values: checked on the engine directly
    (per-file standardization changes them, see the next test)."""
    a = np.asarray(ex[0], float).reshape(4, -1)
    b = np.asarray(ex[1], float).reshape(4, -1)
    s = nearest_sets(a, b, truth=np.arange(4))
    assert s.correct.sum() / 4 == pytest.approx(dbrl_rate)
    for solver in ("dense", "sparse"):
        g = min_cost_matching(a, b, root=True, solver=solver)
        assert np.mean(g.link == np.arange(4)) == pytest.approx(gdbrl_rate)


@pytest.mark.parametrize("ex,dbrl_rate,gdbrl_rate", [(EX1, 1.0, 1.0), (EX2, 0.0, 0.0)])
def test_spec_examples_through_attack_are_standardized(ex, dbrl_rate, gdbrl_rate):
    o, m = _df(ex[0]), _df(ex[1])
    assert linkrisk.attack(o, m, "dbrl").rate == pytest.approx(dbrl_rate)
    r = linkrisk.attack(o, m, "gdbrl")
    assert r.rate == pytest.approx(gdbrl_rate)
    # the same matching as the engine on standardized values
    g = min_cost_matching(standardize(o.to_numpy()), standardize(m.to_numpy()), root=True)
    assert np.array_equal(r.per_record["link"].to_numpy(), g.link)


# --------------------------------------------------------------------------------------
# public attack: results, identity, padding, delta, approximations
# --------------------------------------------------------------------------------------
def test_attack_reports_fixed_points_cost_and_records():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 4))
    y = x + 0.5 * rng.standard_normal(x.shape)
    r = linkrisk.attack(_df(x), _df(y), "gdbrl")
    sa, sb = standardize(x), standardize(y)
    c = cdist(sa, sb)
    link = r.per_record["link"].to_numpy()
    assert r.extra["total_cost"] == pytest.approx(_dense_opt(c), rel=1e-9)
    assert r.correct_links == r.extra["fixed_points"] == (link == np.arange(300)).sum()
    assert (r.per_record["candidates"] == 1).all()
    np.testing.assert_allclose(r.per_record["score"], c[np.arange(300), link])
    assert r.extra["certified"] and r.extra["solver"] == "dense"
    # the sparse path on the same data
    s = linkrisk.attack(_df(x), _df(y), "gdbrl", solver="sparse", k=2)
    assert s.extra["certified"] and s.extra["total_cost"] == pytest.approx(
        r.extra["total_cost"], rel=1e-9)


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_identity_masking_is_fully_linked_and_certified(solver):
    x = np.random.default_rng(1).standard_normal((1200, 5))
    r = linkrisk.attack(_df(x), _df(x), "gdbrl", solver=solver)
    assert r.rate == 1.0 and r.extra["certified"] and r.extra["total_cost"] == 0.0


def test_metric_choice_and_kernel_degree():
    a, b = _int_pair(200, seed=3)
    for metric in ("sqeuclidean", "l1", "mahalanobis0", "rank_sum", "kernel"):
        r = linkrisk.attack(_df(a), _df(b), "gdbrl", metric=metric, d=1)
        assert r.extra["certified"] and r.extra["metric"] == metric


def test_padding_unequal_sizes():
    a, b = _int_pair(300, n2=340, seed=4, spread=5)
    truth_ids = np.arange(340)
    o = _df(a).assign(id=truth_ids[:300])
    m = _df(b).assign(id=truth_ids)
    c = cdist(standardize(a), standardize(b))
    for direction, cc in (("original->masked", c), ("masked->original", c.T)):
        r = linkrisk.attack(o, m, "gdbrl", ids="id", direction=direction)
        link = r.per_record["link"].to_numpy()
        assert r.extra["total_cost"] == pytest.approx(_dense_opt(cc), rel=1e-9)
        dummies = link < 0
        assert dummies.sum() == r.extra["dummies"] == (40 if direction != "original->masked" else 0)
        # a record matched to a dummy is no link; its probability can still be > 0 when
        # an identical record was linked (integer data repeat: attacks/orbit.py)
        assert not r.per_record["true_in_set"][dummies].any()
        s = linkrisk.attack(o, m, "gdbrl", ids="id", direction=direction, solver="sparse", k=2)
        assert s.extra["certified"]
        assert s.extra["total_cost"] == pytest.approx(r.extra["total_cost"], rel=1e-9)
    with pytest.raises(LinkriskError, match="pad=True"):
        linkrisk.attack(o, m, "gdbrl", ids="id", pad=False)


def test_delta_restricts_edges():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((250, 3))
    y = x + 0.3 * rng.standard_normal(x.shape)
    c = cdist(standardize(x), standardize(y))
    owner = float(c[np.arange(250), np.arange(250)].max())
    r = linkrisk.attack(_df(x), _df(y), "gdbrl", delta="owner")
    assert r.extra["delta"] == pytest.approx(owner)
    link = r.per_record["link"].to_numpy()
    assert (c[np.arange(250), link] <= owner).all()
    assert r.extra["total_cost"] == pytest.approx(_dense_opt(np.where(c <= owner, c, np.inf)),
                                                  rel=1e-9)
    # a threshold that binds: the optimum of the restricted problem, on every solver
    d = float(np.quantile(c[np.arange(250), np.arange(250)], 0.995))
    cr = np.where(c <= d, c, np.inf)
    want = _dense_opt(cr)
    assert want > _dense_opt(c)  # the restriction changes the optimum
    for solver in ("dense", "sparse", "graph"):
        r = linkrisk.attack(_df(x), _df(y), "gdbrl", delta=d, solver=solver, k=2)
        assert r.extra["certified"] and r.extra["total_cost"] == pytest.approx(want, rel=1e-9)
        link = r.per_record["link"].to_numpy()
        assert (c[np.arange(250), link] <= d).all()
    with pytest.raises(LinkriskError, match="no perfect matching within delta"):
        linkrisk.attack(_df(x), _df(y), "gdbrl", delta=1e-3)
    with pytest.raises(LinkriskError, match="no perfect matching within delta"):
        linkrisk.attack(_df(x), _df(y), "gdbrl", delta=1e-3, solver="sparse")


def _rank_restricted(c, approx):
    """Brute-force AGDBRL graphs: rank_a(b) = #{b' : c(a,b') < c(a,b)} ≤ h or h(a)."""
    n = c.shape[0]
    rank = (c[:, None, :] < c[:, :, None]).sum(2)  # rank[i, j]
    h_a = rank[np.arange(n), np.arange(n)]
    lim = h_a.max() if approx == "agdbrl1" else h_a[:, None]
    return np.where(rank <= lim, c, np.inf), int(h_a.max())


@pytest.mark.parametrize("approx", ["agdbrl1", "agdbrl2"])
def test_agdbrl_graphs(approx):
    a, b = _int_pair(150, seed=7, spread=5)  # ties: ranks shared
    c = cdist(standardize(a), standardize(b))
    cr, h = _rank_restricted(c, approx)
    r = linkrisk.attack(_df(a), _df(b), "gdbrl", approx=approx)
    assert r.extra["h"] == h and r.extra["solver"] == "graph" and r.extra["certified"]
    assert r.extra["total_cost"] == pytest.approx(_dense_opt(cr), rel=1e-9)
    link = r.per_record["link"].to_numpy()
    assert np.isfinite(cr[np.arange(150), link]).all()
    # pruning: the reported graph had edges in no perfect matching removed
    assert r.extra["pruned_edges"] >= 0
    assert r.extra["n_edges"] + r.extra["pruned_edges"] == r.extra["graph_edges"]
    assert r.extra["graph_edges"] == np.isfinite(cr).sum()


def test_pruning_removes_edges_in_no_perfect_matching():
    # AGDBRL² graph on raw values: rows 0..2 keep only their own image, row 3 (true image
    # far away) also reaches b1 and b2, which rows 1 and 2 need: those 2 edges are in no
    # perfect matching and are pruned (Tassa 2012)
    a = np.array([[0.0], [1], [2], [5]])
    b = np.array([[0.05], [1.05], [2.05], [9]])
    lim = np.abs(a - b).ravel()
    r = min_cost_matching(a, b, root=True, row_limit=lim)
    assert r.solver == "graph" and r.info["graph_edges"] == 6
    assert r.info["pruned_edges"] == 2 and r.n_edges == 4
    assert list(r.link) == [0, 1, 2, 3] and r.certified


def test_ties_expected_on_duplicates():
    # two pairs of identical records, identity masking: each duplicate has two optimal
    # partners, so its expected correct link is 1/2
    x = np.array([[0.0, 0], [0, 0], [5, 5], [9, 1], [9, 1], [3, 7]])
    r = linkrisk.attack(_df(x), _df(x), "gdbrl", ties="expected")
    np.testing.assert_allclose(r.per_record["correct"], [0.5, 0.5, 1, 0.5, 0.5, 1])
    assert r.per_record["candidates"].tolist() == [2, 2, 1, 2, 2, 1]
    assert r.extra["ambiguous"] == 4 and r.extra["expected_correct_links"] == 4.0
    # the default scores the reported matching averaged over its identical records: the
    # same 1/2 per duplicate, whichever of the two optimal matchings the seed drew
    for seed in range(4):
        m = linkrisk.attack(_df(x), _df(x), "gdbrl", seed=seed)
        assert m.extra["total_cost"] == 0.0
        np.testing.assert_allclose(m.per_record["correct"], [0.5, 0.5, 1, 0.5, 0.5, 1])
        assert m.extra["fixed_points"] in (2, 4, 6)


def test_progress_and_errors():
    a, b = _int_pair(100, seed=8)
    calls = []
    linkrisk.attack(_df(a), _df(b), "gdbrl", solver="sparse",
                    progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1] == (1000, 1000)
    assert all(d <= t for d, t in calls)
    with pytest.raises(LinkriskError, match="approx"):
        linkrisk.attack(_df(a), _df(b), "gdbrl", approx="agdbrl3")
    with pytest.raises(LinkriskError, match="delta"):
        linkrisk.attack(_df(a), _df(b), "gdbrl", delta="max")
    with pytest.raises(LinkriskError, match="solver"):
        linkrisk.attack(_df(a), _df(b), "gdbrl", solver="fast")
    with pytest.raises(LinkriskError, match="ties"):
        linkrisk.attack(_df(a), _df(b), "gdbrl", ties="random")


def test_rows_csr_and_matched_cost_equal_the_array_forms():
    # the per-row insertion that builds the forward lists' CSR (int32 or int64 indices,
    # missing entries, entries beyond Δ) equals a stable argsort by column; matched costs
    # equal the edge-array lookup
    from linkrisk.engine.matching import solver as sv
    from linkrisk.engine.matching.assignment import SparseAssignment

    rng = np.random.default_rng(3)
    n, k, n_c = 300, 7, 400
    for dtype in (np.int32, np.int64):
        idx = np.stack([rng.permutation(n_c)[:k] for _ in range(n)]).astype(dtype)
        idx[rng.random((n, k)) < 0.1] = -1
        cost = np.round(rng.random((n, k)) * 4) / 2
        for delta in (np.inf, 1.0):
            ptr, cols, costs = sv._rows_csr(idx, cost, delta)
            ok = (idx >= 0) & (cost <= delta)
            for i in range(n):
                o = np.argsort(np.where(ok[i], idx[i], n_c), kind="stable")[:ok[i].sum()]
                np.testing.assert_array_equal(cols[ptr[i]:ptr[i + 1]], idx[i, o])
                np.testing.assert_array_equal(costs[ptr[i]:ptr[i + 1]], cost[i, o])
    sa = SparseAssignment(ptr, cols, costs + rng.random(costs.shape[0]), n_c)
    sa.col4row[:] = -1
    for i in range(0, n, 3):
        if ptr[i + 1] > ptr[i]:
            sa.col4row[i] = cols[rng.integers(ptr[i], ptr[i + 1])]
    r = np.repeat(np.arange(n), np.diff(ptr))
    hit = sa.col4row[r] == sa.indices
    want = np.full(n, np.nan)
    want[r[hit]] = sa.cost[hit]
    np.testing.assert_array_equal(sa.matched_cost(), want)


# ------------------------------------------------------------------ missing values
def _missing_cost(a, b, metric):
    """d(a, b) pair by pair over the attributes observed in both (per-file standardized
    over observed values; the numeric sum rescaled by m/m_o; +inf with none in common)."""
    def std(x):
        return (x - np.nanmean(x, 0)) / np.nanstd(x, 0, ddof=1)
    sa, sb = std(a), std(b)
    m = a.shape[1]
    c = np.empty((a.shape[0], b.shape[0]))
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            o = ~np.isnan(sa[i]) & ~np.isnan(sb[j])
            if not o.any():
                c[i, j] = np.inf
                continue
            d = sa[i, o] - sb[j, o]
            s = (d * d).sum() * m / o.sum() if metric != "l1" else np.abs(d).sum() * m / o.sum()
            c[i, j] = np.sqrt(s) if metric == "euclidean" else s
    return c


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metric", ["euclidean", "l1"])
def test_missing_values_equal_brute_force(seed, metric):
    """Files with missing cells: gdbrl's matching is optimal for the per-pair cost over the
    observed attributes (scipy on a pair-by-pair numpy matrix), also with ties='expected'."""
    rng = np.random.default_rng(seed)
    n, m = 50, 3
    a = rng.integers(0, 4, (n, m)).astype(float)  # coarse: ties
    b = a + rng.integers(-1, 2, (n, m))
    a[rng.random((n, m)) < 0.15] = np.nan
    b[rng.random((n, m)) < 0.2] = np.nan
    c = _missing_cost(a, b, metric)
    ri, ci = linear_sum_assignment(np.where(np.isinf(c), 1e6, c))  # fewest +inf pairs
    n_inf = int(np.isinf(c[ri, ci]).sum())
    best = c[ri, ci][np.isfinite(c[ri, ci])].sum()
    for ties in ("matching", "expected"):
        res = linkrisk.attack(_df(a), _df(b), method="gdbrl", metric=metric, ties=ties)
        link = res.per_record["link"].to_numpy()
        assert len(set(link)) == n
        got = c[np.arange(n), link]
        assert np.isinf(got).sum() == n_inf == res.extra["no_information_links"]
        assert np.isclose(got[np.isfinite(got)].sum(), best, rtol=1e-12)
        assert np.isclose(res.extra["total_cost"], best, rtol=1e-12)
        np.testing.assert_allclose(res.per_record["score"], c[np.arange(n), link], rtol=1e-12)
        if ties == "matching":
            assert res.extra["solver"] == "dense"
            assert res.extra["fixed_points"] == (link == np.arange(n)).sum()
            # averaged over identical records (missing equals missing): attacks/orbit.py
            ka, kb = [tuple(map(str, r)) for r in a], [tuple(map(str, r)) for r in b]
            assert res.correct_links == pytest.approx(class_average(ka, kb, link), rel=1e-12)


def test_missing_values_above_the_budget_are_refused():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(300, 2))  # 16 B x 300² = 1.4 MB
    a[0, 0] = np.nan
    with pytest.raises(LinkriskError, match="sparse certified solver does not take missing"):
        linkrisk.attack(_df(a), _df(a), method="gdbrl", memory_budget="1MiB")


def test_complete_files_keep_the_engine_path(monkeypatch):
    from linkrisk.attacks import globalmatch

    def boom(*_a, **_k):
        raise AssertionError("missing-value path on complete files")

    monkeypatch.setattr(globalmatch, "_missing", boom)
    a, b = _int_pair(40)
    res = linkrisk.attack(_df(a), _df(b), method="gdbrl")
    assert res.extra["solver"] == "dense"
