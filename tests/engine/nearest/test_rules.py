"""The engine's rules (tie threshold, tie-breaking hash, pick, settle): the compiled
functions and their numpy twins give the same bits, and settle follows the definition."""

from __future__ import annotations

import numba as nb
import numpy as np

from linkrisk.engine.nearest.rules import (
    RTOL,
    Stages,
    pick,
    pick_np,
    settle,
    splitmix,
    splitmix_np,
    tie_threshold,
    tie_threshold_np,
)


@nb.njit
def _compiled(seed, ids, cnt, x):
    h = np.empty(ids.shape[0], np.uint64)
    p = np.empty(ids.shape[0], np.int64)
    t = np.empty(x.shape[0])
    for i in range(ids.shape[0]):
        h[i] = splitmix(seed, ids[i])
        p[i] = pick(seed, ids[i], cnt[i])
    for i in range(x.shape[0]):
        t[i] = tie_threshold(x[i], RTOL)
    return h, p, t


def _splitmix_reference(seed: int, i: int) -> int:
    """splitmix64 written out with Python integers (independent of numpy's wrapping)."""
    m = 2**64 - 1
    z = (seed * 0x9E3779B97F4A7C15 + i + 1) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def test_twins_give_the_same_bits():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**40, 500)
    cnt = rng.integers(1, 1000, 500)
    x = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-5, 5, 200),
                        [0.0, -0.0, np.inf]])
    for seed in (0, 7, 2**62 + 3):
        h, p, t = _compiled(seed, ids, cnt, x)
        assert np.array_equal(h, splitmix_np(seed, ids))
        assert np.array_equal(p, pick_np(seed, ids, cnt))
        assert np.array_equal(t, tie_threshold_np(x, RTOL))
        assert [int(v) for v in h[:20]] == [_splitmix_reference(seed, int(i)) for i in ids[:20]]


def test_subset_walk_stream_is_splitmix():
    """prl's subset walk hashed x as mix(x·φ + 0x632BE59BD9B4E019): that is
    splitmix(x, 0x632BE59BD9B4E018), so one hash serves both."""
    from linkrisk.attacks.probabilistic import WALK

    x = np.random.default_rng(1).integers(0, 2**63, 300).astype(np.uint64)
    want = [_splitmix_reference(int(v), 0x632BE59BD9B4E018) for v in x]
    assert WALK == 0x632BE59BD9B4E018
    assert [int(v) for v in splitmix_np(x, WALK)] == want


def test_settle_follows_the_definition():
    rng = np.random.default_rng(2)
    for trial in range(200):
        size = int(rng.integers(1, 30))
        cand = np.sort(rng.choice(1000, size, replace=False)).astype(np.int64)
        score = rng.integers(0, 4, size).astype(np.float64) * 0.5
        if trial % 3 == 0:
            score += rng.standard_normal(size) * 1e-12  # near-ties inside the tolerance
        truth = int(cand[rng.integers(size)]) if trial % 2 else -1
        mn, cnt, hit, link = settle(cand, score, size, truth, RTOL, 5, trial)
        thr = score.min() + RTOL * abs(score.min())
        tied = cand[score <= thr]
        assert mn == score.min() and cnt == tied.size
        assert hit == (truth in tied)
        assert link == tied[_splitmix_reference(5, trial) % tied.size]
    assert settle(cand, score, 0, -1, RTOL, 5, 0) == (np.inf, 0, False, -1)


def test_stages_map_onto_one_scale():
    seen = []
    st = Stages(lambda d, t: seen.append((d, t)))
    st.stage(0, 600)(1, 2)
    st.stage(600, 800)(2, 2)
    st.done()
    assert seen == [(300, 1000), (800, 1000), (1000, 1000)]
    assert Stages(None).stage(0, 10) is None
