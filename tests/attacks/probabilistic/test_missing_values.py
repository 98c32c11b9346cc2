"""prl on files with missing values: the third comparison state (counts, EM, sets) against plain references."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    RTOL,
    _brute_sets,
    _holes,
    _ref_em,
    _ref_pairs,
    pram_files,
)


@pytest.mark.parametrize("seed", range(3))
def test_missing_values_em_and_sets_equal_a_reference(seed):
    """Three-state comparisons: the pattern counts, EM (against a plain EM over all pairs),
    and the maximal-weight sets (against per-pair scores) on files with missing cells."""
    rng = np.random.default_rng(seed)
    a, b = pram_files(70, [3, 4, 2, 5], [0.9, 0.8, 0.85, 0.9], seed)
    a["v"] = rng.normal(size=len(a)).round(1)
    b["v"] = (a["v"] + rng.normal(0, 0.2, 70)).to_numpy()
    a, b = _holes(a, rng, 0.1), _holes(b, rng, 0.15)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, tol={"v": 0.25} if seed == 2 else None)
    assert cmp.missing
    obs, agr = _ref_pairs(cmp)
    bit = 1 << np.arange(cmp.a.shape[1])
    key = ((obs @ bit) << cmp.a.shape[1]) | (agr @ bit)
    uk, uc = np.unique(key, return_counts=True)
    o, g, c = P.missing_pattern_counts(cmp)
    np.testing.assert_array_equal((o << cmp.a.shape[1]) | g, uk)
    np.testing.assert_array_equal(c, uc)
    known = 1 / 70
    fit = P.em_missing(g, o, c, cmp.a.shape[1], known, max_iter=5000, fixed_p=known)
    m_ref, u_ref = _ref_em(obs, agr, known)
    np.testing.assert_allclose(fit.m, m_ref, atol=1e-7)
    np.testing.assert_allclose(fit.u, u_ref, atol=1e-7)
    tol = {"v": 0.25} if seed == 2 else None
    res = P.run_prl(make_context(a, b)[0], tol=tol)
    assert res.extra["missing_values"] and res.extra["candidate_search"] == (
        "pairs" if seed == 2 else "engine")
    wa = np.array(list(res.extra["weight_agree"].values()))
    wd = np.array(list(res.extra["weight_disagree"].values()))
    sc = np.zeros(obs.shape[:2])
    for j in range(obs.shape[2]):  # −w, a missing comparison adding 0
        sc = sc + np.where(obs[:, :, j], np.where(agr[:, :, j], -wa[j], -wd[j]), 0.0)
    truth = ctx.truth
    _, _, cnt, ok = _brute_sets(sc, truth)
    np.testing.assert_array_equal(res.sets.count, cnt)
    np.testing.assert_array_equal(res.sets.true_in_set, ok)
    np.testing.assert_array_equal(res.sets.min_score, sc.min(1))
    assert np.isclose(sc[np.arange(70), res.sets.link], sc.min(1), rtol=RTOL, atol=0).all()
    for path in ("engine", "pairs") if seed < 2 else ("pairs",):
        alt = P.run_prl(make_context(a, b)[0], tol=tol, path=path).sets
        np.testing.assert_array_equal(alt.count, cnt)
        np.testing.assert_array_equal(alt.true_in_set, ok)
    # one-to-one: an optimal assignment of the grid costs
    one = P.run_prl(make_context(a, b)[0], tol=tol, one_to_one=True)
    ga, gd = P.grid_weights(wa, wd)
    gc = np.zeros(obs.shape[:2])
    for j in range(obs.shape[2]):
        gc = gc + np.where(obs[:, :, j], np.where(agr[:, :, j], ga[j], gd[j]), 0.0)
    ri, ci = linear_sum_assignment(gc)
    link = one.sets.link
    got = link >= 0
    assert got.sum() == 70 and len(set(link[got])) == 70
    assert gc[np.flatnonzero(got), link[got]].sum() == gc[ri, ci].sum()
    np.testing.assert_array_equal(one.sets.min_score[got], sc[np.flatnonzero(got), link[got]])
