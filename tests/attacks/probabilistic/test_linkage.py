"""The prl attack end to end (linkage.py)."""

import json

import numpy as np
import pytest

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from linkrisk.errors import LinkriskError
from tests.attacks.probabilistic.conftest import (
    _brute_sets,
    brute_scores,
    mixed_files,
)


def test_prl_attack_with_numeric_and_tolerance_vs_brute_force():
    a, b = mixed_files(5, n=120)
    for kw in ({}, {"tol": {"x": 3.0}, "q": 6}):
        res = linkrisk.attack(a, b, method="prl", **kw)
        ctx, _ = make_context(a, b)
        cmp = P.compare(ctx, q=kw.get("q", 10), tol=kw.get("tol"))
        wa = np.array(list(res.extra["weight_agree"].values()))
        wd = np.array(list(res.extra["weight_disagree"].values()))
        _, _, cnt, tin = _brute_sets(brute_scores(cmp, wa, wd), ctx.truth)
        np.testing.assert_array_equal(res.per_record["candidates"].to_numpy(), cnt)
        assert res.correct_links == pytest.approx(np.where(tin, 1 / cnt, 0).sum())
        assert res.extra["pairs"] == 120 * 120
        json.dumps(res.to_dict())


def test_identity_and_real_data(data_dir):
    h = linkrisk.datasets.load("household", data_dir=data_dir)
    res = linkrisk.attack(h, h, method="prl")
    assert res.correct_links == pytest.approx(493)  # duplicates tie, as in dbrl
    assert res.extra["candidate_search"] in ("groups", "engine")


@pytest.mark.parametrize("kw,match", [
    ({"q": 1}, "q"), ({"tol": {"c": 1.0}}, "numeric attributes"), ({"tol": -1.0}, "tol"),
    ({"max_fp": 1.5}, "max_fp"), ({"match_proportion": 2}, "match_proportion"),
    ({"max_iter": 0}, "max_iter"), ({"one_to_one": True, "memory_budget": 2**20},
                                    "memory budget"),
])
def test_errors(kw, match):
    a, b = mixed_files(8, n=300)
    with pytest.raises(LinkriskError, match=match):
        linkrisk.attack(a, b, method="prl", **kw)


def test_prl_runs_on_a_local_suppression_release_of_household():
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    orig = linkrisk.datasets.load("household")[keys].iloc[:1500].reset_index(drop=True)
    rel = linkrisk.mask(orig, "local_suppression", k=3, columns=keys)
    assert rel.isna().to_numpy().any()
    res = linkrisk.attack(orig, rel, method="prl")
    assert res.extra["missing_values"] and 0 < res.extra["missing_comparisons"] < 0.1
    assert res.extra["em_converged"] and 0 < res.rate <= 1
    assert res.extra["linked_pairs"] + res.extra["clerical_pairs"] + \
        res.extra["nonlinked_pairs"] == 1500 * 1500
    one = linkrisk.attack(orig, rel, method="prl", one_to_one=True)
    assert (one.per_record["link"] >= 0).all() and 0 < one.rate <= 1
