"""prl's weights and classification: agreement weights, Fellegi–Sunter thresholds, the
grid of the one-to-one assignment and the assignment itself.

Weights (bits): w_j = log2(m_j/u_j) when agreeing, log2((1−m_j)/(1−u_j)) otherwise;
w = Σ_j w_j.

Classification (Fellegi & Sunter's optimal rule, without the randomisation at the
boundary): the 2^m patterns are ordered by weight; the linked patterns (LP) are the
largest set of top-weight patterns whose u-mass (probability of a link given a non-match)
is ≤ ``max_fp``; the non-linked ones (NP) the largest set of bottom-weight patterns, not in
LP, whose m-mass (probability of a non-link given a match) is ≤ ``max_fn``; the rest are
clerical (CP). Patterns of equal weight are never split. Pairs with w ≥ ``upper_threshold``
are LP, w ≤ ``lower_threshold`` NP. With missing comparisons the patterns are (compared,
agreeing) pairs (:func:`missing_thresholds`).

``one_to_one=True`` links by a one-to-one assignment maximising the total weight
(:func:`assignment_sets`: dense n×n' cost matrix, bounded by the memory budget); a record
then counts as re-identified when it is assigned its true image. The assignment's costs
are the weights rounded to a grid (:func:`grid_scores`: a power of two 2^-30 of the
weights' range), so that weights equal in exact arithmetic are equal, a weight moved by a
few ulps (numpy's log/exp and BLAS give other last bits on AVX2 and AVX-512) gives the
same matrix, and the seeded order alone picks among the optimal assignments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.nearest import NearestSets
from ...errors import LinkriskError
from ..base import LinkContext
from .comparison import Comparison, missing_scores, true_patterns
from .em import EMFit


def agreement_weights(m: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w_agree, w_disagree) in bits."""
    return np.log2(m / u), np.log2((1 - m) / (1 - u))


def pattern_table(values_agree: np.ndarray, values_disagree: np.ndarray) -> np.ndarray:
    """v[S] = Σ_j (agree_j if j ∈ S else disagree_j), summed in attribute order starting
    from 0.0 — the same floating-point sum as the engine's ``mixed`` kernel."""
    v = np.zeros(1)
    for j in range(len(values_agree)):
        v = np.concatenate([v + values_disagree[j], v + values_agree[j]])
    return v


#: the one-to-one assignment's grid: 2^-GRID_BITS of the weights' range (power of two)
GRID_BITS = 30


def grid_scores(wa: np.ndarray, wd: np.ndarray) -> np.ndarray:
    """The pattern scores −w on a grid, for the one-to-one assignment: each −w_j rounded to
    a multiple of h = 2^(e − GRID_BITS), R = Σ_j max(|w_agree_j|, |w_disagree_j|) ∈
    [2^(e−1), 2^e) bounding |w|. Every sum of grid values is exact (at most 2^GRID_BITS
    steps per pattern), so the table does not depend on the order of the sums, weights
    equal in exact arithmetic stay equal, and weights moved by a few ulps (another CPU's
    log, exp and matrix products in EM) round to the same values except when one lies
    within those ulps of a rounding boundary (probability ~ ulps·2^GRID_BITS/2^52): the
    cost matrix, and with it the seeded assignment, is the same on every CPU. Scores
    closer than h are treated as equal (h ≤ 2^-29 relative to R, the order of the 10⁻⁹
    tie tolerance of the other paths)."""
    return pattern_table(*grid_weights(wa, wd))


def grid_weights(wa: np.ndarray, wd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-attribute scores (−w_agree, −w_disagree) on :func:`grid_scores`' grid (any
    sum of them, in any order and over any subset of attributes, is exact)."""
    r = float(np.maximum(np.abs(wa), np.abs(wd)).sum())
    if not np.isfinite(r) or r == 0.0:
        return -wa, -wd
    h = np.ldexp(1.0, int(np.frexp(r)[1]) - GRID_BITS)
    return np.round(-wa / h) * h, np.round(-wd / h) * h


def pattern_probs(prob: np.ndarray) -> np.ndarray:
    """P(γ = S) = Π_j prob_j^γ_j (1−prob_j)^(1−γ_j) for all 2^m patterns."""
    v = np.ones(1)
    for pj in prob:
        v = np.concatenate([v * (1 - pj), v * pj])
    return v


@dataclass
class Thresholds:
    upper: float | None       # pairs with w ≥ upper are linked (None: no linked pattern)
    lower: float | None       # pairs with w ≤ lower are non-linked (None: none)
    fp: float                 # P(link | non-match) of the rule
    fn: float                 # P(non-link | match) of the rule
    cls: np.ndarray           # per pattern: 2 LP, 1 CP, 0 NP


def fs_thresholds(w: np.ndarray, pm: np.ndarray, pu: np.ndarray, max_fp: float,
                  max_fn: float) -> Thresholds:
    """Fellegi–Sunter thresholds: LP = top-weight patterns with Σu ≤ max_fp, NP =
    bottom-weight patterns (outside LP) with Σm ≤ max_fn; equal weights never split."""
    for name, v in (("max_fp", max_fp), ("max_fn", max_fn)):
        if not 0 <= v < 1:
            raise LinkriskError(f"{name} must be a probability in [0, 1), got {v!r}")
    order = np.argsort(w, kind="stable")
    ws = w[order]
    # weights equal up to rounding (sums of the same terms in another order) are one level
    new = np.diff(ws) > 1e-9 * np.maximum(1.0, np.abs(ws[1:]))
    lvl = np.concatenate([[0], np.cumsum(new)])
    inv = np.empty(w.size, np.int64)
    inv[order] = lvl
    levels = ws[np.concatenate([[True], new])]      # lowest weight of each level, ascending
    um = np.bincount(inv, pu, minlength=levels.size)
    mm = np.bincount(inv, pm, minlength=levels.size)
    top = np.cumsum(um[::-1])[::-1]          # u-mass of levels ≥ l
    lp = top <= max_fp * (1 + 1e-12)
    k_up = int(np.argmax(lp)) if lp.any() else levels.size  # first linked level
    bot = np.cumsum(mm)                      # m-mass of levels ≤ l
    np_ = (bot <= max_fn * (1 + 1e-12)) & (np.arange(levels.size) < k_up)
    k_lo = int(np.flatnonzero(np_)[-1]) if np_.any() else -1  # last non-linked level
    lvl_cls = np.ones(levels.size, np.int8)
    lvl_cls[k_up:] = 2
    lvl_cls[: k_lo + 1] = 0
    return Thresholds(float(levels[k_up]) if k_up < levels.size else None,
                      float(levels[k_lo]) if k_lo >= 0 else None,
                      float(um[k_up:].sum()), float(mm[: k_lo + 1].sum()), lvl_cls[inv])


def observed_table(observed: np.ndarray, agree: np.ndarray, va: np.ndarray,
                   vd: np.ndarray) -> np.ndarray:
    """v = Σ_j over the compared attributes of (va_j if agreeing else vd_j), summed in
    attribute order from 0.0 (the bits of :func:`pattern_table` on those attributes and of
    the engine's ``mixed`` kernel on the common attributes)."""
    v = np.zeros(observed.shape[0])
    for j in range(len(va)):
        o, g = (observed >> j) & 1, (agree >> j) & 1
        v = v + np.where(o == 1, np.where(g == 1, va[j], vd[j]), 0.0)
    return v


def missing_thresholds(observed: np.ndarray, agree: np.ndarray, counts: np.ndarray,
                       fit: EMFit, wa: np.ndarray, wd: np.ndarray, max_fp: float,
                       max_fn: float) -> tuple[Thresholds, np.ndarray]:
    """:func:`fs_thresholds` with missing comparisons: the patterns are every agreement
    subset S of each compared set O that occurs, P(O, S | class) = P(O) Π_{j∈O} (m_j or
    1 − m_j), P(O) the share of the pairs comparing O (missingness taken independent of
    the class). Returns the thresholds and the class of each counted pattern."""
    m = len(wa)
    sets, inv = np.unique(observed, return_inverse=True)
    share = np.bincount(np.asarray(inv).ravel(), counts.astype(np.float64)) / counts.sum()
    obs_all, agr_all, pm, pu = [], [], [], []
    bit = np.left_shift(1, np.arange(m, dtype=np.int64))
    for o, sh in zip(sets, share, strict=True):
        cols = np.flatnonzero((int(o) >> np.arange(m)) & 1)
        sub = np.arange(1 << cols.size, dtype=np.int64)
        obs_all.append(np.full(sub.size, o, np.int64))
        agr_all.append(((sub[:, None] >> np.arange(cols.size)) & 1) @ bit[cols])
        pm.append(sh * pattern_probs(fit.m[cols]))
        pu.append(sh * pattern_probs(fit.u[cols]))
    obs_all, agr_all = np.concatenate(obs_all), np.concatenate(agr_all)
    w = observed_table(obs_all, agr_all, wa, wd)
    th = fs_thresholds(w, np.concatenate(pm), np.concatenate(pu), max_fp, max_fn)
    key = (obs_all << m) | agr_all
    order = np.argsort(key)
    at = order[np.searchsorted(key[order], (observed << m) | agree)]
    return th, th.cls[at]


def assignment_sets(ctx: LinkContext, cmp: Comparison, score: np.ndarray | None,
                    grid: np.ndarray | None = None,
                    weights: tuple[np.ndarray, np.ndarray] | None = None) -> NearestSets:
    """One-to-one links: a minimum-cost assignment on the dense matrix of −w, with the
    pattern costs ``grid`` (:func:`grid_scores`; ``score`` itself when None); the reported
    scores are ``score``'s. The solver is deterministic and exact ties in ``grid`` make the
    seeded order decide among the optimal assignments, whatever the CPU. Records are
    put in a seeded random order first (the attack's seed), as gdbrl's are: many pairs
    share a weight, and a solver given the files in row order can favour the identity
    among the tied optima (scipy's did: Household after PRAM, 346 correct links against
    ~200 in a random order), which would count an accident of the file's order as
    re-identifications. With missing comparisons (they weigh 0) the costs are computed
    per pair from ``weights`` = (w_agree, w_disagree): each −w_j on the grid
    (:func:`grid_weights`, exact sums in any order), the reported scores unrounded."""
    return assign(cmp, ctx.truth, ctx.seed, ctx.memory_budget, score, grid, weights)


def assign(cmp: Comparison, truth: np.ndarray, seed: int, budget: int,
           score: np.ndarray | None, grid: np.ndarray | None = None,
           weights: tuple[np.ndarray, np.ndarray] | None = None) -> NearestSets:
    """:func:`assignment_sets` on the rows of ``cmp`` with ``truth`` (rows of ``cmp.b``),
    the seed and the memory budget given (one block of a blocked linkage: its rows alone)."""
    from ...engine.budget import dense_assignment_bytes
    from ...engine.matching.assignment import dense_assignment

    n_a, n_b, m = cmp.a.shape[0], cmp.b.shape[0], cmp.a.shape[1]
    need = dense_assignment_bytes(n_a, n_b)
    if need > budget:
        raise LinkriskError(
            f"one_to_one=True needs a dense {n_a}x{n_b} cost matrix (~{need / 2**30:.1f} GiB), "
            "more than the memory budget; raise memory_budget or link fewer records")
    rng = np.random.default_rng(seed)
    pa, pb = rng.permutation(n_a), rng.permutation(n_b)
    ca, cb_ = cmp.a[pa], cmp.b[pb]
    tol = np.where(cmp.tol > 0, cmp.tol, 0.0)
    table = score if grid is None else grid
    cost = np.empty((n_a, n_b))
    step = max(1, (1 << 22) // max(n_b * m, 1))
    if weights is not None:
        wa, wd = weights
        ga, gd = grid_weights(wa, wd)
        for r0 in range(0, n_a, step):
            cost[r0:r0 + step] = missing_scores(ca[r0:r0 + step, None, :], cb_[None, :, :],
                                                 cmp.tol, ga, gd)
    else:
        for r0 in range(0, n_a, step):
            d = np.abs(ca[r0:r0 + step, None, :] - cb_[None, :, :]) <= tol
            cost[r0:r0 + step] = table[(d.astype(np.int64) << np.arange(m)).sum(-1)]
    plink = dense_assignment(cost)
    del cost
    ok_p = plink >= 0
    link = np.full(n_a, -1, np.int64)
    link[pa[ok_p]] = pb[plink[ok_p]]
    mn = np.full(n_a, np.inf)
    linked = np.flatnonzero(link >= 0)
    ts = np.full(n_a, np.inf)
    ok = truth >= 0
    if weights is not None:
        va, vd = -weights[0], -weights[1]
        mn[linked] = missing_scores(cmp.a[linked], cmp.b[link[linked]], cmp.tol, va, vd)
        ts[ok] = missing_scores(cmp.a[ok], cmp.b[truth[ok]], cmp.tol, va, vd)
        return NearestSets(mn, (link >= 0).astype(np.int64),
                           ok & (link == truth) & (link >= 0), ts, link)
    agree = np.abs(cmp.a[linked] - cmp.b[link[linked]]) <= tol
    mn[linked] = score[(agree.astype(np.int64) << np.arange(m)).sum(axis=1)]
    if ok.any():
        # the true partners' costs, from their agreement patterns (the matrix is permuted)
        ts[ok] = score[true_patterns(cmp, truth)[ok]]
    return NearestSets(mn, (link >= 0).astype(np.int64), ok & (link == truth) & (link >= 0),
                       ts, link)
