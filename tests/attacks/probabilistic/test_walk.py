"""prl's compiled subset walk against the numpy walk and the pairs (walk.py)."""

import numpy as np
import pytest

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    _numeric_files,
    _numpy_walk_counts,
    _walk_cases,
    pram_files,
)


@pytest.mark.parametrize("case", ["categorical", "numeric", "numeric_q3", "unequal", "one"])
def test_compiled_walk_equals_numpy_walk(case):
    """The compiled walk (pruned rows, small groups finished pair by pair, parallel counts)
    gives the numpy walk's pattern counts, minimal scores, candidate counts and links bit
    for bit, on data with many exact ties (repeated categories, rounded values, tied
    weights), attributes of zero weight (left out of the walk) and several seeds."""
    q = 10
    if case == "categorical":
        a, b = pram_files(500, [3, 4, 6, 8, 4, 5, 2, 3], [0.85, 0.8, 0.9, 0.7, 0.75, 0.8,
                                                         0.9, 0.9], 2)
    elif case == "unequal":  # B a subset of A's records, in another order
        a, b = pram_files(450, [3, 5, 4, 7, 3, 6], [0.9, 0.8, 0.7, 0.85, 0.8, 0.75], 5)
        a["id"] = b["id"] = range(450)
        b = b.sample(320, random_state=1)
    elif case == "one":
        a, b = pram_files(200, [4], [0.8], 1)
    else:
        a, b = _numeric_files(600, 9, 3)
        q = 3 if case == "numeric_q3" else 10
    ctx, _ = make_context(a, b, ids="id" if "id" in a else None)
    cmp = P.compare(ctx, q=q)
    m = cmp.a.shape[1]
    at_least = np.zeros(1 << m, np.int64)
    P.run_walk(P.stack_columns(cmp), cmp.size, cmp.a.shape[0], P.COUNT, at_least=at_least)
    counts = P.superset_mobius(at_least, m)
    np.testing.assert_array_equal(counts, _numpy_walk_counts(cmp))
    np.testing.assert_array_equal(P.pattern_counts(cmp), counts)
    rng = np.random.default_rng(7)
    fit = P.em(counts, m, 1 / len(a), fixed_p=1 / len(a))
    weights = [P.agreement_weights(fit.m, fit.u),
               (np.round(rng.uniform(0.5, 2, m), 0), -np.round(rng.uniform(0, 1, m), 0)),
               (np.ones(m), np.zeros(m))]  # every pattern of one size tied
    if m > 2:
        wa, wd = np.round(rng.uniform(0.5, 2, m), 1), -np.ones(m)
        wa[1] = wd[1] = 0.0  # zero weight: left out of the walk
        weights.append((wa, wd))
    ties = 0
    for wa, wd in weights:
        score = P.pattern_table(-wa, -wd)
        keep = np.flatnonzero(wa != wd)
        for seed in (0, 3):
            old = P.group_sets(cmp, score, ctx.truth, seed, keep=keep, walk="numpy")
            new = P.group_sets(cmp, score, ctx.truth, seed, keep=keep)
            for f in ("min_score", "count", "true_in_set", "true_score", "link"):
                np.testing.assert_array_equal(getattr(new, f), getattr(old, f), err_msg=f)
            ties += int((new.count > 1).sum())
    assert ties > 0  # ties exercised


@pytest.mark.parametrize("case", ["categorical", "unequal", "numeric_q3"])
def test_walk_kernels_against_pairs_and_two_walks(case):
    """The pair counts with small groups finished by their exact later pattern (folded by
    ``fold_finished``) equal the enumeration of all pairs whatever the small-group limit
    (0: every group refined; 1; the default; everything finished below two attributes),
    and the one-walk candidate sets (events of the minimum walk, replayed in walk order; 1
    or several threads, the same limits) equal the two-walk path (minimum, then collecting
    walk) bit for bit, on data with tied records, tied weights and unequal file sizes."""
    import numba

    _, a, b, q = next(c for c in _walk_cases() if c[0] == case)
    ctx, _ = make_context(a, b, ids="id" if "id" in a else None)
    cmp = P.compare(ctx, q=q)
    n_a, m = cmp.a.shape
    want = P.pair_counts(cmp)  # every pair's pattern, binned
    for lim in (0, 1, P.SMALL, 10**9):
        at_least = np.zeros(1 << m, np.int64)
        P.run_walk(P.stack_columns(cmp), cmp.size, n_a, P.COUNT, at_least=at_least, small_lim=lim)
        np.testing.assert_array_equal(P.superset_mobius(at_least, m), want, err_msg=str(lim))
    rng = np.random.default_rng(3)
    fit = P.em(want, m, 1 / n_a, fixed_p=1 / n_a)
    weights = [P.agreement_weights(fit.m, fit.u), (np.ones(m), np.zeros(m)),
               (np.round(rng.uniform(0.5, 2, m), 1), -np.ones(m))]
    threads = numba.get_num_threads()
    ties = 0
    try:
        for wa, wd in weights:
            score = P.pattern_table(-wa, -wd)
            keep = np.flatnonzero(wa != wd)
            codes = P.stack_columns(cmp)[:, keep]
            full = (((np.arange(1 << keep.size)[:, None] >> np.arange(keep.size)) & 1)
                    << keep).sum(axis=1)
            score_k = score[full]
            for seed in (0, 5):
                old = P.group_sets(cmp, score, ctx.truth, seed, keep=keep, walk="walks")
                base = P.walk_base(np.arange(n_a, dtype=np.uint64), seed)
                for nt, lim in ((1, 0), (1, P.SMALL), (threads, 1), (threads, 10**9)):
                    numba.set_num_threads(nt)
                    best = np.full(n_a, np.inf)
                    ev = P.min_walk(codes, cmp.size[keep], n_a, score_k, best, base, lim)
                    thr = P.tie_threshold_np(best, P.RTOL)
                    count = np.zeros(n_a, np.int64)
                    link = np.full(n_a, -1, np.int64)
                    P.replay_walk(ev, P.walk_order(keep.size), score_k, thr, base, count, link)
                    np.testing.assert_array_equal(best, old.min_score)
                    np.testing.assert_array_equal(count, old.count)
                    np.testing.assert_array_equal(link, old.link)
                new = P.group_sets(cmp, score, ctx.truth, seed, keep=keep)
                for f in ("min_score", "count", "true_in_set", "true_score", "link"):
                    np.testing.assert_array_equal(getattr(new, f), getattr(old, f), err_msg=f)
                ties += int((old.count > 1).sum())
    finally:
        numba.set_num_threads(threads)
    assert ties > 0


def test_walk_order_is_the_walks_order():
    """walk_order ranks the subsets as grouping.subset_walk visits them."""
    from linkrisk.grouping import subset_walk

    seen = []
    subset_walk(np.zeros((2, 5), np.int64), np.ones(5, np.int64),
                lambda s, ids, g: seen.append(s))
    rank = P.walk_order(5)
    assert sorted(seen) == list(range(32))
    np.testing.assert_array_equal(rank[seen], np.arange(32))
