"""Exact squared-Euclidean candidate sets, screened in float32 by faiss.

faiss's flat index finds nearest neighbours with a float32 GEMM — an order of magnitude
faster than any float64 scan — but float32 cannot decide ties or near-ties, and faiss is
fast only for k = 1 (its k > 1 path keeps a heap per query and is far slower). So:

1. B is cut into contiguous parts of ``PART`` rows; one k = 1 search per part gives each
   attacker record a the float32 minimum of every part: the overall best b₁ (in part s₁)
   and D_other, the smallest minimum of the other parts. Same work as one k = 1 search.
2. Inside part s₁ only (n·PART pairs, not n²) a fused compiled kernel computing
   ‖a‖² + ‖b‖² − 2a·b in float32 like faiss gives D₂, the second smallest score there (faiss's own
   k = 2 search, or many small searches, would cost more than step 1; a numpy GEMM with
   13 inner products per pair is bound by writing its n×PART output).
3. b₁ is re-scored in float64 with the engine's own arithmetic
   (:func:`~.kernels.pair_scores`, the same bits as the exact kernel): s_min. The row is
   *certified* when no other record can be tied with it:

       L(min(D₂, D_other)) > s_min + rtol·|s_min|,  L(D) = (D − 3c‖a‖²) / (1 + 2c),

   c = 4(m+3)·2⁻²³, where L(D) is a lower bound of the exact
   score of any record whose computed score is ≥ D (see :func:`lower_bound`); then C(a) = {b₁}.
4. Rows that fail (ties or near-ties) go to a k = ``K`` screen with the same proof on the
   k-th score, and what still fails to the exact kernel.

Links follow the exact kernel's rule (tied records in file order, pick = hash(seed,
row id) mod |C|), so results are identical to the unscreened engine.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...errors import LinkriskError
from ..budget import screen_row_bytes
from .kernels import Pairwise
from .rules import pick_np, tie_threshold_np
from .sets import NearestSets, exact_sets

#: screen problems with at least this many pairs when ``screen="auto"``
MIN_PAIRS = 50_000_000
#: neighbours fetched per row by the fallback screen
K = 8
#: rows of B per part of the k = 1 screen (None: by size, see :func:`part_rows`); small
#: parts make step 2 cheap, but faiss is less efficient on many small indexes
PART: int | None = None


def part_rows(n_b: int) -> int:
    """Part size: 4096 rows, 8192 from 400,000 released records. Smaller parts make step 2
    cheaper (n·PART pairs, negligible next to n² at 10⁶) but faiss's k = 1 search slower
    over many small indexes."""
    return PART if PART is not None else (8192 if n_b >= 400_000 else 4096)


def available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def _faiss():
    try:
        import faiss
    except ImportError as exc:
        raise LinkriskError("screen='faiss' needs faiss: pip install 'linkrisk[fast]'") from exc
    return faiss


def query_rows(faiss, rows: int, n_a: int) -> int:
    """Attacker rows per faiss search: at most ``rows`` (the memory budget's), about 20
    progress reports, but never fewer than faiss's BLAS threshold
    (``distance_compute_blas_threshold`` queries): smaller query blocks take faiss's
    non-BLAS path, which is several times slower."""
    blas = int(faiss.cvar.distance_compute_blas_threshold)
    return min(rows, max(blas, -(-n_a // 20)))


@nb.njit(parallel=True, cache=True)
def _second(a, bt, nb_, out):
    """Per row i of ``a``: the second smallest of ‖b_j‖² − 2·a_i·b_j + ‖a_i‖² over the
    columns j of ``bt`` (B attribute-major), fused: no n×P matrix is written. Float32
    inputs and arithmetic (the caller bounds the rounding error)."""
    n, m = a.shape
    p = bt.shape[1]
    for i in nb.prange(n):
        acc = np.empty(p, np.float32)
        for j in range(p):
            acc[j] = 0.0
        for k in range(m):
            x = a[i, k]
            row = bt[k]
            for j in range(p):
                acc[j] += x * row[j]
        m1 = np.float32(np.inf)
        m2 = np.float32(np.inf)
        for j in range(p):
            v = nb_[j] - np.float32(2.0) * acc[j]
            if v < m1:
                m2 = m1
                m1 = v
            elif v < m2:
                m2 = v
        na = np.float32(0.0)
        for k in range(m):
            na += a[i, k] * a[i, k]
        out[i] = m2 + na


def second_in_part(a32: np.ndarray, bp32: np.ndarray) -> np.ndarray:
    """The second smallest squared distance, ‖a‖² + ‖b‖² − 2a·b in float32 (faiss's
    arithmetic, so :func:`lower_bound` bounds its error), of each row of ``a32`` to the rows of
    ``bp32`` (∞ when ``bp32`` has one row)."""
    out = np.full(a32.shape[0], np.inf, np.float32)
    if bp32.shape[0] >= 2 and a32.shape[0]:
        _second(np.ascontiguousarray(a32), np.ascontiguousarray(bp32.T),
                np.einsum("ij,ij->i", bp32, bp32), out)
    return out


def error_constant(m: int, unit: float = 2.0**-23) -> float:
    """c = 4(m+3)·unit: |float32 score − ‖a−b‖²| ≤ c·(‖a‖² + ‖b‖²) for m attributes (see
    :func:`lower_bound`)."""
    return 4.0 * (m + 3) * unit


def lower_bound(d: np.ndarray, a: np.ndarray, unit: float = 2.0**-23) -> np.ndarray:
    """A lower bound of the exact squared distance ‖a−b‖² of every record b whose float32
    faiss score is ≥ ``d``.

    faiss computes ‖a‖² + ‖b‖² − 2a·b in float32 from float32 inputs, so
    |faiss − ‖a−b‖²| ≤ c·(‖a‖² + ‖b‖²) with c = 4(m+3)·2⁻²³ (rounding of the inputs, the
    dot product and the norms). With ‖b‖² ≤ 2‖a‖² + 2‖a−b‖² this gives
    ‖a−b‖² ≥ (faiss − 3c‖a‖²) / (1 + 2c), a bound that does not depend on b. ``unit``:
    the rounding unit of the arithmetic."""
    c = error_constant(a.shape[1], unit)
    return (d.astype(np.float64) - 3.0 * c * np.einsum("ij,ij->i", a, a)) / (1.0 + 2.0 * c)


def screened_sets(pw: Pairwise, truth: np.ndarray, rid: np.ndarray, *, rtol: float, seed: int,
                  cap: int, memory_budget: int, progress) -> NearestSets:
    """Candidate sets for the ``sqeuclidean`` metric through the two-stage faiss screen
    (see module): certified rows have |C(a)| = 1; the rest go to :func:`k_screened_sets`."""
    faiss = _faiss()
    a, b = pw.x, pw.y
    n_a, m = a.shape
    n_b = b.shape[0]
    edges = list(range(0, n_b, part_rows(n_b))) + [n_b]
    parts = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        # the indexes hold the only float32 copy of B (step 2 reads its parts back)
        ix = faiss.IndexFlatL2(m)
        ix.add(np.ascontiguousarray(b[lo:hi], dtype=np.float32))
        parts.append(ix)
    # per row: float32 copy, best/second/other minima, labels, parts (+ temporaries)
    rows = int(np.clip(memory_budget // screen_row_bytes(m), 1024, 262_144))
    rows = query_rows(faiss, rows, n_a)
    best = np.empty(n_a, np.float32)
    other = np.empty(n_a, np.float32)
    lab = np.empty(n_a, np.int64)
    part = np.empty(n_a, np.int64)
    second = np.full(n_a, np.inf, np.float32)
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        q = np.ascontiguousarray(a[r0:r1], dtype=np.float32)
        b1 = np.full(r1 - r0, np.inf, np.float32)
        o1 = np.full(r1 - r0, np.inf, np.float32)
        l1 = np.zeros(r1 - r0, np.int64)
        p1 = np.zeros(r1 - r0, np.int64)
        for s, ix in enumerate(parts):
            d, lb = ix.search(q, 1)
            d = d[:, 0]
            new = d < b1
            o1 = np.where(new, b1, np.minimum(o1, d))
            b1 = np.where(new, d, b1)
            l1 = np.where(new, lb[:, 0] + edges[s], l1)
            p1 = np.where(new, s, p1)
        best[r0:r1], other[r0:r1], lab[r0:r1], part[r0:r1] = b1, o1, l1, p1
        if progress is not None:
            progress(r1, n_a)
    # second smallest float32 score inside the winning part (fused kernel, faiss arithmetic)
    for s in np.unique(part):
        sel = np.flatnonzero(part == s)
        second[sel] = second_in_part(a[sel].astype(np.float32),
                                     parts[s].reconstruct_n(0, parts[s].ntotal))
    parts.clear()  # before the fallback screen builds its own index
    smin = pw.pair_scores(np.arange(n_a), lab)
    thr = tie_threshold_np(smin, rtol)
    ok = (lower_bound(np.minimum(other, second), a) > thr) & (lab >= 0)
    out_ts = pw.pair_scores(np.arange(n_a), truth)  # −1 (no truth) → ∞
    out_min, out_count, out_link = smin, np.ones(n_a, np.int64), lab.copy()
    redo = np.flatnonzero(~ok)
    rechecked = 0
    if redo.size:
        # the uncertified rows are screened again: report them as a second pass
        sub = k_screened_sets(pw.rows(redo), truth[redo], rid[redo], rtol=rtol, seed=seed,
                              cap=cap, memory_budget=memory_budget, progress=progress)
        out_min[redo], out_count[redo], out_link[redo] = sub.min_score, sub.count, sub.link
        rechecked = sub.rechecked
    thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    res = NearestSets(out_min, out_count, true_in, out_ts, out_link)
    res.uncertified = int(redo.size)
    res.rechecked = rechecked
    return res


def k_screened_sets(pw: Pairwise, truth: np.ndarray, rid: np.ndarray, *, rtol: float,
                    seed: int, cap: int, memory_budget: int, progress) -> NearestSets:
    """Candidate sets through a faiss k = ``K`` screen: a row is accepted when its K-th
    float32 score minus ε(a) exceeds the tie threshold; the rest go to the exact kernel."""
    faiss = _faiss()
    a, b = pw.x, pw.y
    n_a, m = a.shape
    k = min(K, b.shape[0])
    index = faiss.IndexFlatL2(m)
    index.add(np.ascontiguousarray(b, dtype=np.float32))
    out_min = np.empty(n_a)
    out_count = np.empty(n_a, np.int64)
    out_ts = pw.pair_scores(np.arange(n_a), truth)  # −1 (no truth) → ∞
    out_link = np.empty(n_a, np.int64)
    todo = np.zeros(n_a, np.bool_)
    # per row: float32 input copy, k distances and labels, k exact scores (+ temporaries)
    rows = int(np.clip(memory_budget // screen_row_bytes(m, k), 1024, 262_144))
    rows = query_rows(faiss, rows, n_a)
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        d32, lab = index.search(np.ascontiguousarray(a[r0:r1], dtype=np.float32), k)
        r = r1 - r0
        ia = np.repeat(np.arange(r0, r1), k)
        ex = pw.pair_scores(ia, lab.ravel()).reshape(r, k)
        mn = ex.min(axis=1)
        thr = tie_threshold_np(mn, rtol)
        kth = lower_bound(d32[:, -1], a[r0:r1])
        kth[lab[:, -1] < 0] = np.inf
        ok = (kth > thr) if k < b.shape[0] else np.ones(r, np.bool_)
        tied = ex <= thr[:, None]
        cnt = tied.sum(axis=1)
        # link: the tied records in file order, pick hash(seed, row id) mod count
        order = np.where(tied, lab, np.iinfo(np.int64).max)
        order.sort(axis=1)
        pick = pick_np(seed, rid[r0:r1], cnt)
        out_min[r0:r1] = mn
        out_count[r0:r1] = cnt
        out_link[r0:r1] = order[np.arange(r), pick]
        todo[r0:r1] = ~ok
        if progress is not None:
            progress(r1, n_a)
    redo = np.flatnonzero(todo)
    if redo.size:
        sub = exact_sets(pw.rows(redo), truth[redo], rid[redo], rtol=rtol, seed=seed,
                         cap=cap, memory_budget=memory_budget, progress=progress)
        out_min[redo], out_count[redo], out_link[redo] = sub.min_score, sub.count, sub.link
    thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    res = NearestSets(out_min, out_count, true_in, out_ts, out_link)
    res.rechecked = int(redo.size)
    return res
