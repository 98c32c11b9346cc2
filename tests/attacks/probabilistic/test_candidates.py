"""prl's candidate sets against brute force over all pairs (candidates.py)."""

import numpy as np
import pandas as pd
import pytest

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    _brute_sets,
    brute_scores,
    pram_files,
)


@pytest.mark.parametrize("path", ["groups", "engine", "pairs"])
@pytest.mark.parametrize("weights", ["tied", "em", "zero"])
def test_prl_candidate_sets_equal_brute_force(path, weights):
    a, b = pram_files(300, [3, 4, 6, 8, 4, 5], [0.85, 0.8, 0.9, 0.7, 0.75, 0.8], 4)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    if weights == "tied":  # equal weights: many exact and rounding-level ties
        wa = np.array([1.0, 1.0, 1.0, 0.1, 0.3, 0.2])
        wd = np.array([-1.0, -1.0, -1.0, -0.2, -0.1, -0.3])
    elif weights == "zero":  # m_j = u_j: attributes 1 and 4 weigh nothing (left out of walk)
        wa = np.array([2.0, 0.0, 1.5, 0.7, 0.0, 1.1])
        wd = np.array([-3.0, 0.0, -0.5, -0.2, 0.0, -1.0])
    else:
        out = P.run_prl(ctx)
        wa = np.array(list(out.extra["weight_agree"].values()))
        wd = np.array(list(out.extra["weight_disagree"].values()))
    if path == "groups" and not (wa >= wd).all():
        pytest.skip("groups needs every agreement to raise the weight")
    score = P.pattern_table(-wa, -wd)
    sets = {"groups": lambda: P.group_sets(cmp, score, ctx.truth, 0,
                                           keep=np.flatnonzero(wa != wd)),
            "engine": lambda: P.engine_sets(ctx, cmp, wa, wd),
            "pairs": lambda: P.pair_sets(ctx, cmp, score)}[path]()
    mn, c, cnt, tin = _brute_sets(brute_scores(cmp, wa, wd), ctx.truth)
    np.testing.assert_array_equal(sets.count, cnt)
    np.testing.assert_array_equal(sets.true_in_set, tin)
    np.testing.assert_allclose(sets.min_score, mn, rtol=1e-12)
    assert c[np.arange(len(a)), sets.link].all()
    assert (cnt > 1).any()  # ties exercised


def test_groups_link_is_uniform_over_ties():
    a = pd.DataFrame({"p": pd.Categorical([0]), "q": pd.Categorical([0])})
    b = pd.DataFrame({"p": pd.Categorical([0, 0, 0, 1, 1, 1]),
                      "q": pd.Categorical([1, 1, 1, 0, 0, 0])})
    b["id"], a["id"] = range(6), [0]
    ctx, _ = make_context(a, b, qi=["p", "q"], ids="id")
    cmp = P.compare(ctx)
    score = P.pattern_table(-np.array([1.0, 1.0]), np.zeros(2))
    seen = [int(P.group_sets(cmp, score, ctx.truth, seed).link[0]) for seed in range(600)]
    freq = np.bincount(seen, minlength=6)
    assert freq.min() > 60  # 100 expected for each of the 6 tied records
