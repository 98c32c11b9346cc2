"""prl's pattern counts: how many of the n·n' pairs show each agreement pattern.

EM needs only these counts, computed exactly without enumerating pairs: for every subset S
of attributes the number of pairs agreeing on all of S is Σ_v cnt_A(v)·cnt_B(v) over the
value combinations v on S (one depth-first walk over the subsets, each step refining the
previous grouping by one attribute: :mod:`.walk`), and a Möbius inversion over supersets
turns "agree on at least S" into "agree on exactly S". O(2^m·(n+n')) instead of
O(n·n'·m). Attributes compared with a tolerance are not an equivalence relation; then a
compiled kernel bins the pattern of every pair (O(n·n'·m), still without storing pairs).
Small problems (at most :data:`NUMPY_MAX_PAIRS` pairs) are binned with numpy instead, the
same integer counts without compiling that kernel (issue 43: the first run of a command).

With missing values a pattern is a pair of bit masks (the attributes compared, those
agreeing); the pairs are counted per pair of missingness patterns
(engine/nearest/missing.py's grouping) with the ordinary counts on the attributes observed
in both (:func:`missing_pattern_counts`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...engine.nearest import Progress
from ...grouping import subset_walk
from .comparison import Comparison, pair_pattern, pattern_blocks, stack_columns
from .walk import COUNT, run_walk


def walk_cost(cmp: Comparison, m: int | None = None, n: tuple[int, int] | None = None
              ) -> float:
    """Rough cost of one subset walk (numpy steps over 2^m groupings of n+n' rows);
    ``n``: (n, n') of a part of the files (one block), default the whole files."""
    m = cmp.a.shape[1] if m is None else m
    n_a, n_b = (cmp.a.shape[0], cmp.b.shape[0]) if n is None else n
    return 20.0 * (1 << m) * (n_a + n_b)


def pair_cost(cmp: Comparison, n: tuple[int, int] | None = None) -> float:
    """Rough cost of one compiled pass over all pairs (``n`` as in :func:`walk_cost`)."""
    n_a, n_b = (cmp.a.shape[0], cmp.b.shape[0]) if n is None else n
    return float(n_a) * n_b * cmp.a.shape[1]


def compiled_walk_cost(cmp: Comparison) -> float:
    """Worst case of the compiled walk (no row pruned): a few operations per row and
    subset; pruning usually removes most of it."""
    return 4.0 * (1 << cmp.a.shape[1]) * (cmp.a.shape[0] + cmp.b.shape[0])


def superset_mobius(at_least: np.ndarray, m: int) -> np.ndarray:
    """Counts of "agree on exactly S" from counts of "agree on at least S" (all 2^m)."""
    e = at_least.astype(np.int64).copy()
    for j in range(m):
        v = e.reshape(-1, 2, 1 << j)
        v[:, 0, :] -= v[:, 1, :]
    return e


def pattern_counts(cmp: Comparison, progress: Progress | None = None,
                   walk: str = "compiled") -> np.ndarray:
    """Number of (a, b) pairs showing each agreement pattern (int64, 2^m), exact.
    ``progress(done, n_a)`` is called per block of A on the pair path. ``walk``:
    ``"compiled"`` (the pruned compiled walk, :func:`walk_kernel`) or ``"numpy"`` (the
    plain numpy subset walk over all rows, kept as the reference computation)."""
    m = cmp.a.shape[1]
    n_a = cmp.a.shape[0]
    if not cmp.coded:
        return pair_counts(cmp, progress)
    if walk == "compiled":
        if compiled_walk_cost(cmp) > pair_cost(cmp):
            return pair_counts(cmp, progress)
        at_least = np.zeros(1 << m, np.int64)
        run_walk(stack_columns(cmp), cmp.size, n_a, COUNT, at_least=at_least)
        return superset_mobius(at_least, m)
    if walk_cost(cmp) > pair_cost(cmp):
        return pair_counts(cmp, progress)
    codes = stack_columns(cmp)
    at_least = np.zeros(1 << m, np.int64)

    def visit(s: int, ids: np.ndarray, g: int) -> None:
        ca = np.bincount(ids[:n_a], minlength=g)
        cb = np.bincount(ids[n_a:], minlength=g)
        at_least[s] = int(ca @ cb)

    subset_walk(codes, cmp.size, visit)
    return superset_mobius(at_least, m)


@nb.njit(parallel=True, cache=True)
def pair_counts_kernel(a, b, tol, n_pat, n_chunks):
    """Pattern counts of every (a, b) pair: A's rows in ``n_chunks`` parallel chunks, each
    with its own histogram, summed."""
    n_a = a.shape[0]
    hist = np.zeros((n_chunks, n_pat), np.int64)
    step = (n_a + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        for i in range(c * step, min(n_a, (c + 1) * step)):
            for k in range(b.shape[0]):
                hist[c, pair_pattern(a, b, i, k, tol)] += 1
    return hist.sum(axis=0)


#: largest n_a·n_b whose pairs numpy bins instead of :func:`pair_counts_kernel`: on small
#: problems that kernel's first-call compilation costs far more than the counting (issue
#: 43); the counts are the same integers either way
NUMPY_MAX_PAIRS = 1_500_000


def pair_counts(cmp: Comparison, progress: Progress | None = None) -> np.ndarray:
    """Pattern counts by comparing every pair (tolerance attributes, or when the walk would
    cost more), block by block of A (``progress(done, n_a)`` after each)."""
    m = cmp.a.shape[1]
    n_a = cmp.a.shape[0]
    with_numpy = n_a * cmp.b.shape[0] <= NUMPY_MAX_PAIRS
    total = np.zeros(1 << m, np.int64)
    for r0, r1 in pattern_blocks(n_a):
        if with_numpy:
            total += _numpy_pair_counts(cmp.a[r0:r1], cmp.b, cmp.tol, 1 << m)
        else:
            total += pair_counts_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, 1 << m,
                                         max(1, nb.get_num_threads() * 4))
        if progress is not None:
            progress(r1, n_a)
    return total


def _numpy_pair_counts(a: np.ndarray, b: np.ndarray, tol: np.ndarray, n_patterns: int
                       ) -> np.ndarray:
    """:func:`pair_counts_kernel`'s counts with numpy: the pattern of every pair built
    bit by bit with the same comparison (|a − b| ≤ tol, or equality where tol ≤ 0)."""
    pattern = np.zeros((a.shape[0], b.shape[0]), np.int64)
    for j in range(a.shape[1]):
        agree = np.abs(a[:, j, None] - b[None, :, j]) <= (tol[j] if tol[j] > 0 else 0.0)
        pattern |= agree.astype(np.int64) << j
    return np.bincount(pattern.ravel(), minlength=n_patterns)


def missing_pattern_counts(cmp: Comparison, progress: Progress | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observed, agree, counts): the distinct (compared, agreeing) bit masks of the n·n'
    pairs and how many pairs show each, exact (sorted by observed, then agree)."""
    from ...engine.nearest.missing import check_pattern_count, patterns

    m = cmp.a.shape[1]
    pa, ga = patterns(~np.isnan(cmp.a))
    pb, gb = patterns(~np.isnan(cmp.b))
    check_pattern_count(len(ga) * len(gb), len(ga), len(gb))
    bit = np.left_shift(1, np.arange(m, dtype=np.int64))
    keys, cnts = [], []
    total, done = float(cmp.a.shape[0]) * cmp.b.shape[0], 0.0
    for p, r in enumerate(ga):
        for q, s_ in enumerate(gb):
            cols = np.flatnonzero(pa[p] & pb[q])
            o = int(bit[cols].sum())
            if cols.size:
                c = pattern_counts(cmp.sub(r, s_, cols))
                nz = np.flatnonzero(c)
                agree = ((nz[:, None] >> np.arange(cols.size)) & 1) @ bit[cols]
                keys.append((o << m) | agree)
                cnts.append(c[nz])
            else:
                keys.append(np.zeros(1, np.int64))
                cnts.append(np.array([r.size * s_.size], np.int64))
            done += float(r.size) * s_.size
            if progress is not None:
                progress(int(done), int(total))
    key, inv = np.unique(np.concatenate(keys), return_inverse=True)
    counts = np.zeros(key.size, np.int64)
    np.add.at(counts, np.asarray(inv).ravel(), np.concatenate(cnts))
    return key >> m, key & ((1 << m) - 1), counts
