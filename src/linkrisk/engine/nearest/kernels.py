"""Compiled (numba) pairwise kernels.

One fused kernel serves every distance attack: for each attacker record it scans the
released file tile by tile (a tile of B, stored attribute-major, stays in L2 cache while a
chunk of attacker rows is scored against it), computes scores on the fly and keeps only
the running minimum and the records tied with it. Nothing of size n×n' is ever stored.

Scores are computed directly from differences (not with the GEMM identity), in float64,
summing attributes in a fixed order, so the same pair always gets the same bits: this is
what makes the tie rule (relative tolerance on the minimum) exact and reproducible. Ties,
tie breaking and the pick follow :mod:`.rules`.

:class:`Pairwise` (two files under one metric, with the kernels' metric arguments) is the
one description of a scoring problem shared by the nearest-set engine and global matching.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numba as nb
import numpy as np

from ...errors import LinkriskError
from .rules import pick, reservoir_start, reservoir_step, tie_threshold, tile_width

SQEUCLIDEAN, L1, LINF, KERNEL, MIXED = 0, 1, 2, 3, 4
METRIC_CODES = {"sqeuclidean": SQEUCLIDEAN, "l1": L1, "linf": LINF, "kernel": KERNEL,
                "mixed": MIXED}


class Tables:
    """Per-attribute lookup tables for the ``mixed`` metric (categorical and mixed files).

    Attribute j with ``size[j] == 0`` is numeric and contributes (a_j − b_j)²; otherwise a_j
    and b_j are integer category codes in 0..size[j]−1 stored as floats and the attribute
    contributes ``flat[off[j] + a_j·size[j] + b_j]`` (nominal 0/1, ordinal, weighted,
    or ∞ for category pairs a masking method cannot produce)."""

    def __init__(self, flat: np.ndarray, off: np.ndarray, size: np.ndarray):
        self.flat = np.ascontiguousarray(flat, dtype=np.float64)
        self.off = np.ascontiguousarray(off, dtype=np.int64)
        self.size = np.ascontiguousarray(size, dtype=np.int64)

    @classmethod
    def empty(cls, m: int) -> Tables:
        return cls(np.zeros(1), np.zeros(m, np.int64), np.zeros(m, np.int64))

    @classmethod
    def from_list(cls, tables: list[np.ndarray | None]) -> Tables:
        """One entry per attribute: an L×L table, or None for a numeric attribute."""
        flat, off, size, pos = [], [], [], 0
        for t in tables:
            if t is None:
                off.append(0)
                size.append(0)
                continue
            t = np.asarray(t, dtype=np.float64)
            if t.ndim != 2 or t.shape[0] != t.shape[1]:
                raise ValueError("a category distance table must be square")
            off.append(pos)
            size.append(t.shape[0])
            flat.append(t.ravel())
            pos += t.size
        return cls(np.concatenate(flat) if flat else np.zeros(1), np.array(off), np.array(size))


@nb.njit(inline="always")
def tile_scores(acc, a, bt, t0, w, metric, degree, kaa_i, kbb, tflat, toff, tsize):
    """acc[k] = score(a, B[t0+k]) for k < w. bt is B transposed (m × n')."""
    m = a.shape[0]
    for k in range(w):
        acc[k] = 0.0
    if metric == 0:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                d = aj - row[t0 + k]
                acc[k] += d * d
    elif metric == 1:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                acc[k] += abs(aj - row[t0 + k])
    elif metric == 2:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                d = abs(aj - row[t0 + k])
                if d > acc[k]:
                    acc[k] = d
    elif metric == 3:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            for k in range(w):
                acc[k] += aj * row[t0 + k]
        for k in range(w):
            acc[k] = kaa_i + kbb[t0 + k] - 2.0 * (1.0 + acc[k]) ** degree
    else:
        for j in range(m):
            aj = a[j]
            row = bt[j]
            L = tsize[j]
            if L == 0:
                for k in range(w):
                    d = aj - row[t0 + k]
                    acc[k] += d * d
            else:
                base = toff[j] + np.int64(aj) * L
                for k in range(w):
                    acc[k] += tflat[base + np.int64(row[t0 + k])]


@nb.njit(inline="always")
def new_minimum(buf_i, buf_s, nbuf, over, r, old, thr):
    """Row r has a new minimum (was ``old``), tie threshold ``thr``: drop the buffered
    candidates above it; records lost to an overflow scored ≥ old: gone if old > thr."""
    q = 0
    for p in range(nbuf[r]):
        if buf_s[r, p] <= thr:
            buf_i[r, q] = buf_i[r, p]
            buf_s[r, q] = buf_s[r, p]
            q += 1
    nbuf[r] = q
    if over[r] and old > thr:
        over[r] = False


@nb.njit(inline="always")
def buffer_candidate(buf_i, buf_s, nbuf, over, r, j, s):
    """Keep candidate j (score s) of row r, or flag the row's overflow when its buffer is
    full."""
    if nbuf[r] < buf_i.shape[1]:
        buf_i[r, nbuf[r]] = j
        buf_s[r, nbuf[r]] = s
        nbuf[r] += 1
    else:
        over[r] = True


@nb.njit(inline="always")
def take_candidate(r, j, s, cur, thr, rtol, buf_i, buf_s, nbuf, over):
    """The float kernels' tie rule for record j of row r, whose score s is at most the
    running threshold ``thr``: a new minimum (s < ``cur``) lowers the threshold and drops
    the buffered records above it, then j is buffered (in B order). Returns the running
    (minimum, threshold)."""
    if s < cur:
        old = cur
        cur = s
        thr = tie_threshold(cur, rtol)
        new_minimum(buf_i, buf_s, nbuf, over, r, old, thr)
    buffer_candidate(buf_i, buf_s, nbuf, over, r, j, s)
    return cur, thr


@nb.njit(inline="always")
def pick_buffered(buf_i, nbuf, r, seed, rid_i):
    """A candidate of row r drawn with the record's own generator (−1: none); the buffer
    is in B order, so the pick does not depend on tiling."""
    cnt = nbuf[r]
    if cnt == 0:
        return -1
    return buf_i[r, pick(seed, rid_i, cnt)]


#: the integer kernels' "no minimum yet" score (int32 maximum)
INT_NONE = 2**31 - 1


@nb.njit(inline="always")
def int_threshold(cur, rtol, scale):
    """⌊(c + rtol·|c|)·scale⌋ for c = cur / scale: the float kernel's tie threshold for
    the integer score ``cur`` (scores are whole numbers, so s ≤ t ⟺ s ≤ ⌊t⌋)."""
    if cur == INT_NONE:
        return np.int64(INT_NONE)
    c = cur / scale
    return np.int64(np.floor(tie_threshold(c, rtol) * scale))


@nb.njit(inline="always")
def int_chunk_state(nr, cap):
    """Per-chunk state of the integer kernels for ``nr`` attacker rows: best score and
    tie threshold (none yet), true score (not seen), tie buffers of ``cap`` candidates
    (indices, scores), their fill and overflow flags."""
    return (np.full(nr, INT_NONE, np.int64), np.full(nr, INT_NONE, np.int64),
            np.full(nr, -1, np.int64), np.empty((nr, cap), np.int64),
            np.empty((nr, cap), np.int64), np.zeros(nr, np.int64), np.zeros(nr, np.bool_))


@nb.njit(inline="always")
def chunk_count(n, chunk):
    """Chunks of ``chunk`` attacker rows covering ``n`` rows: the kernels' parallel loop
    runs over these."""
    return (n + chunk - 1) // chunk


@nb.njit(inline="always")
def chunk_span(c, chunk, n):
    """(first row, row count) of chunk ``c`` of ``n`` rows."""
    lo = c * chunk
    return lo, min(lo + chunk, n) - lo


@nb.njit(inline="always")
def settle_tile(acc, mn, r, ti, t0, w, band, rtol, scale, tscore, best, thr, buf_i, buf_s,
                nbuf, over):
    """Row r's bookkeeping in an integer kernel after one tile (scores acc[:w] of
    B[t0:t0+w], ``mn`` at most their minimum; the state of :func:`int_chunk_state`): the
    true image's score (B row ``ti``), then, unless ``mn`` is above the running threshold,
    the new minima and the records at or below the threshold, buffered in B order. The
    threshold is the tie threshold of the running minimum (:func:`int_threshold`) plus
    ``band`` (0: the exact tie rule; > 0: the int16 screen's band).

    Inlined: a call in the tile loop, even one that rarely runs, costs the fast kernels
    up to a fifth of their speed (the loop loses the parallel body's no-alias arrays)."""
    if ti >= t0 and ti < t0 + w:
        tscore[r] = acc[ti - t0]
    if np.int64(mn) > thr[r]:
        return
    cur = best[r]
    th = thr[r]
    for k in range(w):
        s = np.int64(acc[k])
        if s <= th:
            if s < cur:
                old = cur
                cur = s
                th = int_threshold(cur, rtol, scale) + band
                new_minimum(buf_i, buf_s, nbuf, over, r, old, th)
            buffer_candidate(buf_i, buf_s, nbuf, over, r, t0 + k, s)
    best[r] = cur
    thr[r] = th


@nb.njit(cache=True)
def finish_int_rows(lo, nr, scale, seed, rid, best, tscore, buf_i, nbuf, over, out_min,
                    out_count, out_true_score, out_link, out_overflow):
    """The results of an integer kernel's chunk (rows lo … lo+nr−1) from its state: the
    minimum and the true score as float64 scores (score / ``scale``, exact; ∞ for none),
    the tie count, the overflow flag and the seeded pick among the buffered records."""
    for r in range(nr):
        i = lo + r
        out_min[i] = np.inf if best[r] == INT_NONE else best[r] / scale
        out_true_score[i] = np.inf if tscore[r] < 0 else tscore[r] / scale
        out_overflow[i] = over[r]
        out_count[i] = nbuf[r]
        out_link[i] = pick_buffered(buf_i, nbuf, r, seed, rid[i])


@nb.njit(parallel=True, cache=True)
def nearest_block(a_blk, rid, bt, metric, degree, kaa, kbb, tflat, toff, tsize, truth, rtol, cap,
                  seed, tile, chunk, out_min, out_count, out_true_score, out_link, out_overflow):
    """Minimum score, tie count, the true image's score and a tie-broken link for each row
    of ``a_blk`` against all of B. ``rid``, ``kaa`` and ``truth`` are per row of ``a_blk``;
    ``rid`` (the row's id in the whole attacker file) seeds its tie breaking.

    Ties: C(a) = {b : s(a,b) ≤ s_min + rtol·|s_min|}. Each row keeps a buffer of at most
    ``cap`` tied candidates; a row whose tie set overflows is flagged (``out_overflow``) and
    finished by :func:`recount_rows`."""
    n_a = a_blk.shape[0]
    n_b = bt.shape[1]
    for c in nb.prange(chunk_count(n_a, chunk)):
        lo, nr = chunk_span(c, chunk, n_a)
        acc = np.empty(tile)
        best = np.full(nr, np.inf)
        tscore = np.full(nr, np.inf)
        buf_i = np.empty((nr, cap), np.int64)
        buf_s = np.empty((nr, cap))
        nbuf = np.zeros(nr, np.int64)
        over = np.zeros(nr, np.bool_)
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            for r in range(nr):
                i = lo + r
                tile_scores(acc, a_blk[i], bt, t0, w, metric, degree, kaa[i], kbb,
                             tflat, toff, tsize)
                ti = truth[i]
                if ti >= t0 and ti < t0 + w:
                    tscore[r] = acc[ti - t0]
                cur = best[r]
                thr = tie_threshold(cur, rtol)
                for k in range(w):
                    s = acc[k]
                    if s <= thr:
                        cur, thr = take_candidate(r, t0 + k, s, cur, thr, rtol, buf_i, buf_s,
                                                  nbuf, over)
                best[r] = cur
        for r in range(nr):
            i = lo + r
            out_min[i] = best[r]
            out_true_score[i] = tscore[r]
            out_overflow[i] = over[r]
            out_count[i] = nbuf[r]
            out_link[i] = pick_buffered(buf_i, nbuf, r, seed, rid[i])


@nb.njit(parallel=True, cache=True)
def recount_rows(rows, rid, a, bt, metric, degree, kaa, kbb, tflat, toff, tsize, thr, seed, tile,
                 out_count, out_link):
    """Exact tie count and a uniformly chosen tied record (reservoir sampling with the
    per-record generator) for rows whose tie buffer overflowed; thresholds are known."""
    n_b = bt.shape[1]
    for p in nb.prange(rows.shape[0]):
        i = rows[p]
        acc = np.empty(tile)
        cnt = 0
        link = -1
        state = reservoir_start(seed, rid[i])
        for t0 in range(0, n_b, tile):
            w = min(tile, n_b - t0)
            tile_scores(acc, a[i], bt, t0, w, metric, degree, kaa[i], kbb, tflat, toff, tsize)
            for k in range(w):
                if acc[k] <= thr[p]:
                    cnt += 1
                    state, take = reservoir_step(state, cnt)
                    if take:
                        link = t0 + k
        out_count[p] = cnt
        out_link[p] = link


@nb.njit(inline="always")
def pair_score(x, y, metric, degree, kxx, kyy, tflat, toff, tsize):
    """Score of one pair of rows (x, y) with exactly the arithmetic of :func:`tile_scores`
    (same bits); ``kxx``/``kyy`` are K(x,x)/K(y,y) for the kernel metric."""
    m = x.shape[0]
    acc = 0.0
    if metric == 0:
        for q in range(m):
            d = x[q] - y[q]
            acc += d * d
    elif metric == 1:
        for q in range(m):
            acc += abs(x[q] - y[q])
    elif metric == 2:
        for q in range(m):
            d = abs(x[q] - y[q])
            if d > acc:
                acc = d
    elif metric == 3:
        for q in range(m):
            acc += x[q] * y[q]
        acc = kxx + kyy - 2.0 * (1.0 + acc) ** degree
    else:
        for q in range(m):
            L = tsize[q]
            if L == 0:
                d = x[q] - y[q]
                acc += d * d
            else:
                acc += tflat[toff[q] + np.int64(x[q]) * L + np.int64(y[q])]
    return acc


@nb.njit(parallel=True, cache=True)
def pair_scores(a, b, ia, ib, metric, degree, kaa, kbb, tflat, toff, tsize, out):
    """Scores of the listed pairs (a[ia[p]], b[ib[p]]) with :func:`pair_score` (−1 in
    ``ib`` → ∞), for re-checking screened candidates."""
    for p in nb.prange(ia.shape[0]):
        i = ia[p]
        j = ib[p]
        if j < 0:
            out[p] = np.inf
            continue
        out[p] = pair_score(a[i], b[j], metric, degree, kaa[i], kbb[j], tflat, toff, tsize)


@dataclass
class Pairwise:
    """Two files and an engine metric, ready for the kernels: ``x`` (rows) is scanned
    against the attribute-major ``yt`` = yᵀ (None until a caller needs it). ``kxx``/``kyy``
    are the kernel metric's K(x,x)/K(y,y) (zeros otherwise); ``tables`` the mixed metric's
    category tables; ``root``: costs are √score (global matching's Euclidean cost)."""

    x: np.ndarray
    y: np.ndarray
    yt: np.ndarray | None
    code: int
    degree: int
    kxx: np.ndarray
    kyy: np.ndarray
    tables: Tables
    root: bool

    @classmethod
    def build(cls, x: np.ndarray, y: np.ndarray, metric: str = "sqeuclidean", *,
              root: bool = False, degree: int = 2, tables: Tables | None = None,
              transpose: bool = True) -> Pairwise:
        """Check and convert the two files. ``transpose=False`` leaves ``yt`` None (the
        nearest-set engine makes its own attribute-major copy only when it needs one; the
        matching kernels make it through :attr:`cols`)."""
        if metric not in METRIC_CODES:
            raise LinkriskError(f"unknown metric {metric!r}; use one of {', '.join(METRIC_CODES)}")
        x = np.ascontiguousarray(x, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
            raise LinkriskError(f"attribute counts differ: {x.shape} vs {y.shape}")
        if x.shape[0] == 0 or y.shape[0] == 0:
            raise LinkriskError("cannot link an empty file")
        code = METRIC_CODES[metric]
        if code == METRIC_CODES["kernel"]:
            kxx = (1.0 + np.einsum("ij,ij->i", x, x)) ** degree
            kyy = (1.0 + np.einsum("ij,ij->i", y, y)) ** degree
        else:
            kxx, kyy = np.zeros(x.shape[0]), np.zeros(y.shape[0])
        if tables is None:
            tables = Tables.empty(x.shape[1])
        return cls(x, y, np.ascontiguousarray(y.T) if transpose else None, code, int(degree),
                   kxx, kyy, tables, bool(root))

    @property
    def cols(self) -> np.ndarray:
        """``yt`` = yᵀ (attribute-major), made on first use and kept: most callers never
        need it (the copy is another n_b × m matrix)."""
        if self.yt is None:
            self.yt = np.ascontiguousarray(self.y.T)
        return self.yt

    def swapped(self) -> Pairwise:
        """The same costs with the roles of the files exchanged (score(y, x) = score(x, y)
        bit for bit: each category table is transposed, K(x,x) and K(y,y) swap)."""
        t = self.tables
        flat = t.flat.copy()
        for j in np.flatnonzero(t.size > 0):
            L, o = int(t.size[j]), int(t.off[j])
            flat[o:o + L * L] = t.flat[o:o + L * L].reshape(L, L).T.ravel()
        return Pairwise(self.y, self.x, None, self.code, self.degree,
                        self.kyy, self.kxx, Tables(flat, t.off, t.size), self.root)

    def rows(self, idx: np.ndarray) -> Pairwise:
        """The same pair restricted to the rows ``idx`` of ``x`` (a boolean mask or
        indices)."""
        return dataclasses.replace(self, x=np.ascontiguousarray(self.x[idx]),
                                   kxx=self.kxx[idx])

    def block(self, ia: np.ndarray, ib: np.ndarray) -> Pairwise:
        """The same pair restricted to the rows ``ia`` of ``x`` and ``ib`` of ``y`` (a
        block of the files: the same costs, pair for pair)."""
        return dataclasses.replace(self.rows(ia), y=np.ascontiguousarray(self.y[ib]),
                                   yt=None, kyy=self.kyy[ib])

    @property
    def tabs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The mixed metric's category tables as kernel arguments."""
        return self.tables.flat, self.tables.off, self.tables.size

    def pair_scores(self, ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
        """Scores (not costs) of the pairs (x[ix], y[iy]) with the kernels' exact
        arithmetic (−1 in ``iy`` → ∞)."""
        out = np.empty(ix.shape[0])
        pair_scores(self.x, self.y, np.ascontiguousarray(ix, np.int64),
                    np.ascontiguousarray(iy, np.int64), self.code, self.degree, self.kxx,
                    self.kyy, *self.tabs, out)
        return out

    @property
    def args(self) -> tuple:
        """The metric arguments of :func:`tile_scores` after (x, yt)."""
        return (self.code, self.degree, self.kxx, self.kyy, self.tables.flat,
                self.tables.off, self.tables.size)

    @property
    def tile(self) -> int:
        """Columns of y per tile of the compiled scans (:func:`~.rules.tile_width`)."""
        return tile_width(self.x.shape[1])
