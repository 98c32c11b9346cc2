"""prl's thresholds and one-to-one assignment (classification.py)."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    brute_patterns,
    brute_scores,
    pram_files,
)
from tests.attacks.test_orbit import class_average


def test_thresholds_respect_error_bounds_and_class_counts():
    a, b = pram_files(400, [3, 4, 5, 6, 8], [0.8, 0.7, 0.9, 0.85, 0.6], 6)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    pats = brute_patterns(cmp).ravel()
    for max_fp, max_fn in [(0.01, 0.01), (1e-4, 0.05), (0.0, 0.0), (0.2, 0.3)]:
        res = linkrisk.attack(a, b, method="prl", max_fp=max_fp, max_fn=max_fn)
        x = res.extra
        m = np.array(list(x["m"].values()))
        u = np.array(list(x["u"].values()))
        wa, wd = P.agreement_weights(m, u)
        w = P.pattern_table(wa, wd)
        pm, pu = P.pattern_probs(m), P.pattern_probs(u)
        up = np.inf if x["upper_threshold"] is None else x["upper_threshold"]
        lo = -np.inf if x["lower_threshold"] is None else x["lower_threshold"]
        lp, nlp = w >= up, w <= lo
        assert not (lp & nlp).any()
        assert pu[lp].sum() <= max_fp + 1e-12 and pm[nlp].sum() <= max_fn + 1e-12
        assert x["fp_probability"] == pytest.approx(pu[lp].sum(), abs=1e-15)
        assert x["fn_probability"] == pytest.approx(pm[nlp].sum(), abs=1e-15)
        # maximal: the next weight level below the upper (above the lower) threshold breaks
        # the bound
        below = w[w < up]
        if below.size:
            nxt = below.max()
            assert pu[w >= nxt - 1e-9 * max(1, abs(nxt))].sum() > max_fp
        above = w[(w > lo) & ~lp]
        if above.size:
            nxt = above.min()
            assert pm[w <= nxt + 1e-9 * max(1, abs(nxt))].sum() > max_fn
        # pair counts per class from the patterns of all pairs
        assert x["linked_pairs"] == int(lp[pats].sum())
        assert x["nonlinked_pairs"] == int(nlp[pats].sum())
        assert x["linked_pairs"] + x["clerical_pairs"] + x["nonlinked_pairs"] == pats.size


def test_one_to_one_is_an_optimal_assignment():
    a, b = pram_files(120, [2, 3, 4, 5], [0.8, 0.8, 0.9, 0.7], 7)
    res = linkrisk.attack(a, b, method="prl", one_to_one=True)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx)
    wa = np.array(list(res.extra["weight_agree"].values()))
    wd = np.array(list(res.extra["weight_disagree"].values()))
    d = brute_scores(cmp, wa, wd)
    link = res.per_record["link"].to_numpy()
    assert sorted(link) == list(range(120))
    r, c = linear_sum_assignment(d)
    assert d[np.arange(120), link].sum() == pytest.approx(d[r, c].sum())
    # the correct links: the assignment's, averaged over the permutations of identical
    # records (each keeps the cost), counted here from the classes directly
    assert res.extra["fixed_points"] == (link == np.arange(120)).sum()
    ka = [tuple(row) for row in a.astype(str).to_numpy()]
    kb = [tuple(row) for row in b.astype(str).to_numpy()]
    assert len(set(ka)) < len(ka)  # the case has identical records
    assert res.correct_links == pytest.approx(class_average(ka, kb, link), rel=1e-12)
    assert res.extra["candidate_search"] == "assignment"


def test_one_to_one_ties_do_not_favour_row_order():
    """Every pair of identical files of one repeated record has the same weight, so every
    assignment is optimal: the one reported must not be the identity (row order is the
    truth), and it is the same for the same seed."""
    a = pd.DataFrame({"x": ["p"] * 300, "y": ["q"] * 300}).astype("category")
    res = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=3)
    link = res.per_record["link"].to_numpy()
    assert sorted(link) == list(range(300))
    assert res.extra["fixed_points"] <= 15  # a random permutation has ~1 fixed point
    again = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=3)
    assert (again.per_record["link"].to_numpy() == link).all()
    other = linkrisk.attack(a, a.copy(), method="prl", one_to_one=True, seed=4)
    assert not (other.per_record["link"].to_numpy() == link).all()
    # the reported links: the expectation over the permutations of the 300 identical
    # records, 300 · 1/300, whatever the seed's draw
    assert res.correct_links == pytest.approx(1.0) == other.correct_links
