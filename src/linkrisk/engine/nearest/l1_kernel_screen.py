"""Exact L1 and kernel-distance candidate sets through a float32 screen.

The L1 attack (Σ_j |a_j − b_j|) and kernel DBRL (K(a,a) − 2K(a,b) + K(b,b),
K(x,y) = (1 + x·y)^d; Herranz, Nin & Torra 2010) have no GEMM or faiss form that keeps their
float64 scores, so the exact kernel (:func:`~.kernels.nearest_block`) scores every pair in
float64. Here a compiled float32 scan (twice the vector lanes, two attacker rows per load
of a tile of B) keeps, for each attacker record, every record that *may* be tied with the
exact minimum; those are rescored with the exact kernel's own arithmetic
(:func:`~.kernels.pair_score`, the same bits) and the engine's tie rule is applied to them.
Results are those of the exact kernel (see ``docs/methods.md``).

**Error bound.** For a row a, let z(b) be the score minus a row constant (0 for L1, K(a,a)
for the kernel) and ẑ(b) the float32 value. Then |ẑ(b) − z₆₄(b)| ≤ e_a + e_b, where
z₆₄ is the float64 score minus the same constant and

* L1: e_x = c·Σ_j |x_j|, c = (m + 4)·2⁻²¹ (rounding of the inputs: 2u(|a_j| + |b_j|) per
  term; the float32 sum in any order: γ_{m−1}·Σ terms; the float64 score: (m+1)·2⁻⁵³;
  u = 2⁻²⁴, with a factor 4 to spare for the band's own float32 arithmetic).
* kernel: e_x = C·K(x,x), C = (d·(m + 6) + 8)·2⁻²¹: the dot product is off by at most
  (m + 3)u·Σ|a_j b_j|, so (1 + a·b)^d (by d − 1 products) by d(m + 5)u·Q^d,
  Q = 1 + ‖a‖‖b‖; K(b,b) and the final sum add 3u·(K(a,a) + K(b,b)); and by
  Cauchy–Schwarz (1 + ‖a‖‖b‖)² ≤ (1 + ‖a‖²)(1 + ‖b‖²), so Q^d ≤ (K(a,a) + K(b,b))/2.

**Band and replay.** The scan keeps cur = min over the records seen of ẑ + e_a + e_b (an
upper bound of the exact running minimum minus the constant) and appends to the row's
log, in B order, every record with ẑ − e_a − e_b ≤ T(cur), T(x) ≥ x + rtol·|x + constant|
rounded up to float32 (a real upper bound of the tie threshold of any exact minimum
≤ x + constant). The exact kernel's state (running minimum, tie buffer, overflow flag)
changes only at records b with s(b) ≤ t(min of the records before b); each of them is in
the log, since the exact minimum so far is at most cur + constant. Records of the log that
are not such records leave the exact state unchanged too (they score above the threshold
and so above the running minimum). So the exact kernel's loop replayed on the log, with
exact scores, ends in the exact kernel's state: the same minimum, tie buffer and overflow
flag; a row that overflows is recounted as :func:`~.kernels.recount_rows` does, over
the log (every tied record is in it).

A row whose log overflows (8·``cap`` + ``SCREEN_SLACK`` records) is recomputed by the
exact kernel. The screen is not used when a proof condition fails: non-finite values,
float32 overflow, or a bound too loose to be useful.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .intkernels import integer_form
from .kernels import (
    KERNEL,
    L1,
    Pairwise,
    chunk_count,
    chunk_span,
    pair_score,
    pick_buffered,
    take_candidate,
)
from .rules import (
    reservoir_start,
    reservoir_step,
    tie_threshold,
    tie_threshold_np,
    tile_width,
)
from .sets import NearestSets, exact_sets, plan_blocks

#: the metrics the screen serves
METRICS = (L1, KERNEL)
#: screen problems with at least this many pairs under ``screen="auto"``
MIN_PAIRS = 4_000_000
#: the screen's log per row, relative to the tie buffer ``cap``: 8·cap + 256
SCREEN_SLACK = 256
#: float32 values of the scan stay below this (no overflow in sums and powers)
_F32_LIMIT = 1e30


def error_terms(pw: Pairwise) -> tuple[np.ndarray, np.ndarray] | None:
    """(e_a, e_b): per-record float32 error terms of the screen (see the module), rounded
    up, or None when the screen's proof does not apply to ``pw`` (metric other than l1 or
    kernel, non-finite values, float32 overflow, a bound over 10⁻³ relative)."""
    if pw.code not in METRICS:
        return None
    x, y = pw.x, pw.y
    if pw.code == L1 and integer_form(x, y, pw.code, pw.tables) is not None:
        return None  # whole-number scores: the integer kernels are exact and faster
    m = x.shape[1]
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    if pw.code == L1:
        c = (m + 4) * 2.0**-21
        na, nb_ = np.abs(x).sum(axis=1), np.abs(y).sum(axis=1)
        big = max(na.max(), nb_.max()) * 2.0
    else:
        c = (pw.degree * (m + 6) + 8) * 2.0**-21
        na, nb_ = pw.kxx, pw.kyy
        big = max(na.max(), nb_.max()) * 4.0 + 4.0
        if max(np.abs(x).max(), np.abs(y).max()) ** 2 * m > _F32_LIMIT:
            return None
    if not np.isfinite(big) or big > _F32_LIMIT or c > 1e-3:
        return None
    return _up32(c * na), _up32(c * nb_)


def _up32(v: np.ndarray) -> np.ndarray:
    """float32 values ≥ v (v ≥ 0): rounding to nearest is off by at most 2⁻²⁴ relative."""
    return (v * (1.0 + 2.0**-22) + 1e-30).astype(np.float32)


@nb.njit(inline="always")
def _band32(cur, shift, rtol):
    """T(cur) as float32, at least cur + rtol·|cur + shift| (reals): the screen's tie
    threshold for a running bound ``cur`` of the exact minimum minus ``shift``."""
    c = np.float64(cur)
    t = c + rtol * abs(c + shift)
    t = t + 2.0**-40 * (abs(c) + abs(shift)) + 1e-30
    return np.float32(t + abs(t) * 2.0**-22 + 1e-30)


@nb.njit(inline="always")
def _tile_x2(acc0, acc1, x0, x1, bt, t0, w, metric):
    """acc0[k], acc1[k] = Σ_j |x_j − B[t0+k, j]| (L1) or Σ_j x_j·B[t0+k, j] (kernel) of two
    rows x0, x1 in float32, four attributes per pass over the accumulators; each loaded tile
    value serves both rows."""
    m = x0.shape[0]
    for k in range(w):
        acc0[k] = np.float32(0.0)
        acc1[k] = np.float32(0.0)
    j = 0
    while j < m:
        if j + 4 <= m:
            r0 = bt[j, t0:t0 + w]
            r1 = bt[j + 1, t0:t0 + w]
            r2 = bt[j + 2, t0:t0 + w]
            r3 = bt[j + 3, t0:t0 + w]
            p0, p1, p2, p3 = x0[j], x0[j + 1], x0[j + 2], x0[j + 3]
            q0, q1, q2, q3 = x1[j], x1[j + 1], x1[j + 2], x1[j + 3]
            if metric == L1:
                for k in range(w):
                    v0, v1, v2, v3 = r0[k], r1[k], r2[k], r3[k]
                    acc0[k] += ((abs(p0 - v0) + abs(p1 - v1))
                                + (abs(p2 - v2) + abs(p3 - v3)))
                    acc1[k] += ((abs(q0 - v0) + abs(q1 - v1))
                                + (abs(q2 - v2) + abs(q3 - v3)))
            else:
                for k in range(w):
                    v0, v1, v2, v3 = r0[k], r1[k], r2[k], r3[k]
                    acc0[k] += (p0 * v0 + p1 * v1) + (p2 * v2 + p3 * v3)
                    acc1[k] += (q0 * v0 + q1 * v1) + (q2 * v2 + q3 * v3)
            j += 4
        else:
            r0 = bt[j, t0:t0 + w]
            p0, q0 = x0[j], x1[j]
            if metric == L1:
                for k in range(w):
                    v0 = r0[k]
                    acc0[k] += abs(p0 - v0)
                    acc1[k] += abs(q0 - v0)
            else:
                for k in range(w):
                    v0 = r0[k]
                    acc0[k] += p0 * v0
                    acc1[k] += q0 * v0
            j += 1


@nb.njit(inline="always")
def _kernel_part(acc, tmp, kb, t0, w, degree):
    """acc[k] ← K(b,b) − 2·(1 + acc[k])^degree in float32 (the kernel score minus K(a,a));
    the power by degree − 1 products (loops over slices, which LLVM vectorizes)."""
    kbt = kb[t0:t0 + w]
    if degree == 2:
        for k in range(w):
            q = np.float32(1.0) + acc[k]
            acc[k] = kbt[k] - np.float32(2.0) * (q * q)
        return
    for k in range(w):
        acc[k] = np.float32(1.0) + acc[k]
        tmp[k] = acc[k]
    for _ in range(degree - 1):
        for k in range(w):
            tmp[k] = tmp[k] * acc[k]
    for k in range(w):
        acc[k] = kbt[k] - np.float32(2.0) * tmp[k]


#: records per step of the band check: a step whose lower bounds are all above the
#: threshold is skipped after one vectorized count
STEP = 128


@nb.njit(inline="always")
def _offer(acc, eb, ea, r, t0, w, shift, rtol, cur, thr, log_i, nlog, over):
    """Row r's band bookkeeping for one tile of float32 scores ``acc`` (see the module):
    append to the row's log, in B order, the records whose lower bound is at or below the
    running threshold. The tile is taken in steps of ``STEP`` records; a step none of whose
    lower bounds is at or below the threshold leaves the state as it is, and is skipped
    after counting them (an integer sum vectorizes; a float minimum does not)."""
    if over[r]:
        return
    th = thr[r]
    c = cur[r]
    for s0 in range(0, w, STEP):
        s1 = min(s0 + STEP, w)
        # slices: indexing acc[s0 + k] or eb[t0 + k] keeps LLVM from vectorizing
        x = acc[s0:s1]
        eg = eb[t0 + s0:t0 + s1]
        hit = np.int32(0)
        for k in range(s1 - s0):
            hit += np.int32(1) if x[k] - (eg[k] + ea) <= th else np.int32(0)
        if hit == 0:
            continue
        for k in range(s1 - s0):
            e = eg[k] + ea
            lo = x[k] - e  # the same expression as the count's
            if lo <= th:
                if nlog[r] == log_i.shape[1]:
                    over[r] = True
                    return
                log_i[r, nlog[r]] = t0 + s0 + k
                nlog[r] += 1
                hi = x[k] + e
                if hi < c:
                    c = hi
                    th = _band32(c, shift, rtol)
    cur[r] = c
    thr[r] = th


@nb.njit(parallel=True, cache=True)
def screen_block_float(a32, bt32, ea, eb, kb32, a, b, kaa, kbb, tflat, toff, tsize, metric,
                       degree, truth, rid, rtol, cap, ccap, seed, tile, chunk, out_min,
                       out_count, out_true_score, out_link, out_redo):
    """The float32 screen and exact rescoring (see the module) for the rows of ``a32``
    (float32 copy of ``a``) against B (``bt32`` attribute-major float32, ``b`` float64
    rows): minimum, |C(a)|, the true image's score and the link of the exact kernel. Rows
    flagged in ``out_redo`` need the exact kernel (their other outputs are not set)."""
    n_a = a32.shape[0]
    n_b = bt32.shape[1]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        acc = np.empty((2, tile), np.float32)
        tmp = np.empty(tile, np.float32)
        cur = np.full(nr, np.inf, np.float32)
        thr = np.full(nr, np.inf, np.float32)
        shift = np.zeros(nr)
        if metric == KERNEL:
            for r in range(nr):
                shift[r] = kaa[lo + r]
        log_i = np.empty((nr, ccap), np.int64)
        nlog = np.zeros(nr, np.int64)
        over = np.zeros(nr, np.bool_)
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            for r in range(0, nr, 2):
                # an odd last row is scored twice (its copy is discarded)
                r1 = min(r + 1, nr - 1)
                _tile_x2(acc[0], acc[1], a32[lo + r], a32[lo + r1], bt32, t0, w, metric)
                for q in range(r, r1 + 1):
                    if metric == KERNEL:
                        _kernel_part(acc[q - r], tmp, kb32, t0, w, degree)
                    _offer(acc[q - r], eb, ea[lo + q], q, t0, w, shift[q], rtol, cur, thr,
                           log_i, nlog, over)
        # the exact kernel's loop replayed on each row's log, with exact scores
        sc = np.empty(ccap)
        buf_i, buf_s, nbuf, eover = _exact_state(nr, cap)
        for r in range(nr):
            i = lo + r
            out_redo[i] = over[r]
            if over[r]:
                continue
            cur_e = np.inf
            th = tie_threshold(cur_e, rtol)
            for p in range(nlog[r]):
                j = log_i[r, p]
                s = pair_score(a[i], b[j], metric, degree, kaa[i], kbb[j], tflat, toff, tsize)
                sc[p] = s
                if s <= th:
                    cur_e, th = take_candidate(r, j, s, cur_e, th, rtol, buf_i, buf_s, nbuf,
                                               eover)
            ti = truth[i]
            out_min[i] = cur_e
            out_true_score[i] = (pair_score(a[i], b[ti], metric, degree, kaa[i], kbb[ti],
                                            tflat, toff, tsize)
                                 if ti >= 0 and ti < n_b else np.inf)
            if not eover[r]:
                out_count[i] = nbuf[r]
                out_link[i] = pick_buffered(buf_i, nbuf, r, seed, rid[i])
                continue
            # the exact kernel's recount (recount_rows): every tied record is in the log
            cnt = 0
            link = -1
            state = reservoir_start(seed, rid[i])
            for p in range(nlog[r]):
                if sc[p] <= th:
                    cnt += 1
                    state, take = reservoir_step(state, cnt)
                    if take:
                        link = log_i[r, p]
            out_count[i] = cnt
            out_link[i] = link


@nb.njit(inline="always")
def _exact_state(nr, cap):
    """The exact kernel's per-chunk tie buffers (indices, scores), their fill and overflow
    flags, as in :func:`~.kernels.nearest_block`."""
    return (np.empty((nr, cap), np.int64), np.empty((nr, cap)), np.zeros(nr, np.int64),
            np.zeros(nr, np.bool_))


def screen_tile(m: int) -> int:
    """Columns of B per tile of the float32 scan: twice the float64 kernels' tile (the
    same bytes of cache)."""
    return 2 * tile_width(m)


def float_screened_sets(pw: Pairwise, truth: np.ndarray, rid: np.ndarray, *, rtol: float,
                        seed: int, cap: int, memory_budget: int, progress,
                        terms: tuple[np.ndarray, np.ndarray] | None = None
                        ) -> NearestSets | None:
    """Candidate sets of the ``l1`` or ``kernel`` metric through the float32 screen (see
    the module): the same minima, counts, true scores and links as
    :func:`~.sets.exact_sets`; None when the screen does not apply (:func:`error_terms`).
    Rows the screen cannot settle go to the exact kernel; their number is reported as
    ``rechecked``."""
    if not 0.0 <= rtol < 1.0:
        return None  # the band needs a monotone tie threshold x + rtol·|x|
    if terms is None:
        terms = error_terms(pw)
    if terms is None:
        return None
    ea, eb = terms
    a, b = pw.x, pw.y
    n_a, m = a.shape
    a32 = a.astype(np.float32)
    bt32 = np.ascontiguousarray(b.T, dtype=np.float32)
    kb32 = pw.kyy.astype(np.float32) if pw.code == KERNEL else np.zeros(1, np.float32)
    rows, _ = plan_blocks(n_a, b.shape[0], m, memory_budget, cap)
    tile = screen_tile(m)
    ccap = 8 * cap + SCREEN_SLACK
    out_min = np.empty(n_a)
    out_count = np.empty(n_a, np.int64)
    out_ts = np.empty(n_a)
    out_link = np.empty(n_a, np.int64)
    redo = np.empty(n_a, np.bool_)
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        screen_block_float(a32[r0:r1], bt32, ea[r0:r1], eb, kb32, a[r0:r1], b,
                           pw.kxx[r0:r1], pw.kyy, *pw.tabs, pw.code, pw.degree,
                           truth[r0:r1], rid[r0:r1], rtol, cap, ccap, seed, tile, 16,
                           out_min[r0:r1], out_count[r0:r1], out_ts[r0:r1],
                           out_link[r0:r1], redo[r0:r1])
        if progress is not None:
            progress(r1, n_a)
    rows_redo = np.flatnonzero(redo)
    if rows_redo.size:
        del a32, bt32
        sub = exact_sets(pw.rows(rows_redo), truth[rows_redo], rid[rows_redo], rtol=rtol,
                         seed=seed, cap=cap, memory_budget=memory_budget, progress=None)
        out_min[rows_redo], out_count[rows_redo] = sub.min_score, sub.count
        out_ts[rows_redo], out_link[rows_redo] = sub.true_score, sub.link
    thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    res = NearestSets(out_min, out_count, true_in, out_ts, out_link)
    res.rechecked = int(rows_redo.size)
    return res
