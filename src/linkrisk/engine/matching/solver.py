"""Certified minimum-cost perfect matching between two files (the engine of ``gdbrl``).

Problem: given costs c(a_i, b_j) (an engine metric, optionally square-rooted), find the
bijection σ minimising Σ_i c(a_i, b_σ(i)) — the linear assignment problem — optionally
restricted to edges with c ≤ Δ or c ≤ a per-row limit. With n_a ≠ n_b the smaller file is
padded with dummy records of constant cost: every perfect matching of the padded problem
uses each dummy exactly once, so the constant adds the same amount to every matching and
the real records' matching does not depend on it (we solve the equivalent rectangular
problem: every record of the smaller file gets a distinct partner).

Four solvers, all exact:

``dense``  the full cost matrix and ``scipy.optimize.linear_sum_assignment`` (small n).

``graph``  an explicit restricted graph (all edges within the per-row limits / Δ), pruned of
           edges that are in no perfect matching (Tassa 2012), solved by sparse
           Jonker–Volgenant; its duals prove optimality on that graph, which is the problem.

``sparse`` for the unrestricted (or Δ-restricted) problem at large n, never storing n×n':
           1. exact k-NN lists in both directions, ``k_list`` long (:func:`~.knn.knn`,
              one fused pass); the candidate graph G is the union of their first ``k``
              entries (forward-only lists often admit no perfect matching) and of a
              perfect matching that pairs both files by rank along A's first principal
              direction (:func:`_spine`: at large n, where one file is denser than the
              other, the lists alone can lack a perfect matching);
           2. sparse Jonker–Volgenant on G (started from ε-scaling auction prices) gives
              σ and duals (u, v) with c̄_ij = c_ij − u_i − v_j ≥ 0 on G and c̄ = 0 on σ;
              the duals are then flattened (the optimal duals of smallest spread, one
              Dijkstra), which makes u_i + v_j small for pairs far apart;
           3. certificate for the complete graph: if c̄_ij ≥ −tol for *every* pair, then for
              any perfect matching π, Σ c_{iπ(i)} ≥ Σu + Σv − n·tol = cost(σ) − n·tol (LP
              duality; rectangular case: v ≤ 0 and v = 0 on free columns). List pairs are
              checked from their known costs. A pair outside both lists has
              c_ij ≥ max(α_i, β_j), α_i (β_j) the last list cost of i (j), so it is safe
              when max(α_i, β_j) ≥ u_i + v_j − tol. The rows for which some column fails
              this bound are found by a sort-and-sweep in O(n log n); each such row
              checks exactly, c_ij − v_j ≥ u_i − tol, only the columns that fail it:
              β_j − v_j < u_i − tol (a prefix of the columns sorted by β − v) and
              v_j > α_i − u_i + tol (:func:`~.knn.scan_gated`: a fraction of a full row,
              tiled over rows and pre-tested in float32 for the Euclidean cost);
           4. violating edges (each violating row's 8 best, more when few rows are
              scanned) are added to G, the rows' u lowered (a warm start: only they are
              re-augmented) and the check repeated until no violation. The scan of a row
              looks a little above u_i (a slack window, see below); the nearly tight pairs
              it meets there join G too, though they violate nothing: left out, they would
              be the row's bound, which the next warm start's small rise of u_i passes
              (at 3·10⁵ they caused most rescans of later rounds). G without a
              perfect matching (Δ can exclude the spine's edges) → k doubles.
           A scanned row remembers a lower bound on its c_ij − v_j outside G; warm starts
           only lower v, so it is rescanned only when its u_i grows past that bound. A
           round that frees more rows settles them from the duals before the last
           flattening instead (few tight edges there: an auction among the freed rows and
           the rows they evict, then short augmenting paths), or, when it frees very many,
           restarts the solver's auction from the last prices; the new flattened duals
           differ little from the old ones, so the bounds are carried over: the
           columns whose v rose most (up to 10 % of them) are checked by exact column
           scans in every later round, and all bounds drop by the largest rise of the
           other columns (unless that exceeds the scans' 2 % slack: then every suspect
           row is scanned again).
           For the Euclidean cost at large n the one full pass (the lists of step 1) is
           screened in float32 (:mod:`.screened_knn`): the lists are the k smallest float32
           scores, re-scored exactly, with α_i, β_j rigorous bounds from the float32
           error. The certificate stays exact.

``patterns`` square, unrestricted problems whose files repeat their records (categorical
           data): a transport between the distinct records (:mod:`.transport`), certified
           by its own duals; ``auto`` picks it when at most half the records are distinct.

``tol`` = rtol·max|c| over G; ``gap_bound`` = n·tol bounds cost(σ) − optimum.

Ties. Several optimal matchings can exist (duplicate records, coarse data). Rows and
columns are processed in a seeded random order, so which optimal matching is returned
does not favour the identity. With ``ties="expected"`` the matching's candidate sets are
computed too: b ∈ C(a) iff (a, b) lies in *some* minimum-cost perfect matching — the
edges that are tight (c̄ ≤ tol) and allowed in the tight subgraph (Tassa 2012), since
every optimal matching consists of tight edges of any optimal dual.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numba as nb
import numpy as np
from scipy.optimize import linear_sum_assignment

from ...errors import LinkriskError
from ..budget import (
    DEFAULT_MEMORY_BUDGET,
    GRAPH_EDGE_BYTES,
    dense_matrix_bytes,
    knn_entry_bytes,
)
from ..nearest.kernels import Pairwise, Tables
from ..nearest.rules import RTOL, Progress, Stages
from . import transport
from .assignment import (
    GRAPH_ROOM,
    SparseAssignment,
    allowed_edges,
    finite_range,
    has_full_matching,
    merge_csr,
    merge_into,
    to_csr,
)
from .dense import dense_costs
from .knn import knn, pair_costs, scan_gated, within_graph
from .screened_knn import applicable as screen_applicable
from .screened_knn import knn_thresholds

_log = logging.getLogger(__name__)

#: default largest file size solved with a dense cost matrix
DENSE_MAX_N = 3000
#: default degree of the k-NN candidate graph: with the auction start a dense graph costs
#: little to solve, and its optimum is closer to the global one (fewer repair rounds)
DEFAULT_K = 64
#: default length of the k-NN lists whose last entries bound the pairs outside them
DEFAULT_K_LIST = 64
#: default degree and width of the float32-screened lists (large Euclidean problems): the
#: threshold pass logs fewer entries and the certificate adds the few long edges the
#: optimum needs
SCREEN_K = 24
#: shortest list length the memory budget may impose
MIN_K = 8
#: after a repair round, solve afresh (auction start) rather than warm when more than this
#: fraction of the rows was freed: the freed rows' augmenting paths then cost more than a
#: fresh start
RESTART_FREE = 0.0005
#: ... and up to this fraction, settle the freed rows from the duals before the last
#: flattening (SparseAssignment.rewarm: an auction of the freed rows, then short
#: augmenting paths) instead of restarting from the last prices
REWARM_FREE = 0.02
#: after a fresh start, the columns whose v rose by more than this fraction of mean |u|
#: are checked by column scans; the row bounds absorb smaller rises (they drop by the
#: largest)
RISE_EPS = 0.001
#: ... or, when more rose, the RISEN_MAX of the columns that rose most (columns stay
#: there until the bounds are dropped) ...
RISEN_MAX = 0.10
#: ... unless the others rose by more than this fraction of mean |u|: then every suspect
#: row is rescanned and the column scans stop
RISE_CAP = 0.02
#: edges kept per row by a certificate scan ...
SCAN_CAP = 8
#: ... or more when few rows are scanned: up to this many edges per certificate (the
#: scan's arrays: 16 bytes an edge), at most SCAN_CAP_MAX a row (10⁶: the last 7 rounds
#: each added the same row's next 8 edges). 2²¹ rather than 2¹⁶: at 10⁵ the first
#: certificate scans 49,292 rows, which then keep up to 42 edges instead of 8, and the
#: next round frees 7 rows instead of 77; at 3·10⁵ and 10⁶ the first rounds scan too many
#: rows for more than 8
SCAN_EDGES = 2**21
SCAN_CAP_MAX = 256
#: a certificate scan of row i looks for c_ij − v_j below u_i − tol + SCAN_SLACK·|u_i|,
#: so that it need not be repeated when a warm start raises u_i by less
SCAN_SLACK = 0.02
#: screened lists: thresholds set so that about this multiple of the width falls below
#: them on average (lengths vary with the sample; longer lists are cut to the width, see
#: :func:`~.screened_knn.knn_thresholds`): most lists are then full (thinner graphs more often
#: lack a perfect matching) and the samples that set the thresholds are smaller, for a
#: few more hits in the pass
LIST_MEAN = 2.0
#: add a rank pairing along the first principal direction to the candidate graph
#: (:func:`_spine`), so that it always has a perfect matching
SPINE = True
#: screen the full passes in float32 (:mod:`.screened_knn`) from this many pairs on, when
#: ``screen="auto"`` and the cost is Euclidean
SCREEN_MIN_PAIRS = 50_000_000


@dataclass
class Matching:
    """A minimum-cost matching of the rows of A (``link[i]`` = row of B, −1 when A's row
    is matched to a dummy) with its cost, certificate and diagnostics."""

    link: np.ndarray
    cost: np.ndarray                 # c(a_i, b_link[i]); NaN for dummies
    total_cost: float
    certified: bool
    solver: str
    k: int
    n_edges: int
    gap_bound: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    # candidate sets C(a) under ties="expected": CSR over A rows (None otherwise)
    cand_indptr: np.ndarray | None = None
    cand_indices: np.ndarray | None = None


def min_cost_matching(
    a: np.ndarray,
    b: np.ndarray,
    *,
    metric: str = "sqeuclidean",
    root: bool = False,
    degree: int = 2,
    tables: Tables | None = None,
    delta: float = np.inf,
    row_limit: np.ndarray | None = None,
    solver: str = "auto",
    k: int | None = None,
    k_list: int | None = None,
    dense_max_n: int = DENSE_MAX_N,
    ties: str = "matching",
    seed: int = 0,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: Progress | None = None,
    rtol: float = RTOL,
    max_rounds: int = 100,
    screen: str | bool = "auto",
) -> Matching:
    """Minimum-cost matching of the rows of ``a`` to distinct rows of ``b`` (all rows of the
    smaller file are matched), cost c = engine ``metric`` score, square-rooted if ``root``.

    ``delta``: only edges with c ≤ delta; ``row_limit[i]``: only edges of A's row i with
    c ≤ row_limit[i] (the AGDBRL graphs; always solved on the explicit graph). ``solver``:
    ``auto`` (dense when max(n_a, n_b) ≤ ``dense_max_n`` and the matrix fits the memory
    budget, else sparse), ``dense``, ``sparse`` or ``graph`` (explicit restricted graph).
    ``k``: initial degree of the k-NN candidate graph; ``k_list``: length of the k-NN lists
    whose last entries bound the pairs outside them (both reduced to fit
    ``memory_budget``, to no less than 8; ``None``: DEFAULT_K / DEFAULT_K_LIST, or
    SCREEN_K for the float32-screened lists). ``ties``: ``matching`` or ``expected`` (also compute the candidate sets C(a);
    uses the sparse solver). ``screen``: run the sparse solver's full passes (k-NN lists,
    certificate scans) through the float32 screen of :mod:`.screened_knn` — ``auto``: for the
    Euclidean cost from ``SCREEN_MIN_PAIRS`` pairs; the result is exact either way.
    ``progress(done, 1000)``: per-mille of the estimated work.
    Raises :class:`LinkriskError` when the restricted graph has no such matching."""
    # yᵀ is made only when a kernel asks for it (Pairwise.cols)
    pw_ab = Pairwise.build(a, b, metric, root=root, degree=degree, tables=tables,
                           transpose=False)
    n_a, n_b = pw_ab.x.shape[0], pw_ab.y.shape[0]
    delta = _check_options(ties, screen, solver, delta, k)
    if row_limit is not None:
        row_limit = np.minimum(np.asarray(row_limit, np.float64), delta)
    # seeded random order: the solvers break ties by position, which must not favour the
    # identity (row i of A ↔ row i of B is the truth in unlinked files)
    rng = np.random.default_rng(seed)
    pa, pb = rng.permutation(n_a), rng.permutation(n_b)
    pw = Pairwise.build(pw_ab.x[pa], pw_ab.y[pb], metric, root=root, degree=degree,
                        tables=pw_ab.tables, transpose=False)
    lim = None if row_limit is None else row_limit[pa]
    stages = Stages(progress)
    solver, pats = _choose_solver(pw, solver, lim, delta, ties, dense_max_n, memory_budget)
    res = (_transport(pw, pats, seed, rtol, memory_budget, stages) if solver == "patterns"
           else None)
    if solver == "dense":
        res = _dense(pw, delta, stages)
    elif solver == "graph":
        res = _explicit(pw, lim if lim is not None else np.full(n_a, delta), lim is not None,
                        ties, rtol, memory_budget, stages)
    elif res is None:  # sparse, or a transport that does not fit the memory budget
        scr = screen_applicable(pw) and (screen is True or (
            screen == "auto" and n_a * n_b >= SCREEN_MIN_PAIRS))
        res = _sparse(pw, delta, k if k is not None else SCREEN_K if scr else DEFAULT_K,
                      k_list if k_list is not None else SCREEN_K if scr else DEFAULT_K_LIST,
                      ties, rtol, max_rounds, memory_budget, stages, scr)
    stages.done()
    return _unpermuted(res, pa, pb)


def _check_options(ties: str, screen: str | bool, solver: str, delta: float,
                   k: int | None) -> float:
    """Validate the options of :func:`min_cost_matching`; ``delta`` as a float."""
    if ties not in ("matching", "expected"):
        raise LinkriskError(f"ties must be 'matching' or 'expected', got {ties!r}")
    if screen not in ("auto", True, False):
        raise LinkriskError(f"screen must be 'auto', True or False, got {screen!r}")
    if solver not in ("auto", "dense", "sparse", "graph", "patterns"):
        raise LinkriskError(f"unknown solver {solver!r}; use auto, dense, sparse, graph or "
                            "patterns")
    delta = float(delta)
    if not delta >= 0:
        raise LinkriskError(f"delta must be a non-negative distance, got {delta}")
    if k is not None and k < 1:
        raise LinkriskError(f"k must be at least 1, got {k}")
    return delta


def _choose_solver(pw: Pairwise, solver: str, lim: np.ndarray | None, delta: float, ties: str,
                   dense_max_n: int, memory_budget: int
                   ) -> tuple[str, transport.Patterns | None]:
    """(solver, the record patterns when already computed): ``auto`` picks dense for small
    problems that fit the budget, patterns for repetitive square files, else sparse; row
    limits always use the explicit graph."""
    n_a, n_b = pw.x.shape[0], pw.y.shape[0]
    # the pattern transport covers square, unrestricted problems scored by one matching
    transportable = (n_a == n_b and lim is None and not np.isfinite(delta)
                     and ties == "matching" and transport.available())
    pats = None
    if solver == "auto":
        fits = dense_matrix_bytes(n_a, n_b) <= memory_budget
        if max(n_a, n_b) <= dense_max_n and fits and ties == "matching" and lim is None:
            solver = "dense"
        else:
            pats = (transport.patterns(pw)
                    if transportable and transport.may_repeat(pw) else None)
            solver = "patterns" if pats and transport.repetitive(pats) else "sparse"
    if lim is not None:
        solver = "graph"
    elif solver == "dense" and ties == "expected":
        solver = "sparse"
    elif solver == "patterns" and not transportable:
        raise LinkriskError("solver='patterns' needs files of equal size, no delta or "
                            "approximation, ties='matching' and POT "
                            "(pip install 'linkrisk[transport]')")
    return solver, pats


def _unpermuted(res: Matching, pa: np.ndarray, pb: np.ndarray) -> Matching:
    """The result back in the caller's row order (A rows ``pa``, B rows ``pb``), candidate
    lists included."""
    n_a = pa.shape[0]
    link = np.full(n_a, -1, np.int64)
    cost = np.full(n_a, np.nan)
    ok = res.link >= 0
    link[pa[ok]] = pb[res.link[ok]]
    cost[pa] = res.cost
    res.link, res.cost = link, cost
    if res.cand_indptr is not None:
        # candidate lists, A rows and B columns back to the original numbering
        cnt = np.diff(res.cand_indptr)
        rows = np.repeat(np.arange(n_a), cnt)
        r = pa[rows]
        c = pb[res.cand_indices]
        order = np.lexsort((c, r))
        res.cand_indices = c[order]
        res.cand_indptr = np.zeros(n_a + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=n_a), out=res.cand_indptr[1:])
    return res


# ---------------------------------------------------------------------------------------
# dense
# ---------------------------------------------------------------------------------------
def _dense(pw: Pairwise, delta: float, stages: Stages) -> Matching:
    n_a, n_b = pw.x.shape[0], pw.y.shape[0]
    cb = stages.stage(0, 300)
    c = dense_costs(pw)
    if cb:
        cb(1, 1)
    if np.isfinite(delta):
        c[c > delta] = np.inf
    try:
        ri, ci = linear_sum_assignment(c)
    except ValueError:
        raise _no_matching(pw, delta, False) from None
    link = np.full(n_a, -1, np.int64)
    link[ri] = ci
    cost = np.full(n_a, np.nan)
    cost[ri] = c[ri, ci]
    if not np.isfinite(cost[ri]).all():
        raise _no_matching(pw, delta, False)
    return Matching(link, cost, float(cost[ri].sum()), True, "dense", 0, n_a * n_b)


def dense_matrix_matching(cost: np.ndarray, *, limit: np.ndarray | None = None,
                          ties: str = "matching", seed: int = 0, rtol: float = RTOL,
                          approx: bool = False) -> Matching:
    """:func:`min_cost_matching` on a given n_a × n_b cost matrix (+inf: no edge), e.g.
    costs that no engine metric computes (missing values). ``limit``: per-row limits
    (edges of row i with cost > limit[i] dropped). Same seeded random order; with
    ``ties="matching"`` and no limit the dense solver (scipy), otherwise the explicit
    graph of the finite edges (pruning, certificate, candidate sets under
    ``ties="expected"``). ``cost`` is overwritten."""
    n_a, n_b = cost.shape
    if ties not in ("matching", "expected"):
        raise LinkriskError(f"ties must be 'matching' or 'expected', got {ties!r}")
    if limit is not None:
        cost[cost > np.asarray(limit, np.float64)[:, None]] = np.inf
    rng = np.random.default_rng(seed)
    pa, pb = rng.permutation(n_a), rng.permutation(n_b)
    c = cost[np.ix_(pa, pb)]
    lim_max = np.inf if limit is None else float(np.max(limit))
    if ties == "matching" and limit is None:
        try:
            ri, ci = linear_sum_assignment(c)
        except ValueError:
            raise _no_matching(min(n_a, n_b), lim_max, approx) from None
        link = np.full(n_a, -1, np.int64)
        link[ri] = ci
        got = np.full(n_a, np.nan)
        got[ri] = c[ri, ci]
        if not np.isfinite(got[ri]).all():
            raise _no_matching(min(n_a, n_b), lim_max, approx)
        res = Matching(link, got, float(got[ri].sum()), True, "dense", 0, n_a * n_b)
    else:
        rows, cols = np.nonzero(np.isfinite(c))
        indptr, idx, w = to_csr(rows, cols, c[rows, cols], n_a)
        res = _graph_matching(indptr, idx, w, n_a, n_b, lim_max, approx, ties, rtol,
                              Stages(None))
    return _unpermuted(res, pa, pb)


def _transport(pw: Pairwise, pats: transport.Patterns | None, seed: int, rtol: float,
               memory_budget: int, stages: Stages) -> Matching | None:
    cb = stages.stage(0, 1000)
    out = transport.pattern_matching(pw, pats or transport.patterns(pw), seed=seed, rtol=rtol,
                                     memory_budget=memory_budget)
    if out is None:
        return None
    if cb:
        cb(1, 1)
    link, cost, certified, tol, info = out
    return Matching(link, cost, float(cost.sum()), certified, "patterns", 0,
                    int(info["patterns"][0]), link.shape[0] * tol, info)


def _no_matching(pw: Pairwise | int, delta: float, approx: bool, matched: int | None = None
                 ) -> LinkriskError:
    n = pw if isinstance(pw, int) else min(pw.x.shape[0], pw.y.shape[0])
    what = "in the approximate (rank-limited) graph" if approx else f"within delta={delta:g}"
    got = "" if matched is None else f" (at most {matched} of {n} records can be)"
    fix = "use the exact attack or a larger delta" if approx else "raise delta"
    return LinkriskError(f"gdbrl: no perfect matching {what}: not every record can get a "
                         f"distinct partner{got}; {fix}")


# ---------------------------------------------------------------------------------------
# orientation helpers: the solver's rows are the smaller file
# ---------------------------------------------------------------------------------------
def _oriented(pw: Pairwise) -> tuple[Pairwise, bool]:
    return (pw, False) if pw.x.shape[0] <= pw.y.shape[0] else (pw.swapped(), True)


def _result(sa: SparseAssignment, flip: bool, n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """(link, cost) per A row from the solver's state."""
    mc = sa.matched_cost()
    if not flip:
        return sa.col4row.copy(), mc
    link = np.full(n_a, -1, np.int64)
    cost = np.full(n_a, np.nan)
    link[sa.col4row] = np.arange(n_b)
    cost[sa.col4row] = mc
    return link, cost


# ---------------------------------------------------------------------------------------
# explicit restricted graph
# ---------------------------------------------------------------------------------------
def _explicit(pw: Pairwise, lim: np.ndarray, approx: bool, ties: str, rtol: float,
              memory_budget: int, stages: Stages) -> Matching:
    n_a, n_b = pw.x.shape[0], pw.y.shape[0]
    cb = stages.stage(0, 400)
    indptr, idx, cost = within_graph(pw, lim,
                                     max_edges=max(memory_budget // GRAPH_EDGE_BYTES, 10**6))
    if cb:
        cb(1, 1)
    return _graph_matching(indptr, idx, cost, n_a, n_b, float(np.max(lim)), approx, ties,
                           rtol, stages)


def _graph_matching(indptr: np.ndarray, idx: np.ndarray, cost: np.ndarray, n_a: int,
                    n_b: int, lim_max: float, approx: bool, ties: str, rtol: float,
                    stages: Stages) -> Matching:
    """The explicit graph's optimum (CSR over A rows): pruning, solve, certificate and,
    under ties="expected", the candidate sets."""
    flip = n_a > n_b
    if flip:
        rows = np.repeat(np.arange(n_a), np.diff(indptr))
        indptr, idx, cost = to_csr(idx, rows, cost, n_b)
    n_r, n_c = (n_b, n_a) if flip else (n_a, n_b)
    full, mm = has_full_matching(indptr, idx, n_c)
    if not full:
        raise _no_matching(min(n_a, n_b), lim_max, approx, int((mm >= 0).sum()))
    keep = allowed_edges(indptr, idx, mm, n_c)
    pruned = int((~keep).sum())
    rows = np.repeat(np.arange(n_r), np.diff(indptr))
    g = to_csr(rows[keep], idx[keep], cost[keep], n_r)
    sa = SparseAssignment(*g, n_c)
    if not sa.solve(stages.stage(400, 900)):  # cannot happen after the matching check
        raise _no_matching(min(n_a, n_b), lim_max, approx)
    sa.polish()
    tol = rtol * _scale(sa.cost)
    rc = sa.reduced_costs()
    certified = bool(rc.min(initial=0.0) >= -tol) and _rect_ok(sa)
    link, c = _result(sa, flip, n_a, n_b)
    res = Matching(link, c, float(np.nansum(c)), certified, "graph", int(np.diff(g[0]).max()),
                   sa.n_edges, n_r * tol,
                   {"pruned_edges": pruned, "graph_edges": int(idx.shape[0])})
    if ties == "expected":
        tight = rc <= tol
        _candidates(res, sa, tight, None, flip, n_a, tol)
    return res


def _scale(cost: np.ndarray) -> float:
    """max |c| over the finite costs (1 when there is none)."""
    lo, hi, ab = finite_range(np.ascontiguousarray(cost, np.float64))
    return float(ab) if lo <= hi else 1.0


def _rect_ok(sa: SparseAssignment) -> bool:
    """Rectangular dual conditions: v ≤ 0 and v = 0 on free columns."""
    if sa.square:
        return True
    return bool(sa.v.max(initial=0.0) <= 0.0 and (sa.v[sa.row4col < 0] == 0.0).all())


# ---------------------------------------------------------------------------------------
# sparse (k-NN graph + certificate)
# ---------------------------------------------------------------------------------------
def _sparse(pw0: Pairwise, delta: float, k: int, k_list: int, ties: str, rtol: float,
            max_rounds: int, memory_budget: int, stages: Stages, screened: bool = False
            ) -> Matching:
    """The sparse solver (see module, steps 1–4): candidate graph from the k-NN lists,
    then certificate-and-repair rounds until no pair outside the graph violates the
    duals."""
    n_a, n_b = pw0.x.shape[0], pw0.y.shape[0]
    pw, flip = _oriented(pw0)
    n_r, n_c = pw.x.shape[0], pw.y.shape[0]
    info: dict[str, Any] = {"knn_passes": 0, "screened": bool(screened)}
    K, k = _list_length(n_r, n_c, k, k_list, memory_budget, screened)
    graph = _candidate_graph(pw, delta, k, K, screened, stages, info)
    info.update(k=int(min(graph.k, n_c)), k_list=int(min(graph.K, n_c)))
    sa, pruned = (_pruned(graph.g, graph.mm, n_r, n_c) if graph.complete
                  else (graph.sa, 0))
    tol = rtol * _scale(sa.cost)
    sa.free_tol = tol  # edges the certificate tolerates free no row when added
    rep = _Repair(known=np.full(n_r, -np.inf), risen=np.zeros(n_c, bool),
                  t_solve=graph.t_solve)
    certified = _repair_rounds(pw, sa, graph.lists, rep, graph.complete, delta, tol,
                               max_rounds, stages)
    info.update(rounds=rep.rounds, restarts=rep.restarts, repaired_edges=rep.repaired,
                near_edges=rep.near,
                scanned_rows=rep.scanned, pruned_edges=pruned, round_log=rep.log,
                seconds_solve=round(rep.t_solve, 3), seconds_certify=round(rep.t_cert, 3))
    info["seconds_knn"] = round(info["seconds_knn"], 3)
    _log.info("k-NN %.1f s, solve %.1f s, certificate %.1f s, %d rounds: %s", info["seconds_knn"],
              rep.t_solve, rep.t_cert, rep.rounds, "certified" if certified else "NOT certified")
    link, cst = _result(sa, flip, n_a, n_b)
    res = Matching(link, cst, float(np.nansum(cst)), certified, "sparse", info["k"],
                   sa.n_edges, n_r * tol, info)
    if ties == "expected":
        tight = sa.reduced_costs() <= tol
        extra = None if graph.complete else _tight_outside(pw, sa, graph.lists, delta, tol)
        _candidates(res, sa, tight, extra, flip, n_a, tol)
    return res


def _list_length(n_r: int, n_c: int, k: int, k_list: int, memory_budget: int,
                 screened: bool = False) -> tuple[int, int]:
    """(K, k): the k-NN list length within the memory budget, at least MIN_K, and the
    graph degree, which starts at most at the list length. Exact lists: 16 bytes per
    entry (forward lists, one backward copy per thread and the merged one); screened
    lists: 12 per entry in both directions and the backward log (LIST_MEAN of the width,
    8 bytes an entry, and 4 more while it is grouped)."""
    per_k = knn_entry_bytes(n_r, n_c, screened, nb.get_num_threads(), LIST_MEAN)
    K = int(max(min(MIN_K, k_list), min(k_list, memory_budget // per_k)))
    return K, min(k, K)


@dataclass
class _Graph:
    """The candidate graph of step 1 and the solver state on it."""

    lists: _Lists
    g: tuple                        # CSR (indptr, indices, costs)
    complete: bool                  # the graph holds every allowed pair
    mm: np.ndarray | None           # a maximum matching (complete graphs)
    sa: SparseAssignment | None     # solved on the graph (incomplete graphs)
    k: int
    K: int
    t_solve: float


def _candidate_graph(pw: Pairwise, delta: float, k: int, K: int, screened: bool,
                     stages: Stages, info: dict[str, Any]) -> _Graph:
    """Step 1 (and the first solve): the union of the first ``k`` entries of both k-NN
    lists, doubling k until the graph has a perfect matching; lists are recomputed only
    when k outgrows them."""
    n_r, n_c = pw.x.shape[0], pw.y.shape[0]
    lists = spine = None
    t_solve = 0.0
    mm = sa = None
    while True:
        if lists is None or k > K:
            K = max(K, k)
            t0 = time.perf_counter()
            cb = stages.stage(0, 600)
            nn = (knn_thresholds(pw, K, mean=LIST_MEAN * K, progress=cb) if screened
                  else knn(pw, min(K, n_c), min(K, n_r), progress=cb))
            info["knn_passes"] += 1
            info["seconds_knn"] = info.get("seconds_knn", 0.0) + time.perf_counter() - t0
            _log.info("k-NN lists (k = %d): %.1f s", K, info["seconds_knn"])
            lists = _Lists(nn, pw.root, delta)
            del nn  # the lists hold what they need
        g, complete = lists.graph(k)  # frees the lists' entries when k covers them
        if not complete and SPINE:
            if spine is None:  # the same edges whatever k: computed once
                spine = _spine(pw, delta)
            g = merge_into(*g, *spine)  # in the room the graph's arrays were made with
        if complete:
            full, mm = has_full_matching(g[0], g[1], n_c)
            if not full:
                raise _no_matching(pw, delta, False, int((mm >= 0).sum()))
            break
        # no separate matching check here (Hopcroft–Karp costs as much as the solve at
        # 10^7 edges): the solver itself reports a graph without a perfect matching
        sa = SparseAssignment(*g, n_c)
        t0 = time.perf_counter()
        ok = sa.solve(stages.stage(600, 800))
        t_solve += time.perf_counter() - t0
        if ok:
            break
        k *= 2  # the union graph is too thin for a perfect matching: widen it
    return _Graph(lists, g, complete, mm, sa, k, K, t_solve)


def _spine(pw: Pairwise, delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A perfect matching to add to the candidate graph (CSR): both files ranked along the
    first principal direction of A and paired by rank (rows with the columns at the same
    quantile), the one-dimensional optimal transport along that direction. k-NN lists at
    large n can leave regions where one file is denser without a perfect matching (the
    optimum moves mass farther than the lists reach); with these edges the graph always
    has one, and the certificate adds the long edges the optimum needs. Edges beyond Δ
    are left out."""
    n_r, n_c = pw.x.shape[0], pw.y.shape[0]
    rng = np.random.default_rng(0)
    smp = pw.x[rng.choice(n_r, min(n_r, 20_000), replace=False)]
    smp = smp - smp.mean(axis=0)
    d = np.linalg.svd(smp, full_matrices=False)[2][0]
    ra = np.argsort(pw.x @ d, kind="stable")
    rb = np.argsort(pw.y @ d, kind="stable")
    cols = rb[(np.arange(n_r) * n_c) // n_r]
    cost = pair_costs(pw, ra, cols)
    # one edge per row (ra is a permutation): the CSR directly, without to_csr's sort
    col_of, cost_of = np.empty(n_r, np.int64), np.empty(n_r)
    col_of[ra], cost_of[ra] = cols, cost
    ok = cost_of <= delta
    indptr = np.zeros(n_r + 1, np.int64)
    np.cumsum(ok, out=indptr[1:])
    return indptr, col_of[ok], cost_of[ok]


def _pruned(g: tuple, mm: np.ndarray, n_r: int, n_c: int) -> tuple[SparseAssignment, int]:
    """A complete graph (every allowed pair) pruned of the edges in no perfect matching
    (Tassa 2012): its solver and the number of edges pruned."""
    keep = allowed_edges(g[0], g[1], mm, n_c)
    rws = np.repeat(np.arange(n_r), np.diff(g[0]))
    g = to_csr(rws[keep], g[1][keep], g[2][keep], n_r)
    return SparseAssignment(*g, n_c), int((~keep).sum())


@dataclass
class _Repair:
    """State of the certificate-and-repair rounds (steps 2–4).

    ``known[i]``: a lower bound on min_j (c_ij − v_j) over the columns outside the graph
    and outside ``risen``, from an earlier exact scan; it stays valid while v only
    decreases (square warm starts), so a row is rescanned only when its u_i has grown past
    it. After a fresh start the columns whose v rose by more than a small ε join ``risen``
    (checked by exact column scans in every later certificate) and every bound drops by
    the largest rise left: the duals of two flattened optimal solutions barely differ, so
    most bounds survive. ``log``: per round, cumulative seconds solving and certifying,
    rows scanned, columns scanned (risen), edges added, rows freed."""

    known: np.ndarray
    risen: np.ndarray
    v_ref: np.ndarray | None = None
    pw_t: Pairwise | None = None
    rounds: int = 0
    repaired: int = 0
    near: int = 0
    scanned: int = 0
    restarts: int = 0
    t_solve: float = 0.0
    t_cert: float = 0.0
    log: list[tuple] = field(default_factory=list)
    fresh: bool = True  # the duals come from a cold start: flatten them, forget old bounds


def _repair_rounds(pw: Pairwise, sa: SparseAssignment, lists: _Lists, rep: _Repair,
                   complete: bool, delta: float, tol: float, max_rounds: int,
                   stages: Stages) -> bool:
    """Solve, certify, add the violating edges, repeat (steps 2–4); whether the final
    matching is certified optimal for the complete problem."""
    n_r = pw.x.shape[0]
    while True:
        _solve_round(pw, sa, rep, delta, stages)
        if complete:
            return bool(sa.reduced_costs().min(initial=0.0) >= -tol)
        t0 = time.perf_counter()
        if rep.pw_t is None and rep.risen.any():
            rep.pw_t = pw.swapped()  # once: the column scans of every later round use it
        viol, n_scan, n_near = _certify(pw, rep.pw_t, sa, lists, rep.known, rep.risen, delta,
                                        tol, stages)
        rep.t_cert += time.perf_counter() - t0
        rep.scanned += n_scan
        n_add = 0 if viol is None else int(viol[0].shape[0])
        rep.near += n_near
        rep.log.append((round(rep.t_solve, 1), round(rep.t_cert, 1), n_scan,
                        int(rep.risen.sum()), n_add - n_near))
        _log.info("round %d: solve %.1f s, certificate %.1f s so far; %d rows and %d columns "
                  "scanned, %d violating edges (+%d nearly tight)", rep.rounds, *rep.log[-1],
                  n_near)
        if viol is None:
            return _rect_ok(sa) and bool(sa.reduced_costs().min(initial=0.0) >= -tol)
        if rep.rounds >= max_rounds:
            return False
        rep.repaired += viol[0].shape[0]
        rep.v_ref = sa.v.copy()  # the v of this certificate (add_edges lowers u only)
        sa.add_edges(*viol)
        freed = int((sa.col4row < 0).sum()) if sa.started else n_r
        rep.log[-1] += (freed,)
        rep.fresh = sa.started and freed > RESTART_FREE * n_r
        _log.info("round %d: %d rows freed (%s)", rep.rounds, freed,
                  "warm" if not rep.fresh else "rewarm" if freed <= REWARM_FREE * n_r
                  else "fresh start")
        if rep.fresh:
            # many rows freed: their shortest augmenting paths reach far through the
            # flattened duals (their tight edges span every row); from the duals before
            # flattening they stay short, and with very many a fresh auction start is
            # cheaper
            if freed <= REWARM_FREE * n_r:
                sa.rewarm()  # back to the duals before flattening: short augmenting paths
            else:
                sa.restart(keep_prices=True)  # an auction from the last optimal prices
            rep.restarts += 1


def _solve_round(pw: Pairwise, sa: SparseAssignment, rep: _Repair, delta: float,
                 stages: Stages) -> None:
    """Solve on the current graph, then normalise the duals (SparseAssignment.flatten).
    After a cold start: the flattest duals, no bounds. After a fresh start (rewarm or
    restart): the flattest duals, the scan bounds carried over (:func:`_transfer_bounds`),
    then :func:`_anchor`. After a warm start: :func:`_anchor` alone; the warm start only
    lowers v, so the bounds in ``known`` stay valid."""
    t0 = time.perf_counter()
    if not sa.solve(stages.stage(600, 800)):
        raise _no_matching(pw, delta, False)
    if rep.v_ref is None or not sa.square:  # first solve; rectangular ones all restart
        sa.flatten()
        rep.known[:] = -np.inf
    elif rep.fresh:
        sa.flatten()
        _transfer_bounds(rep.known, rep.risen, sa.v - rep.v_ref, np.abs(sa.u).mean())
        _anchor(sa, np.where(rep.risen, sa.v, np.maximum(sa.v, rep.v_ref)))
    else:
        _anchor(sa, rep.v_ref)
    rep.fresh = False
    sa.polish()
    rep.t_solve += time.perf_counter() - t0
    rep.rounds += 1
    _log.info("solve %d: %.2f s (last solve and flattening: %s)", rep.rounds,
              time.perf_counter() - t0,
              ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in sa.phase_times.items()))


def _anchor(sa: SparseAssignment, cap: np.ndarray) -> None:
    """The largest optimal duals with v ≤ ``cap`` (per column): each u_i as small as that
    allows. A re-solve's shortest paths raise u on every row they reach (through the
    flattened duals' tight edges: tens of thousands of rows for a few freed ones), which
    would then be rescanned; with ``cap`` = the last certificate's v (warm starts) or the
    v the carried bounds allow (fresh starts: no column above max(v, v_ref) unless it is
    in ``risen``), no bound is lost and only the rows whose u_i the new matching forces
    up (past their bound) need a new scan."""
    sa.flatten(below=cap)


class _Lists:
    """Both k-NN lists as costs, the candidate graphs built from their first k entries and
    the lower bounds α_i, β_j on the cost of any pair outside them."""

    def __init__(self, nn, root: bool, delta: float):
        self.fi, self.bi = nn.fwd_idx, nn.bwd_idx
        # in place: the lists' scores are not used again (saves a copy of both lists)
        self.fc = _root(nn.fwd_score, root, out=nn.fwd_score)
        self.bc = _root(nn.bwd_score, root, out=nn.bwd_score)
        self.delta = delta
        self.K = self.fi.shape[1]
        self.screened = nn.fwd_bound is not None
        if self.screened:
            # float32 lists: the bounds come from the screen, not from the last entry
            self.alpha = _screen_bound(nn.fwd_bound, root, delta)
            self.beta = _screen_bound(nn.bwd_bound, root, delta)
        else:
            self.alpha = _bound(self.fi, self.fc, delta)
            self.beta = _bound(self.bi, self.bc, delta)

    def _drop(self, forward: bool) -> None:
        """Free one direction's entries once the graph holds all of them (then
        :meth:`below` finds nothing outside it); the bounds α, β stay."""
        def none(a: np.ndarray) -> np.ndarray:
            return np.empty((a.shape[0], 0), a.dtype)

        if forward:
            self.fi, self.fc = none(self.fi), none(self.fc)
        else:
            self.bi, self.bc = none(self.bi), none(self.bc)

    def below(self, u: np.ndarray, v: np.ndarray, thr: float
              ) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of the list entries within Δ with reduced cost c − u_i − v_j < thr
        (both directions, on the lists' 2-D arrays)."""
        fbad = (self.fi >= 0) & (self.fc <= self.delta)
        fbad &= self.fc - u[:, None] - v[np.maximum(self.fi, 0)] < thr
        bbad = (self.bi >= 0) & (self.bc <= self.delta)
        bbad &= self.bc - v[:, None] - u[np.maximum(self.bi, 0)] < thr
        fr, fq = np.nonzero(fbad)
        bc, bq = np.nonzero(bbad)
        return (np.concatenate([fr, self.bi[bc, bq]]),
                np.concatenate([self.fi[fr, fq], bc]))

    def graph(self, k: int):
        """CSR union graph of the first k entries, and whether it holds every allowed pair
        (then it is the whole problem). When k covers the whole lists, each direction's
        entries are freed as soon as they are copied (only the bounds are used again):
        the build's peak then holds the two halves and their union, not the lists too
        (this build is the peak of the whole solve at large n)."""
        n_r, whole = self.fi.shape[0], k >= self.K
        rows = _rows_csr(self.fi[:, :k], self.fc[:, :k], self.delta)
        if whole:
            self._drop(forward=True)
        cols = _cols_csr(self.bi[:, :k], self.bc[:, :k], self.delta, n_r)
        if whole:
            self._drop(forward=False)
        # with room for the spine and the repair rounds' edges (merged in place)
        g = merge_csr(*rows, *cols, room=GRAPH_ROOM)
        del rows, cols
        if whole:
            a, b = self.alpha, self.beta
        elif self.screened:
            # outside the first k: the rest of the list (sorted by exact cost) or beyond
            a = _prefix_bound(self.fi, self.fc, k, self.alpha, self.delta)
            b = _prefix_bound(self.bi, self.bc, k, self.beta, self.delta)
        else:
            a = _bound(self.fi[:, :k], self.fc[:, :k], self.delta)
            b = _bound(self.bi[:, :k], self.bc[:, :k], self.delta)
        return g, bool(np.isinf(a).all() or np.isinf(b).all())


def _rows_csr(idx: np.ndarray, cost: np.ndarray, delta: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of the forward lists (row i → idx[i]), entries within Δ, columns sorted."""
    ok = (idx >= 0) & (cost <= delta)
    ptr = np.zeros(idx.shape[0] + 1, np.int64)
    np.cumsum(ok.sum(axis=1), out=ptr[1:])
    del ok
    # a row's entries are distinct columns: sorting each row in place of a global argsort
    # gives the same CSR without n·k-sized temporaries
    cols, costs = np.empty(ptr[-1], np.int64), np.empty(ptr[-1])
    _fill_rows(idx, cost, delta, ptr, cols, costs)
    return ptr, cols, costs


@nb.njit(parallel=True, cache=True)
def _fill_rows(idx, cost, delta, ptr, cols, costs):
    """Each row's entries within Δ into its CSR slot, by insertion in column order (rows
    in parallel: each has its own slot)."""
    for i in nb.prange(idx.shape[0]):
        p0 = ptr[i]
        cnt = 0
        for q in range(idx.shape[1]):
            j = idx[i, q]
            c = cost[i, q]
            if j >= 0 and c <= delta:
                p = p0 + cnt
                while p > p0 and cols[p - 1] > j:
                    cols[p] = cols[p - 1]
                    costs[p] = costs[p - 1]
                    p -= 1
                cols[p] = j
                costs[p] = c
                cnt += 1


def _cols_csr(idx: np.ndarray, cost: np.ndarray, delta: float, n_rows: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR over rows of the backward lists (column j → rows idx[j]), entries within Δ: a
    counting sort by row, columns ascending within each row since j is visited in order."""
    ok = (idx >= 0) & (cost <= delta)
    ptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(idx[ok], minlength=n_rows), out=ptr[1:])
    cols, costs = np.empty(ptr[-1], np.int64), np.empty(ptr[-1])
    _fill_transposed(idx, cost, ok, ptr.copy(), cols, costs)
    return ptr, cols, costs


@nb.njit(cache=True)
def _fill_transposed(idx, cost, ok, nxt, cols, costs):
    for j in range(idx.shape[0]):
        for q in range(idx.shape[1]):
            if ok[j, q]:
                i = idx[j, q]
                cols[nxt[i]] = j
                costs[nxt[i]] = cost[j, q]
                nxt[i] += 1


def _root(score: np.ndarray, root: bool, out: np.ndarray | None = None) -> np.ndarray:
    """Scores as costs: √max(s, 0) when ``root`` (into ``out`` if given), else the
    scores."""
    if not root:
        return score
    if out is None:
        return np.sqrt(np.maximum(score, 0.0))
    np.maximum(score, 0.0, out=out)
    return np.sqrt(out, out=out)


def _bound(idx: np.ndarray, cost: np.ndarray, delta: float) -> np.ndarray:
    """Lower bound on the cost of any pair outside a node's list: its last list cost; +inf
    when the list is not full (it holds every finite pair) or the bound exceeds Δ."""
    if idx.shape[1] == 0:
        return np.full(idx.shape[0], -np.inf)
    last = cost[:, -1]
    return np.where((idx[:, -1] < 0) | (last > delta), np.inf, last)


def _screen_bound(bound: np.ndarray, root: bool, delta: float) -> np.ndarray:
    """A screened list's bound (score units) as a cost bound; +inf beyond Δ."""
    b = bound.copy()
    fin = np.isfinite(b)
    b[fin] = _root(b[fin], root)
    return np.where(b > delta, np.inf, b)


def _prefix_bound(idx: np.ndarray, cost: np.ndarray, k: int, full: np.ndarray,
                  delta: float) -> np.ndarray:
    """Lower bound outside the first k entries of a list sorted by exact cost: entry k's
    cost, or the bound of the whole list."""
    nxt = np.where(idx[:, k] < 0, np.inf, cost[:, k])
    b = np.minimum(nxt, full)
    return np.where(b > delta, np.inf, b)


def _suspects(alpha, beta, u, v, tol) -> np.ndarray:
    """Rows that may hold a pair (i, j) outside the lists with
    max(α_i, β_j) < u_i + v_j − tol (a possible violation of c̄_ij ≥ −tol). A pair is a
    suspect iff v_j > α_i − u_i + tol and β_j − v_j < u_i − tol: a 2-D dominance query,
    answered by sorting the columns by v and a suffix minimum."""
    with np.errstate(invalid="ignore"):
        o = np.argsort(v, kind="stable")
        suf = np.minimum.accumulate((beta - v)[o][::-1])[::-1]
        pos = np.searchsorted(v[o], alpha - u + tol, side="right")
        has = pos < v.shape[0]
        rows = np.zeros(u.shape[0], bool)
        rows[has] = suf[pos[has]] < (u - tol)[has]
    return np.flatnonzero(rows)


def _transfer_bounds(known: np.ndarray, risen: np.ndarray, rise: np.ndarray,
                     scale: float) -> None:
    """Carry the row bounds ``known`` (lower bounds of c_ij − v_j outside the graph and
    outside ``risen``) over a change of v by ``rise``: the columns that rose by more than
    ε join ``risen`` and the bounds drop by the largest rise of the others (≤ ε), with ε
    the smallest level from RISE_EPS·scale up that keeps ``risen`` within RISEN_MAX of
    the columns. When ε exceeds RISE_CAP·scale (the bounds would then hold for few rows)
    or ``risen`` is already full, the bounds are dropped instead."""
    room = int(RISEN_MAX * risen.shape[0]) - int(risen.sum())
    rest = rise[~risen]
    eps = RISE_EPS * scale
    if 0 <= room < rest.shape[0]:
        # the (room + 1)-th largest rise of the others: at most ``room`` lie above it
        eps = max(eps, float(np.partition(rest, rest.shape[0] - room - 1)[rest.shape[0] - room - 1]))
    if room < 0 or eps > RISE_CAP * scale:
        known[:] = -np.inf
        risen[:] = False
        return
    risen |= rise > eps
    known -= max(float(rise[~risen].max(initial=0.0)), 0.0)


def _scan_pairs(scan, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scanned item, partner) pairs of the entries a gated scan kept, for the scanned
    items selected by ``keep`` (all by default)."""
    idx, rows = (scan.idx, scan.rows) if keep is None else (scan.idx[keep], scan.rows[keep])
    hit = idx >= 0
    return np.repeat(rows, idx.shape[1])[hit.ravel()], idx[hit]


def _certify(pw: Pairwise, pw_t: Pairwise | None, sa: SparseAssignment, lists: _Lists,
             known: np.ndarray, risen: np.ndarray, delta: float, tol: float, stages: Stages
             ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray] | None, int, int]:
    """Check c̄_ij ≥ −tol for every allowed pair. Returns (edges (rows, cols, costs) to
    add: the violating ones and, from scanned rows without a violation, those found
    inside the scan's slack window; or None when certified; number of rows scanned; number
    of those slack-window edges). Pairs in ``risen``
    columns are checked by column scans on ``pw_t`` = ``pw.swapped()`` (the row bounds
    ``known`` do not cover them)."""
    u, v = sa.u, sa.v
    # 1. list entries left out of the graph: their costs are known
    r, c = lists.below(u, v, -tol)
    vr, vc = [r], [c]
    # 2. pairs outside the lists: exact scans of the suspect rows
    n_scan, bad, near = _row_scans(pw, u, v, lists, known, delta, tol, stages)
    vr.append(bad[0])
    vc.append(bad[1])
    # 3. the risen columns, from the column side (pw_t: the swapped problem): c_ij − u_i <
    # v_j − tol among the rows with α_i − u_i < v_j − tol and u_i > β_j − v_j + tol
    cols = np.flatnonzero(risen)
    if cols.size:
        theta = v[cols] - tol
        cscan, _ = scan_gated(pw_t, cols, u, lists.alpha - u, theta,
                              lists.beta[cols] - theta, cmax=delta, cap=SCAN_CAP,
                              screened=lists.screened)
        c, r = _scan_pairs(cscan, cscan.min < theta)
        vr.append(r)
        vc.append(c)
    if not sum(x.size for x in vr):
        return None, n_scan, 0
    # rows whose scan met columns inside the slack window but none violating: their
    # bound is that nearly tight value, which the next round's small rise of u_i would
    # pass; they join the graph with the violating edges, and the bound moves past them
    rows_near, nxt_near, (r, c) = near
    known[rows_near] = nxt_near
    r, c = np.concatenate([*vr, r]), np.concatenate([*vc, c])
    key = np.unique(r * np.int64(pw.y.shape[0]) + c)
    r, c = key // pw.y.shape[0], key % pw.y.shape[0]
    return (r, c, pair_costs(pw, r, c)), n_scan, int(near[2][0].size)


def _row_scans(pw: Pairwise, u: np.ndarray, v: np.ndarray, lists: _Lists, known: np.ndarray,
               delta: float, tol: float, stages: Stages) -> tuple[int, tuple, tuple]:
    """Step 2 of the certificate: only the suspects (max(α_i, β_j) < u_i + v_j − tol) can
    violate, and of those only the rows whose bound ``known`` no longer covers u_i; each
    scans exactly the columns with β_j − v_j < u_i − tol and v_j > α_i − u_i + tol.
    Updates ``known`` and returns (rows scanned, violating (rows, cols), and the rows
    without a violation whose scan met pairs inside the slack window: (rows, their bound
    past those pairs, (rows, cols) of the pairs))."""
    empty = np.empty(0, np.int64)
    rows = _suspects(lists.alpha, lists.beta, u, v, tol)
    rows = rows[known[rows] < u[rows] - tol]
    if not rows.size:
        return 0, (empty, empty), (empty, np.empty(0), (empty, empty))
    # scanning to a margin above u_i − tol leaves a bound that survives small rises
    # of u_i in the next rounds (most rows' u_i creeps up a little)
    theta = u[rows] - tol + SCAN_SLACK * (np.abs(u[rows]) + tol)
    cap = int(np.clip(SCAN_EDGES // rows.size, SCAN_CAP, SCAN_CAP_MAX))
    scan, nxt = scan_gated(pw, rows, v, lists.beta - v, theta, lists.alpha[rows] - theta,
                           cmax=delta, cap=cap, screened=lists.screened,
                           progress=stages.stage(800, 1000))
    # min(θ_i, exact minimum): a lower bound of c_ij − v_j outside the lists
    known[rows] = scan.min
    bad = scan.min < u[rows] - tol
    # the row's other columns: at least its (CAP+1)-th value, or θ_i
    known[rows[bad]] = nxt[bad]
    near = (scan.count > 0) & ~bad
    return rows.size, _scan_pairs(scan, bad), (rows[near], nxt[near], _scan_pairs(scan, near))


def _tight_outside(pw: Pairwise, sa: SparseAssignment, lists: _Lists, delta: float,
                   tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs outside the graph with c̄ ≤ tol (possible co-optimal edges): list entries by
    their known costs, the rest by the bound with the tolerance's sign flipped and an exact
    scan of the suspect rows."""
    u, v = sa.u, sa.v
    r, c = lists.below(u, v, np.nextafter(tol, np.inf))  # c̄ ≤ tol
    out_r, out_c = [r], [c]
    rows = _suspects(lists.alpha, lists.beta, u, v, -tol)
    if rows.size:
        # c_ij − v_j ≤ u_i + tol, among the columns with β_j − v_j ≤ u_i + tol and
        # v_j ≥ α_i − u_i − tol (the gated scan's tests are strict)
        theta = np.nextafter(u[rows] + tol, np.inf)
        gate = np.nextafter(lists.alpha[rows] - u[rows] - tol, -np.inf)
        cap = 16
        while True:
            s, _ = scan_gated(pw, rows, v, lists.beta - v, theta, gate, cmax=delta, cap=cap,
                              screened=lists.screened)
            if s.count.max(initial=0) <= cap:
                break
            cap = int(s.count.max())
        r, c = _scan_pairs(s)
        out_r.append(r)
        out_c.append(c)
    return np.concatenate(out_r), np.concatenate(out_c)


def _candidates(res: Matching, sa: SparseAssignment, tight: np.ndarray,
                extra: tuple[np.ndarray, np.ndarray] | None, flip: bool, n_a: int,
                tol: float) -> None:
    """C(a) = partners of a over all minimum-cost perfect matchings: tight edges allowed in
    the tight subgraph (Tassa 2012); in rectangular problems only columns with v_j = 0 can
    be left free by an optimal matching."""
    rows = np.repeat(np.arange(sa.n_rows), np.diff(sa.indptr))[tight]
    cols = sa.indices[tight]
    if extra is not None and extra[0].size:
        rows = np.concatenate([rows, extra[0]])
        cols = np.concatenate([cols, extra[1]])
    ip, ix, _ = to_csr(rows, cols, np.zeros(rows.shape[0]), sa.n_rows)
    ok = allowed_edges(ip, ix, sa.col4row, sa.n_cols, releasable=sa.v >= -tol)
    r = np.repeat(np.arange(sa.n_rows), np.diff(ip))[ok]
    c = ix[ok]
    if flip:
        r, c = c, r
    order = np.lexsort((c, r))
    r, c = r[order], c[order]
    res.cand_indptr = np.zeros(n_a + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n_a), out=res.cand_indptr[1:])
    res.cand_indices = c
    res.info["ambiguous"] = int((np.diff(res.cand_indptr) > 1).sum())
