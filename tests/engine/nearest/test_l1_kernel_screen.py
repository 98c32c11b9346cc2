"""The float32 screen of the L1 and kernel metrics: the same minima, counts, true scores and
links as the exact float64 kernel, on ties, near ties across float32 rounding and repeated
rows, and every fallback path taken where it must be."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine.nearest import Pairwise
from linkrisk.engine.nearest import l1_kernel_screen as fs
from linkrisk.engine.nearest.kernels import nearest_block
from linkrisk.engine.nearest.search import nearest_sets
from linkrisk.engine.nearest.sets import exact_sets

RTOL = 1e-9
FIELDS = ("min_score", "count", "true_in_set", "true_score", "link")


def _both(a, b, metric, degree=2, cap=32, seed=5):
    """(exact, screened) results on the same problem; the screen must apply."""
    pw = Pairwise.build(a, b, metric, degree=degree, transpose=False)
    truth = np.arange(a.shape[0]) % b.shape[0]
    rid = np.arange(a.shape[0]) * 7 + 1
    kw = dict(rtol=RTOL, seed=seed, cap=cap, memory_budget=2**20, progress=None)
    ex = exact_sets(pw, truth, rid, **kw)
    sc = fs.float_screened_sets(pw, truth, rid, **kw)
    assert sc is not None
    for f in FIELDS:
        assert np.array_equal(getattr(ex, f), getattr(sc, f)), f
    return ex, sc


def _noisy(n, m, seed, a=0.25):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m))
    return x, x + a * rng.standard_normal((n, m))


@pytest.mark.parametrize("metric,degree", [("l1", 2), ("kernel", 1), ("kernel", 2),
                                           ("kernel", 3)])
def test_generic_data_needs_no_rescan(metric, degree):
    x, y = _noisy(700, 13, 1)
    ex, sc = _both(x, y, metric, degree)
    assert sc.rechecked == 0
    if metric == "l1":  # and the exact kernel is right (independent computation)
        d = cdist(x, y, "cityblock")
        assert np.allclose(ex.min_score, d.min(axis=1), rtol=1e-12)


@pytest.mark.parametrize("metric", ["l1", "kernel"])
def test_repeated_rows_beyond_the_tie_buffer(metric):
    """40 copies of a record (> cap): the exact kernel overflows and recounts by reservoir
    sampling; the screen reproduces count and link from its own buffer."""
    x, y = _noisy(300, 5, 2)
    y = y + 0.37  # not whole numbers (L1 would take the integer kernels)
    y[50:90] = y[50]
    x[:20] = y[50] + 1e-3 * np.arange(20)[:, None]
    ex, sc = _both(x, y, metric)
    assert (ex.count[:20] == 40).all()
    assert sc.rechecked == 0


@pytest.mark.parametrize("metric", ["l1", "kernel"])
def test_near_ties_across_float32_rounding(metric):
    """Records whose exact scores differ from the minimum by ~1e-10 (tied), ~1e-8 (not
    tied) relative: float32 cannot tell them apart, the rescoring must."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 4)) + 0.1
    base = x[rng.integers(0, 60, 60)] + 0.05
    eps = np.array([0.0, 1e-10, 3e-10, 1e-8, 2e-8, 4e-9, 6e-10, 1e-12])
    y = np.concatenate([base * (1.0 + e) for e in eps])
    y = y[rng.permutation(y.shape[0])]
    ex, sc = _both(x, y, metric)
    assert (ex.count > 1).any() and (ex.count < 8).any()


def test_whole_numbers_tied_exactly_kernel():
    """Integer-valued data (many exact ties) through the kernel screen."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (400, 2)).astype(float)
    y = rng.integers(0, 3, (500, 2)).astype(float)
    ex, sc = _both(x, y, "kernel")
    assert ex.count.max() > 32  # tie sets beyond the buffer: the reservoir path
    assert (ex.count > 1).mean() > 0.5


def test_fallback_screen_log_overflow():
    """600 records within the float32 band of the minimum but not tied (1e-8 apart): the
    screen's log (8·cap + 256) overflows and the row is recomputed exactly."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 6)) + 0.3
    y = np.concatenate([x[0] * (1 + 1e-8 * (1 + np.arange(600)))[:, None],
                        rng.standard_normal((200, 6))])
    for metric in ("l1", "kernel"):
        ex, sc = _both(x, y, metric)
        assert sc.rechecked >= 1 and ex.count[0] == 1


def _exact_flags(x, y, metric, cap):
    """(count, overflow flag) of the exact kernel's pass, before any recount."""
    pw = Pairwise.build(x, y, metric)
    n = x.shape[0]
    outs = (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))
    nearest_block(x, np.arange(n), pw.yt, *pw.args, np.full(n, -1), RTOL, cap, 0,
                  pw.tile, 16, *outs)
    return outs[1], outs[4]


@pytest.mark.parametrize("metric,step", [("l1", 0.6e-9), ("kernel", 0.3e-9)])
def test_path_dependent_overflow_flag(metric, step):
    """40 copies of a record (the exact tie buffer overflows), then records each within
    rtol of the previous minimum: the exact kernel's overflow flag survives although
    |C(a)| = 2 ≤ cap (it is recounted); with one clear drop instead the flag is cleared.
    The replay of the screen's log reproduces both."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 6)) + 0.3
    v = np.abs(rng.standard_normal(6)) + 0.5
    far = rng.standard_normal((100, 6)) + 3
    copies = np.repeat((x[0] + 0.5 * v)[None], 40, axis=0)
    chain = np.array([x[0] + 0.5 * v * (1 - step * k) for k in (1, 2, 3)])
    drop = (x[0] + 0.4 * v)[None]
    for y, flag in ((np.concatenate([copies, chain, far]), True),
                    (np.concatenate([copies, drop, far]), False)):
        for cap in (4, 32):
            cnt, over = _exact_flags(x, y, metric, cap)
            assert over[0] == flag and cnt[0] <= 2
            ex, sc = _both(x, y, metric, cap=cap)
            assert sc.rechecked == 0


def test_screen_declines_where_its_proof_does_not_apply():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((20, 3))
    # whole-number L1 scores belong to the integer kernels
    assert fs.error_terms(Pairwise.build(np.round(x), np.round(x), "l1")) is None
    # float32 overflow of (1 + x·y)^d
    assert fs.error_terms(Pairwise.build(x * 100, x, "kernel", degree=20)) is None
    # other metrics, non-finite values
    assert fs.error_terms(Pairwise.build(x, x, "sqeuclidean")) is None
    bad = x.copy()
    bad[0, 0] = np.nan
    assert fs.error_terms(Pairwise.build(bad, x, "l1")) is None
    assert fs.error_terms(Pairwise.build(x + 0.5, x, "l1")) is not None
    # a tie tolerance ≥ 1 (non-monotone threshold)
    pw = Pairwise.build(x + 0.5, x, "l1", transpose=False)
    assert fs.float_screened_sets(pw, np.full(20, -1), np.arange(20), rtol=1.5, seed=0, cap=8,
                                  memory_budget=2**20, progress=None) is None


def test_engine_entry_point_uses_the_screen(monkeypatch):
    """``nearest_sets``: ``screen="float"`` and ``"auto"`` above MIN_PAIRS take the screen
    (same result as ``"none"``); below it the exact kernel."""
    x, y = _noisy(300, 7, 9)
    calls = []
    orig = fs.float_screened_sets
    monkeypatch.setattr(fs, "float_screened_sets",
                        lambda *a, **k: calls.append(1) or orig(*a, **k))
    for metric in ("l1", "kernel"):
        ref = nearest_sets(x, y, metric=metric, screen="none", truth=np.arange(300))
        for screen, lim in (("float", 10**12), ("auto", 0)):
            monkeypatch.setattr(fs, "MIN_PAIRS", lim)
            got = nearest_sets(x, y, metric=metric, screen=screen, truth=np.arange(300))
            for f in FIELDS:
                assert np.array_equal(getattr(ref, f), getattr(got, f)), (metric, screen, f)
    assert len(calls) == 4
    monkeypatch.setattr(fs, "MIN_PAIRS", 10**12)
    nearest_sets(x, y, metric="l1")
    assert len(calls) == 4


def test_attacks_through_the_screen(monkeypatch):
    """dbrl_l1 and kernel on a census masking: the same links with and without the screen."""
    import linkrisk
    from linkrisk.datasets import load

    x = load("census").iloc[:400]
    y = linkrisk.mask(x, "noise", seed=1, a=0.5)
    out = {}
    for lim in (10**12, 0):
        monkeypatch.setattr(fs, "MIN_PAIRS", lim)
        for m in ("dbrl_l1", "kernel"):
            per = linkrisk.attack(x, y, m, seed=3).per_record
            out.setdefault(m, []).append(per[["link", "candidates", "correct"]].to_numpy())
    for m, (a, b) in out.items():
        assert np.array_equal(a, b), m
