"""Blocked nearest-record search: the candidate sets C(a) of every per-record attack, with
the tie rule of :mod:`.rules` (see ``docs/methods.md``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..budget import DEFAULT_MEMORY_BUDGET, block_row_bytes
from .hamming import count_dtype, hamming_tile, nearest_block_hamming
from .intkernels import I_HAMMING, integer_form, rank_kernel
from .kernels import Pairwise, nearest_block, recount_rows
from .rules import Progress, tie_threshold_np, tile_width
from .small import is_usable_for, small_sets

__all__ = ["DEFAULT_MEMORY_BUDGET", "NearestSets", "exact_sets", "plan_blocks"]


@dataclass
class NearestSets:
    """For every attacker record a: the minimal score, |C(a)|, whether its true image is in
    C(a), and one link chosen uniformly (seeded) among C(a). ``prob``, when set, replaces
    χ/|C| as the probability of a correct link (a one-to-one matching averaged over its
    identical records: :mod:`linkrisk.attacks.orbit`)."""

    min_score: np.ndarray    # float64 (n_a,)
    count: np.ndarray        # int64 (n_a,) = |C(a)|
    true_in_set: np.ndarray  # bool (n_a,)
    true_score: np.ndarray   # float64 (n_a,), inf when a has no true image
    link: np.ndarray         # int64 (n_a,)
    prob: np.ndarray | None = None  # float64 (n_a,)

    @property
    def correct(self) -> np.ndarray:
        """χ(true(a) ∈ C(a)) / |C(a)|: expected correct link under random tie breaking (or
        ``prob`` when set)."""
        if self.prob is not None:
            return self.prob
        return np.where(self.true_in_set, 1.0 / np.maximum(self.count, 1), 0.0)


def plan_blocks(n_a: int, n_b: int, m: int, memory_budget: int, cap: int) -> tuple[int, int]:
    """(rows per Python-level block, B tile width). The working set per block is its
    outputs plus the per-row tie buffers; tiles are sized so that an attribute-major tile of
    B (m × tile doubles) stays within ~256 KiB of cache."""
    tile = tile_width(m)
    per_row = block_row_bytes(m, cap)
    rows = int(max(256, min(n_a, memory_budget // max(per_row, 1), 1 << 16)))
    return rows, tile


def exact_sets(pw: Pairwise, truth: np.ndarray, rid: np.ndarray, *, rtol: float, seed: int,
               cap: int, memory_budget: int, progress: Progress | None,
               integer: bool = True) -> NearestSets:
    """The fused exact kernel over all of B for every row of ``a`` (blocked for progress).
    Whole-number scores (rank distances, Hamming) go through the integer kernels of
    :mod:`.intkernels` (rank distances through its int16 screen with exact rescoring)
    unless ``integer`` is False; the results are identical. Small problems
    (:func:`.small.is_usable_for`) are scored with numpy instead (:mod:`.small`): the
    same results without compiling a kernel."""
    a, b = pw.x, pw.y
    n_a, m = a.shape
    form = integer_form(a, b, pw.code, pw.tables) if integer else None
    kern = _kernel(form, rtol)
    if is_usable_for(pw, kern):
        res = small_sets(pw, truth, rid, rtol=rtol, seed=seed, cap=cap, progress=progress)
        if res is not None:
            return _sets(*res, truth, rtol)
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
        if form is not None and icode == I_HAMMING:
            nearest_block_hamming(ai[r0:r1], rid[r0:r1], bti, np.empty(0, count_dtype(m)),
                                  truth[r0:r1], rtol, cap, seed,
                                  hamming_tile(m, bti.itemsize), chunk, *outs)
        elif form is not None:
            kern(ai[r0:r1], rid[r0:r1], bti, icode, scale, truth[r0:r1], rtol,
                 cap, seed, tile, chunk, *outs)
        else:
            nearest_block(a[r0:r1], rid[r0:r1], bt, pw.code, pw.degree, pw.kxx[r0:r1],
                          pw.kyy, *pw.tabs, truth[r0:r1], rtol, cap, seed, tile, chunk,
                          *outs)
        if progress is not None:
            progress(r1, n_a)
    thr = tie_threshold_np(out_min, rtol)
    over = np.flatnonzero(out_over)
    if over.size:
        form = ai = bti = kern = None  # free the integer copies before the float one is made
        if bt is None:
            bt = np.ascontiguousarray(b.T)
        cnt = np.empty(over.size, np.int64)
        lnk = np.empty(over.size, np.int64)
        recount_rows(over.astype(np.int64), rid, a, bt, pw.code, pw.degree, pw.kxx,
                     pw.kyy, *pw.tabs, thr[over], seed, tile, cnt, lnk)
        out_count[over] = cnt
        out_link[over] = lnk
    return _sets(out_min, out_count, out_ts, out_link, truth, rtol, thr)


def _kernel(form: tuple | None, rtol: float) -> Callable:
    """The kernel the exact path runs on a problem of integer form ``form`` (whether it is
    compiled decides :func:`.small.is_usable_for`): rank scores go to the row-blocked
    kernel, through the int16 screen when it applies (the same results as
    nearest_block_int), Hamming scores to the narrow-code kernel."""
    if form is None:
        return nearest_block
    ai, bti, icode, _ = form
    return nearest_block_hamming if icode == I_HAMMING else rank_kernel(ai, bti, icode, rtol)


def _sets(out_min: np.ndarray, out_count: np.ndarray, out_ts: np.ndarray,
          out_link: np.ndarray, truth: np.ndarray, rtol: float,
          thr: np.ndarray | None = None) -> NearestSets:
    """The :class:`NearestSets` of a search's outputs: the true image is in C(a) when its
    score is within the tie threshold of the minimum."""
    if thr is None:
        thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    return NearestSets(out_min, out_count, true_in, out_ts, out_link)
