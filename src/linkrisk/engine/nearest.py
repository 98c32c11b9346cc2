"""Blocked nearest-record search with the tie rule of docs/methods.md (the shared
attack engine)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import LinkriskError
from .intkernels import integer_form, nearest_block_int
from .kernels import METRIC_CODES, Tables, nearest_block, pair_scores, recount_rows

#: default working-memory budget of the engine, bytes
DEFAULT_MEMORY_BUDGET = 512 * 2**20
#: relative tolerance that decides ties (docs/methods.md, Conventions)
RTOL = 1e-9

Progress = Callable[[int, int], None]


@dataclass
class NearestSets:
    """For every attacker record a: the minimal score, |C(a)|, whether its true image is in
    C(a), and one link chosen uniformly (seeded) among C(a)."""

    min_score: np.ndarray    # float64 (n_a,)
    count: np.ndarray        # int64 (n_a,) = |C(a)|
    true_in_set: np.ndarray  # bool (n_a,)
    true_score: np.ndarray   # float64 (n_a,), inf when a has no true image
    link: np.ndarray         # int64 (n_a,)

    @property
    def correct(self) -> np.ndarray:
        """χ(true(a) ∈ C(a)) / |C(a)|: expected correct link under random tie breaking."""
        return np.where(self.true_in_set, 1.0 / np.maximum(self.count, 1), 0.0)


def plan_blocks(n_a: int, n_b: int, m: int, memory_budget: int, cap: int) -> tuple[int, int]:
    """(rows per Python-level block, B tile width). The working set per block is its
    outputs plus the per-row tie buffers; tiles are sized so that an attribute-major tile of
    B (m × tile doubles) stays within ~256 KiB of cache."""
    tile = int(np.clip(2**15 // max(m, 1), 256, 4096))
    per_row = 8 * (5 + 2 * cap) + 8 * m
    rows = int(max(256, min(n_a, memory_budget // max(per_row, 1), 1 << 16)))
    return rows, tile


def nearest_sets(
    a: np.ndarray,
    b: np.ndarray,
    *,
    metric: str = "sqeuclidean",
    truth: np.ndarray | None = None,
    degree: int = 2,
    tables: Tables | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    rtol: float = RTOL,
    seed: int = 0,
    cap: int = 32,
    progress: Progress | None = None,
    screen: str = "auto",
    row_ids: np.ndarray | None = None,
) -> NearestSets:
    """Candidate sets C(a) = {b : s(a,b) ≤ min_b s + rtol·|min|} for every row a of ``a``.

    ``metric``: ``sqeuclidean`` (Σ(a−b)²), ``l1`` (Σ|a−b|), ``linf`` (max|a−b|), ``kernel``
    (K(a,a) − 2K(a,b) + K(b,b), K(x,y) = (1+x·y)^degree) or ``mixed`` (numeric attributes
    (a−b)², categorical ones looked up in ``tables``, see :class:`~.kernels.Tables`). ``truth[i]`` is the row of ``b``
    that is the true image of ``a[i]`` (−1: none). Memory is O((n_a + n_b)·m) plus a budgeted
    working set; no n_a×n_b matrix is formed. ``progress(done, total)`` is called per block.

    ``screen``: ``"faiss"`` screens squared-Euclidean candidates with faiss's float32 flat
    index and re-checks them exactly (see :mod:`.screen`); ``"none"`` always uses the exact
    kernel; ``"auto"`` screens large problems when faiss is installed. Results are identical
    either way. ``row_ids`` (default 0..n_a−1) seed each row's tie breaking, so a row gets
    the same link whichever block or worker computes it.
    """
    if metric not in METRIC_CODES:
        raise LinkriskError(f"unknown metric {metric!r}; use one of {', '.join(METRIC_CODES)}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise LinkriskError(f"attribute counts differ: {a.shape} vs {b.shape}")
    n_a, m = a.shape
    n_b = b.shape[0]
    if n_a == 0 or n_b == 0:
        raise LinkriskError("cannot link an empty file")
    truth = (np.full(n_a, -1, np.int64) if truth is None
             else np.ascontiguousarray(truth, dtype=np.int64))
    rid = (np.arange(n_a, dtype=np.int64) if row_ids is None
           else np.ascontiguousarray(row_ids, dtype=np.int64))
    if truth.shape != (n_a,) or rid.shape != (n_a,):
        raise LinkriskError("truth and row_ids need one entry per attacker record")
    if screen not in ("auto", "faiss", "none"):
        raise LinkriskError(f"unknown screen {screen!r}; use auto, faiss or none")
    code = METRIC_CODES[metric]
    if tables is None:
        tables = Tables.empty(m)
    if code == METRIC_CODES["mixed"]:
        _check_codes(a, b, tables)
    kern = Kernel(code, degree, tables, a, b)
    if code == METRIC_CODES["sqeuclidean"] and screen != "none":
        from . import screen as scr

        if screen == "faiss" or (scr.available() and n_a * n_b >= scr.MIN_PAIRS):
            return scr.screened_sets(a, b, kern, truth, rid, rtol=rtol, seed=seed, cap=cap,
                                     memory_budget=memory_budget, progress=progress)
    return exact_sets(a, b, kern, truth, rid, rtol=rtol, seed=seed, cap=cap,
                      memory_budget=memory_budget, progress=progress)


class Kernel:
    """The compiled kernels' metric arguments for one (A, B) pair of files."""

    def __init__(self, code: int, degree: int, tables: Tables, a: np.ndarray, b: np.ndarray):
        self.code, self.degree, self.tables = code, int(degree), tables
        if code == METRIC_CODES["kernel"]:
            self.kaa = (1.0 + np.einsum("ij,ij->i", a, a)) ** degree
            self.kbb = (1.0 + np.einsum("ij,ij->i", b, b)) ** degree
        else:
            self.kaa, self.kbb = np.zeros(a.shape[0]), np.zeros(b.shape[0])

    @property
    def tabs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.tables.flat, self.tables.off, self.tables.size

    def pair_scores(self, a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray
                    ) -> np.ndarray:
        """Scores of pairs (a[ia], b[ib]) with the kernels' exact arithmetic (−1 → ∞)."""
        out = np.empty(ia.shape[0])
        pair_scores(a, b, np.ascontiguousarray(ia, np.int64), np.ascontiguousarray(ib, np.int64),
                    self.code, self.degree, self.kaa, self.kbb, *self.tabs, out)
        return out


def exact_sets(a: np.ndarray, b: np.ndarray, kern: Kernel, truth: np.ndarray, rid: np.ndarray,
               *, rtol: float, seed: int, cap: int, memory_budget: int,
               progress: Progress | None, integer: bool = True) -> NearestSets:
    """The fused exact kernel over all of B for every row of ``a`` (blocked for progress).
    Whole-number scores (rank distances, Hamming) go through the int32 kernel of
    :mod:`.intkernels` unless ``integer`` is False; the results are identical."""
    n_a, m = a.shape
    form = integer_form(a, b, kern.code, kern.tables) if integer else None
    # the float kernel's attribute-major copy of B (the integer form has its own)
    bt = np.ascontiguousarray(b.T) if form is None else None
    ai, bti, icode, scale = form if form is not None else (None, None, 0, 1)
    rows, tile = plan_blocks(n_a, b.shape[0], m, memory_budget, cap)
    chunk = 16
    out_min = np.empty(n_a)
    out_count = np.empty(n_a, np.int64)
    out_ts = np.empty(n_a)
    out_link = np.empty(n_a, np.int64)
    out_over = np.empty(n_a, np.bool_)
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        outs = (out_min[r0:r1], out_count[r0:r1], out_ts[r0:r1], out_link[r0:r1],
                out_over[r0:r1])
        if form is not None:
            nearest_block_int(ai[r0:r1], rid[r0:r1], bti, icode, scale, truth[r0:r1], rtol,
                              cap, seed, tile, chunk, *outs)
        else:
            nearest_block(a[r0:r1], rid[r0:r1], bt, kern.code, kern.degree, kern.kaa[r0:r1],
                          kern.kbb, *kern.tabs, truth[r0:r1], rtol, cap, seed, tile, chunk,
                          *outs)
        if progress is not None:
            progress(r1, n_a)
    thr = out_min + rtol * np.abs(out_min)
    over = np.flatnonzero(out_over)
    if over.size:
        form = ai = bti = None  # free the integer copies before the float one is made
        if bt is None:
            bt = np.ascontiguousarray(b.T)
        cnt = np.empty(over.size, np.int64)
        lnk = np.empty(over.size, np.int64)
        recount_rows(over.astype(np.int64), rid, a, bt, kern.code, kern.degree, kern.kaa,
                     kern.kbb, *kern.tabs, thr[over], seed, tile, cnt, lnk)
        out_count[over] = cnt
        out_link[over] = lnk
    true_in = (truth >= 0) & (out_ts <= thr)
    return NearestSets(out_min, out_count, true_in, out_ts, out_link)


def _check_codes(a: np.ndarray, b: np.ndarray, tables: Tables) -> None:
    """Category codes must be whole numbers inside their table (no out-of-bounds reads)."""
    for j in np.flatnonzero(tables.size > 0):
        for x in (a[:, j], b[:, j]):
            if x.size and (x.min() < 0 or x.max() >= tables.size[j] or (x != np.floor(x)).any()):
                raise LinkriskError(f"attribute {j}: category codes outside 0..{tables.size[j] - 1}")
