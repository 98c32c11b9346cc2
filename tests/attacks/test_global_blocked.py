"""gdbrl with blocking (docs/methods.md, "Blocking") for the AGDBRL approximations and for
files with missing values: one matching per block, equal to the unblocked attack with one
block or blocks far apart, and to a per-block brute force (scipy on each block's dense
cost matrix)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

import linkrisk
from linkrisk.engine import standardize

from .test_global import _missing_cost

QI = ["x0", "x1", "x2", "x3"]
#: (approx, missing values): the cases blocking now takes
CASES = [(approx, missing) for missing in (False, True)
         for approx in (None, "agdbrl1", "agdbrl2")]


def _files(n: int, seed: int, blocks: int = 3, *, missing: bool = False,
           overlap: bool = True, apart: bool = False, moved: float = 0.0
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Continuous files (a unique optimum), block key ``g``. ``missing``: NaN cells in both
    files (``overlap``: at most one of x1…x3 missing a record, so that every pair has two
    attributes in common: no ties of one-dimensional distances; else any cell);
    ``apart``: 10⁶·g added to every QI of both files; ``moved``: the share of released
    records given another block (their true partner is then not linkable)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, blocks, n)
    a = rng.normal(size=(n, len(QI)))
    b = a + rng.normal(scale=0.5, size=a.shape)
    if missing:
        for x, p in ((a, 0.3), (b, 0.4)):
            if overlap:
                rows = np.flatnonzero(rng.random(n) < p)
                x[rows, rng.integers(1, len(QI), rows.size)] = np.nan
            else:
                x[rng.random(x.shape) < p / 2] = np.nan
    if apart:
        a += 1e6 * g[:, None]
        b += 1e6 * g[:, None]
    fa, fb = pd.DataFrame(a, columns=QI), pd.DataFrame(b, columns=QI)
    fa["g"], fb["g"] = g, g.copy()
    move = rng.random(n) < moved
    fb.loc[move, "g"] = (g[move] + 1) % blocks
    return fa, fb


def _run(a, b, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return linkrisk.attack(a, b, "gdbrl", assume_row_order=True, **kw)


def _same(blocked, plain, *, exact: bool = True):
    """The same links, correct links and (``exact``: bit for bit) total cost."""
    np.testing.assert_array_equal(blocked.per_record["link"], plain.per_record["link"])
    assert blocked.correct_links == plain.correct_links and blocked.rate == plain.rate
    if exact:
        assert blocked.extra["total_cost"] == plain.extra["total_cost"]
        np.testing.assert_array_equal(blocked.per_record["score"], plain.per_record["score"])
    else:
        assert blocked.extra["total_cost"] == pytest.approx(plain.extra["total_cost"],
                                                            rel=1e-9)
    assert blocked.extra.get("h") == plain.extra.get("h")


@pytest.mark.parametrize("approx, missing", CASES)
def test_one_block_equals_unblocked(approx, missing):
    a, b = _files(80, 1, missing=missing)
    a["g"], b["g"] = 7, 7
    plain = _run(a, b, qi=QI, approx=approx)
    blocked = _run(a, b, block="g", approx=approx)
    _same(blocked, plain)
    assert blocked.extra["blocks"] == 1 and blocked.extra["certified"]
    assert blocked.extra.get("approx") == approx


@pytest.mark.parametrize("options", [{"ties": "expected"}, {"delta": "owner"},
                                     {"approx": "agdbrl2", "delta": "owner"}])
def test_one_block_equals_unblocked_missing_options(options):
    """Missing values without an attribute in common (+∞ pairs), candidate sets of every
    optimal matching, Δ = 'owner'."""
    a, b = _files(60, 2, missing=True, overlap=False)
    a["g"], b["g"] = 0, 0
    plain = _run(a, b, qi=QI, **options)
    blocked = _run(a, b, block="g", **options)
    _same(blocked, plain)
    assert blocked.extra["no_information_links"] == plain.extra["no_information_links"]
    for key in ("expected_correct_links", "delta"):
        assert blocked.extra.get(key) == plain.extra.get(key)
    np.testing.assert_array_equal(blocked.per_record["candidates"],
                                  plain.per_record["candidates"])


@pytest.mark.parametrize("approx, missing", CASES)
def test_blocks_far_apart_equal_unblocked(approx, missing):
    a, b = _files(90, 3, missing=missing, apart=True)
    plain = _run(a, b, qi=QI, approx=approx)
    blocked = _run(a, b, block="g", approx=approx)
    _same(blocked, plain, exact=False)
    assert blocked.extra["blocks"] == 3 and blocked.extra["not_linkable_blocking"] == 0


def _costs(a: pd.DataFrame, b: pd.DataFrame, missing: bool) -> np.ndarray:
    """The whole files' dense cost matrix: Euclidean on per-file standardized values, over
    the attributes observed in both records when values are missing."""
    x, y = a[QI].to_numpy(float), b[QI].to_numpy(float)
    if missing:
        return _missing_cost(x, y, "euclidean")
    return cdist(standardize(x), standardize(y))


def _brute_force(c: np.ndarray, ga: np.ndarray, gb: np.ndarray, approx: str | None
                 ) -> tuple[np.ndarray, float, int]:
    """(link, total cost, h) of one scipy assignment per block on the block's costs; AGDBRL
    ranks within the block, h over every record whose partner (row i) is in its block, the
    others keep their whole block."""
    n = c.shape[0]
    linkable = ga == gb
    blocks = [(np.flatnonzero(ga == k), np.flatnonzero(gb == k)) for k in np.unique(ga)]
    rank = np.full(c.shape, -1)
    h_a = np.full(n, -1)
    for ia, ib in blocks:
        cb = c[np.ix_(ia, ib)]
        rank[np.ix_(ia, ib)] = (cb[:, None, :] < cb[:, :, None]).sum(axis=2)
        own = linkable[ia]
        h_a[ia[own]] = rank[ia[own], ia[own]]
    h = int(h_a.max())
    link = np.full(n, -1)
    total = 0.0
    for ia, ib in blocks:
        cb = c[np.ix_(ia, ib)]
        if approx is not None:
            lim = np.where((h_a[ia] >= 0) & (approx == "agdbrl2"), h_a[ia], h)
            lim = np.where(linkable[ia], lim, ib.size)
            cb = np.where(rank[np.ix_(ia, ib)] <= lim[:, None], cb, np.inf)
        ri, ci = linear_sum_assignment(cb)
        link[ia[ri]] = ib[ci]
        total += cb[ri, ci].sum()
    return link, total, h


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("approx, missing", CASES)
def test_equals_per_block_brute_force(approx, missing, seed):
    """Random blocks of unequal sizes (10 % of the partners in another block): the total
    cost is the per-block optimum's, the links and correct links the unique optimum's."""
    n = (30, 45, 60)[seed]
    a, b = _files(n, 10 + seed, missing=missing, moved=0.1)
    res = _run(a, b, block="g", approx=approx)
    ga, gb = a["g"].to_numpy(), b["g"].to_numpy()
    link, total, h = _brute_force(_costs(a, b, missing), ga, gb, approx)
    assert res.extra["total_cost"] == pytest.approx(total, rel=1e-9)
    np.testing.assert_array_equal(res.per_record["link"], link)
    assert res.correct_links == int((link == np.arange(n)).sum())
    assert res.extra["not_linkable_blocking"] == int((ga != gb).sum())
    assert not res.per_record["correct"].to_numpy()[ga != gb].any()
    if approx is not None:
        assert res.extra["h"] == h


@pytest.mark.parametrize("seed", range(3))
def test_missing_without_common_attribute_per_block(seed):
    """Pairs with no attribute observed in both (+∞): per block the fewest such pairs, then
    the least finite cost (the brute force on +∞ → a large constant)."""
    a, b = _files(50, 20 + seed, missing=True, overlap=False, moved=0.1)
    res = _run(a, b, block="g")
    c = _costs(a, b, True)
    ga, gb = a["g"].to_numpy(), b["g"].to_numpy()
    n_inf, best = 0, 0.0
    for k in np.unique(ga):
        cb = c[np.ix_(ga == k, gb == k)]
        ri, ci = linear_sum_assignment(np.where(np.isinf(cb), 1e6, cb))
        got = cb[ri, ci]
        n_inf += int(np.isinf(got).sum())
        best += got[np.isfinite(got)].sum()
    assert res.extra["no_information_links"] == n_inf
    assert res.extra["total_cost"] == pytest.approx(best, rel=1e-9)
    link = res.per_record["link"].to_numpy()
    ok = link >= 0
    np.testing.assert_array_equal(ga[ok], gb[link[ok]])


def test_missing_budget_is_per_block():
    """The dense matrix is built per block: a budget below the whole files' matrix but
    above every block's is enough; below the largest block's it is refused."""
    a, b = _files(600, 4, blocks=2, missing=True)  # whole files: 16 B x 600² = 5.8 MB
    with pytest.raises(linkrisk.LinkriskError, match="cost matrix of its largest block"):
        _run(a, b, block="g", memory_budget="1MiB")  # a block: 16 B x ~300² = 1.4 MB
    a["g"] = b["g"] = np.arange(600) % 6
    res = _run(a, b, block="g", memory_budget="1MiB")  # a block: 16 B x 100² = 160 kB
    assert res.extra["blocks"] == 6 and res.extra["solver"] == "dense"
