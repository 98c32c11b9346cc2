"""Blocking (docs/methods.md, "Blocking"): ``block=`` restricts every attack's candidates to
the records of the same block; transforms stay those of the whole file."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.attacks import ATTACKS, make_context
from linkrisk.engine.nearest import nearest_sets, standardize
from linkrisk.errors import LinkriskError

#: attacks whose blocking is tested on numeric files (prl's EM fits the same-block pairs,
#: so separated blocks change it: tests/attacks/probabilistic/test_blocked.py)
NUMERIC = [m for m, s in ATTACKS.items() if "numeric" in s.kinds and m != "prl"]


def _separated(n: int = 240, m: int = 3, blocks: int = 4, seed: int = 0
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Blocks far apart in every attribute: the unblocked attack never links across."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, blocks, n)
    x = rng.normal(size=(n, m)) + 1000.0 * g[:, None]
    cols = [f"x{j}" for j in range(m)]
    a = pd.DataFrame(x, columns=cols)
    b = pd.DataFrame(x + rng.normal(scale=0.3, size=x.shape), columns=cols)
    a["g"], b["g"] = g, g
    return a, b


def _run(a, b, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return linkrisk.attack(a, b, method, assume_row_order=True, **kw)


PARAMS = {"rsrl": {"p": 5.0}, "rsrl_union": {"p": 5.0}}


@pytest.mark.parametrize("method", NUMERIC)
def test_separated_blocks_equal_unblocked(method):
    a, b = _separated()
    qi = [c for c in a.columns if c != "g"]
    plain = _run(a, b, method, qi=qi, **PARAMS.get(method, {}))
    blocked = _run(a, b, method, block="g", **PARAMS.get(method, {}))
    assert blocked.qi == qi
    for col in ("link", "candidates", "true_in_set", "correct"):
        np.testing.assert_array_equal(blocked.per_record[col], plain.per_record[col], col)
    assert blocked.correct_links == plain.correct_links
    assert blocked.extra["blocks"] == 4 and blocked.extra["not_linkable_blocking"] == 0
    assert not blocked.per_record["blocked_out"].any()
    assert "blocked_out" not in plain.per_record


def _integer_files(n: int, seed: int, blocks: int):
    """Integer values (many ties) and blocks of very different sizes (some above the
    kernels' tie buffer of 32 released records, some empty on one side)."""
    rng = np.random.default_rng(seed)
    g = np.minimum(rng.geometric(0.25, n) - 1, blocks - 1)
    a = pd.DataFrame(rng.integers(0, 4, (n, 3)).astype(float), columns=["x", "y", "z"])
    b = a + rng.integers(-1, 2, (n, 3))
    a["g"], b["g"] = g, g.copy()
    move = rng.random(n) < 0.1  # some true partners in another block
    b.loc[move, "g"] = (g[move] + 1) % blocks
    return a, b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dbrl_equals_per_block_search(seed):
    """dbrl with blocking = the engine per block on the whole file's standardized values,
    and a numpy brute force of the candidate sets."""
    a, b = _integer_files(300, seed, 7)
    res = _run(a, b, "dbrl", block="g", seed=seed)
    xa = standardize(a[["x", "y", "z"]].to_numpy(float))
    xb = standardize(b[["x", "y", "z"]].to_numpy(float))
    ga, gb = a["g"].to_numpy(), b["g"].to_numpy()
    truth = np.arange(len(a))
    per = res.per_record
    for k in np.unique(ga):
        ia, ib = np.flatnonzero(ga == k), np.flatnonzero(gb == k)
        if ib.size == 0:
            assert (per["candidates"].to_numpy()[ia] == 0).all()
            assert (per["link"].to_numpy()[ia] == -1).all()
            continue
        pos = {j: p for p, j in enumerate(ib)}
        lt = np.array([pos.get(t, -1) for t in truth[ia]])
        ref = nearest_sets(xa[ia], xb[ib], truth=lt, row_ids=ia, seed=seed)
        np.testing.assert_array_equal(per["candidates"].to_numpy()[ia], ref.count)
        np.testing.assert_array_equal(per["link"].to_numpy()[ia], ib[ref.link])
        np.testing.assert_array_equal(per["true_in_set"].to_numpy()[ia], ref.true_in_set)
        d = ((xa[ia][:, None, :] - xb[ib][None, :, :]) ** 2).sum(axis=2)
        mn = d.min(axis=1)
        np.testing.assert_allclose(per["score"].to_numpy()[ia], mn)
        brute = (d <= mn[:, None] * (1 + 1e-9)).sum(axis=1)
        np.testing.assert_array_equal(per["candidates"].to_numpy()[ia], brute)
    out = per["blocked_out"].to_numpy()
    np.testing.assert_array_equal(out, ga != gb)
    assert res.extra["not_linkable_blocking"] == int((ga != gb).sum())
    assert not per["true_in_set"].to_numpy()[out].any()


@pytest.mark.parametrize("method", ["dbrl_l1", "rbrl_sum", "rbrl_max", "kernel",
                                    "mahalanobis", "gdbrl"])
def test_other_attacks_equal_per_block_rule(method):
    """Every candidate of a blocked attack is in the record's block, and a partner in
    another block is never found."""
    a, b = _integer_files(200, 3, 5)
    b[["x", "y", "z"]] += np.random.default_rng(1).normal(scale=0.1, size=(200, 3))
    res = _run(a, b, method, block="g")
    per = res.per_record
    link = per["link"].to_numpy()
    ok = link >= 0
    np.testing.assert_array_equal(a["g"].to_numpy()[ok], b["g"].to_numpy()[link[ok]])
    assert not per["true_in_set"].to_numpy()[per["blocked_out"].to_numpy()].any()


def test_keys_compared_as_categories():
    """2, 2.0 and "2" are one block (data.category_key)."""
    a, b = _separated()
    ref = _run(a, b, "dbrl", block="g")
    b2 = b.copy()
    b2["g"] = b2["g"].astype(float)
    a2 = a.copy()
    a2["g"] = a2["g"].astype(str)
    got = _run(a2, b2, "dbrl", block="g")
    pd.testing.assert_frame_equal(got.per_record, ref.per_record)


def test_partner_in_other_block_not_linkable():
    a, b = _separated(n=60, blocks=2)
    b.loc[5, "g"] = 1 - b.loc[5, "g"]
    res = _run(a, b, "dbrl", block="g")
    assert res.extra["not_linkable_blocking"] == 1
    assert res.per_record.loc[5, "blocked_out"] and res.per_record.loc[5, "correct"] == 0


def test_missing_key_compared_with_nothing():
    a, b = _separated(n=60, blocks=2)
    a["g"] = a["g"].astype(float)
    a.loc[3, "g"] = np.nan
    with pytest.warns(linkrisk.LinkriskWarning, match="missing blocking key"):
        res = linkrisk.attack(a, b, "dbrl", block="g", assume_row_order=True)
    assert res.per_record.loc[3, "candidates"] == 0 and res.per_record.loc[3, "link"] == -1
    assert res.per_record.loc[3, "blocked_out"]


@pytest.mark.parametrize("block, match", [("nope", "blocking key 'nope' is not in"),
                                          ("x0", "both a blocking key and a QI")])
def test_bad_block_column(block, match):
    a, b = _separated(n=40)
    with pytest.raises(LinkriskError, match=match):
        linkrisk.attack(a, b, "dbrl", qi="x0,x1", block=block, assume_row_order=True)


def test_settings_field():
    s = linkrisk.LinkSettings(block="g, h")
    assert s.block == ("g", "h") and s.to_dict()["block"] == ["g", "h"]
    with pytest.raises(LinkriskError, match="named twice"):
        linkrisk.LinkSettings(block=["g", "g"])


def test_context_blocks_keys_out_of_qi():
    a, b = _separated(n=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx, _ = make_context(a, b, block="g", assume_row_order=True)
    assert "g" not in ctx.qi and ctx.blocks.count == 4


def test_dask_backend_same_result():
    pytest.importorskip("distributed")
    from distributed import Client

    a, b = _integer_files(300, 4, 4)
    ref = _run(a, b, "dbrl", block="g")
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=None) as client:
        got = _run(a, b, "dbrl", block="g", backend="dask", scheduler=client)
    pd.testing.assert_frame_equal(got.per_record, ref.per_record)


def test_assess_blocks_every_attack_and_names_the_keys():
    a, b = _separated(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = linkrisk.assess(a, b, qi="x0,x1,x2", attacks="dbrl,rbrl_sum", block="g",
                              assume_row_order=True, scenarios="greedy")
    assert res.settings["block"] == ["g"]
    assert res.results["dbrl"].extra["blocks"] == 4


def test_prl_runs_with_blocking():
    """prl links within blocks (tests/attacks/probabilistic/test_blocked.py checks it
    against a brute force): every link in the record's block, method="all" runs it."""
    a, b = _integer_files(200, 5, 4)
    res = _run(a, b, "prl", block="g")
    link = res.per_record["link"].to_numpy()
    ok = link >= 0
    np.testing.assert_array_equal(a["g"].to_numpy()[ok], b["g"].to_numpy()[link[ok]])
    assert res.extra["pairs"] < len(a) * len(b)
    every = _run(a, b, "all", block="g")
    assert "prl" in every and "prl" not in every.skipped
