"""Exact squared-Euclidean candidate sets, screened in float32 by faiss.

faiss's flat index finds each attacker record's k nearest released records with a float32
GEMM — an order of magnitude faster than any float64 scan — but float32 cannot decide ties
or near-ties. So its k candidates are re-scored in float64 with the engine's own arithmetic
(:func:`~.kernels.pair_scores`, the same bits as the exact kernel), and a row is accepted
only when the screen *proves* that no record outside its k candidates can be tied with the
minimum:

    every non-candidate b has faiss score ≥ D_k (the k-th smallest float32 score), and
    |faiss(a,b) − ‖a−b‖²| ≤ ε(a) = 4(m+3)·2⁻²³·(‖a‖² + max_b ‖b‖²)
    (rounding of the inputs to float32, of the dot product and of the norms),
    so if D_k − ε(a) > s_min + rtol·|s_min| no outside record is in C(a).

Rows that fail the proof (more than k−1 ties, or near-ties straddling the k-th candidate)
are recomputed by the exact kernel. Links are chosen with the exact kernel's rule (tied
records in file order, pick = hash(seed, row id) mod |C|), so results are identical to the
unscreened engine.
"""

from __future__ import annotations

import numpy as np

from ..errors import LinkriskError

#: screen problems with at least this many pairs when ``screen="auto"``
MIN_PAIRS = 50_000_000
#: neighbours fetched per row
K = 8


def available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def splitmix(seed: int, ids: np.ndarray) -> np.ndarray:
    """numpy twin of :func:`~.kernels._mix` (uint64 arithmetic wraps, as in the kernel)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + ids.astype(np.uint64)
             + np.uint64(1))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def screened_sets(a, b, kern, truth, rid, *, rtol, seed, cap, memory_budget, progress):
    """Candidate sets for the ``sqeuclidean`` metric through a faiss screen (see module)."""
    try:
        import faiss
    except ImportError as exc:
        raise LinkriskError("screen='faiss' needs faiss: pip install 'linkrisk[fast]'") from exc
    from .nearest import NearestSets, exact_sets

    n_a, m = a.shape
    k = min(K, b.shape[0])
    index = faiss.IndexFlatL2(m)
    index.add(np.ascontiguousarray(b, dtype=np.float32))
    eps = 4.0 * (m + 3) * 2.0**-23
    bmax = float(np.einsum("ij,ij->i", b, b).max())
    out_min = np.empty(n_a)
    out_count = np.empty(n_a, np.int64)
    out_ts = kern.pair_scores(a, b, np.arange(n_a), truth)  # −1 (no truth) → ∞
    out_link = np.empty(n_a, np.int64)
    todo = np.zeros(n_a, np.bool_)
    # per row: float32 input copy, k distances and labels, k exact scores (+ temporaries)
    rows = int(np.clip(memory_budget // (4 * m + 40 * k + 64), 1024, 262_144))
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        d32, lab = index.search(np.ascontiguousarray(a[r0:r1], dtype=np.float32), k)
        r = r1 - r0
        ia = np.repeat(np.arange(r0, r1), k)
        ex = kern.pair_scores(a, b, ia, lab.ravel()).reshape(r, k)
        mn = ex.min(axis=1)
        thr = mn + rtol * np.abs(mn)
        err = eps * (np.einsum("ij,ij->i", a[r0:r1], a[r0:r1]) + bmax)
        kth = d32[:, -1].astype(np.float64)
        kth[lab[:, -1] < 0] = np.inf
        ok = (kth - err > thr) if k < b.shape[0] else np.ones(r, np.bool_)
        tied = ex <= thr[:, None]
        cnt = tied.sum(axis=1)
        # link: the tied records in file order, pick hash(seed, row id) mod count
        order = np.where(tied, lab, np.iinfo(np.int64).max)
        order.sort(axis=1)
        pick = (splitmix(seed, rid[r0:r1]) % cnt.astype(np.uint64)).astype(np.int64)
        out_min[r0:r1] = mn
        out_count[r0:r1] = cnt
        out_link[r0:r1] = order[np.arange(r), pick]
        todo[r0:r1] = ~ok
        if progress is not None:
            progress(r1, n_a)
    redo = np.flatnonzero(todo)
    if redo.size:
        sub = exact_sets(a[redo], b, kern, truth[redo], rid[redo], rtol=rtol, seed=seed,
                         cap=cap, memory_budget=memory_budget, progress=None)
        out_min[redo], out_count[redo], out_link[redo] = sub.min_score, sub.count, sub.link
    thr = out_min + rtol * np.abs(out_min)
    true_in = (truth >= 0) & (out_ts <= thr)
    res = NearestSets(out_min, out_count, true_in, out_ts, out_link)
    res.rechecked = int(redo.size)
    return res
