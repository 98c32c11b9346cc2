"""The faiss float32 screen gives exactly the exact kernel's candidate sets and links."""

import numpy as np
import pytest

from linkrisk.engine import nearest_sets
from linkrisk.engine.nearest import faiss_screen as scr

pytest.importorskip("faiss", reason="needs faiss-cpu: pip install -e '.[fast]'")


def _check(a, b, truth, seed=3, **kw):
    exact = nearest_sets(a, b, truth=truth, screen="none", seed=seed)
    fast = nearest_sets(a, b, truth=truth, screen="faiss", seed=seed, **kw)
    for f in ("count", "true_in_set", "link"):
        np.testing.assert_array_equal(getattr(fast, f), getattr(exact, f), err_msg=f)
    np.testing.assert_array_equal(fast.min_score, exact.min_score)
    return fast


@pytest.mark.parametrize("part", [7, 64, 8192])
def test_identical_to_exact_with_ties_and_near_ties(monkeypatch, part):
    monkeypatch.setattr(scr, "PART", part)
    rng = np.random.default_rng(part)
    b = np.round(rng.normal(size=(900, 4)), 1)           # rounded: many exact ties
    b[100:130] = b[0]                                      # 31 identical records (> K)
    b[200] = b[201] * (1 + 1e-12)                          # a near tie below float32 precision
    a = b[rng.permutation(900)[:700]] + rng.choice([0.0, 0.05], size=(700, 4))
    a[:5] = b[0]                                           # rows tied with 31 records
    truth = rng.integers(-1, 900, size=700)
    res = _check(a, b, truth)
    assert res.uncertified > 0 and (res.count > 1).any()


def test_continuous_data_all_certified(monkeypatch):
    monkeypatch.setattr(scr, "PART", 256)
    rng = np.random.default_rng(0)
    b = rng.normal(size=(3000, 6))
    a = b + 0.1 * rng.normal(size=b.shape)
    res = _check(a, b, np.arange(3000))
    assert res.uncertified == 0


def test_unequal_sizes_and_single_row_parts(monkeypatch):
    monkeypatch.setattr(scr, "PART", 10)
    rng = np.random.default_rng(1)
    b = rng.normal(size=(101, 3))                          # last part has one row
    a = rng.normal(size=(57, 3))
    _check(a, b, rng.integers(-1, 101, size=57))


@pytest.mark.parametrize("seed,budget", [(0, None), (1, None), (2, 1 << 16)])
def test_ties_and_near_ties_across_parts(monkeypatch, seed, budget):
    """The fallback screen gathers the records of every part that may hold a tied record:
    2–6 copies (exact, or 1 ulp apart) of a record scattered over different parts, so that
    C(a) spans parts and the link is drawn among them in file order."""
    monkeypatch.setattr(scr, "PART", 50)
    rng = np.random.default_rng(seed)
    b = rng.normal(size=(1000, 5))
    for g in range(40):
        src = rng.integers(0, 1000)
        copies = rng.choice(1000, size=rng.integers(2, 7), replace=False)
        b[copies] = b[src]
        if g % 2:  # a near tie: 1 ulp away in one attribute
            b[copies[0], 0] = np.nextafter(b[copies[0], 0], np.inf)
    a = b[rng.integers(0, 1000, 600)] + rng.choice([0.0, 1e-9, 0.3], size=(600, 5))
    kw = {} if budget is None else {"memory_budget": budget}  # 64 KiB: many small chunks
    res = _check(a, b, rng.integers(-1, 1000, 600), seed=seed, **kw)
    assert res.uncertified > 0 and (res.count > 1).any()



@pytest.mark.parametrize("budget,kept", [(None, True), (1 << 16, False)])
def test_fallback_reads_kept_part_minima_or_searches_again(monkeypatch, budget, kept):
    """Step 4 reads the part minima step 1 kept when the budget holds a block of them
    (no second search), and searches the parts again when it does not (64 KiB: 1,024-row
    blocks, fewer than the 2,500 attacker rows): the same sets and links either way."""
    monkeypatch.setattr(scr, "PART", 50)
    seen = []
    inner = scr.part_screened_sets
    monkeypatch.setattr(scr, "part_screened_sets",
                        lambda *a, **k: seen.append(k["pmin"] is not None) or inner(*a, **k))
    rng = np.random.default_rng(11)
    b = np.round(rng.normal(size=(1000, 4)), 1)            # rounded: exact ties
    a = b[rng.integers(0, 1000, 2500)] + rng.choice([0.0, 0.05], size=(2500, 4))
    kw = {} if budget is None else {"memory_budget": budget}
    res = _check(a, b, rng.integers(-1, 1000, 2500), **kw)
    assert res.uncertified > 0 and seen == [kept]

def _second_reference(a32, b32):
    """The second smallest of ‖b‖² − 2a·b, plus ‖a‖², with numpy's float32 arithmetic in
    the kernel's order (products added in attribute order, each rounded)."""
    acc = np.zeros((a32.shape[0], b32.shape[0]), np.float32)
    na = np.zeros(a32.shape[0], np.float32)
    for k in range(a32.shape[1]):
        acc += a32[:, k, None] * b32[None, :, k]
        na += a32[:, k] * a32[:, k]
    nb_ = np.einsum("ij,ij->i", b32, b32)
    v = nb_[None, :] - np.float32(2.0) * acc
    return np.partition(v, 1, axis=1)[:, 1] + na


@pytest.mark.parametrize("n,p", [(1, 2), (3, 7), (5, 512), (6, 513), (37, 1500), (101, 2048)])
def test_second_smallest_kernel_matches_numpy_bit_for_bit(n, p):
    """The fused kernel (four rows a tile load, tiles of ``SECOND_TILE`` columns, a
    counted skip of tiles without a smaller value) gives numpy's float32 values bit for
    bit, whatever the row count modulo 4 and the column count modulo the tile; tied
    records (equal rows of B) count twice."""
    rng = np.random.default_rng(n * 7919 + p)
    b = rng.normal(size=(p, 13)).astype(np.float32)
    a = rng.normal(size=(n, 13)).astype(np.float32)
    if p > 10:
        b[p // 2] = b[3]          # a tie: the second smallest equals the smallest
        a[0] = b[3]
    got = scr.second_in_part(a, b)
    want = _second_reference(a, b)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    if p > 10:
        assert got[0] == scr.second_in_part(a[:1], b[[3, p // 2]])[0]


def test_second_smallest_of_one_record_is_infinite():
    a = np.ones((3, 2), np.float32)
    assert np.isinf(scr.second_in_part(a, np.zeros((1, 2), np.float32))).all()


def test_merge_part_matches_the_numpy_fold():
    """The in-place fold of one part's k = 1 result gives what the numpy expressions
    gave: best, best of the other parts (NaN propagated as np.minimum does), label, part."""
    rng = np.random.default_rng(5)
    n = 500
    b1, o1 = np.full(n, np.inf, np.float32), np.full(n, np.inf, np.float32)
    l1, p1 = np.zeros(n, np.int64), np.zeros(n, np.int64)
    ref = [b1.copy(), o1.copy(), l1.copy(), p1.copy()]
    for s in range(6):
        d = rng.integers(0, 20, n).astype(np.float32)   # ties between parts
        d[rng.random(n) < 0.02] = np.nan
        lb = rng.integers(0, 50, n)
        scr._merge_part(d, lb, s, 50 * s, b1, o1, l1, p1)
        rb, ro, rl, rp = ref
        new = d < rb
        ref = [np.where(new, d, rb), np.where(new, rb, np.minimum(ro, d)),
               np.where(new, lb + 50 * s, rl), np.where(new, s, rp)]
    for got, want in zip((b1, o1, l1, p1), ref, strict=True):
        np.testing.assert_array_equal(got, want)
    assert np.isnan(o1).any()


@pytest.mark.parametrize("n_a,padded", [(40, True), (9, False), (300, False)])
def test_blocks_under_the_faiss_cliff_are_padded(monkeypatch, n_a, padded):
    """A block of PAD_MIN..FAST_QUERIES rows is searched padded with zero rows (faiss's k = 1
    search is ~16x dearer a pair below ~8,192 queries); the padding changes no set or
    link. Smaller blocks, and blocks at least FAST_QUERIES long, are searched as they are."""
    import faiss

    monkeypatch.setattr(scr, "PART", 64)
    monkeypatch.setattr(scr, "PAD_MIN", 10)
    monkeypatch.setattr(scr, "FAST_QUERIES", 64)
    sizes = []
    search = faiss.IndexFlatL2.search
    monkeypatch.setattr(faiss.IndexFlatL2, "search",
                        lambda self, x, k, **kw: sizes.append(x.shape[0]) or search(self, x, k,
                                                                                    **kw))
    rng = np.random.default_rng(n_a)
    b = np.round(rng.normal(size=(500, 3)), 1)
    a = b[rng.integers(0, 500, n_a)] + rng.choice([0.0, 0.05], size=(n_a, 3))
    _check(a, b, rng.integers(-1, 500, n_a))
    first = sizes[:8]  # the first pass: one search a part
    assert first == [64 if padded else n_a] * 8
