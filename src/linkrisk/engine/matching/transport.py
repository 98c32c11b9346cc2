"""Global matching of files with many repeated records, as a transport between patterns.

Categorical files repeat themselves: Adult's 32,561 records hold 8,688 distinct
combinations of its 8 quasi-identifiers. Records with equal values have equal cost rows,
so the minimum-cost perfect matching (the linear assignment problem of
:mod:`.matching`) is equivalent to the *transportation problem* between the distinct
patterns p of A (supply s_p = its multiplicity) and q of B (demand d_q):

    min Σ_pq c_pq f_pq   subject to   Σ_q f_pq = s_p,  Σ_p f_pq = d_q,  f ≥ 0,

whose optimal vertex f is integral, and any split of the records of p among the records
of q in amounts f_pq is an optimal matching (Kuhn 1955; Dantzig 1951). Record-level
solvers struggle here: every tie is a degenerate pivot and k-NN lists of tied records all
name the same few partners.

Two reductions make it small:

1. **Common mass stays.** For a metric cost (c_pp = 0, triangle inequality — Hamming, L1,
   Euclidean, nominal tables) an optimal plan sends min(s_p, d_p) from every pattern
   present in both files to itself at cost 0 (the Kantorovich–Rubinstein dual depends
   only on s − d). What is left is a transport from the patterns with surplus to the
   patterns with deficit — two disjoint, smaller sets.
2. That residual problem is solved exactly by a network simplex (POT's ``ot.emd``,
   Flamary et al. 2021, on its dense cost matrix, which must fit the memory budget).

**Certificate.** The reduction is not trusted: from the residual duals v_t, dual
potentials for the whole pattern problem are built by c-transforms,
u_p = min_t (c_pt − v_t) over the deficit patterns t, then v_q = min_p (c_pq − u_p) over
all p, which are feasible by construction (c_pq − u_p − v_q ≥ 0 for every pair). The plan
is optimal when complementary slackness holds on every arc it uses,
c_pq − u_p − v_q ≤ tol; if it fails (a cost that is not a metric), the whole pattern
problem goes to the network simplex and is checked against its own duals.

Records are then matched within each arc (p, q) in a seeded random order, so the
reported optimal matching does not favour the identity.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..budget import transport_bytes
from ..nearest.kernels import Pairwise
from .knn import dense_costs, pair_costs, scan_gated

#: use the pattern solver when the distinct records are at most this fraction of all
#: records (few repeats: the record-level solver is as good)
MAX_DISTINCT_FRACTION = 0.5


def available() -> bool:
    try:
        import ot  # noqa: F401
    except ImportError:
        return False
    return True


#: one file's distinct records: (distinct rows, first record of each, pattern of each
#: record, multiplicities)
Side = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: both files' (x, y)
Patterns = tuple[Side, Side]


def _side(z: np.ndarray) -> Side:
    u, first, inv, cnt = np.unique(z, axis=0, return_index=True, return_inverse=True,
                                   return_counts=True)
    return u, first, inv.ravel(), cnt


def patterns(pw: Pairwise) -> Patterns:
    """The distinct records of both files, computed once for :func:`repetitive` and
    :func:`pattern_matching`."""
    return _side(pw.x), _side(pw.y)


def may_repeat(pw: Pairwise) -> bool:
    """False when the files certainly have too many distinct records for the pattern
    solver (:func:`repetitive`): a file has at least as many distinct records as its first
    attribute has distinct values, which one 1-D sort finds (far cheaper than the
    row-wise sort of :func:`patterns`)."""
    if pw.x.shape[1] == 0:
        return True
    n = pw.x.shape[0] + pw.y.shape[0]
    d = np.unique(pw.x[:, 0]).shape[0] + np.unique(pw.y[:, 0]).shape[0]
    return d <= MAX_DISTINCT_FRACTION * n


def repetitive(pats: Patterns) -> bool:
    """Whether both files repeat their records enough for the pattern solver to pay."""
    n = pats[0][2].shape[0] + pats[1][2].shape[0]
    d = pats[0][0].shape[0] + pats[1][0].shape[0]
    return d <= MAX_DISTINCT_FRACTION * n


def _sub(pw: Pairwise, rows: np.ndarray, cols: np.ndarray) -> Pairwise:
    """The pair of files restricted to some rows of x and of y (same metric, same bits)."""
    y = pw.y[cols]
    return dataclasses.replace(pw, x=pw.x[rows], y=y, yt=np.ascontiguousarray(y.T),
                               kxx=pw.kxx[rows], kyy=pw.kyy[cols])


def _row_min(pw: Pairwise, off: np.ndarray) -> np.ndarray:
    """min_j (c_ij − off_j) for every row i (a c-transform), blockwise."""
    n = pw.x.shape[0]
    s, _ = scan_gated(pw, np.arange(n), off, np.zeros(pw.y.shape[0]), np.full(n, np.inf),
                      np.full(n, -np.inf), cap=0)
    return s.min


def _emd(s: np.ndarray, d: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact transport plan (network simplex): the arcs (rows, cols, flows) and the
    column duals."""
    import ot

    plan, log = ot.emd(s.astype(np.float64), d.astype(np.float64), c,
                       numItermax=max(10**8, 50 * c.size), log=True)
    if log.get("warning"):
        raise RuntimeError(f"network simplex did not finish: {log['warning']}")
    r, q = np.nonzero(plan > 0.5)
    return (r, q, np.rint(plan[r, q]).astype(np.int64)), np.asarray(log["v"], np.float64)


def _slack_ok(pat: Pairwise, cols: np.ndarray, v_cols: np.ndarray, p: np.ndarray,
              q: np.ndarray, arc_cost: np.ndarray, tol: float) -> bool:
    """Dual potentials from column duals on ``cols`` by two c-transforms (feasible by
    construction), and complementary slackness on the plan's arcs (p, q)."""
    n_a = pat.x.shape[0]
    u = (_row_min(_sub(pat, np.arange(n_a), cols), v_cols) if cols.size
         else np.zeros(n_a))
    v = _row_min(pat.swapped(), u)
    ok = np.isfinite(u).all() and np.isfinite(v).all()
    return bool(ok and (arc_cost - u[p] - v[q] <= tol).all())


def _split(ia: np.ndarray, ib: np.ndarray, p: np.ndarray, q: np.ndarray, f: np.ndarray,
           seed: int) -> np.ndarray:
    """A record matching realising the plan: the records of pattern p (in a seeded random
    order) go, f_pq at a time, to records of q (likewise shuffled). link[i] = row of B."""
    rng = np.random.default_rng(seed)
    n = ia.shape[0]
    oa = np.lexsort((rng.random(n), ia))
    ob = np.lexsort((rng.random(n), ib))

    def starts(pat: np.ndarray, inv: np.ndarray) -> np.ndarray:
        # where each arc's records begin in its pattern's block of the shuffled order
        block = np.concatenate([[0], np.cumsum(np.bincount(inv))])[:-1]
        o = np.argsort(pat, kind="stable")
        ex = np.cumsum(f[o]) - f[o]
        head = np.r_[True, pat[o][1:] != pat[o][:-1]]
        base = np.maximum.accumulate(np.where(head, ex, 0))
        out = np.empty(pat.shape[0], np.int64)
        out[o] = block[pat[o]] + ex - base
        return out

    sa, sb = starts(p, ia), starts(q, ib)
    arc = np.repeat(np.arange(p.shape[0]), f)
    t = np.arange(arc.shape[0]) - np.repeat(np.cumsum(f) - f, f)
    link = np.full(n, -1, np.int64)
    link[oa[sa[arc] + t]] = ob[sb[arc] + t]
    return link


def pattern_matching(pw: Pairwise, pats: Patterns, *, seed: int, rtol: float,
                     memory_budget: int
                     ) -> tuple[np.ndarray, np.ndarray, bool, float, dict[str, Any]] | None:
    """Minimum-cost perfect matching of equally many rows of ``pw.x`` and ``pw.y`` (whose
    distinct records are ``pats``, see :func:`patterns`) through the pattern transport. Returns (link, cost per row, certified, tol, info), or None when
    the transport does not fit ``memory_budget`` (the caller then solves per record)."""
    n = pw.x.shape[0]
    if pw.y.shape[0] != n:
        raise ValueError("pattern_matching needs files of equal size")
    t0 = time.perf_counter()
    (pa, fa, ia, sa), (pb, fb, ib, sb) = pats
    pat = _sub(pw, fa, fb)
    # 1. common mass: patterns present in both files stay where they are
    _, inv = np.unique(np.concatenate([pa, pb]), axis=0, return_inverse=True)
    inv = inv.ravel()
    ga, gb = inv[:pa.shape[0]], inv[pa.shape[0]:]
    b_of = np.full(int(inv.max()) + 1, -1, np.int64)
    b_of[gb] = np.arange(pb.shape[0])
    shared = np.flatnonzero(b_of[ga] >= 0)
    twin = b_of[ga[shared]]
    keep = np.minimum(sa[shared], sb[twin])
    res_a, res_b = sa.copy(), sb.copy()
    res_a[shared] -= keep
    res_b[twin] -= keep
    src, snk = np.flatnonzero(res_a > 0), np.flatnonzero(res_b > 0)
    if transport_bytes(src.size, snk.size) > memory_budget:
        return None
    # 2. the residual transport, exactly
    p, q, f = [shared], [twin], [keep]
    v_t = np.zeros(0)
    if src.size:
        (r, c, w), v_t = _emd(res_a[src], res_b[snk], dense_costs(_sub(pat, src, snk)))
        p, q, f = p + [src[r]], q + [snk[c]], f + [w]
    p, q, f = np.concatenate(p), np.concatenate(q), np.concatenate(f).astype(np.int64)
    t_solve = time.perf_counter() - t0
    # 3. certificate: c-transform potentials, complementary slackness on the used arcs
    arc_cost = pair_costs(pat, p, q)
    tol = rtol * max(float(np.abs(arc_cost).max(initial=0.0)), 1.0)
    certified = _slack_ok(pat, snk, v_t, p, q, arc_cost, tol)
    full = False
    if not certified and transport_bytes(pa.shape[0], pb.shape[0]) <= memory_budget:
        # the reduction did not hold (the cost is not a metric): the whole pattern problem
        (p, q, f), v_all = _emd(sa, sb, dense_costs(pat))
        arc_cost = pair_costs(pat, p, q)
        certified = _slack_ok(pat, np.arange(pb.shape[0]), v_all, p, q, arc_cost, tol)
        full = True
    if ((np.bincount(p, f, pa.shape[0]) != sa).any()
            or (np.bincount(q, f, pb.shape[0]) != sb).any()):
        raise RuntimeError("pattern transport: the plan does not match the multiplicities")
    link = _split(ia, ib, p, q, f, seed)
    cost = pair_costs(pat, ia, ib[link])
    info = {"patterns": [int(pa.shape[0]), int(pb.shape[0])],
            "moved": int(res_a.sum()), "residual_patterns": [int(src.size), int(snk.size)],
            "full_transport": full, "seconds_transport": round(t_solve, 3),
            "seconds_certify": round(time.perf_counter() - t0 - t_solve, 3)}
    return link, cost, certified, tol, info
