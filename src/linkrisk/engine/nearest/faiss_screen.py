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
4. Rows that fail (ties or near-ties) are settled from their minimum in every part
   (kept from step 1 when the memory budget holds a block's part minima; otherwise
   searched again, k = 1 in each of the same indexes; :func:`part_screened_sets`): a
   record whose exact score is within
   the row's tie threshold t has a float32 score ≤ U = t(1 + 2c) + 3c‖a‖² (the bound of
   step 3 turned around), so only parts whose float32 minimum is ≤ U can hold a member of
   C(a); in those, the records whose float32 score (one BLAS product per part) is ≤ U are
   scored exactly. A row with more than ``K`` − 1 tied records, or more than
   ``MAX_PARTS`` such parts, goes to the exact kernel. (This replaced a faiss k = 8
   search over all of B, whose per-query heap cost 4 ms a row at 10⁶: 6.9 s for 1,730
   rows.)

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
#: rows of the fallback screen with K or more tied records go to the exact kernel
K = 8
#: rows of the fallback screen with more parts than this that may hold a tied record go to
#: the exact kernel (each opened part costs a float32 product with its PART records)
MAX_PARTS = 8
#: fewest query rows of a faiss search: faiss-cpu 1.15's k = 1 flat search costs ~2 ns a
#: pair with up to 8,192 queries and ~0.12 ns with 10,000 or more (measured here, one or
#: two threads, indexes of 4,096–65,536 rows), so a smaller block is padded to this size
FAST_QUERIES = 10_000
#: ... which pays from this many queries on: a search of 10,000 costs what one of ~600
#: costs below the cliff (so a smaller attacker file, or a last block, is not padded)
PAD_MIN = 600
#: rows of B per part of the k = 1 screen (None: by size, see :func:`part_rows`); small
#: parts make step 2 cheap, but faiss is less efficient on many small indexes
PART: int | None = None


def part_rows(n_b: int) -> int:
    """Part size: 4096 rows. Smaller parts make step 2 cheaper (n·PART pairs); faiss's k = 1
    search over parts of 4096 or 8192 rows costs about what one search over all of B
    costs, and over 2048-row parts more (10⁶ × 13, faiss-cpu 1.15, alternated runs:
    4096 −1 to +7 %, 8192 −1 to +18 %, 2048 +5 to +8 %; benchmarks/README.md, "faiss
    screen")."""
    return PART if PART is not None else 4096


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


#: columns of B per tile of :func:`_second` (four rows' float32 accumulators and the
#: tile's attribute rows stay in L1: 4·512·4 + 13·512·4 bytes = 34 KiB at m = 13)
SECOND_TILE = 512


@nb.njit(inline="always")
def _two_smallest(acc, nbt, w, m1, m2):
    """(m1, m2) updated with the tile's scores ‖b_j‖² − 2·acc_j (j < w): the smallest and
    second smallest of all values seen (a value equal to m1 counts again). A vectorized
    count first skips the tile when no score is below m2 (most tiles once the minima
    settle); the scores are computed again only for a tile that is not skipped."""
    f2 = np.float32(2.0)
    c = 0
    for j in range(w):
        c += nbt[j] - f2 * acc[j] < m2
    if c:
        for j in range(w):
            v = nbt[j] - f2 * acc[j]
            if v < m2:
                if v < m1:
                    m2 = m1
                    m1 = v
                else:
                    m2 = v
    return m1, m2


@nb.njit(parallel=True, cache=True)
def _second(a, bt, nb_, out):
    """Per row i of ``a``: the second smallest of ‖b_j‖² − 2·a_i·b_j + ‖a_i‖² over the
    columns j of ``bt`` (B attribute-major), fused: no n×P matrix is written. Float32
    inputs and arithmetic (the caller bounds the rounding error): a_i·b_j summed in
    attribute order, so the values do not depend on the blocking. Four rows share each
    load of a tile of ``SECOND_TILE`` columns (a row past the end repeats the last)."""
    n, m = a.shape
    p = bt.shape[1]
    for g in nb.prange((n + 3) // 4):
        i0 = 4 * g
        i1, i2, i3 = min(i0 + 1, n - 1), min(i0 + 2, n - 1), min(i0 + 3, n - 1)
        c0 = np.empty(SECOND_TILE, np.float32)
        c1 = np.empty(SECOND_TILE, np.float32)
        c2 = np.empty(SECOND_TILE, np.float32)
        c3 = np.empty(SECOND_TILE, np.float32)
        inf = np.float32(np.inf)
        p0 = q0 = p1 = q1 = p2 = q2 = p3 = q3 = inf
        for t0 in range(0, p, SECOND_TILE):
            w = min(SECOND_TILE, p - t0)
            for j in range(w):
                c0[j] = c1[j] = c2[j] = c3[j] = 0.0
            for k in range(m):
                x0, x1, x2, x3 = a[i0, k], a[i1, k], a[i2, k], a[i3, k]
                row = bt[k, t0:t0 + w]
                for j in range(w):
                    b = row[j]
                    c0[j] += x0 * b
                    c1[j] += x1 * b
                    c2[j] += x2 * b
                    c3[j] += x3 * b
            nbt = nb_[t0:t0 + w]
            p0, q0 = _two_smallest(c0, nbt, w, p0, q0)
            p1, q1 = _two_smallest(c1, nbt, w, p1, q1)
            p2, q2 = _two_smallest(c2, nbt, w, p2, q2)
            p3, q3 = _two_smallest(c3, nbt, w, p3, q3)
        for r in range(min(4, n - i0)):
            na = np.float32(0.0)
            for k in range(m):
                na += a[i0 + r, k] * a[i0 + r, k]
            out[i0 + r] = (q0 if r == 0 else q1 if r == 1 else q2 if r == 2 else q3) + na


def second_in_part(a32: np.ndarray, bp32: np.ndarray) -> np.ndarray:
    """The second smallest squared distance, ‖a‖² + ‖b‖² − 2a·b in float32 (faiss's
    arithmetic, so :func:`lower_bound` bounds its error), of each row of ``a32`` to the rows of
    ``bp32`` (∞ when ``bp32`` has one row)."""
    out = np.full(a32.shape[0], np.inf, np.float32)
    if bp32.shape[0] >= 2 and a32.shape[0]:
        _second(np.ascontiguousarray(a32), np.ascontiguousarray(bp32.T),
                np.einsum("ij,ij->i", bp32, bp32), out)
    return out


@nb.njit(cache=True)
def _merge_part(d, lb, s, off, b1, o1, l1, p1):
    """Fold part ``s``'s k = 1 result (score ``d``, label ``lb`` within the part, which
    starts at record ``off``) into each row's best (b1, label l1, part p1) and the best
    of the other parts (o1), in place: one pass instead of five numpy passes a part
    (hundreds of parts at 10⁶). A NaN score is never best and makes o1 NaN, as
    ``np.minimum`` would."""
    for i in range(d.shape[0]):
        v = d[i]
        if v < b1[i]:
            o1[i] = b1[i]
            b1[i] = v
            l1[i] = lb[i] + off
            p1[i] = s
        elif o1[i] == o1[i] and not v >= o1[i]:
            o1[i] = v


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


def _queries(block: np.ndarray) -> np.ndarray:
    """A block of attacker rows as faiss's float32 queries; a block of ``PAD_MIN`` to
    ``FAST_QUERIES`` rows padded with zero rows to ``FAST_QUERIES`` (faiss's cliff, see
    there). Results for the padding rows are discarded."""
    nr = block.shape[0]
    q = np.zeros((FAST_QUERIES if PAD_MIN <= nr < FAST_QUERIES else nr, block.shape[1]),
                 np.float32)
    q[:nr] = block
    return q


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
    # per row: float32 copy, best/second/other minima, labels, parts (+ temporaries); and,
    # when the budget holds them for a block of faiss's fast size, the row's part minima
    # (4 bytes a part), which the fallback of step 4 then reads instead of searching again
    P = len(parts)
    rows = int(np.clip(memory_budget // (screen_row_bytes(m) + 4 * P), 1024, 262_144))
    keep = rows >= min(n_a, int(faiss.cvar.distance_compute_blas_threshold))
    if not keep:
        rows = int(np.clip(memory_budget // screen_row_bytes(m), 1024, 262_144))
    rows = query_rows(faiss, rows, n_a)
    lab = np.empty(n_a, np.int64)
    smin = np.empty(n_a)
    ok = np.empty(n_a, np.bool_)
    kept = []  # the part minima of the uncertified rows, block by block
    # faiss writes into buffers made once (fresh output arrays for each of hundreds of
    # searches cost page faults): the part minima, a row a part, or one row reused
    rows = min(rows, n_a)
    dbuf = np.empty((P if keep else 1, rows), np.float32)
    ibuf = np.empty(max(rows, FAST_QUERIES), np.int64)
    dpad = np.empty(FAST_QUERIES, np.float32)
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        nr = r1 - r0
        q = _queries(a[r0:r1])
        nq = q.shape[0]
        b1 = np.full(nr, np.inf, np.float32)
        o1 = np.full(nr, np.inf, np.float32)
        l1 = np.zeros(nr, np.int64)
        p1 = np.zeros(nr, np.int64)
        for s, ix in enumerate(parts):
            d = dbuf[s if keep else 0, :nr]
            if nq > nr:
                ix.search(q, 1, D=dpad.reshape(nq, 1), I=ibuf[:nq].reshape(nq, 1))
                d[:] = dpad[:nr]
            else:
                ix.search(q, 1, D=d.reshape(nr, 1), I=ibuf[:nr].reshape(nr, 1))
            _merge_part(d, ibuf[:nr], s, edges[s], b1, o1, l1, p1)
        # second smallest float32 score inside the winning part (fused kernel, faiss
        # arithmetic), then the certificate of step 3
        second = np.full(nr, np.inf, np.float32)
        by_part = np.argsort(p1, kind="stable")  # rows grouped by winning part, in order
        cuts = np.searchsorted(p1[by_part], np.arange(P + 1))
        for s in np.flatnonzero(np.diff(cuts)):
            sel = by_part[cuts[s]:cuts[s + 1]]
            second[sel] = second_in_part(q[sel], parts[s].reconstruct_n(0, parts[s].ntotal))
        lab[r0:r1] = l1
        smin[r0:r1] = pw.pair_scores(np.arange(r0, r1), l1)
        ok[r0:r1] = ((lower_bound(np.minimum(o1, second), a[r0:r1])
                      > tie_threshold_np(smin[r0:r1], rtol)) & (l1 >= 0))
        if keep:
            kept.append(dbuf[:, :nr][:, ~ok[r0:r1]].T)
        if progress is not None:
            progress(r1, n_a)
    out_ts = pw.pair_scores(np.arange(n_a), truth)  # −1 (no truth) → ∞
    out_min, out_count, out_link = smin, np.ones(n_a, np.int64), lab.copy()
    redo = np.flatnonzero(~ok)
    rechecked = 0
    if redo.size:
        # the uncertified rows are screened again: report them as a second pass
        sub = part_screened_sets(pw.rows(redo), parts, edges, smin[redo], lab[redo] >= 0,
                                 rid[redo], rtol=rtol, seed=seed, cap=cap,
                                 memory_budget=memory_budget, progress=progress,
                                 pmin=np.concatenate(kept) if keep else None)
        out_min[redo], out_count[redo], out_link[redo] = sub.min_score, sub.count, sub.link
        rechecked = sub.rechecked
    parts.clear()
    thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    res = NearestSets(out_min, out_count, true_in, out_ts, out_link)
    res.uncertified = int(redo.size)
    res.rechecked = rechecked
    return res


def part_screened_sets(pw: Pairwise, parts: list, edges: list[int], smin: np.ndarray,
                       found: np.ndarray, rid: np.ndarray, *, rtol: float, seed: int, cap: int,
                       memory_budget: int, progress,
                       pmin: np.ndarray | None = None) -> NearestSets:
    """Candidate sets of the rows the k = 1 screen could not certify (step 4 of the
    module): ``parts`` are its faiss indexes of B[edges[s]:edges[s+1]], ``smin`` the exact
    score of each row's float32 best (≥ the exact minimum, so its threshold bounds C(a)),
    ``found`` whether faiss returned one. Per row: the parts whose float32 minimum is ≤ U,
    their records whose float32 score is ≤ U scored exactly (:func:`_candidates`), C(a)
    the scores ≤ t(minimum), the link drawn as the exact kernel draws it. Rows with ≥ ``K``
    tied records, more than ``MAX_PARTS`` parts or no finite bound go to the exact kernel
    (``rechecked``). ``pmin``: the rows' part minima when the screen kept them (no search
    here then)."""
    a = pw.x
    n_a, m = a.shape
    c = error_constant(m)
    bound = (tie_threshold_np(smin, rtol) * (1.0 + 2.0 * c)
             + 3.0 * c * np.einsum("ij,ij->i", a, a)) * (1.0 + 1e-12)
    out_min = np.empty(n_a)
    out_count = np.zeros(n_a, np.int64)
    out_link = np.full(n_a, -1, np.int64)
    todo = np.zeros(n_a, np.bool_)
    # per row: its part minima (4 bytes a part) and float32 copy (the candidates it keeps
    # are the near-ties of its minimum: a handful)
    rows = int(np.clip(memory_budget // (4 * len(parts) + screen_row_bytes(m)), 256, 262_144))
    for r0 in range(0, n_a, rows):
        r1 = min(r0 + rows, n_a)
        if pmin is not None:
            q = np.ascontiguousarray(a[r0:r1], dtype=np.float32)
            pm = pmin[r0:r1]
        else:
            q = _queries(a[r0:r1])
            pm = np.empty((r1 - r0, len(parts)), np.float32)
            for s, ix in enumerate(parts):
                pm[:, s] = ix.search(q, 1)[0][:r1 - r0, 0]
        hit = pm <= bound[r0:r1, None]
        nhit = hit.sum(axis=1)
        easy = (nhit >= 1) & (nhit <= MAX_PARTS) & np.isfinite(bound[r0:r1]) & found[r0:r1]
        todo[r0:r1] = ~easy
        hit &= easy[:, None]
        pr, ib = _candidates(q[:r1 - r0], hit, parts, edges, bound[r0:r1], memory_budget)
        sel, mn, cnt, link = _tied(pw, pr + r0, ib, rid, rtol, seed)
        out_min[sel], out_count[sel], out_link[sel] = mn, cnt, link
        todo[sel[(cnt >= K) | (cnt < 1)]] = True  # cnt 0: a NaN minimum
        todo[r0 + np.setdiff1d(np.flatnonzero(easy), pr)] = True  # no candidate (cannot be)
        if progress is not None:
            progress(r1, n_a)
    redo = np.flatnonzero(todo)
    if redo.size:
        sub = exact_sets(pw.rows(redo), np.full(redo.size, -1), rid[redo], rtol=rtol,
                         seed=seed, cap=cap, memory_budget=memory_budget, progress=progress)
        out_min[redo], out_count[redo], out_link[redo] = sub.min_score, sub.count, sub.link
    res = NearestSets(out_min, out_count, np.zeros(n_a, np.bool_), np.full(n_a, np.inf),
                      out_link)
    res.rechecked = int(redo.size)
    return res


def _candidates(q: np.ndarray, hit: np.ndarray, parts: list, edges: list[int],
                bound: np.ndarray, memory_budget: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, record) of every record b of a ``hit`` part whose float32 score
    ‖a‖² + ‖b‖² − 2a·b (faiss's arithmetic, one BLAS product per part for the rows that
    hit it, so the error bound of :func:`lower_bound` holds) is ≤ the row's ``bound``:
    a superset of C(a), sorted by row, then record (file order). The products are taken
    for as many rows at once as ``memory_budget`` holds (12 bytes a score)."""
    na = np.einsum("ij,ij->i", q, q)
    rows, recs = [], []
    for s in np.flatnonzero(hit.any(axis=0)):
        bp = parts[s].reconstruct_n(0, parts[s].ntotal)
        nbp = np.einsum("ij,ij->i", bp, bp)[None, :]
        hs = np.flatnonzero(hit[:, s])
        step = max(1, memory_budget // (12 * bp.shape[0]))
        for c0 in range(0, hs.size, step):
            r = hs[c0:c0 + step]
            d = nbp - 2.0 * (q[r] @ bp.T)
            d += na[r, None]
            ri, cj = np.nonzero(d <= bound[r, None])
            rows.append(r[ri])
            recs.append(cj + edges[s])
    pr = np.concatenate(rows) if rows else np.empty(0, np.int64)
    ib = np.concatenate(recs).astype(np.int64) if recs else np.empty(0, np.int64)
    order = np.lexsort((ib, pr))
    return pr[order], ib[order]


def _tied(pw: Pairwise, pr: np.ndarray, ib: np.ndarray, rid: np.ndarray, rtol: float,
          seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rows, minimum, |C(a)|, link) from the exact scores of the candidate pairs
    (pr, ib), sorted by row then record: C(a) the candidates ≤ t(minimum), the link drawn
    among them in file order with the exact kernel's pick; link −1 and |C| 0 where no
    score is ≤ t(min) (a NaN minimum)."""
    if pr.size == 0:
        e = np.empty(0, np.int64)
        return e, np.empty(0), e, e
    ex = pw.pair_scores(pr, ib)
    first = np.flatnonzero(np.r_[True, pr[1:] != pr[:-1]])
    rows = pr[first]
    mn = np.minimum.reduceat(ex, first)
    tied = ex <= np.repeat(tie_threshold_np(mn, rtol), np.diff(np.r_[first, ex.size]))
    cnt = np.add.reduceat(tied.astype(np.int64), first)
    pos = np.flatnonzero(tied)  # the tied records of each row, in file order
    start = np.cumsum(cnt) - cnt
    link = np.full(rows.size, -1, np.int64)
    one = cnt >= 1
    link[one] = ib[pos[start[one] + pick_np(seed, rid[rows[one]], cnt[one])]]
    return rows, mn, cnt, link
