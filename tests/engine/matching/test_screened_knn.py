"""The float32-screened k-NN lists of the global attack against brute force: entries carry
exact costs and the bounds are valid lower bounds of every pair outside the lists."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from linkrisk.engine.matching.knn import knn
from linkrisk.engine.matching.screened_knn import knn_screened
from linkrisk.engine.nearest import Pairwise


def _pair(n, n2, m, seed, ties=False):
    rng = np.random.default_rng(seed)
    if ties:
        x = rng.integers(-3, 4, (n, m)).astype(float)
        y = rng.integers(-3, 4, (n2, m)).astype(float)
    else:
        x = rng.standard_normal((n, m)) * rng.uniform(0.1, 30, m) + rng.uniform(-50, 50, m)
        y = x[rng.integers(0, n, n2)] + 0.2 * rng.standard_normal((n2, m)) * x.std(0)
    return x, y


# 701 rows: a thread's last chunk has an odd row count (its last row is scored alone)
@pytest.mark.parametrize("n,n2,m,k,ties", [(700, 700, 5, 6, False), (500, 640, 13, 9, False),
                                           (900, 300, 3, 4, True), (40, 30, 2, 50, False),
                                           (701, 650, 13, 7, False)])
def test_screened_lists_are_exact_costs_with_valid_bounds(n, n2, m, k, ties):
    x, y = _pair(n, n2, m, n + k, ties)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    s = cdist(x, y, "sqeuclidean")
    nn = knn_screened(pw, k)
    kf = min(k, n2)
    for idx, sc, bound, mat, kk in ((nn.fwd_idx, nn.fwd_score, nn.fwd_bound, s, kf),
                                    (nn.bwd_idx, nn.bwd_score, nn.bwd_bound, s.T, min(kf, n))):
        assert idx.shape[1] == kk  # backward lists default to the forward length
        full = idx[:, -1] >= 0
        # entries: distinct, exact scores (the engine's float64 bits ≈ cdist), sorted
        for r in range(mat.shape[0]):
            row = idx[r][idx[r] >= 0]
            assert np.unique(row).size == row.size
            np.testing.assert_allclose(sc[r, :row.size], mat[r, row], rtol=1e-12, atol=1e-9)
            assert np.all(np.diff(sc[r, :row.size]) >= 0)
            # every pair outside the list is bounded below by the screen's bound
            out = np.setdiff1d(np.arange(mat.shape[1]), row)
            if out.size:
                assert full[r] and mat[r, out].min() >= bound[r]
            else:
                assert np.isinf(bound[r])
        # the lists are the k smallest (up to float32 near ties: compare the values)
        want = np.sort(mat, axis=1)[:, :kk]
        np.testing.assert_allclose(np.where(idx >= 0, sc, np.inf), want, rtol=1e-5, atol=1e-4)


def test_screened_lists_equal_exact_lists_up_to_float32_near_ties():
    x, y = _pair(1200, 1100, 7, 3)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    a, b = knn_screened(pw, 8), knn(pw, 8)
    # the same lists up to float32 near ties at the end of a list (a few in 10⁴ here):
    # where the screened list differs, its scores are within float32 error of the exact
    for got, want, gs, ws in ((a.fwd_idx, b.fwd_idx, a.fwd_score, b.fwd_score),
                              (a.bwd_idx, b.bwd_idx, a.bwd_score, b.bwd_score)):
        assert (got == want).mean() > 0.999
        np.testing.assert_allclose(gs, ws, rtol=1e-5)
        same = (got == want).all(axis=1)
        np.testing.assert_array_equal(gs[same], ws[same])  # same float64 bits
    # the bound is tight: within float32 error of the exact k-th score
    assert np.all(a.fwd_bound <= b.fwd_score[:, -1])
    assert np.median(b.fwd_score[:, -1] - a.fwd_bound) < 1e-3 * np.median(b.fwd_score[:, -1])


def test_lists_re_scored_in_row_blocks_are_the_same(monkeypatch):
    # int32 indices; the per-block re-scoring and sort (blocks of 5 rows here, the last one
    # short) gives the same lists, bit for bit, as one block, with ties (integer data)
    from linkrisk.engine.matching import screened_knn

    x, y = _pair(203, 190, 3, 9, ties=True)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    one = knn_screened(pw, 12)
    monkeypatch.setattr(screened_knn, "SORT_BLOCK", 60)
    blocked = knn_screened(pw, 12)
    assert one.fwd_idx.dtype == np.int32 and one.bwd_idx.dtype == np.int32
    for f in ("fwd_idx", "fwd_score", "bwd_idx", "bwd_score", "fwd_bound", "bwd_bound"):
        np.testing.assert_array_equal(getattr(one, f), getattr(blocked, f))
    # and the same as sorting the full rows directly: (exact score, index)
    s = cdist(x, y, "sqeuclidean")
    for i in range(x.shape[0]):
        row = one.fwd_idx[i]
        order = np.lexsort((row, s[i, row]))
        np.testing.assert_array_equal(row[order], row)


def _check_threshold_lists(nn, x, y, width):
    s = cdist(x, y, "sqeuclidean")
    for idx, sc, bound, mat in ((nn.fwd_idx, nn.fwd_score, nn.fwd_bound, s),
                                (nn.bwd_idx, nn.bwd_score, nn.bwd_bound, s.T)):
        assert idx.shape == (mat.shape[0], width) and idx.dtype == np.int32
        for r in range(mat.shape[0]):
            row = idx[r][idx[r] >= 0]
            assert np.all(idx[r][row.size:] < 0) and np.all(np.isinf(sc[r, row.size:]))
            assert np.unique(row).size == row.size
            np.testing.assert_allclose(sc[r, :row.size], mat[r, row], rtol=1e-12, atol=1e-9)
            # sorted by (exact score, index)
            order = np.lexsort((row, sc[r, :row.size]))
            np.testing.assert_array_equal(order, np.arange(row.size))
            out = np.setdiff1d(np.arange(mat.shape[1]), row)
            if out.size:  # every pair left out is bounded below
                assert mat[r, out].min() >= bound[r]


@pytest.mark.parametrize("n,n2,m,width,ties", [(3000, 3000, 5, 32, False),
                                               (2500, 3100, 13, 16, False),
                                               (3300, 1500, 4, 24, False),
                                               (1800, 1700, 3, 16, True),
                                               (150, 200, 2, 8, False),
                                               (1200, 1300, 20, 16, False)])
def test_threshold_lists_have_exact_costs_and_valid_bounds(n, n2, m, width, ties):
    from linkrisk.engine.matching.screened_knn import knn_thresholds

    x, y = _pair(n, n2, m, n + width, ties)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    stats = {}
    nn = knn_thresholds(pw, width, mean=width / 2, stats=stats)
    _check_threshold_lists(nn, x, y, width)
    # the samples are a part of the files, and lists hold about `mean` entries
    assert stats["sample_cols"] <= n2 and stats["sample_rows"] <= n
    if not ties:
        lens = (nn.fwd_idx >= 0).sum(1)
        assert lens.min() >= 4 and 0.5 * width / 2 < lens.mean() <= width
        # the nearest record is always listed (continuous data: no exact ties)
        np.testing.assert_array_equal(nn.fwd_idx[:, 0], cdist(x, y, "sqeuclidean").argmin(1))


def _elongated(n, n2, m, seed):
    """Files stretched along one direction (a dominant principal component), as masked
    files of correlated attributes are: most tiles are far from most chunks of rows."""
    rng = np.random.default_rng(seed)
    d = rng.standard_normal(m)
    d /= np.linalg.norm(d)
    x = np.outer(rng.uniform(-40, 40, n), d) + rng.standard_normal((n, m))
    y = x[rng.permutation(n)[:n2] if n2 <= n else rng.integers(0, n, n2)]
    return x, y + 0.3 * rng.standard_normal(y.shape)


def test_band_intervals_bound_every_pair_of_a_skipped_tile():
    """The band's geometry against brute force: a row whose projection lies g outside a
    tile's interval has squared distance ≥ g² to every record of that tile (so a tile
    skipped when g² exceeds every threshold holds no pair below one)."""
    from linkrisk.engine.matching import screened_knn

    x, y = _elongated(900, 800, 6, 1)
    tau_f = np.full(900, 4.0, np.float32)
    tau_b = np.full(800, 4.0, np.float32)
    ox, oy, px, tlo, thi, ttm, tnm = screened_knn._band(x, y, tau_f, tau_b, 64)
    assert sorted(ox) == list(range(900)) and sorted(oy) == list(range(800))
    d2 = cdist(x[ox], y[oy], "sqeuclidean")
    far = 0
    for t, (lo, hi) in enumerate(zip(tlo, thi, strict=True)):
        g = np.maximum(lo - px, px - hi)
        rows = np.flatnonzero(g > 0)
        far += rows.size
        assert np.all(d2[rows, t * 64:(t + 1) * 64] >= g[rows, None] ** 2)
        np.testing.assert_array_equal(ttm[t], tau_b[oy][t * 64:(t + 1) * 64].max())
        np.testing.assert_allclose(tnm[t], (y[oy][t * 64:(t + 1) * 64] ** 2).sum(1).max())
    assert far > 0.5 * 900 * len(tlo)  # elongated: most (row, tile) pairs are far apart


def test_band_blocks_start_afresh_in_each_tile():
    """The per-block arrays of the register pass: blocks of 32 columns counted per tile
    (a tile of 80 holds blocks of 32, 32 and 16), each with the interval of its columns'
    projections, their largest threshold and squared norm, and the same row and column
    order and tile arrays as without blocks."""
    from linkrisk.engine.matching import screened_knn

    x, y = _elongated(300, 250, 6, 4)
    rng = np.random.default_rng(0)
    tau_f = rng.uniform(1, 5, 300).astype(np.float32)
    tau_b = rng.uniform(1, 5, 250).astype(np.float32)
    plain = screened_knn._band(x, y, tau_f, tau_b, 80)
    ox, oy, px, tlo, thi, ttm, tnm, blo, bhi, btm, bnm = screened_knn._band(x, y, tau_f, tau_b,
                                                                       80, 32)
    for a, b in zip(plain, (ox, oy, px, tlo, thi, ttm, tnm), strict=True):
        np.testing.assert_array_equal(a, b)
    py = (y[oy] @ screened_knn.band.direction(x, y))
    spans = [(t0 + q, min(t0 + q + 32, t0 + 80, 250)) for t0 in range(0, 250, 80)
             for q in range(0, min(80, 250 - t0), 32)]
    assert len(blo) == len(spans) == 3 + 3 + 3 + 1  # the last tile (10 columns): one block
    for bq, (j0, j1) in enumerate(spans):
        if j0 >= j1:
            continue
        assert blo[bq] <= py[j0:j1].min() and py[j0:j1].max() <= bhi[bq]
        assert bhi[bq] - blo[bq] < py[j0:j1].max() - py[j0:j1].min() + 1e-6
        assert btm[bq] == tau_b[oy][j0:j1].max()
        np.testing.assert_allclose(bnm[bq], (y[oy][j0:j1] ** 2).sum(1).max())


@pytest.mark.parametrize("ties", [False, True])
def test_band_skips_tiles_and_leaves_the_lists_unchanged(monkeypatch, ties):
    """The pass in band order skips most tiles of elongated files, and its lists, scores
    and bounds equal those of the pass in the files' own order (the skipped pairs are
    above every threshold); both are checked against brute force."""
    from linkrisk.engine.matching import screened_knn

    monkeypatch.setenv("LINKRISK_TUNING", "tile=64,chunk=16")
    if ties:  # repeated records and equal distances
        x, y = _elongated(700, 650, 5, 2)
        x, y = np.round(x), np.round(y)
    else:
        x, y = _elongated(1500, 1400, 13, 3)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    st_on, st_off = {}, {}
    on = screened_knn.knn_thresholds(pw, 12, stats=st_on)
    monkeypatch.setattr(screened_knn, "BAND", False)
    off = screened_knn.knn_thresholds(pw, 12, stats=st_off)
    assert st_on["band_skipped"] > 0.3 and st_off["band_skipped"] == 0
    for f in ("fwd_idx", "fwd_score", "bwd_idx", "bwd_score", "fwd_bound", "bwd_bound"):
        np.testing.assert_array_equal(getattr(on, f), getattr(off, f))
    _check_threshold_lists(on, x, y, 12)


def test_threshold_lists_overflowing_logs_are_scored_again(monkeypatch):
    from linkrisk.engine.matching import screened_knn

    x, y = _pair(2100, 2000, 6, 5)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    one = screened_knn.knn_thresholds(pw, 20)
    monkeypatch.setattr(screened_knn, "LOG_FACTOR", 0)
    monkeypatch.setattr(screened_knn, "LOG_FLOOR", 1)
    monkeypatch.setattr(screened_knn, "SORT_BLOCK", 333)
    stats = {}
    again = screened_knn.knn_thresholds(pw, 20, stats=stats)
    assert stats["reruns"] > 0
    for f in ("fwd_idx", "fwd_score", "bwd_idx", "bwd_score", "fwd_bound", "bwd_bound"):
        np.testing.assert_array_equal(getattr(one, f), getattr(again, f))
    _check_threshold_lists(again, x, y, 20)


def test_group_minima_thresholds_have_about_mean_records_below():
    """The sample thresholds: the smallest float32 score over each group (as int32 bits,
    exact for non-negative scores) and their order statistic, which has about ``mean``
    records of the other file below it on average (Beta(1, G) fractions per group)."""
    from linkrisk.engine.matching import screened_knn

    x, y = _pair(3000, 6000, 4, 11)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    nx, ny = screened_knn._norms32(x32), screened_knn._norms32(y32)
    G, ng, qr = screened_knn._group_size(6000, 40.0)
    assert ng == screened_knn.NG and qr == screened_knn.QR and G > 1
    tau = screened_knn._sample_thresholds(x32, nx, y32, ny, 40.0, 2)
    # the group minima themselves, by brute force over the float32 scores
    s32 = cdist(x32, y32[:G * ng], "sqeuclidean")
    mins = s32.reshape(3000, ng, G).min(axis=2)
    want = np.sort(mins, axis=1)[:, qr - 1]
    np.testing.assert_allclose(tau, want, rtol=1e-4, atol=1e-3)
    below = (cdist(x, y, "sqeuclidean") < tau[:, None]).sum(1)
    assert 25 < below.mean() < 60
    # too large a mean for the file: no sample, every pair is logged
    assert screened_knn._group_size(6000, 2000.0) == (0, 0, 0)


def test_min_bits_is_the_minimum_of_non_negative_floats():
    import numba as nb

    from linkrisk.engine.matching.screened_knn import _min_bits

    @nb.njit
    def run(a):
        return _min_bits(a.view(np.int32))

    a = np.random.default_rng(3).uniform(0, 50, 1000).astype(np.float32)
    a[17] = 0.0
    assert np.int32(run(a)).view(np.float32) == 0.0
    a[17] = 3.0
    assert np.int32(run(a)).view(np.float32) == a.min()
    a[400] = -1e-6  # a rounding below zero: some negative value, below every other
    assert np.int32(run(a)).view(np.float32) < 0


def test_short_lists_are_the_k_smallest_float32_scores(monkeypatch):
    """Lists whose threshold logged fewer than MIN_LIST partners are refilled by a scan of
    their own: then they are the width smallest float32 scores, as knn_screened's."""
    from linkrisk.engine.matching import screened_knn

    x, y = _pair(1500, 1400, 6, 21)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    # thresholds far too low: a few records log nothing, the rest a few partners
    low = screened_knn._sample_thresholds

    def too_low(*a, **kw):
        t = low(*a, **kw)
        return np.where(np.arange(t.shape[0]) % 7 == 0, np.float32(0), t / 4)

    monkeypatch.setattr(screened_knn, "_sample_thresholds", too_low)
    stats = {}
    nn = screened_knn.knn_thresholds(pw, 12, mean=12, stats=stats)
    assert stats["short_rows"] > 200 and stats["short_cols"] > 200
    _check_threshold_lists(nn, x, y, 12)
    ref = knn_screened(pw, 12)
    lens = (nn.fwd_idx >= 0).sum(1)
    short = lens == 12
    np.testing.assert_array_equal(nn.fwd_idx[short], ref.fwd_idx[short])
    np.testing.assert_array_equal(nn.fwd_score[short], ref.fwd_score[short])


@pytest.mark.parametrize("m,ties,tile", [(2, True, 512), (8, True, 80), (13, True, 512),
                                         (16, True, 48), (13, False, 80), (5, False, 512)])
def test_register_kernel_gives_the_loop_kernels_lists(monkeypatch, m, ties, tile):
    """The register-blocked pass (:mod:`.vec32`, files of up to 16 attributes, padded with
    zeros) logs the loop kernel's pairs: the same lists, scores and bounds, array by array,
    on integer data (exact scores in both summation orders; many ties) and on continuous
    data; tiles that are not a whole number of 32-column blocks (80, 48) included. Checked
    against brute force too."""
    from linkrisk.engine.matching import screened_knn

    monkeypatch.setenv("LINKRISK_TUNING", f"tile={tile}")
    x, y = _pair(1300, 1100, m, m, ties)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    on = screened_knn.knn_thresholds(pw, 12)
    monkeypatch.setattr(screened_knn, "REGISTER_KERNEL", False)
    off = screened_knn.knn_thresholds(pw, 12)
    for f in ("fwd_idx", "fwd_score", "bwd_idx", "bwd_score", "fwd_bound", "bwd_bound"):
        np.testing.assert_array_equal(getattr(on, f), getattr(off, f))
    _check_threshold_lists(on, x, y, 12)


def test_register_block_masks_equal_numpy():
    """The kernel's masks for a chunk of rows against one 32-column block: bit q of a
    row's forward (backward) mask is set iff its float32 score with column j0 + q is below
    the row's (the column's) threshold; only rows with a set bit are returned, in order.
    Integer data: the scores are exact, so the comparison is too."""
    import numba as nb

    from linkrisk.engine.matching import vec32

    rng = np.random.default_rng(5)
    for m in (3, 8, 13, 16):
        M = vec32.width_for(m)
        x = rng.integers(-3, 4, (70, m)).astype(np.float32)
        y = rng.integers(-3, 4, (90, m)).astype(np.float32)
        tf = rng.integers(0, 30, 70).astype(np.float32) + 0.5
        tb = rng.integers(0, 30, 90).astype(np.float32) + 0.5
        nx = (x * x).sum(1).astype(np.float32)
        ny = (y * y).sum(1).astype(np.float32)
        yt, nyp, tbp = vec32.pad_columns(np.ascontiguousarray(y.T), ny, tb, M)
        xp = vec32.pad_rows(-2 * x, M)

        @nb.njit
        def run(M, xp, nx, tf, r0, r1, yt, nyp, tbp, j0, rows, fm, bm):
            return vec32.block_hits(M, xp, nx, tf, r0, r1, yt, nyp, tbp, j0, rows, fm, bm)

        s = ((x[:, None, :] - y[None, :, :]) ** 2).sum(2)
        for j0 in (0, 32, 64):  # the last block runs into the padding
            rows = np.empty(70, np.int32)
            fm, bm = np.empty(70, np.uint32), np.empty(70, np.uint32)
            nh = run(M, xp, nx, tf, 5, 70, yt, nyp, tbp, j0, rows, fm, bm)
            cols = np.arange(j0, j0 + 32)
            ok = cols < 90
            sc = np.full((70, 32), np.inf)
            sc[:, ok] = s[:, cols[ok]]
            want_f = sc < tf[:, None]
            want_b = sc < np.where(ok, np.r_[tb, np.full(32, -np.inf)][cols], -np.inf)
            want_rows = 5 + np.flatnonzero((want_f | want_b)[5:].any(1))
            np.testing.assert_array_equal(rows[:nh], want_rows)
            bits = 1 << np.arange(32, dtype=np.uint64)
            np.testing.assert_array_equal(fm[:nh], (want_f[want_rows] * bits).sum(1))
            np.testing.assert_array_equal(bm[:nh], (want_b[want_rows] * bits).sum(1))


@pytest.mark.parametrize("m,mean", [(3, 40.0), (13, 25.0), (16, 60.0)])
def test_register_kernel_gives_the_loop_kernels_sample_thresholds(monkeypatch, m, mean):
    """The sample thresholds from the register kernel's group minima (groups padded to
    whole 32-column blocks with columns of norm +inf) equal the loop kernel's bit for bit:
    the same float32 scores, the same int32-bit minima. Groups of G records with G not a
    multiple of 32."""
    from linkrisk.engine.matching import screened_knn

    x, y = _pair(2100, 5000, m, m)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    nx, ny = screened_knn._norms32(x32), screened_knn._norms32(y32)
    G, ng, _ = screened_knn._group_size(5000, mean)
    assert G % 32 != 0
    on = screened_knn._sample_thresholds(x32, nx, y32, ny, mean, 2)
    monkeypatch.setattr(screened_knn, "REGISTER_KERNEL", False)
    off = screened_knn._sample_thresholds(x32, nx, y32, ny, mean, 2)
    np.testing.assert_array_equal(on.view(np.int32), off.view(np.int32))


def test_register_kernels_refuse_arrays_their_code_does_not_assume():
    """The kernels' IR reads C-contiguous float32 rows: a float64 or a strided array is a
    typing error, not wrong scores."""
    import numba as nb
    from numba.core.errors import TypingError

    from linkrisk.engine.matching import vec32

    @nb.njit
    def run(x, nx, yt, ny, mins):
        return vec32.block_min_bits(13, x, nx, 0, 2, yt, ny, 0, mins)

    x = np.zeros((4, 13), np.float32)
    yt, ny, _ = vec32.pad_columns(np.zeros((13, 40), np.float32), np.zeros(40, np.float32),
                                  np.zeros(40, np.float32), 13)
    mins = np.full(4, 2**31 - 1, np.int32)
    nx = np.zeros(4, np.float32)
    assert run(x, nx, yt, ny, mins) == 0  # rows 0..1: zero scores, bits 0; the rest kept
    np.testing.assert_array_equal(mins, [0, 0, 2**31 - 1, 2**31 - 1])
    with pytest.raises(TypingError):
        run(x.astype(np.float64), nx, yt, ny, mins)
    with pytest.raises(TypingError):
        run(np.zeros((4, 26), np.float32)[:, ::2], nx, yt, ny, mins)
