"""Integer kernels (rank distances, Hamming): same results as the float64 kernel and as a
brute-force computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine import Tables, average_ranks
from linkrisk.engine.nearest import Pairwise
from linkrisk.engine.nearest.intkernels import I_HAMMING, I_L1, I_LINF, integer_form
from linkrisk.engine.nearest.kernels import METRIC_CODES
from linkrisk.engine.nearest.sets import exact_sets

RTOL = 1e-9


def _hamming_tables(sizes):
    return Tables.from_list([1.0 - np.eye(k) for k in sizes])


def _run(a, b, metric, tables=None, *, integer, cap=32, seed=3):
    tables = tables or Tables.empty(a.shape[1])
    pw = Pairwise.build(a, b, metric, degree=2, tables=tables, transpose=False)
    truth = np.arange(a.shape[0]) % b.shape[0]
    return exact_sets(pw, truth, np.arange(a.shape[0]), rtol=RTOL, seed=seed, cap=cap,
                      memory_budget=2**20, progress=None, integer=integer)


def test_integer_form_detection():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 3))
    ra, rb = average_ranks(x), average_ranks(x + 0.1 * rng.standard_normal(x.shape))
    ra[:4, 0] = 2.5  # an average rank
    l1, linf, mixed = (METRIC_CODES[k] for k in ("l1", "linf", "mixed"))
    form = integer_form(ra, rb, l1, Tables.empty(3))
    assert form is not None and form[2] == I_L1 and form[3] == 2
    assert integer_form(np.round(ra), np.round(rb), linf, Tables.empty(3))[2:] == (I_LINF, 1)
    # non-integer values, a float metric, huge values: no integer form
    assert integer_form(x, x, l1, Tables.empty(3)) is None
    assert integer_form(ra, rb, METRIC_CODES["sqeuclidean"], Tables.empty(3)) is None
    assert integer_form(ra * 1e9, rb, l1, Tables.empty(3)) is None
    codes = rng.integers(0, 4, (20, 2)).astype(float)
    assert integer_form(codes, codes, mixed, _hamming_tables([4, 4]))[2] == I_HAMMING
    weighted = Tables.from_list([2.0 * (1.0 - np.eye(4)), 1.0 - np.eye(4)])
    assert integer_form(codes, codes, mixed, weighted) is None
    numeric = Tables.from_list([None, 1.0 - np.eye(4)])
    assert integer_form(codes, codes, mixed, numeric) is None


@pytest.mark.parametrize("metric", ["l1", "linf", "hamming"])
@pytest.mark.parametrize("cap", [32, 2])  # cap 2: tie buffers overflow and are recounted
def test_integer_kernel_equals_float_kernel_and_brute_force(metric, cap):
    rng = np.random.default_rng(7)
    n_a, n_b, m = 700, 900, 4
    if metric == "hamming":
        sizes = [3, 4, 2, 5]
        a = np.column_stack([rng.integers(0, k, n_a) for k in sizes]).astype(float)
        b = np.column_stack([rng.integers(0, k, n_b) for k in sizes]).astype(float)
        tables, eng, brute = _hamming_tables(sizes), "mixed", cdist(a, b, "hamming") * m
    else:
        # average ranks of coarse values: many exact ties, multiples of ½
        a = average_ranks(rng.integers(0, 6, (n_a, m)).astype(float))
        b = average_ranks(rng.integers(0, 6, (n_b, m)).astype(float))
        tables, eng = None, metric
        brute = cdist(a, b, "cityblock" if metric == "l1" else "chebyshev")
    assert integer_form(a, b, METRIC_CODES[eng], tables or Tables.empty(m)) is not None
    fast = _run(a, b, eng, tables, integer=True, cap=cap)
    slow = _run(a, b, eng, tables, integer=False, cap=cap)
    for f in ("min_score", "count", "true_in_set", "true_score", "link"):
        np.testing.assert_array_equal(getattr(fast, f), getattr(slow, f), err_msg=f)
    mn = brute.min(axis=1)
    np.testing.assert_array_equal(fast.min_score, mn)
    tied = brute <= (mn + RTOL * np.abs(mn))[:, None]
    np.testing.assert_array_equal(fast.count, tied.sum(axis=1))
    assert tied[np.arange(n_a), fast.link].all()
    assert (fast.count > cap).any() == (cap == 2)


def _kernel_outputs(kern, ai, bti, icode, scale, truth, *, cap, tile, chunk, seed=5):
    n = ai.shape[0]
    outs = (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))
    kern(ai, np.arange(n, dtype=np.int64) + 11, bti, icode, scale, truth, RTOL, cap, seed,
         tile, chunk, *outs)
    return outs


def _rank_cases():
    """Integer forms with many exact ties and near ties: integer ranks of coarse values,
    average ranks (halves), repeated rows, and large values whose tie threshold
    cur + rtol·|cur| lies above cur."""
    rng = np.random.default_rng(11)
    for m in (1, 3, 4, 5, 13):
        for kind in ("integer", "halves", "repeated", "wide", "large"):
            n_a, n_b = 41 + m, 157 + 3 * m
            if kind == "large":
                # scores up to ~2·10⁹: rtol·score ≥ 1, so near ties count as ties
                hi = (2**31 - 1) // m
                a = rng.integers(hi - 40, hi + 1, (n_a, m))
                b = rng.integers(0, 40, (n_b, m))
                yield m, kind, a, b
                continue
            if kind == "wide":
                # spans beyond int16: the screen quantizes; exact ties and near ties
                # (±1, ±2) across its buckets
                a = rng.integers(0, 5, (n_a, m)) * 9973 + rng.integers(0, 3, (n_a, m))
                b = rng.integers(0, 5, (n_b, m)) * 9973 + rng.integers(0, 3, (n_b, m))
                b[::4] = a[rng.integers(0, n_a, b[::4].shape[0])]
                yield m, kind, a.astype(float), b.astype(float)
                continue
            a = rng.integers(0, 4, (n_a, m)).astype(float)
            b = rng.integers(0, 4, (n_b, m)).astype(float)
            if kind == "repeated":
                b[rng.integers(0, n_b, n_b // 2)] = a[0]
                a[1::3] = a[0]
            if kind != "integer":
                a, b = average_ranks(a), average_ranks(b)
            else:
                a, b = np.round(average_ranks(a)), np.round(average_ranks(b))
            yield m, kind, a, b


@pytest.mark.parametrize("metric", ["l1", "linf"])
def test_rank_kernels_equal_reference_kernel(metric):
    """nearest_block_rank (two rows per pass, four attributes per accumulator pass) and the
    int16 screen (rank_kernel) return exactly nearest_block_int's outputs, overflow flags
    included, for every tiling; the screen's own overflow (rows rescanned exactly) and its
    quantization (shift h > 0) are exercised."""
    from linkrisk.engine.nearest.intkernels import (
        nearest_block_int,
        nearest_block_rank,
        rank_kernel,
        rank_screen,
        screen_block_rank,
    )

    code = METRIC_CODES[metric]
    overflowed = redone = quantized = 0
    for m, kind, a, b in _rank_cases():
        if kind == "large":
            ai = np.ascontiguousarray(a, dtype=np.int32)
            bti = np.ascontiguousarray(b.T, dtype=np.int32)
            icode, scale = (I_L1 if metric == "l1" else I_LINF), 1
        else:
            ai, bti, icode, scale = integer_form(a, b, code, Tables.empty(m))
        n_a, n_b = ai.shape[0], bti.shape[1]
        truth = np.arange(n_a, dtype=np.int64) * 7 % (n_b + 5) - 3  # some −1 … −3: none
        truth[truth >= n_b] = -1
        for cap, tile, chunk in ((32, 64, 16), (3, 37, 5), (1, n_b, 7)):
            ref = _kernel_outputs(nearest_block_int, ai, bti, icode, scale, truth, cap=cap,
                                  tile=tile, chunk=chunk)
            screen = rank_screen(ai, bti, icode, RTOL)
            # no screen where ties are not exact equalities (rtol·max score ≥ ½)
            assert (screen is None) == (kind == "large" and (metric == "l1" or m < 5))
            for kern in (nearest_block_rank, rank_kernel(ai, bti, icode, RTOL)):
                new = _kernel_outputs(kern, ai, bti, icode, scale, truth, cap=cap, tile=tile,
                                      chunk=chunk)
                names = ("min", "count", "true_score", "link", "overflow")
                for name, u, v in zip(names, ref, new, strict=True):
                    np.testing.assert_array_equal(v, u, err_msg=f"{metric} m={m} {kind} {name} "
                                                                f"cap={cap} tile={tile} {kern}")
            if screen is not None:
                btq, h, band = screen
                quantized += h > 0
                redo = np.zeros(n_a, np.bool_)
                outs = _kernel_outputs(nearest_block_rank, ai, bti, icode, scale, truth,
                                       cap=cap, tile=tile, chunk=chunk)
                screen_block_rank(ai, (ai >> h).astype(np.int16), np.arange(n_a) + 11, bti,
                                  btq, icode, scale, band, truth, RTOL, cap, 4 * cap + 64, 5,
                                  tile, chunk, *outs, redo)
                redone += int(redo.sum())
            overflowed += int(ref[4].sum())
            if kind == "large" and metric == "l1":
                # the threshold really is above the minimum for these scores
                assert (ref[0] * RTOL >= 1).any()
    assert overflowed > 0  # the tiny caps did force overflows
    assert redone > 0 and quantized > 0
