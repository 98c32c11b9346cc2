"""Rank swapping and rank shuffling: released values are the original values, permuted
within each attribute among records of close rank.

* ``rank_swap`` (Moore 1996, "Controlled data-swapping techniques for masking public use
  microdata sets"): per attribute, sort ascending (stable); walk sorted positions
  i = 1..n; if i is not yet swapped, pick uniformly a not-yet-swapped position l with
  i < l ≤ i + ⌊p·n/100⌋ and swap the two values; if there is none, leave i. So every value
  moves at most ⌊p·n/100⌋ rank positions and the permutation is a product of disjoint
  transpositions.
* ``rank_swap_pdist`` (Nin, Herranz & Torra 2008, "Rethinking rank swapping to decrease
  disclosure risk", p-distribution): for each i a maximum distance D_i ~ N(μ, σ) with
  μ = σ = p·n/200, clipped to [0, n−i]; a distance r ~ Uniform{1..max(1, ⌊D_i⌋)}; the partner
  is part = i + r if free, else the nearest free position beyond l; none → leave i. Values may
  travel further than ⌊p·n/100⌋, which defeats rank-interval (RSRL) attacks.
* ``rank_swap_pbuckets`` (same paper, p-buckets): sorted values split into p equal buckets
  B_1..B_p; a value in B_r picks a bucket B_s with probability ∝ 2^−|s−r| among the buckets
  that hold a free partner (renormalized; the paper leaves empty buckets open), then a free
  partner uniformly in B_s (l > i when s = r). p is a number of buckets: fewer is stronger.
* ``rank_shuffle`` (Nin, Herranz & Torra 2008, rank shuffling): sort; randomly permute the
  values in a window of q consecutive positions; shift the window by s (1 ≤ s ≤ q, default
  s = q) and repeat until every position has been in a window (the last window is cut at
  n); undo the sort. With s = q the windows are disjoint blocks.

Strength parameter: ``p`` (rank_swap, rank_swap_pdist: percent of n, 1 mild … 20+ strong;
rank_swap_pbuckets: number of buckets, large mild … 1 strongest), ``q`` for rank_shuffle.
The kernels are numba-compiled and O(n log n) per attribute (a Fenwick tree over the free
positions finds and counts free partners), so 10^5 records take well under a second.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..errors import LinkriskError
from ._base import frame_like

# ---------------------------------------------------------------- Fenwick tree (0-based API)


@nb.njit(cache=True)
def _bit_ones(n):
    # Fenwick tree of an all-ones array: node i covers lowbit(i) elements
    tree = np.empty(n + 1, dtype=np.int64)
    tree[0] = 0
    for i in range(1, n + 1):
        tree[i] = i & (-i)
    return tree


@nb.njit(cache=True)
def _bit_remove(tree, pos):
    i = pos + 1
    n = tree.shape[0] - 1
    while i <= n:
        tree[i] -= 1
        i += i & (-i)


@nb.njit(cache=True)
def _swap_pair(tree, src, i, part):
    """Record the swap of positions i and part and take both out of the free set."""
    src[i] = part
    src[part] = i
    _bit_remove(tree, part)
    _bit_remove(tree, i)


@nb.njit(cache=True)
def _bit_prefix(tree, pos):
    """Number of free positions in [0, pos] (0 when pos < 0)."""
    s = 0
    i = pos + 1
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


@nb.njit(cache=True)
def _bit_kth(tree, k):
    """Position of the k-th free position (k ≥ 1, k ≤ total free)."""
    n = tree.shape[0] - 1
    step = 1
    while step * 2 <= n:
        step *= 2
    pos = 0
    while step > 0:
        nxt = pos + step
        if nxt <= n and tree[nxt] < k:
            pos = nxt
            k -= tree[nxt]
        step //= 2
    return pos  # 1-based pos+1 holds the k-th one → 0-based pos


@nb.njit(cache=True)
def _draw_index(rng, cnt):
    r = int(rng.random() * cnt)
    return r if r < cnt else cnt - 1


# ---------------------------------------------------------------- kernels on sorted positions
# Each returns src: the value at sorted position i after masking comes from position src[i].


@nb.njit(cache=True)
def _swap_standard(n, window, rng):
    src = np.arange(n)
    tree = _bit_ones(n)
    for i in range(n):
        if src[i] != i:  # already swapped as somebody's partner
            continue
        hi = min(n - 1, i + window)
        if hi <= i:
            continue
        base = _bit_prefix(tree, i)
        cnt = _bit_prefix(tree, hi) - base
        if cnt == 0:
            continue
        part = _bit_kth(tree, base + 1 + _draw_index(rng, cnt))
        _swap_pair(tree, src, i, part)
    return src


@nb.njit(cache=True)
def _swap_pdist(n, mu, sigma, as_max, free_rule, rng):
    """p-distribution swap on sorted positions. D_i ~ N(mu, sigma) clipped to [0, n−1−i];
    the forward distance is r = max(1, round(D_i)) (``as_max`` False) or r uniform in
    1..max(1, ⌊D_i⌋) (``as_max`` True). With ``free_rule`` only not-yet-swapped positions
    take part (i is skipped once swapped; its partner is the nearest free position ≥ i + r,
    none → leave i); without it every i swaps its current value with position i + r
    (a value may move several times)."""
    src = np.arange(n)
    tree = _bit_ones(n)
    total = n
    for i in range(n):
        if free_rule and src[i] != i:
            continue
        d = mu + sigma * rng.standard_normal()
        d = min(max(d, 0.0), float(n - 1 - i))
        if as_max:
            r = 1 + _draw_index(rng, max(1, int(math.floor(d))))
        else:
            r = max(1, int(math.floor(d + 0.5)))
        part = i + r
        if part > n - 1:
            continue
        if not free_rule:
            t = src[i]
            src[i] = src[part]
            src[part] = t
            continue
        before = _bit_prefix(tree, part - 1)
        if before == total:  # no free position at or beyond part
            continue
        part = _bit_kth(tree, before + 1)  # nearest free position >= part
        _swap_pair(tree, src, i, part)
        total -= 2
    return src


@nb.njit(cache=True)
def _swap_pbuckets(n, p, rng):
    src = np.arange(n)
    tree = _bit_ones(n)
    start = np.empty(p + 1, dtype=np.int64)
    for b in range(p + 1):
        start[b] = (b * n) // p
    cnt = np.zeros(p, dtype=np.int64)
    w = np.zeros(p)
    r = 0
    for i in range(n):
        while i >= start[r + 1]:
            r += 1
        if src[i] != i:
            continue
        # free partners per bucket (l > i in i's own bucket); weights 2^-(|s-r| - dmin)
        # relative to the nearest non-empty bucket so far buckets do not underflow
        dmin = p
        for s in range(p):
            lo = i + 1 if s == r else start[s]
            hi = start[s + 1] - 1
            c = _bit_prefix(tree, hi) - _bit_prefix(tree, lo - 1) if hi >= lo else 0
            cnt[s] = c
            if c > 0 and abs(s - r) < dmin:
                dmin = abs(s - r)
        if dmin == p:
            continue
        tot = 0.0
        for s in range(p):
            w[s] = 2.0 ** (-(abs(s - r) - dmin)) if cnt[s] > 0 else 0.0
            tot += w[s]
        u = rng.random() * tot
        chosen = -1
        acc = 0.0
        for s in range(p):
            if cnt[s] > 0:
                chosen = s
                acc += w[s]
                if u < acc:
                    break
        lo = i + 1 if chosen == r else start[chosen]
        part = _bit_kth(tree, _bit_prefix(tree, lo - 1) + 1 + _draw_index(rng, cnt[chosen]))
        _swap_pair(tree, src, i, part)
    return src


@nb.njit(cache=True)
def _shuffle_windows(n, q, s, rng):
    src = np.arange(n)
    start = 0
    while True:
        end = min(start + q, n)
        for i in range(end - 1, start, -1):  # Fisher-Yates within the window
            j = start + _draw_index(rng, i - start + 1)
            t = src[i]
            src[i] = src[j]
            src[j] = t
        if end >= n:
            break
        start += s
    return src


# ---------------------------------------------------------------- array-level API


#: readings of p-distribution swapping: (draw, scale, partner rule); see ``pdist_variant``
PDIST_DRAWS = ("distance", "max")
PDIST_SCALES = ("p", "half")
PDIST_RULES = ("free", "nofree")
PDIST_DEFAULT = "max/p/free"
PDIST_VARIANTS = tuple(f"{d}/{s}/{r}" for d in PDIST_DRAWS for s in PDIST_SCALES
                       for r in PDIST_RULES)


def pdist_variant(variant: str | None) -> tuple[bool, float, bool]:
    """Parse a p-distribution reading ``"DRAW/SCALE/RULE"`` into (as_max, scale, free_rule):
    DRAW ``distance`` (the normal draw is the swap distance) or ``max`` (a maximum, the
    distance uniform below it); SCALE ``p`` (μ = σ = p·n/100) or ``half`` (μ = σ = p·n/200);
    RULE ``free`` (partners are not-yet-swapped positions) or ``nofree`` (every position
    swaps with i + r whatever happened before). ``None`` is :data:`PDIST_DEFAULT`; the
    former default is ``"max/half/free"`` (docs/methods.md)."""
    v = PDIST_DEFAULT if variant is None else str(variant).strip().lower()
    parts = v.split("/")
    if (len(parts) != 3 or parts[0] not in PDIST_DRAWS or parts[1] not in PDIST_SCALES
            or parts[2] not in PDIST_RULES):
        raise LinkriskError(
            f"rank_swap_pdist: variant={variant!r} is not DRAW/SCALE/RULE with DRAW in "
            f"{', '.join(PDIST_DRAWS)}, SCALE in {', '.join(PDIST_SCALES)}, RULE in "
            f"{', '.join(PDIST_RULES)} (default {PDIST_DEFAULT})")
    return parts[0] == "max", (100.0 if parts[1] == "p" else 200.0), parts[2] == "free"


def rank_permutation(x: np.ndarray, method: str, rng: np.random.Generator, *,
                     p: float | None = None, q: int | None = None,
                     s: int | None = None, variant: str | None = None) -> np.ndarray:
    """Row permutation ``src`` of one attribute such that the masked column is ``x[src]``.

    ``method`` is ``rank_swap``, ``rank_swap_pdist``, ``rank_swap_pbuckets`` or
    ``rank_shuffle``; parameters as in the module docstring (already validated).
    """
    x = np.asarray(x)
    n = len(x)
    order = np.argsort(x, kind="stable")
    if method == "rank_swap":
        pos = _swap_standard(n, int(math.floor(p * n / 100.0)), rng)
    elif method == "rank_swap_pdist":
        as_max, div, free_rule = pdist_variant(variant)
        pos = _swap_pdist(n, p * n / div, p * n / div, as_max, free_rule, rng)
    elif method == "rank_swap_pbuckets":
        pos = _swap_pbuckets(n, int(p), rng)
    elif method == "rank_shuffle":
        pos = _shuffle_windows(n, int(q), int(s), rng)
    else:  # pragma: no cover - internal
        raise ValueError(method)
    src = np.empty(n, dtype=np.int64)
    src[order] = order[pos]
    return src


def _check_p(method: str, p: float | None, n: int) -> None:
    if p is None:
        what = ("the number of buckets, e.g. p=10" if method == "rank_swap_pbuckets"
                else "the swap range as a percent of n, e.g. p=5")
        raise LinkriskError(f"{method} needs p ({what})")
    if method == "rank_swap_pbuckets":
        if p != int(p) or not (1 <= p <= n):
            raise LinkriskError(
                f"rank_swap_pbuckets: p={p} must be a whole number of buckets in 1..n = {n}"
            )
    elif not (0 < p <= 100):
        raise LinkriskError(f"{method}: p={p} is a percentage of n and must be in (0, 100]")


def _apply_rank(method: str):
    def apply(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
              p: float | None = None, variant: str | None = None) -> pd.DataFrame:
        x = numeric_matrix(df, columns, method=method)
        _check_p(method, p, len(x))
        if variant is not None:  # only rank_swap_pdist registers the parameter
            pdist_variant(variant)
        out = np.column_stack([x[rank_permutation(x[:, j], method, rng, p=p,
                                                  variant=variant), j]
                               for j in range(x.shape[1])])
        return frame_like(df, columns, out, keep_dtype=True)

    apply.__name__ = f"apply_{method}"
    return apply


apply_rank_swap = _apply_rank("rank_swap")
apply_rank_swap_pdist = _apply_rank("rank_swap_pdist")
apply_rank_swap_pbuckets = _apply_rank("rank_swap_pbuckets")


def apply_rank_shuffle(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                       q: int | None = None, s: int | None = None) -> pd.DataFrame:
    x = numeric_matrix(df, columns, method="rank_shuffle")
    n = len(x)
    if q is None:
        raise LinkriskError("rank_shuffle needs q (window length, e.g. q=10)")
    if q < 2 or q > n:
        raise LinkriskError(f"rank_shuffle: window q={q} must be in 2..n = {n}")
    s = q if s is None else s
    if not (1 <= s <= q):
        raise LinkriskError(f"rank_shuffle: shift s={s} must be in 1..q = {q}")
    out = np.column_stack([x[rank_permutation(x[:, j], "rank_shuffle", rng, q=q, s=s), j]
                           for j in range(x.shape[1])])
    return frame_like(df, columns, out, keep_dtype=True)
