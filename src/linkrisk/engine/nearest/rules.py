"""The rules every linkage result follows, in one place: ties, tie breaking, progress.

Every kernel, screen, matcher and attack of linkrisk decides ties and picks links with the
functions of this module, so that the same pair of files gives the same result on every
path (compiled kernel, integer kernel, faiss screen, Dask blocks, restricted candidate
sets). Compiled (numba) functions and their numpy twins stand side by side; a twin gives
the same bits as its compiled function.

* **Tie threshold.** A record b is tied with the best one of row a when
  s(a, b) ≤ t(s_min) with t(x) = x + rtol·|x| and ``RTOL`` = 1e-9 (:func:`tie_threshold`).
  The candidate set is C(a) = {b : s(a, b) ≤ t(min_b s(a, b))}.
* **Tie-breaking hash.** splitmix64 of (seed, i) (:func:`splitmix`): a reproducible
  per-record number that does not depend on thread scheduling, block or worker.
* **Pick.** The link of row a is the (splitmix(seed, id(a)) mod |C(a)|)-th member of C(a)
  in file order (:func:`pick`); rows whose tie set is too large for the compiled kernels'
  buffers draw it by reservoir sampling over the same hash chain instead
  (:func:`reservoir_step`). :func:`settle` applies the whole rule to one row's restricted
  candidate list.
* **Progress.** A long computation reports ``progress(done, total)`` (:class:`Progress`).

See ``docs/methods.md`` (ties and the expected number of correct links).
"""

from __future__ import annotations

from typing import Protocol

import numba as nb
import numpy as np

#: relative tolerance that decides ties: b is tied with the minimum s when its score is at
#: most s + RTOL·|s|
RTOL = 1e-9

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


class Progress(Protocol):
    """Progress callback of every long computation: ``done`` of ``total`` units (rows,
    pairs or per-mille) are finished. Called from the calling thread, at least once at
    the end."""

    def __call__(self, done: int, total: int) -> None: ...


class Stages:
    """One per-mille progress scale over the stages of a long computation: each stage gets
    its own callback (:meth:`stage`) mapping its (done, total) onto its share [lo, hi) of
    ``progress(done, 1000)``."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self.lo, self.hi = 0, 0

    def stage(self, lo: int, hi: int) -> Progress | None:
        """The callback of the stage covering per-mille lo … hi (None without progress)."""
        if self.progress is None:
            return None
        self.lo, self.hi = lo, hi

        def cb(done: int, total: int) -> None:
            frac = done / total if total else 1.0
            self.progress(int(self.lo + (self.hi - self.lo) * frac), 1000)

        return cb

    def done(self) -> None:
        """Report the end (1000 of 1000)."""
        if self.progress is not None:
            self.progress(1000, 1000)


# ---------------------------------------------------------------- tie threshold
@nb.njit(inline="always")
def tie_threshold(x, rtol):
    """t(x) = x + rtol·|x|: scores ≤ t(min) are tied with the minimum."""
    return x + rtol * abs(x)


def tie_threshold_np(x: np.ndarray | float, rtol: float = RTOL) -> np.ndarray:
    """numpy twin of :func:`tie_threshold` (elementwise, the same bits)."""
    return x + rtol * np.abs(x)


# ---------------------------------------------------------------- tie-breaking hash
@nb.njit(inline="always")
def splitmix(seed, i):
    """splitmix64 of (seed, i) = mix(seed·φ + i + 1), φ = 0x9E3779B97F4A7C15: a
    reproducible per-record random number for tie breaking (uint64, wrapping)."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(i) + np.uint64(1)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def splitmix_np(seed: np.ndarray | int, i: np.ndarray | int) -> np.ndarray:
    """numpy twin of :func:`splitmix`, broadcasting ``seed`` against ``i`` (uint64
    arithmetic wraps, as in the compiled function)."""
    with np.errstate(over="ignore"):
        z = (np.asarray(seed).astype(np.uint64) * _GOLDEN + np.asarray(i).astype(np.uint64)
             + np.uint64(1))
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


# ---------------------------------------------------------------- the pick
@nb.njit(inline="always")
def pick(seed, rid, cnt):
    """Position (0 … cnt−1) of the link among ``cnt`` tied records in file order, drawn
    with record ``rid``'s own generator."""
    return np.int64(splitmix(seed, rid) % np.uint64(cnt))


def pick_np(seed: int, rid: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """numpy twin of :func:`pick` (``cnt`` ≥ 1 elementwise)."""
    return (splitmix_np(seed, rid) % np.asarray(cnt).astype(np.uint64)).astype(np.int64)


@nb.njit(inline="always")
def reservoir_start(seed, rid):
    """State of record ``rid``'s reservoir sampling over its tied records (see
    :func:`reservoir_step`)."""
    return splitmix(seed, rid)


@nb.njit(inline="always")
def reservoir_step(state, cnt):
    """Advance the reservoir over the ``cnt``-th tied record (1-based, file order):
    (new state, whether that record replaces the current link; probability 1/cnt)."""
    state = splitmix(state, cnt)
    return state, state % np.uint64(cnt) == 0


@nb.njit(inline="always")
def settle(cand, score, size, truth_i, rtol, seed, rid_i):
    """The rule on one row's candidate list: ``cand[:size]`` (record ids in file order)
    with scores ``score[:size]``. Returns (minimum, |C|, whether ``truth_i`` ∈ C, link),
    link = the :func:`pick`-th tied record; (∞, 0, False, −1) for an empty list."""
    if size == 0:
        return np.inf, 0, False, -1
    best = np.inf
    for t in range(size):
        if score[t] < best:
            best = score[t]
    thr = tie_threshold(best, rtol)
    cnt = 0
    hit = False
    for t in range(size):
        if score[t] <= thr:
            cnt += 1
            if cand[t] == truth_i:
                hit = True
    k = pick(seed, rid_i, cnt)
    link = -1
    for t in range(size):
        if score[t] <= thr:
            if k == 0:
                link = cand[t]
                break
            k -= 1
    return best, cnt, hit, link


# ---------------------------------------------------------------- tiling
def tile_width(m: int) -> int:
    """Columns of B per tile of the compiled scans: an attribute-major tile (m × tile
    doubles) stays within ~256 KiB of cache."""
    return int(np.clip(2**15 // max(m, 1), 256, 4096))
