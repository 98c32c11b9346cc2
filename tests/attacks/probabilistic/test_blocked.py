"""prl with blocking (attacks/probabilistic/blocked.py; docs/methods.md, "Blocking"):
against an independent brute force over the same-block pairs, and one block holding every
record against the unblocked attack."""

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from linkrisk.attacks.probabilistic.blocked import (
    _block_pairs,
    blocked_counts,
    layout,
    window_counts_kernel,
)

from .conftest import RTOL, mixed_files, pram_files


def _run(a, b, path=None, **kw):
    """linkrisk.attack's prl; with ``path`` run_prl's forced candidate search, packaged
    the same way."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path is None:
            return linkrisk.attack(a, b, "prl", assume_row_order=True, **kw)
        opts = {k: kw.pop(k) for k in ("block", "seed") if k in kw}
        ctx = make_context(a, b, assume_row_order=True, **opts)[0]
        out = P.run_prl(ctx, path=path, **kw)
    s = out.sets
    per = pd.DataFrame({"link": s.link, "candidates": s.count, "true_in_set": s.true_in_set,
                        "correct": s.correct, "score": s.min_score})
    per.index.name = "record"
    if ctx.blocks is not None:
        per["blocked_out"] = (ctx.truth >= 0) & ~ctx.blocks.linkable(ctx.truth)
        out.extra.update(block=list(ctx.blocks.keys), blocks=ctx.blocks.count,
                         not_linkable_blocking=int(per["blocked_out"].sum()))
    return SimpleNamespace(per_record=per, extra=out.extra, qi=list(ctx.qi))


def _keyed(n, cards, keep, seed, blocks=5, moved=0.1):
    """PRAM files with a key ``g``: blocks of very different sizes, some true partners
    moved to another block, one block on the attacker's side only."""
    a, b = pram_files(n, cards, keep, seed)
    rng = np.random.default_rng(seed + 100)
    g = np.minimum(rng.geometric(0.3, n) - 1, blocks - 1)
    a["g"], b["g"] = g, g.copy()
    move = rng.random(n) < moved
    b.loc[move, "g"] = (g[move] + 1) % (blocks - 1)  # never into the last block
    return a, b


def _brute(a, b, qi, key_a, key_b, tol=None, max_iter=1000):
    """prl by enumerating the same-block pairs: patterns, counts, the same EM, weights and
    thresholds, then each record's maximal-weight set among its block's records."""
    m = len(qi)
    agree = np.zeros((len(a), len(b), m), bool)
    for j, c in enumerate(qi):
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if tol is not None and c in tol:
            agree[:, :, j] = np.abs(x[:, None].astype(float) - y[None, :].astype(float)) <= tol[c]
        else:
            agree[:, :, j] = x[:, None] == y[None, :]
    pattern = (agree.astype(np.int64) << np.arange(m)).sum(-1)
    same = (key_a[:, None] == key_b[None, :]) & (key_a[:, None] >= 0)
    counts = np.bincount(pattern[same], minlength=1 << m)
    na = np.array([(key_a == k).sum() for k in np.unique(key_a[key_a >= 0])])
    nb = np.array([(key_b == k).sum() for k in np.unique(key_a[key_a >= 0])])
    known = np.minimum(na, nb).sum() / (na * nb).sum()
    fit = P.em(counts, m, known, max_iter, fixed_p=known)
    wa, wd = P.agreement_weights(fit.m, fit.u)
    score = P.pattern_table(-wa, -wd)
    th = P.fs_thresholds(P.pattern_table(wa, wd), P.pattern_probs(fit.m),
                         P.pattern_probs(fit.u), 0.01, 0.01)
    sc = np.where(same, score[pattern], np.inf)
    mn = sc.min(axis=1)
    tied = same & (sc <= mn[:, None] + RTOL * np.abs(mn[:, None]))
    count = tied.sum(axis=1)
    truth = np.arange(len(a))
    hit = same[truth, truth] & tied[truth, truth]
    return dict(counts=counts, fit=fit, th=th, cls=th.cls, count=count, hit=hit,
                min=np.where(count > 0, mn, np.inf), tied=tied, known=known)


def _codes(a, b, key="g"):
    """Block codes as the brute force uses them (−1: missing)."""
    ka = pd.to_numeric(a[key], errors="coerce").to_numpy()
    kb = pd.to_numeric(b[key], errors="coerce").to_numpy()
    return (np.where(np.isnan(ka), -1, ka).astype(np.int64),
            np.where(np.isnan(kb), -1, kb).astype(np.int64))


def _check(res, ref, a, b, key_a, key_b):
    per = res.per_record
    assert res.extra["pairs"] == int(ref["counts"].sum())
    assert res.extra["match_proportion"] == pytest.approx(ref["known"], rel=1e-12)
    for c, v in res.extra["m"].items():
        assert v == pytest.approx(ref["fit"].m[list(res.qi).index(c)], rel=1e-9, abs=1e-12)
    assert res.extra["linked_pairs"] == int(ref["counts"][ref["cls"] == 2].sum())
    assert res.extra["nonlinked_pairs"] == int(ref["counts"][ref["cls"] == 0].sum())
    np.testing.assert_array_equal(per["candidates"].to_numpy(), ref["count"])
    np.testing.assert_array_equal(per["true_in_set"].to_numpy(), ref["hit"])
    np.testing.assert_allclose(per["score"].to_numpy(), ref["min"], rtol=1e-9)
    np.testing.assert_allclose(per["correct"].to_numpy(),
                               np.where(ref["hit"], 1 / np.maximum(ref["count"], 1), 0.0))
    link = per["link"].to_numpy()
    ok = link >= 0
    np.testing.assert_array_equal(ok, ref["count"] > 0)
    assert ref["tied"][np.flatnonzero(ok), link[ok]].all()  # a tied record of its block
    out = per["blocked_out"].to_numpy()
    np.testing.assert_array_equal(out, (key_a < 0) | (key_a != key_b))
    assert not per["true_in_set"].to_numpy()[out].any()


@pytest.mark.parametrize("path", ["auto", "groups", "engine", "pairs"])
@pytest.mark.parametrize("seed", [0, 1])
def test_brute_force_categorical(path, seed):
    """Categorical QIs (many tied patterns), every candidate search."""
    a, b = _keyed(400, [3, 4, 2, 5], [0.8, 0.7, 0.9, 0.6], seed)
    res = _run(a, b, block="g", seed=seed, path=None if path == "auto" else path)
    ka, kb = _codes(a, b)
    ref = _brute(a, b, res.qi, ka, kb)
    _check(res, ref, a, b, ka, kb)
    if path != "auto":
        assert res.extra["candidate_search"] == path


def test_brute_force_tolerance_and_missing_key():
    """Numeric QIs compared within a tolerance (pair kernels), and records with a missing
    key: compared with nothing, not linkable."""
    rng = np.random.default_rng(5)
    n = 300
    a = pd.DataFrame({"x": rng.integers(0, 30, n).astype(float),
                      "y": rng.integers(0, 10, n).astype(float)})
    b = a + rng.integers(-2, 3, (n, 2))
    g = rng.integers(0, 4, n).astype(float)
    a["g"], b["g"] = g, g.copy()
    a.loc[[3, 50], "g"] = np.nan
    b.loc[[7, 90, 91], "g"] = np.nan
    tol = {"x": 1.0, "y": 0.0}
    res = _run(a, b, block="g", tol=tol)
    assert res.extra["candidate_search"] == "pairs"
    ka, kb = _codes(a, b)
    ref = _brute(a, b, res.qi, ka, kb, tol=tol)
    _check(res, ref, a, b, ka, kb)
    per = res.per_record
    assert (per.loc[[3, 50], "candidates"] == 0).all() and (per.loc[[3, 50], "link"] == -1).all()
    assert per.loc[[3, 50, 7, 90, 91], "blocked_out"].all()


def _context(a, b, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_context(a, b, assume_row_order=True, **kw)[0]


def test_counts_every_path_equal():
    """The walk with the block as attribute 0, numpy over the pairs and the compiled
    window kernel count the same same-block pairs."""
    a, b = _keyed(500, [3, 4, 2, 5, 3], [0.8, 0.7, 0.9, 0.6, 0.8], 7)
    ctx = _context(a, b, block="g")
    cmp = P.compare(ctx)
    lay = layout(ctx)
    walked = blocked_counts(cmp, lay)
    ia, ib = _block_pairs(lay)
    agree = cmp.a[ia] == cmp.b[ib]
    ref = np.bincount((agree.astype(np.int64) << np.arange(5)).sum(1), minlength=32)
    np.testing.assert_array_equal(walked, ref)
    kern = window_counts_kernel(cmp.a, cmp.b, lay.ib, lay.start, lay.end, cmp.tol, 32, 3)
    np.testing.assert_array_equal(kern, ref)


def test_keys_compared_as_categories():
    """2, 2.0 and "2" are one block."""
    a, b = _keyed(200, [3, 4, 2], [0.8, 0.7, 0.9], 2)
    ref = _run(a, b, block="g")
    a2, b2 = a.copy(), b.copy()
    a2["g"] = a2["g"].astype(str)
    b2["g"] = b2["g"].astype(float)
    got = _run(a2, b2, block="g")
    pd.testing.assert_frame_equal(got.per_record, ref.per_record)


def test_partner_in_other_block_counted():
    a, b = _keyed(200, [3, 4, 2], [0.8, 0.7, 0.9], 3, moved=0.0)
    b.loc[5, "g"] = (b.loc[5, "g"] + 1) % 4
    res = _run(a, b, block="g")
    assert res.extra["not_linkable_blocking"] == 1
    assert res.per_record.loc[5, "blocked_out"] and res.per_record.loc[5, "correct"] == 0


def _one_block(a, b):
    a1, b1 = a.copy(), b.copy()
    a1["g"], b1["g"] = 2, "2"
    return a1, b1


@pytest.mark.parametrize("kw", [{}, {"path": "groups"}, {"path": "engine"}, {"path": "pairs"},
                                {"one_to_one": True}, {"match_proportion": None}])
def test_single_block_equals_unblocked_categorical(kw):
    a, b = pram_files(300, [3, 4, 5, 3], [0.8, 0.7, 0.9, 0.6], 4)
    plain = _run(a, b, seed=3, **kw)
    a1, b1 = _one_block(a, b)
    got = _run(a1, b1, block="g", seed=3, **kw)
    assert not got.per_record.pop("blocked_out").any()
    pd.testing.assert_frame_equal(got.per_record, plain.per_record)
    for k in ("block", "blocks", "not_linkable_blocking"):
        got.extra.pop(k)
    assert got.extra == plain.extra


@pytest.mark.parametrize("kw", [{}, {"tol": 3.0}, {"one_to_one": True}, {"path": "pairs"}])
def test_single_block_equals_unblocked_mixed_and_missing(kw):
    """Mixed QIs (quantile bins or tolerances), and missing values (three-state
    comparisons) on the engine, pair and assignment paths."""
    a, b = mixed_files(6, n=120)
    a.loc[[2, 9], "x"] = np.nan
    b.loc[[4], "c"] = np.nan
    plain = _run(a, b, seed=1, **kw)
    assert plain.extra.get("missing_values")
    a1, b1 = _one_block(a, b)
    got = _run(a1, b1, block="g", seed=1, **kw)
    got.per_record.pop("blocked_out")
    pd.testing.assert_frame_equal(got.per_record, plain.per_record)


@pytest.mark.parametrize("kw", [{}, {"path": "pairs"}, {"one_to_one": True}])
def test_missing_values_links_stay_in_block(kw):
    a, b = _keyed(240, [3, 4, 2], [0.8, 0.7, 0.9], 8)
    a["x0"] = a["x0"].astype(object)
    a.loc[[1, 5, 8], "x0"] = None
    res = _run(a, b, block="g", **kw)
    assert res.extra["missing_values"]
    per = res.per_record
    link = per["link"].to_numpy()
    ok = link >= 0
    np.testing.assert_array_equal(a["g"].to_numpy()[ok], b["g"].to_numpy()[link[ok]])
    assert not per["true_in_set"].to_numpy()[per["blocked_out"].to_numpy()].any()
    if kw.get("one_to_one"):
        assert np.unique(link[ok]).size == ok.sum()


def test_one_to_one_per_block():
    """One assignment per block: one-to-one, within the block, surplus records unlinked."""
    a, b = _keyed(200, [3, 4, 2, 3], [0.8, 0.7, 0.9, 0.7], 9)
    res = _run(a, b, block="g", one_to_one=True)
    link = res.per_record["link"].to_numpy()
    ok = link >= 0
    assert np.unique(link[ok]).size == ok.sum()
    np.testing.assert_array_equal(a["g"].to_numpy()[ok], b["g"].to_numpy()[link[ok]])
    for k in np.unique(a["g"]):
        assert ok[a["g"].to_numpy() == k].sum() == min((a["g"] == k).sum(), (b["g"] == k).sum())


def test_no_shared_block_refused():
    a, b = pram_files(50, [3, 3], [0.8, 0.8], 1)
    a["g"], b["g"] = 0, 1
    with pytest.raises(linkrisk.LinkriskError, match="no block has records of both files"):
        _run(a, b, block="g")
