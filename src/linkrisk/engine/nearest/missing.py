"""Nearest sets when the files have missing values (docs/methods.md, "Missing values").

A pair (a, b) is scored over the attributes observed in both records. Records are grouped
by missingness pattern (the set of observed attributes; a release of local suppression
has a few dozen) and, for every pair of patterns (p of A, q of B), the engine's ordinary
search (:func:`~.search.nearest_sets`: blocked kernels, screens, the tie rule) runs on the
sub-matrices of the attributes observed in both; an attack's :data:`Build` callback makes
that sub-problem, so that the score of the sub-problem *is* the pair's distance (rescaling
included: no score is transformed afterwards). The per-pattern results of a row are then
merged with the tie rule of :mod:`.rules` over all of B:

* the minimum is the smallest pattern minimum, the threshold t(min) as always;
* a pattern whose own minimum is the overall one contributes its tie set as found; a
  pattern whose minimum is above it but within the threshold has its tied records
  recounted at the overall threshold (:func:`~.kernels.recount_rows`, exact);
* |C(a)| is the sum of the contributions, the true image is in C(a) when its score is at
  most the threshold;
* the link: the pattern is drawn with the record's own generator in proportion to the
  pattern's tied records (:func:`~.rules.pick_np` over the patterns in order), then the
  pattern's own seeded link. Every tied record has (up to the hash's modulo bias) the
  same chance, as without missing values; the file-order position rule of
  :func:`~.rules.pick` applies within a pattern only.

Work is that of one search over all pairs (the sub-problems partition A × B), plus the
Python loop over pattern pairs, capped at :data:`MAX_PATTERN_PAIRS`. No n_a × n_b matrix
is formed; the per-pattern minima of one A-pattern are kept (n_p × number of B patterns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import LinkriskError
from .kernels import Pairwise, Tables, recount_rows
from .rules import RTOL, Progress, pick_np, tie_threshold_np
from .search import nearest_sets
from .sets import DEFAULT_MEMORY_BUDGET, NearestSets

#: most pattern pairs (A patterns × B patterns) searched, beyond which the attack is refused
#: (each costs a search call with its own set-up; 5 % of the cells missing in 5 attributes
#: already gives ~400 pairs)
MAX_PATTERN_PAIRS = 4096


@dataclass
class Sub:
    """One pattern pair's search problem: ``x`` (rows of the A pattern) against ``y``
    (rows of the B pattern) under the engine ``metric`` (``kw``: ``degree``, ``tables``),
    or, when ``x`` is None, every pair at the constant score ``const`` (0: no attribute
    compared, a wildcard; ∞: no information)."""

    x: np.ndarray | None = None
    y: np.ndarray | None = None
    metric: str = "sqeuclidean"
    kw: dict | None = None
    const: float = 0.0


#: ``build(rows_a, rows_b, common)``: the sub-problem of A's rows ``rows_a`` against B's
#: rows ``rows_b``, ``common`` the boolean mask of the attributes observed in both patterns
Build = Callable[[np.ndarray, np.ndarray, np.ndarray], Sub]


def patterns(observed: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct rows of a boolean n × m matrix (True: observed) and, for each, the
    indices of the records having it (ascending: file order)."""
    obs = np.asarray(observed, dtype=bool)
    if obs.shape[0] == 0:
        return np.zeros((0, obs.shape[1]), bool), []
    uniq, inv = np.unique(obs, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    order = np.argsort(inv, kind="stable")
    cuts = np.flatnonzero(np.diff(inv[order])) + 1
    return uniq, np.split(order, cuts)


def subtables(tables: Tables, cols: np.ndarray) -> Tables:
    """The ``mixed`` metric's tables of the attributes ``cols`` (in that order)."""
    out: list[np.ndarray | None] = []
    for j in cols:
        L, o = int(tables.size[j]), int(tables.off[j])
        out.append(None if L == 0 else tables.flat[o:o + L * L].reshape(L, L))
    return Tables.from_list(out)


def check_pattern_count(n_pairs: int, n_pa: int, n_pb: int) -> None:
    if n_pairs > MAX_PATTERN_PAIRS:
        raise LinkriskError(
            f"the files have {n_pa} and {n_pb} missingness patterns ({n_pairs:,} pattern "
            f"pairs, at most {MAX_PATTERN_PAIRS}); impute some values or link on fewer "
            "QIs (--qi)")


def nearest_sets_missing(
    obs_a: np.ndarray,
    obs_b: np.ndarray,
    build: Build,
    *,
    truth: np.ndarray | None = None,
    row_ids: np.ndarray | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    rtol: float = RTOL,
    seed: int = 0,
    progress: Progress | None = None,
) -> NearestSets:
    """Candidate sets of every row of A among the rows of B when values are missing
    (see the module docstring). ``obs_a``/``obs_b``: boolean n × m matrices, True where a
    value is observed; ``build`` makes each pattern pair's sub-problem; ``truth`` and
    ``row_ids`` as in :func:`~.search.nearest_sets` (indices into the whole files)."""
    n_a, n_b = obs_a.shape[0], obs_b.shape[0]
    truth = (np.full(n_a, -1, np.int64) if truth is None
             else np.ascontiguousarray(truth, dtype=np.int64))
    rid = (np.arange(n_a, dtype=np.int64) if row_ids is None
           else np.ascontiguousarray(row_ids, dtype=np.int64))
    pa, ga = patterns(obs_a)
    pb, gb = patterns(obs_b)
    check_pattern_count(len(ga) * len(gb), len(ga), len(gb))
    # where each record of B sits: its pattern and its position there
    grp_b = np.empty(n_b, np.int64)
    pos_b = np.empty(n_b, np.int64)
    for q, s in enumerate(gb):
        grp_b[s] = q
        pos_b[s] = np.arange(s.size)
    out_min = np.empty(n_a)
    out_count = np.zeros(n_a, np.int64)
    out_ts = np.full(n_a, np.inf)
    out_link = np.full(n_a, -1, np.int64)
    total, done = float(n_a) * n_b, 0.0
    for p, r in enumerate(ga):
        t = truth[r]
        has = t >= 0
        tq = np.where(has, grp_b[np.where(has, t, 0)], -1)
        res = []
        for q, s in enumerate(gb):
            local = np.where(tq == q, pos_b[np.where(has, t, 0)], -1)
            sub = build(r, s, pa[p] & pb[q])
            res.append(_search(sub, s.size, local, rid[r], seed, rtol, memory_budget))
            done += float(r.size) * s.size
            if progress is not None:
                progress(int(done), int(total))
        mins = np.stack([x.min_score for x in res])  # (patterns of B, rows of p)
        gmin = mins.min(axis=0)
        thr = tie_threshold_np(gmin, rtol)
        counts = np.zeros_like(mins, dtype=np.int64)
        links = np.full(mins.shape, -1, np.int64)
        for q, (s, x) in enumerate(zip(gb, res, strict=True)):
            take = mins[q] <= thr
            counts[q] = np.where(take, x.count, 0)
            links[q] = np.where(take & (x.link >= 0), s[np.maximum(x.link, 0)], -1)
            redo = np.flatnonzero(take & (mins[q] > gmin))
            if redo.size:
                c, lk = _recount(build(r, s, pa[p] & pb[q]), s.size, redo, rid[r],
                                 thr[redo], seed)
                counts[q, redo] = c
                links[q, redo] = np.where(lk >= 0, s[np.maximum(lk, 0)], -1)
            out_ts[r] = np.where(tq == q, x.true_score, out_ts[r])
        cnt = counts.sum(axis=0)
        k = pick_np(seed, rid[r], np.maximum(cnt, 1))
        upto = np.cumsum(counts, axis=0)
        which = (upto <= k[None, :]).sum(axis=0)  # the pattern holding the k-th tied record
        out_min[r] = gmin
        out_count[r] = cnt
        out_link[r] = np.where(cnt > 0, links[np.minimum(which, len(gb) - 1),
                                              np.arange(r.size)], -1)
    thr = tie_threshold_np(out_min, rtol)
    true_in = (truth >= 0) & (out_ts <= thr)
    return NearestSets(out_min, out_count, true_in, out_ts, out_link)


def _search(sub: Sub, n_s: int, truth: np.ndarray, rid: np.ndarray, seed: int, rtol: float,
            memory_budget: int) -> NearestSets:
    """One pattern pair's sets: the engine's, or those of a constant score (every record of
    the B pattern tied)."""
    if sub.x is not None:
        return nearest_sets(sub.x, sub.y, metric=sub.metric, truth=truth, rtol=rtol,
                            seed=seed, memory_budget=memory_budget, row_ids=rid,
                            **(sub.kw or {}))
    n = truth.shape[0]
    cnt = np.full(n, n_s, np.int64)
    ts = np.where(truth >= 0, sub.const, np.inf)
    return NearestSets(np.full(n, sub.const), cnt, truth >= 0, ts, pick_np(seed, rid, cnt))


def _recount(sub: Sub, n_s: int, rows: np.ndarray, rid: np.ndarray, thr: np.ndarray,
             seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact tie counts and seeded links of ``rows`` of a pattern pair at the given
    thresholds (the engine's :func:`~.kernels.recount_rows`)."""
    if sub.x is None:
        cnt = np.where(sub.const <= thr, n_s, 0).astype(np.int64)
        return cnt, np.where(cnt > 0, pick_np(seed, rid[rows], np.maximum(cnt, 1)), -1)
    kw = dict(sub.kw or {})
    pw = Pairwise.build(sub.x, sub.y, sub.metric, degree=kw.get("degree", 2),
                        tables=kw.get("tables"))
    cnt = np.empty(rows.size, np.int64)
    lnk = np.empty(rows.size, np.int64)
    recount_rows(rows.astype(np.int64), rid, pw.x, pw.cols, pw.code, pw.degree, pw.kxx,
                 pw.kyy, *pw.tabs, np.ascontiguousarray(thr, np.float64), seed, pw.tile,
                 cnt, lnk)
    return cnt, lnk


#: how the sum over the numeric attributes observed in both records is rescaled to all of
#: them, per engine metric: the coordinates are multiplied by f(m/m_o) so that the engine's
#: score is the rescaled one (squares and inner products: √; absolute values: 1; max: none)
_FACTOR = {"sqeuclidean": np.sqrt, "mixed": np.sqrt, "kernel": np.sqrt,
           "l1": lambda c: c, "linf": lambda c: 1.0}


def space_build(a: np.ndarray, b: np.ndarray, metric: str, *, rescaled: np.ndarray,
                tables: Tables | None = None, degree: int = 2,
                whiten: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
                ) -> Build:
    """The :data:`Build` of two files prepared for an engine metric, NaN where missing.

    ``rescaled``: the attributes whose part of the score is rescaled (numeric ones;
    categorical ones, a missing value matching any category, are not): a pair observed in
    m_o of the m such attributes gets their part multiplied by m/m_o (L∞ unscaled; the
    kernel's inner products are rescaled the same way). A pair with no rescaled attribute
    in common, when there are some, scores +∞ (no information); a pair with no attribute
    in common at all, when every attribute is categorical, scores 0 (everything matches).
    ``whiten(cols)`` → (W, μ): the sub-vectors are mapped to (x − μ) Wᵀ first
    (Mahalanobis over the observed sub-vector). ``tables``: the mixed metric's."""
    rescaled = np.asarray(rescaled, dtype=bool)
    m_num = int(rescaled.sum())
    factor = _FACTOR[metric]

    def build(r: np.ndarray, s: np.ndarray, common: np.ndarray) -> Sub:
        cols = np.flatnonzero(common)
        num = rescaled[cols]
        m_o = int(num.sum())
        if m_num and not m_o:
            return Sub(const=np.inf)
        if not cols.size:
            return Sub(const=0.0)
        x = np.ascontiguousarray(a[np.ix_(r, cols)])
        y = np.ascontiguousarray(b[np.ix_(s, cols)])
        if whiten is not None:
            w, mu = whiten(cols)
            x, y = _whiten_rows(x, w, mu), _whiten_rows(y, w, mu)
        if m_o < m_num:
            f = float(factor(m_num / m_o))
            x[:, num] *= f
            y[:, num] *= f
        kw: dict = {}
        if metric == "kernel":
            kw["degree"] = degree
        if metric == "mixed":
            kw["tables"] = subtables(tables, cols)
        return Sub(x, y, metric, kw)

    return build


def _whiten_rows(x: np.ndarray, w: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """(x − μ) Wᵀ summed in a fixed order per element (a BLAS product may round equal rows
    of two matrices differently, and an exact tie at score 0 would be lost)."""
    xc = x - mu
    out = np.zeros_like(xc)
    for k in range(xc.shape[1]):
        out += xc[:, k:k + 1] * w[:, k]
    return out
