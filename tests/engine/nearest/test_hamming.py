"""The narrow-code Hamming kernel gives bit for bit what the int32 kernel gives (minimum,
tie count, true score, link, overflow flags), and both agree with a brute-force count."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine.nearest.hamming import (
    code_dtype,
    count_dtype,
    hamming_codes,
    hamming_tile,
    nearest_block_hamming,
)
from linkrisk.engine.nearest.intkernels import I_HAMMING, nearest_block_int

RTOL = 1e-9


def _outs(n):
    return (np.empty(n), np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64),
            np.empty(n, np.bool_))


def _both(a, b, *, cap, seed=5, tile=None, chunk=16):
    """(reference int32 outputs, narrow-kernel outputs, narrow code dtype)."""
    n_a, m = a.shape
    rid = np.arange(n_a, dtype=np.int64) * 7 + 3
    truth = np.where(np.arange(n_a) % 5 == 4, -1, np.arange(n_a) % b.shape[0])
    ref = _outs(n_a)
    nearest_block_int(np.ascontiguousarray(a, np.int32), rid,
                      np.ascontiguousarray(b.T, np.int32), I_HAMMING, 1, truth, RTOL, cap,
                      seed, 256, 16, *ref)
    ac, bt = hamming_codes(a.astype(float), b.astype(float))
    new = _outs(n_a)
    nearest_block_hamming(ac, rid, bt, np.empty(0, count_dtype(m)), truth, RTOL, cap, seed,
                          tile or hamming_tile(m, bt.itemsize), chunk, *new)
    return ref, new, ac.dtype


def _assert_same(ref, new):
    for name, x, y in zip(("min", "count", "true_score", "link", "overflow"), ref, new, strict=True):
        np.testing.assert_array_equal(y, x, err_msg=name)


def _heavy_ties(rng, n_a, n_b, sizes):
    """Few categories and many repeated rows: large tie sets."""
    b = np.column_stack([rng.integers(0, k, n_b) for k in sizes])
    b[n_b // 2:] = b[rng.integers(0, n_b // 2, n_b - n_b // 2)]  # repeated rows
    a = b[rng.integers(0, n_b, n_a)].copy()
    flip = rng.random(a.shape) < 0.2
    a[flip] = rng.integers(0, 3, flip.sum()) % np.array(sizes)[np.nonzero(flip)[1]]
    return a, b


@pytest.mark.parametrize("m", range(1, 21))
def test_narrow_kernel_equals_int32_kernel(m):
    rng = np.random.default_rng(100 + m)
    sizes = [2 + (j % 3) for j in range(m)]
    a, b = _heavy_ties(rng, 150, 700, sizes)
    for cap in (3, 32):  # cap 3: most rows overflow
        ref, new, dt = _both(a, b, cap=cap)
        assert dt == np.uint8
        _assert_same(ref, new)
        if cap == 3:
            assert new[4].any()
    # brute force: the minimum and, for rows that did not overflow, the tie count
    d = cdist(a, b, "hamming") * m
    mn = np.rint(d).min(axis=1)
    np.testing.assert_array_equal(new[0], mn)
    tied = np.rint(d) <= mn[:, None]
    ok = ~new[4]
    np.testing.assert_array_equal(new[1][ok], tied.sum(axis=1)[ok])
    assert tied[np.arange(a.shape[0]), new[3]].all()


def test_tiling_and_chunking_do_not_change_results():
    rng = np.random.default_rng(1)
    a, b = _heavy_ties(rng, 203, 1500, [3, 2, 4, 3, 2, 5, 3, 2, 4, 3, 2, 3, 4])
    ref, new, _ = _both(a, b, cap=4)
    _assert_same(ref, new)
    for tile, chunk in ((256, 1), (320, 7), (4096, 64)):
        _assert_same(ref, _both(a, b, cap=4, tile=tile, chunk=chunk)[1])


def test_wide_codes_and_long_rows():
    rng = np.random.default_rng(2)
    # a column with more than 256 categories: uint16 codes
    a, b = _heavy_ties(rng, 120, 600, [3, 2, 4, 2, 3])
    b[:, 2] = rng.integers(0, 300, b.shape[0])
    a[:, 2] = np.where(rng.random(a.shape[0]) < 0.5, b[:a.shape[0], 2], 299)
    ref, new, dt = _both(a, b, cap=3)
    assert dt == np.uint16
    _assert_same(ref, new)
    # more than 255 attributes: counts in uint16
    m = 260
    b = rng.integers(0, 2, (400, m))
    a = b[rng.integers(0, 400, 60)] ^ (rng.random((60, m)) < 0.05)
    assert count_dtype(m) == np.uint16
    ref, new, _ = _both(a, b, cap=3)
    _assert_same(ref, new)
    np.testing.assert_array_equal(new[0], np.rint(cdist(a, b, "hamming") * m).min(axis=1))


def test_dtypes():
    assert code_dtype(0) == np.uint8 and code_dtype(255) == np.uint8
    assert code_dtype(256) == np.uint16 and code_dtype(70000) == np.uint32
    assert count_dtype(255) == np.uint8 and count_dtype(256) == np.uint16
    assert hamming_tile(13, 1) % 64 == 0 and 256 <= hamming_tile(10**6, 4) <= 16384
