"""The nearest-set engine's entry point: candidate sets C(a) of every row of the
attacker's file under one metric, through the exact compiled kernel (:mod:`.sets`; numpy
for small problems whose kernel is not compiled yet, :mod:`.small`) or, for large
squared-Euclidean problems, the faiss screen (:mod:`.faiss_screen`); the same result
either way (tie rule of :mod:`.rules`, see ``docs/methods.md``)."""

from __future__ import annotations

import numpy as np

from ...errors import LinkriskError
from . import faiss_screen as scr
from . import l1_kernel_screen as fscr
from .kernels import METRIC_CODES, Pairwise, Tables
from .rules import RTOL, Progress
from .sets import DEFAULT_MEMORY_BUDGET, NearestSets, exact_sets


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
    index and re-checks them exactly (see :mod:`.faiss_screen`); ``"none"`` always uses the exact
    path (the compiled kernel, or :mod:`.small`'s numpy scan of a small problem);
    ``"auto"`` screens large problems when faiss is installed, and large ``l1`` and
    ``kernel`` problems with the float32 screen of :mod:`.l1_kernel_screen` (``"float"``: always,
    where its proof applies). Results are identical either way. ``row_ids`` (default 0..n_a−1) seed each row's tie breaking, so a row gets
    the same link whichever block or worker computes it.
    """
    pw = Pairwise.build(a, b, metric, degree=degree, tables=tables, transpose=False)
    n_a = pw.x.shape[0]
    truth = (np.full(n_a, -1, np.int64) if truth is None
             else np.ascontiguousarray(truth, dtype=np.int64))
    rid = (np.arange(n_a, dtype=np.int64) if row_ids is None
           else np.ascontiguousarray(row_ids, dtype=np.int64))
    if truth.shape != (n_a,) or rid.shape != (n_a,):
        raise LinkriskError("truth and row_ids need one entry per attacker record")
    if screen not in ("auto", "faiss", "float", "none"):
        raise LinkriskError(f"unknown screen {screen!r}; use auto, faiss, float or none")
    if pw.code == METRIC_CODES["mixed"]:
        _check_codes(pw.x, pw.y, pw.tables)
    kw = dict(rtol=rtol, seed=seed, cap=cap, memory_budget=memory_budget, progress=progress)
    if pw.code == METRIC_CODES["sqeuclidean"] and screen != "none":
        if screen == "faiss" or (scr.available() and n_a * pw.y.shape[0] >= scr.MIN_PAIRS):
            return scr.screened_sets(pw, truth, rid, **kw)
    if pw.code in fscr.METRICS and screen != "none" and (
            screen == "float" or n_a * pw.y.shape[0] >= fscr.MIN_PAIRS):
        res = fscr.float_screened_sets(pw, truth, rid, **kw)
        if res is not None:
            return res
    return exact_sets(pw, truth, rid, **kw)


def _check_codes(a: np.ndarray, b: np.ndarray, tables: Tables) -> None:
    """Category codes must be whole numbers inside their table (no out-of-bounds reads)."""
    for j in np.flatnonzero(tables.size > 0):
        for x in (a[:, j], b[:, j]):
            if x.size and (x.min() < 0 or x.max() >= tables.size[j] or (x != np.floor(x)).any()):
                raise LinkriskError(f"attribute {j}: category codes outside 0..{tables.size[j] - 1}")
