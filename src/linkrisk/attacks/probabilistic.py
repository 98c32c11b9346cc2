"""Probabilistic record linkage, ``prl`` (Fellegi & Sunter 1969; EM as Jaro 1989, Winkler).

**Comparison vector.** γ(a,b) ∈ {0,1}^m, γ_j = 1 when a and b agree on attribute j:
categorical (nominal or ordinal) attributes agree when the categories are equal; a numeric
attribute agrees when both values fall into the same of ``q`` quantile bins (default 10;
the bin edges are the quantiles of the attacker's file A — the original file in the
default direction — applied to both files; values on an edge go to the upper bin), or,
with ``tol=`` (one value, or {col: tol}, in the attribute's units), when |a−b| ≤ tol.
Pattern index: bit j of the index is γ_j. A comparison with a missing value (either side)
is a third state weighing 0: see "Missing values" below.

**Pattern counts.** EM needs only the number of the n·n' pairs showing each of the 2^m
patterns, computed exactly without enumerating pairs: for every subset S of attributes the
number of pairs agreeing on all of S is Σ_v cnt_A(v)·cnt_B(v) over the value combinations v
on S (one depth-first walk over the subsets, each step refining the previous grouping by
one attribute), and a Möbius inversion over supersets turns "agree on at least S" into
"agree on exactly S". O(2^m·(n+n')) instead of O(n·n'·m). Attributes compared with a
tolerance are not an equivalence relation; then a compiled kernel bins the pattern of
every pair (O(n·n'·m), still without storing pairs).

**EM** under conditional independence: latent match class with proportion p;
m_j = P(γ_j=1 | match), u_j = P(γ_j=1 | non-match); started from p = min(n,n')/(n·n'),
u_j = the overall agreement rate, m_j = max(0.9, (1+u_j)/2); SQUAREM-accelerated EM
iterated until the parameters move less than 1e-10 (``max_iter`` cycles at most). Every
M-step is projected onto m_j ≥ u_j (Winkler's constrained EM: agreeing is at least as
likely for a match as for a non-match) and probabilities are clipped into [1e-9, 1−1e-9]
so weights stay finite. The match proportion p is by default fixed at the known
min(n,n')/(n·n') (``match_proportion="known"``: in a release every record of the smaller
file has its source in the other); ``match_proportion=None`` estimates it too, as Jaro
does. Estimating p over all n·n' pairs is fragile on real categorical files with many
duplicate records and dependent attributes: the conditional-independence likelihood is
then maximised by a large "match" class describing population structure. On the 493
distinct records of Household's 8 QIs, even an *unmasked* copy gets only 38 of 493 records
re-identified, with p known or estimated alike: EM sets m_j = u_j (weight 0) for 5 of the 8
attributes, and an independent EM implementation reaches the same, higher-likelihood,
solution, so this is the model and not a bug. Even with p known, m/u can be far from the
masking's keep probabilities on such files (the independence model does not hold); that is
a property of the method, reported as is (m, u, p in ``Outcome.extra``).
Weights (bits): w_j = log2(m_j/u_j) when agreeing, log2((1−m_j)/(1−u_j)) otherwise;
w = Σ_j w_j.

**Classification** (Fellegi & Sunter's optimal rule, without the randomisation at the
boundary): the 2^m patterns are ordered by weight; the linked patterns (LP) are the
largest set of top-weight patterns whose u-mass (probability of a link given a non-match)
is ≤ ``max_fp``; the non-linked ones (NP) the largest set of bottom-weight patterns, not in
LP, whose m-mass (probability of a non-link given a match) is ≤ ``max_fn``; the rest are
clerical (CP). Patterns of equal weight are never split. Pairs with w ≥ ``upper_threshold``
are LP, w ≤ ``lower_threshold`` NP. ``Outcome.extra`` reports m, u, p, the weights, the
thresholds, the achieved error bounds and the number of pairs in each class (from the
pattern counts).

**Risk measure** (docs/methods.md, Conventions): every a is linked to its maximal-weight candidate set C(a)
(score −w, the common tie rule), correct = χ(true(a) ∈ C(a))/|C(a)|. Since w depends only
on the pattern and is additive, C(a) is found without enumerating pairs when every
attribute's agreement raises the weight (m_j > u_j; attributes with m_j = u_j weigh
nothing and are skipped): the best pattern of a is the maximal-weight subset S on which
some b agrees with a, and the tied sets are whole groups of B (same values on S) — the
same subset walk, O(2^m·(n+n')) (``extra["candidate_search"] = "groups"``). Otherwise the
engine's
``mixed`` metric scores pairs with per-attribute tables of −w_j (exact ties), and with
tolerances a compiled pair kernel does. ``one_to_one=True`` links by a one-to-one
assignment maximising the total weight (dense n×n' cost matrix, bounded by the memory
budget); a record then counts as re-identified when it is assigned its true image. The
assignment's costs are the weights rounded to a grid (:func:`grid_scores`: a power of two
2^-30 of the weights' range), so that weights equal in exact arithmetic are equal, a weight
moved by a few ulps (numpy's log/exp and BLAS give other last bits on AVX2 and AVX-512)
gives the same matrix, and the seeded order alone picks among the optimal assignments.

**Missing values** (docs/methods.md, "Missing values"): a comparison with a missing value
contributes neither agreement nor disagreement (weight 0). Patterns are (compared,
agreeing) bit masks counted per pair of missingness patterns; EM leaves missing
comparisons out of the likelihood and of m_j, u_j (:func:`em_missing`); the sets come from
the engine's pattern-pair search or a pair kernel (:func:`missing_sets`), the one-to-one
costs from the grid weights pair by pair. Files without a missing value take the paths
above unchanged.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np
from scipy.special import expit

from ..data import numeric_matrix
from ..engine.nearest import RTOL, NearestSets, Progress, Tables
from ..engine.nearest.rules import settle, splitmix, splitmix_np, tie_threshold_np
from ..errors import LinkriskError
from ..grouping import subset_walk
from ..params import Param
from .base import LinkContext, Outcome, register
from .categorical import MAX_CATEGORIES, shared_codes

#: most attributes prl compares (2^m patterns)
MAX_ATTRIBUTES = 20
#: probabilities are kept inside [EPS, 1 − EPS]
EPS = 1e-9


# ---------------------------------------------------------------- comparison vectors
@dataclass
class Comparison:
    """Both files as per-attribute comparison values: integer codes (agreement = equality)
    or, where ``tol[j] > 0``, raw numeric values (agreement = |a−b| ≤ tol)."""

    a: np.ndarray      # float64 (n_a, m)
    b: np.ndarray      # float64 (n_b, m)
    tol: np.ndarray    # float64 (m,); -1 marks code attributes
    size: np.ndarray   # int64 (m,): number of codes (0 for tolerance attributes)
    rule: list[str]    # human-readable comparison rule per attribute

    @property
    def coded(self) -> bool:
        return bool((self.tol < 0).all())

    @property
    def missing(self) -> bool:
        """Whether a value is missing (NaN) in either file: its comparisons weigh 0."""
        return bool(np.isnan(self.a).any() or np.isnan(self.b).any())

    def sub(self, rows_a: np.ndarray, rows_b: np.ndarray, cols: np.ndarray) -> Comparison:
        """The comparison of some rows of A and B on the attributes ``cols``."""
        return Comparison(np.ascontiguousarray(self.a[np.ix_(rows_a, cols)]),
                          np.ascontiguousarray(self.b[np.ix_(rows_b, cols)]), self.tol[cols],
                          self.size[cols], [self.rule[j] for j in cols])


def quantile_bins(x: np.ndarray, ref: np.ndarray, q: int) -> np.ndarray:
    """Bin number of each value of ``x`` among the ``q`` quantile bins of ``ref``."""
    edges = np.unique(np.quantile(ref, np.arange(1, q) / q))
    return np.searchsorted(edges, x, side="right")


def compare(ctx: LinkContext, q: int = 10, tol: Any = None) -> Comparison:
    """Encode both files for the comparison vector (see the module docstring)."""
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or q < 2:
        raise LinkriskError(f"q (number of quantile bins) must be an integer >= 2, got {q!r}")
    num = [c for c in ctx.qi if ctx.kinds[c] == "numeric"]
    if tol is None:
        tols = {}
    elif isinstance(tol, Mapping):
        tols = {}
        for c, t in tol.items():
            if c not in ctx.qi:
                raise LinkriskError(f"tol given for {c!r}, which is not a QI column")
            if ctx.kinds[c] != "numeric":
                raise LinkriskError(f"tol applies to numeric attributes; {c!r} is categorical")
            tols[c] = float(t)
    else:
        if not num:
            raise LinkriskError("tol applies to numeric attributes and all QIs are categorical")
        tols = dict.fromkeys(num, float(tol))
    if any(not np.isfinite(t) or t < 0 for t in tols.values()):
        raise LinkriskError("tol must be a finite non-negative number")
    m = len(ctx.qi)
    miss = ctx.has_missing  # NaN where a value is missing (docs/methods.md, "Missing values")
    a, b = np.empty((ctx.n_a, m)), np.empty((ctx.n_b, m))
    tv, size, rule = np.full(m, -1.0), np.zeros(m, np.int64), []
    for j, c in enumerate(ctx.qi):
        if ctx.kinds[c] != "numeric":
            cats, a[:, j], b[:, j] = shared_codes(ctx, c, missing=miss)
            if miss:
                a[a[:, j] < 0, j] = np.nan
                b[b[:, j] < 0, j] = np.nan
            size[j] = len(cats)
            rule.append("equal category")
            continue
        if miss:
            xa, xb = (x[:, 0] for x in ctx.numeric_observed([c]))
        else:
            xa = numeric_matrix(ctx.a_df, [c], what="attacker's file")[:, 0]
            xb = numeric_matrix(ctx.b_df, [c], what="released file")[:, 0]
        if c in tols:
            a[:, j], b[:, j], tv[j] = xa, xb, tols[c]
            rule.append(f"|a-b| <= {tols[c]:g}")
        elif miss:
            ref = xa[~np.isnan(xa)]
            for x, out in ((xa, a), (xb, b)):
                ok = ~np.isnan(x)
                out[:, j] = np.nan
                out[ok, j] = quantile_bins(x[ok], ref, q) if ref.size else 0
            size[j] = int(max(np.nanmax(a[:, j], initial=0), np.nanmax(b[:, j], initial=0))) + 1
            rule.append(f"same of {q} quantile bins")
        else:
            a[:, j], b[:, j] = quantile_bins(xa, xa, q), quantile_bins(xb, xa, q)
            size[j] = int(max(a[:, j].max(), b[:, j].max())) + 1
            rule.append(f"same of {q} quantile bins")
    return Comparison(a, b, tv, size, rule)


# ---------------------------------------------------------------- subset walk (coded files)
def _walk_cost(cmp: Comparison, m: int | None = None) -> float:
    """Rough cost of one subset walk (numpy steps over 2^m groupings of n+n' rows)."""
    m = cmp.a.shape[1] if m is None else m
    return 20.0 * (1 << m) * (cmp.a.shape[0] + cmp.b.shape[0])


def _pair_cost(cmp: Comparison) -> float:
    """Rough cost of one compiled pass over all pairs."""
    return float(cmp.a.shape[0]) * cmp.b.shape[0] * cmp.a.shape[1]


def _stack(cmp: Comparison) -> np.ndarray:
    return np.ascontiguousarray(np.vstack([cmp.a, cmp.b]).astype(np.int64))


def superset_mobius(at_least: np.ndarray, m: int) -> np.ndarray:
    """Counts of "agree on exactly S" from counts of "agree on at least S" (all 2^m)."""
    e = at_least.astype(np.int64).copy()
    for j in range(m):
        v = e.reshape(-1, 2, 1 << j)
        v[:, 0, :] -= v[:, 1, :]
    return e


def pattern_counts(cmp: Comparison, progress: Progress | None = None,
                   walk: str = "compiled") -> np.ndarray:
    """Number of (a, b) pairs showing each agreement pattern (int64, 2^m), exact.
    ``progress(done, n_a)`` is called per block of A on the pair path. ``walk``:
    ``"compiled"`` (the pruned compiled walk, :func:`_walk_kernel`) or ``"numpy"`` (the
    plain numpy subset walk over all rows, kept as the reference computation)."""
    m = cmp.a.shape[1]
    n_a = cmp.a.shape[0]
    if not cmp.coded:
        return _pair_counts(cmp, progress)
    if walk == "compiled":
        if _compiled_walk_cost(cmp) > _pair_cost(cmp):
            return _pair_counts(cmp, progress)
        at_least = np.zeros(1 << m, np.int64)
        _run_walk(_stack(cmp), cmp.size, n_a, _COUNT, at_least=at_least)
        return superset_mobius(at_least, m)
    if _walk_cost(cmp) > _pair_cost(cmp):
        return _pair_counts(cmp, progress)
    codes = _stack(cmp)
    at_least = np.zeros(1 << m, np.int64)

    def visit(s: int, ids: np.ndarray, g: int) -> None:
        ca = np.bincount(ids[:n_a], minlength=g)
        cb = np.bincount(ids[n_a:], minlength=g)
        at_least[s] = int(ca @ cb)

    subset_walk(codes, cmp.size, visit)
    return superset_mobius(at_least, m)


# ---------------------------------------------------------------- compiled subset walk
# The numpy walk above relabels all n + n' rows for each of the 2^m subsets. The compiled
# walk visits the same subsets in the same depth-first order but carries only the rows that
# can still matter below the subset S:
# * rows of *shared* groups (value combinations on S present in both files): a row whose
#   group on S has no partner in the other file has none on any superset of S (groups only
#   split), so it adds to no pair count and is in no candidate set below S;
# * for the candidate sets, A rows that can still reach their tie threshold: with every
#   walked attribute's agreement lowering the score, the lowest score in the subtree of S
#   (S plus any of the attributes after its last one) is that of S plus all of them
#   (floating-point addition is monotone, and the table sums in one fixed order), so a row
#   whose threshold is below it is dropped (for the minimum, the threshold of the best score
#   found so far, which only falls).
# A subtree left without rows is skipped whole. The visits, their order and the draws are
# those of the numpy walk; rows are kept in ascending order inside each group (a stable
# counting sort per group), so a group's B members are in B order (the group's last rows).
# Pair counts: the subtrees of the two-attribute subsets are parallel tasks; a pair of a
# small group is counted once, under its exact pattern on the later attributes, and these
# counts are spread over the subsets they imply by one superset sum (_fold_finished).
# Candidate sets: one walk. The minimum walk (parallel tasks too, _min_walk) records every
# group it meets within the A row's current threshold, which bounds the final one from
# above: (a, S, number of B rows, the drawn B row). The events of the tied subsets, replayed
# in the walk's order (_replay), are the numpy walk's draws. The former second, collecting
# walk is kept as group_sets(walk="walks").

_COUNT, _MIN, _COLLECT = 0, 1, 2


def _compiled_walk_cost(cmp: Comparison) -> float:
    """Worst case of the compiled walk (no row pruned): a few operations per row and
    subset; pruning usually removes most of it."""
    return 4.0 * (1 << cmp.a.shape[1]) * (cmp.a.shape[0] + cmp.b.shape[0])


#: groups with at most this many (a, b) pairs are finished on the spot by comparing the pairs
#: on the attributes left (pair counts; minimum with the events of the tied groups; not in
#: the collecting walk of walk="walks", whose draws follow the walk)
_SMALL = 64
_SMALL_COUNT = _SMALL
_SMALL_MIN = _SMALL
#: row numbers in the count walk (int64 from 2^31 rows)
_ROWS = np.int32


@nb.njit(cache=True)
def _finish(grp, k, n_a, child, j, codes, score_k, rtol, fin, best, thr_of, mode, evs):
    """The whole subtree of ``child`` for one small group (``grp[:k]``, ascending): every
    (a, b) pair agrees on ``child`` and on a set M of the later attributes, so it adds one to
    "agree on at least child ∪ T" for each non-empty T ⊆ M (``_COUNT``), and its best score
    in the subtree is that of child ∪ M (``_MIN``, scores being monotone). With events on
    (``_MIN``), a records the group of child ∪ M it would meet in the walk for each M
    scoring within its threshold: the B rows agreeing with a on exactly M (when child ∪ M
    is tied at the end, no B row agrees on more: it would score below the minimum)."""
    m = codes.shape[1]
    ev_on = evs[2].size > 0
    mk, bb = evs[3], evs[4]
    for x in range(k):
        i = grp[x]
        if i >= n_a:
            continue
        nbr = 0
        for y in range(k):
            b = grp[y]
            if b < n_a:
                continue
            mask = 0
            for t in range(j + 1, m):
                if codes[i, t] == codes[b, t]:
                    mask |= 1 << t
            if mode == _COUNT:
                if mask:
                    fin[(j << m) | child | mask] += 1
            else:
                sc = score_k[child | mask]
                if sc < best[i]:
                    best[i] = sc
                    _lower(thr_of, i, sc + rtol * abs(sc))
                if ev_on:
                    mk[nbr] = mask
                    bb[nbr] = b
                    nbr += 1
        if mode != _COUNT and ev_on:
            for y in range(nbr):
                mask = mk[y]
                if not score_k[child | mask] <= thr_of[i]:
                    continue
                c = 0
                seen = False
                for z in range(nbr):
                    if mk[z] == mask:
                        if z < y:
                            seen = True
                            break
                        c += 1
                if not seen:
                    pick = _draw(evs[2], i, child | mask, c)
                    for z in range(y, nbr):
                        if mk[z] == mask:
                            if pick == 0:
                                _event(evs, i, child | mask, c, bb[z] - n_a)
                                break
                            pick -= 1


@nb.njit(inline="always")
def _lower(thr_of, i, t):
    """Lower the pruning threshold of row i to t. In the parallel minimum walk ``thr_of`` is
    shared by the threads (each keeps its own best scores): a concurrent write may leave a
    higher value, but every value written is the threshold of a score the row reaches, so
    it bounds its final threshold from above, which is all pruning and recording need."""
    if t < thr_of[i]:
        thr_of[i] = t


@nb.njit(inline="always")
def _draw(base, i, s, c):
    """The numpy walk's pick among the c B rows of a's group on S (only the index; whether
    the group is kept is decided when a's tied groups are replayed in walk order)."""
    h = splitmix(base[i] + np.uint64(s), _WALK)
    return np.int64(splitmix(h, _WALK) % np.uint64(c))


@nb.njit(inline="always")
def _event(evs, i, s, c, b):
    """Append (a, S, c, candidate link) to the growing event table ``evs[0][0]``."""
    ev, nev = evs[0], evs[1]
    e = nev[0]
    tab = ev[0]
    if e == tab.shape[0]:
        grown = np.empty((2 * e, 4), np.int64)
        grown[:e] = tab
        ev[0] = grown
        tab = grown
    tab[e, 0] = i
    tab[e, 1] = s
    tab[e, 2] = c
    tab[e, 3] = b
    nev[0] = e + 1


@nb.njit(cache=True)
def _refine(rows, seg, codes, j, size_j, n_a, bound, thr_of, ca, cb, pos, buf, small, ok,
            lim, mode, child, score_k, rtol, fin, best, rcodes, evs):
    """Split every group (``rows[seg[g]:seg[g+1]]``) by attribute ``j``, keeping the
    sub-groups with rows of both files, where an A row counts only if
    ``bound ≤ thr_of[row]`` (no filter when ``thr_of`` is empty); sub-groups with at most
    ``lim`` pairs are finished by :func:`_finish`. Returns (rows,
    segment starts with the end appended, Σ over all shared sub-groups of |A|·|B|)."""
    n = rows.size
    col = codes[:, j]
    out = np.empty(n, rows.dtype)
    starts = np.empty(n + 1, np.int64)
    filt = thr_of.size > 0
    far = n + 1  # positions from `far` on are in the small-group buffer
    t = 0
    g = 0
    pairs = 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        for r in range(s0, s1):
            i = rows[r]
            c = col[i]
            buf[r - s0] = c
            # each row's filter is read once: in the parallel minimum walk another thread
            # may lower thr_of meanwhile, and the placement must match the counts
            ok[r - s0] = i >= n_a or not filt or bound <= thr_of[i]
            if i >= n_a:
                cb[c] += 1
            elif ok[r - s0]:
                ca[c] += 1
        # number the shared values: by value for large groups, by row for small ones
        big = s1 - s0 > size_j
        ts = 0
        ns = 0
        for r in range(size_j if big else s1 - s0):
            c = r if big else buf[r]
            if pos[c] == -1 and ca[c] > 0 and cb[c] > 0:
                pairs += ca[c] * cb[c]
                if ca[c] * cb[c] <= lim:
                    pos[c] = far + ts
                    ts += ca[c] + cb[c]
                    ns += 1
                else:
                    pos[c] = t
                    starts[g] = t
                    g += 1
                    t += ca[c] + cb[c]
        for r in range(s0, s1):
            c = buf[r - s0]
            p = pos[c]
            if p >= 0:
                i = rows[r]
                if ok[r - s0]:
                    if p >= far:
                        small[p - far] = i
                    else:
                        out[p] = i
                    pos[c] = p + 1
        if ns > 0:  # small groups lie one after the other in `small`, each ending at pos
            for r in range(size_j if big else s1 - s0):
                c = r if big else buf[r]
                if pos[c] >= far and ca[c] > 0:
                    e = pos[c] - far
                    k = ca[c] + cb[c]
                    _finish(small[e - k:e], k, n_a, child, j, rcodes, score_k, rtol,
                            fin, best, thr_of, mode, evs)
                    ca[c] = 0  # finished once
        if big:
            ca[:size_j] = 0
            cb[:size_j] = 0
            pos[:size_j] = -1
        else:
            for r in range(s1 - s0):
                c = buf[r]
                ca[c] = 0
                cb[c] = 0
                pos[c] = -1
    starts[g] = t
    return out[:t], starts[:g + 1], pairs


@nb.njit(cache=True)
def _leaf_pairs(rows, seg, codes, j, size_j, n_a, ca, cb):
    """Σ |A|·|B| over the sub-groups of :func:`_refine` by the last attribute ``j`` (pair
    counts), without building them: they have no children."""
    col = codes[:, j]
    pairs = 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        for r in range(s0, s1):
            i = rows[r]
            if i >= n_a:
                cb[col[i]] += 1
            else:
                ca[col[i]] += 1
        if s1 - s0 > size_j:
            for c in range(size_j):
                pairs += ca[c] * cb[c]
                ca[c] = 0
                cb[c] = 0
        else:
            for r in range(s0, s1):
                c = col[rows[r]]
                pairs += ca[c] * cb[c]
                ca[c] = 0
                cb[c] = 0
    return pairs


@nb.njit(cache=True)
def _collect(s, rows, seg, n_a, sc, thr, base, count, link):
    """The tied groups of S: count and reservoir-sampled link, the numpy walk's draws."""
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        c = 0
        for r in range(s0, s1):
            c += rows[r] >= n_a
        for r in range(s0, s1):
            i = rows[r]
            if i >= n_a or not sc <= thr[i]:
                continue
            count[i] += c
            h = splitmix(base[i] + np.uint64(s), _WALK)
            u = np.float64(h >> np.uint64(11)) * 2.0**-53
            if not u * np.float64(count[i]) < np.float64(c):
                continue
            pick = np.int64(splitmix(h, _WALK) % np.uint64(c))
            for t in range(s0, s1):  # the pick-th B member in B order
                if rows[t] >= n_a:
                    if pick == 0:
                        link[i] = rows[t] - n_a
                        break
                    pick -= 1


@nb.njit(cache=True)
def _scratch(codes, size):
    big = 0
    for j in range(size.size):
        big = max(big, size[j])
    n = codes.shape[0]
    return (np.zeros(big, np.int64), np.zeros(big, np.int64), np.full(big, -1, np.int64),
            np.empty(n, codes.dtype), np.empty(n, np.int64), np.empty(n, np.bool_))


@nb.njit(cache=True)
def _dfs(codes, size, n_a, mode, rows, seg, s, first, score_k, rtol, best, thr_of, thr,
         base, count, link, at_least, fin, rcodes, evs, small_lim=_SMALL):
    """The walk below the subset ``s`` (its rows and groups: ``rows``, ``seg``), children
    from attribute ``first`` on, in depth-first order: ``_COUNT`` adds to ``at_least``
    (pairs agreeing on at least S), ``_MIN`` lowers ``best`` to each A row's minimal score
    (and, with events on, records each group met within the row's current threshold: see
    :func:`_replay`), ``_COLLECT`` accumulates the tied groups."""
    m = codes.shape[1]
    ca, cb, pos, buf, small, ok = _scratch(codes, size)
    full = (1 << m) - 1
    lim = small_lim if mode != _COLLECT else 0
    rows_l = [rows]
    seg_l = [seg]
    subset = np.zeros(m + 1, np.int64)
    nxt = np.zeros(m + 1, np.int64)
    subset[0] = s
    nxt[0] = first
    depth = 0
    while depth >= 0:
        s = subset[depth]
        rows, seg = rows_l[depth], seg_l[depth]
        j = nxt[depth]
        if j >= m:
            depth -= 1
            continue
        nxt[depth] = j + 1
        child = s | (1 << j)
        bound = score_k[child | (full & ~((1 << (j + 1)) - 1))] if mode != _COUNT else 0.0
        if j == m - 1 and mode == _COUNT:  # no children: count in place
            at_least[child] += _leaf_pairs(rows, seg, codes, j, size[j], n_a, ca, cb)
            continue
        r2, s2, pairs = _refine(rows, seg, codes, j, size[j], n_a, bound, thr_of, ca, cb, pos,
                                buf, small, ok, lim, mode, child, score_k, rtol, fin, best,
                                rcodes, evs)
        if mode == _COUNT:
            at_least[child] += pairs
        if r2.size == 0:
            continue  # nothing below: no pair agrees on this subset or any superset
        if mode == _MIN:
            _group_min(r2, s2, n_a, child, score_k[child], rtol, best, thr_of, evs)
        elif mode == _COLLECT:
            _collect(child, r2, s2, n_a, score_k[child], thr, base, count, link)
        depth += 1
        if depth < len(rows_l):
            rows_l[depth] = r2
            seg_l[depth] = s2
        else:
            rows_l.append(r2)
            seg_l.append(s2)
        subset[depth] = child
        nxt[depth] = j + 1


@nb.njit(nogil=True, cache=True)
def _group_min(rows, seg, n_a, s, sc, rtol, best, thr_of, evs):
    """The minimum walk at the subset S (score ``sc``) with its shared groups (``rows``,
    ``seg``): lower each A row's best score to sc, and (events on) record the group of each
    A row within its current threshold with its drawn B row."""
    ev_on = evs[2].size > 0
    for q in range(seg.size - 1):
        s0, s1 = seg[q], seg[q + 1]
        c = 0  # B rows: the group's last rows (ascending, B after A)
        while c < s1 - s0 and rows[s1 - 1 - c] >= n_a:
            c += 1
        for r in range(s0, s1 - c):
            i = rows[r]
            if ev_on and sc <= thr_of[i]:
                _event(evs, i, s, c, rows[s1 - c + _draw(evs[2], i, s, c)] - n_a)
            if sc < best[i]:
                best[i] = sc
                _lower(thr_of, i, sc + rtol * abs(sc))


@nb.njit(nogil=True, cache=True)
def _events(n, n_a, base):
    """An empty event table (events on when ``base`` is given) and its scratch."""
    on = base.size > 0
    return ([np.empty((max(1024, n_a // 16) if on else 0, 4), np.int64)], np.zeros(1, np.int64),
            base, np.empty(n if on else 0, np.int64), np.empty(n if on else 0, np.int64))


@nb.njit(nogil=True, cache=True)
def _min_task(codes, rcodes, size, n_a, i, j, score_k, rtol, best, thr_of, base, small_lim):
    """One task of the minimum walk (with events when ``base`` is given): the subset {j}
    alone (``i < 0``) or the whole subtree of {i, j}. Tasks are disjoint parts of the walk
    and may run in any order: the minimum does not depend on it, pruning only uses the
    (valid, if looser) thresholds found so far, and the events are replayed in walk order."""
    n, m = codes.shape
    rows = np.arange(n)
    seg = np.array([0, n], np.int64)
    evs = _events(n, n_a, base)
    ca, cb, pos, buf, small, ok = _scratch(codes, size)
    full = (1 << m) - 1
    i0 = np.empty(0, np.int64)
    f = np.empty(0)
    u = np.empty(0, np.uint64)
    if i >= 0:  # the rows of {i}'s groups, filtered by {i}'s subtree bound
        rows, seg, _ = _refine(rows, seg, codes, i, size[i], n_a,
                               score_k[(1 << i) | (full & ~((1 << (i + 1)) - 1))], thr_of,
                               ca, cb, pos, buf, small, ok, 0, _MIN, 1 << i, score_k, rtol, i0,
                               best, rcodes, evs)
    child = (1 << j) | (1 << i if i >= 0 else 0)
    r2, s2, _ = _refine(rows, seg, codes, j, size[j], n_a,
                        score_k[child | (full & ~((1 << (j + 1)) - 1))], thr_of, ca, cb, pos,
                        buf, small, ok, small_lim if i >= 0 else 0, _MIN, child, score_k, rtol,
                        i0, best, rcodes, evs)
    _group_min(r2, s2, n_a, child, score_k[child], rtol, best, thr_of, evs)
    if i >= 0 and r2.size > 0:
        _dfs(codes, size, n_a, _MIN, r2, s2, child, j + 1, score_k, rtol, best, thr_of, f, u,
             i0, i0, i0, i0, rcodes, evs, small_lim)
    tab = evs[0][0]
    k = 0
    for e in range(evs[1][0]):  # drop the events already above their row's threshold
        if score_k[tab[e, 1]] <= thr_of[tab[e, 0]]:
            tab[k] = tab[e]
            k += 1
    return tab[:k].copy()  # the tight table: the buffer is freed


@nb.njit(nogil=True, cache=True)
def _min_root(n_b, score_k, rtol, best, thr_of, base):
    """The root of the minimum walk (the empty subset: every B row) and its events."""
    n_a = best.size
    evs = _events(n_a + n_b, n_a, base)
    for i in range(n_a):
        if score_k[0] < best[i]:
            best[i] = score_k[0]
        thr_of[i] = best[i] + rtol * abs(best[i])
        if evs[2].size > 0 and score_k[0] <= thr_of[i]:
            _event(evs, i, 0, n_b, _draw(base, i, 0, n_b))
    return evs[0][0][:evs[1][0]].copy()


@nb.njit(cache=True)
def _walk_kernel(codes, rcodes, size, n_a, mode, score_k, rtol, best, thr, base, count, link,
                 small_lim):
    """The sequential walk from the root (minimum and draws: their order matters).
    The minimum walk of the candidate sets is :func:`_min_walk` (tasks, events); this one
    (``_MIN`` without events, then ``_COLLECT``) is kept as ``group_sets(walk="walks")``."""
    n = codes.shape[0]
    rows = np.arange(n)
    seg = np.array([0, n], np.int64)
    evs = _events(n, n_a, base[:0])
    if mode == _MIN:
        thr_of = np.full(n_a, np.inf)  # threshold of the best score so far
        for i in range(n_a):
            if score_k[0] < best[i]:
                best[i] = score_k[0]
            thr_of[i] = best[i] + rtol * abs(best[i])
    else:
        thr_of = thr
        _collect(0, rows, seg, n_a, score_k[0], thr, base, count, link)
    i0 = np.empty(0, np.int64)
    _dfs(codes, size, n_a, mode, rows, seg, 0, 0, score_k, rtol, best, thr_of, thr, base,
         count, link, i0, i0, rcodes, evs, small_lim)


@nb.njit(parallel=True, cache=True)
def _count_kernel(codes, rcodes, size, n_a, tasks, at_least, fin, small_lim, rows):
    """Pair counts of "agree on at least S" for every S: the subsets of one or two
    attributes here, the subtree of each two-attribute subset {i, j} as one parallel task
    (the subtrees are disjoint, so are the entries they write). Pairs of small groups go to
    ``fin`` (see :func:`_fold_finished`)."""
    n, m = codes.shape
    seg = np.array([0, n], np.int64)
    f = np.empty(0)
    i0 = np.empty(0, np.int64)
    evs = ([np.empty((0, 4), np.int64)], np.zeros(1, np.int64), np.empty(0, np.uint64), i0, i0)
    at_least[0] = n_a * (n - n_a)
    for t in nb.prange(tasks.shape[0] + m):
        ca, cb, pos, buf, small, ok = _scratch(codes, size)
        if t >= tasks.shape[0]:  # a one-attribute subset
            j = t - tasks.shape[0]
            _, _, pairs = _refine(rows, seg, codes, j, size[j], n_a, 0.0, f, ca, cb, pos, buf,
                                  small, ok, 0, _COUNT, 1 << j, f, 0.0, fin, f, rcodes, evs)
            at_least[1 << j] = pairs
            continue
        i, j = tasks[t, 0], tasks[t, 1]
        r1, s1, _ = _refine(rows, seg, codes, i, size[i], n_a, 0.0, f, ca, cb, pos, buf,
                            small, ok, 0, _COUNT, 1 << i, f, 0.0, fin, f, rcodes, evs)
        child = (1 << i) | (1 << j)
        r2, s2, pairs = _refine(r1, s1, codes, j, size[j], n_a, 0.0, f, ca, cb, pos, buf,
                                small, ok, small_lim, _COUNT, child, f, 0.0, fin, f, rcodes, evs)
        at_least[child] += pairs
        if r2.size > 0:
            _dfs(codes, size, n_a, _COUNT, r2, s2, child, j + 1, f, 0.0, f, f, f,
                 np.empty(0, np.uint64), i0, i0, at_least, fin, rcodes, evs, small_lim)


def _run_walk(codes: np.ndarray, size: np.ndarray, n_a: int, mode: int,
              score_k: np.ndarray | None = None, best: np.ndarray | None = None,
              thr: np.ndarray | None = None, base: np.ndarray | None = None,
              count: np.ndarray | None = None, link: np.ndarray | None = None,
              at_least: np.ndarray | None = None, small_lim: int | None = None
              ) -> None:
    """The compiled walk (:func:`_count_kernel`, :func:`_walk_kernel`); codes are stored
    column by column (for the refinements) and row by row (for the small groups) in the
    narrowest unsigned type that holds them. ``small_lim``: most pairs of a group finished
    pair by pair (default ``_SMALL_COUNT`` / ``_SMALL_MIN``; 0 refines every group; tests)."""
    n, m = codes.shape
    if n_a == 0 or n_a == n:
        return
    size = np.ascontiguousarray(size, dtype=np.int64)
    if mode == _COUNT:
        # Pair counts do not depend on the order of the attributes, the walk's cost does:
        # a subset is refined from its parent (itself without its last attribute), and the
        # first attributes are in the parents of most subsets, so the walk takes them from
        # the most selective (fewest agreeing pairs) to the least; the counts are mapped
        # back to the original attribute bits.
        agree = [int(np.bincount(codes[:n_a, j], minlength=size[j])
                     @ np.bincount(codes[n_a:, j], minlength=size[j])) for j in range(m)]
        order = np.argsort(agree, kind="stable")
        walked = np.zeros(1 << m, np.int64)
        _count_walk(codes[:, order], size[order], n_a, walked, small_lim)
        orig = np.zeros(1 << m, np.int64)
        sub = np.arange(1 << m)
        for k in range(m):
            orig |= ((sub >> k) & 1) << int(order[k])
        at_least[orig] = walked
        return
    codes, rcodes, size = _narrow(codes, size)
    f, i, u = np.empty(0), np.empty(0, np.int64), np.empty(0, np.uint64)
    _walk_kernel(codes, rcodes, size, n_a, mode, score_k, RTOL, f if best is None else best,
                 f if thr is None else thr, u if base is None else base,
                 i if count is None else count, i if link is None else link,
                 _SMALL_MIN if small_lim is None else small_lim)


def _count_walk(codes: np.ndarray, size: np.ndarray, n_a: int, at_least: np.ndarray,
                small_lim: int | None) -> None:
    """Pair counts of "agree on at least S" by the compiled walk, attributes in the given
    order (:func:`_count_kernel`, :func:`_fold_finished`)."""
    n, m = codes.shape
    codes, rcodes, size = _narrow(codes, size)
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    # largest subtrees first, so that the parallel tasks finish together
    pairs.sort(key=lambda t: t[1])
    tasks = np.array(pairs, np.int64).reshape(-1, 2)
    fin = np.zeros(m << m, np.int64)
    _count_kernel(codes, rcodes, size, n_a, tasks, at_least, fin,
                  _SMALL_COUNT if small_lim is None else small_lim,
                  np.arange(n, dtype=_ROWS if n < 2**31 else np.int64))
    _fold_finished(fin, at_least, m)


def _narrow(codes: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(column-major codes, row-major codes, sizes) in the narrowest unsigned type."""
    size = np.ascontiguousarray(size, dtype=np.int64)
    top = int(size.max(initial=1))
    dt = np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.int64
    codes = np.asfortranarray(codes.astype(dt))
    return codes, np.ascontiguousarray(codes), size


def _min_walk(codes: np.ndarray, size: np.ndarray, n_a: int, score_k: np.ndarray,
              best: np.ndarray, base: np.ndarray, small_lim: int | None = None
              ) -> np.ndarray:
    """The minimum walk with events (:func:`_min_task`), its tasks shared by
    ``numba.get_num_threads()`` threads, each with its own best scores (merged by minimum)
    and all sharing the pruning thresholds (:func:`_lower`). Lowers ``best``; returns the
    event table (its order depends on the threads; :func:`_replay` sorts it)."""
    n, m = codes.shape
    if n_a == 0 or n_a == n:
        return np.empty((0, 4), np.int64)
    codes, rcodes, size = _narrow(codes, size)
    lim = _SMALL_MIN if small_lim is None else small_lim
    thr_of = np.empty(n_a)
    tables = [_min_root(n - n_a, score_k, RTOL, best, thr_of, base)]
    # the subtree of {i, j} has 2^(m-1-j) subsets: largest first, then the single subsets
    tasks = [(i, j) for j in range(m) for i in range(j)] + [(-1, j) for j in range(m)]
    n_threads = max(1, min(nb.get_num_threads(), len(tasks)))
    states = [(best.copy(), thr_of) for _ in range(n_threads)]  # thresholds shared
    lock = threading.Lock()
    queue = iter(tasks)

    def worker(w: int) -> list[np.ndarray]:
        out = []
        b, t = states[w]
        while True:
            with lock:
                task = next(queue, None)
            if task is None:
                return out
            out.append(_min_task(codes, rcodes, size, n_a, task[0], task[1], score_k, RTOL,
                                 b, t, base, lim))

    if n_threads == 1:
        tables += worker(0)
    else:
        with ThreadPoolExecutor(n_threads) as ex:
            for part in ex.map(worker, range(n_threads)):
                tables += part
    for b, _ in states:
        np.minimum(best, b, out=best)
    return np.concatenate(tables)


@nb.njit(cache=True)
def _walk_order(k):
    """rank[S]: position of the subset S in the walk's depth-first order (S, then the
    subtrees of S ∪ {j} for j above S's last attribute, in increasing j)."""
    rank = np.empty(1 << k, np.int64)
    stack = np.empty(k + 1, np.int64)  # subset at each depth
    nxt = np.empty(k + 1, np.int64)    # next attribute to add at each depth
    rank[0] = 0
    stack[0] = 0
    nxt[0] = 0
    depth = 0
    r = 1
    while depth >= 0:
        j = nxt[depth]
        if j >= k:
            depth -= 1
            continue
        nxt[depth] = j + 1
        child = stack[depth] | (1 << j)
        rank[child] = r
        r += 1
        depth += 1
        stack[depth] = child
        nxt[depth] = j + 1
    return rank


@nb.njit(cache=True)
def _replay(ev, rank, score_k, thr, base, count, link):
    """The tied groups of each A row from the events of the minimum walk, in the walk's
    order: an event (a, S, c, b) is a's group on S with c B rows and b the pick-th of them
    (:func:`_draw`); those with score_k[S] ≤ thr[a] are the groups :func:`_collect` meets,
    so counting them and keeping each with probability c / (count so far) in walk order
    gives the same counts and links as the collecting walk."""
    n_ev = ev.shape[0]
    span = np.int64(rank.size)
    key = np.empty(n_ev, np.int64)
    k = 0
    for e in range(n_ev):
        i, s = ev[e, 0], ev[e, 1]
        if score_k[s] <= thr[i]:
            key[k] = i * span + rank[s]
            ev[k] = ev[e]
            k += 1
    order = np.argsort(key[:k])
    for o in range(k):
        e = order[o]
        i, s, c = ev[e, 0], ev[e, 1], ev[e, 2]
        count[i] += c
        h = splitmix(base[i] + np.uint64(s), _WALK)
        u = np.float64(h >> np.uint64(11)) * 2.0**-53
        if u * np.float64(count[i]) < np.float64(c):
            link[i] = ev[e, 3]


def _fold_finished(fin: np.ndarray, at_least: np.ndarray, m: int) -> None:
    """Add the pairs finished in small groups to ``at_least``. ``fin[j·2^m + X]`` counts
    the pairs finished below a subset C whose last attribute is j, agreeing on X = C ∪ M with
    M the set of later attributes (> j) they agree on; such a pair agrees on at least C ∪ T
    for each T ⊆ M, T ≠ ∅ (T = ∅ is counted with its group). Summing ``fin[j]`` over the
    supersets in the bits above j gives, at S, the pairs with C = S's bits up to j and
    T = S's bits above j ⊆ M: added where T ≠ ∅, i.e. S ≥ 2^(j+1)."""
    g = fin.reshape(m, 1 << m)
    for j in range(m - 1):
        h = g[j]
        for t in range(j + 1, m):
            v = h.reshape(-1, 2, 1 << t)
            v[:, 0, :] += v[:, 1, :]
        at_least[1 << (j + 1):] += h[1 << (j + 1):]


# ---------------------------------------------------------------- pair kernels (tolerance)
@nb.njit(inline="always")
def _pattern(a, b, i, k, tol):
    p = 0
    for j in range(a.shape[1]):
        d = abs(a[i, j] - b[k, j])
        if d <= (tol[j] if tol[j] > 0 else 0.0):
            p |= 1 << j
    return p


@nb.njit(parallel=True, cache=True)
def _pair_counts_kernel(a, b, tol, n_pat, n_chunks):
    n_a = a.shape[0]
    hist = np.zeros((n_chunks, n_pat), np.int64)
    step = (n_a + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        for i in range(c * step, min(n_a, (c + 1) * step)):
            for k in range(b.shape[0]):
                hist[c, _pattern(a, b, i, k, tol)] += 1
    return hist.sum(axis=0)


_NONE = np.zeros(0)

#: blocks of A of the pair kernels (progress reports; the counts and links do not depend
#: on it)
PAIR_PARTS = 20


def _blocks(n: int) -> list[tuple[int, int]]:
    step = max(1, -(-n // PAIR_PARTS))
    return [(r0, min(n, r0 + step)) for r0 in range(0, n, step)]


def _pair_counts(cmp: Comparison, progress: Progress | None = None) -> np.ndarray:
    m = cmp.a.shape[1]
    n_a = cmp.a.shape[0]
    total = np.zeros(1 << m, np.int64)
    for r0, r1 in _blocks(n_a):
        total += _pair_counts_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, 1 << m,
                                     max(1, nb.get_num_threads() * 4))
        if progress is not None:
            progress(r1, n_a)
    return total


@nb.njit(parallel=True, cache=True)
def _pair_best_kernel(a, b, tol, score, va, vd, truth, seed, rtol, out_min, out_count,
                      out_true, out_link, i0=0):
    """C(a) = {b : score[γ(a,b)] ≤ min + rtol·|min|} for every a (global row i0 + i),
    settled by the engine's rules (:func:`~linkrisk.engine.nearest.rules.settle`: link =
    the pick-th member in B order). With ``va``/``vd`` (−w_agree, −w_disagree; empty
    otherwise) the score is summed per pair, a missing comparison adding 0."""
    n_a, n_b = a.shape[0], b.shape[0]
    ids = np.arange(n_b)
    per_pair = va.size > 0
    for i in nb.prange(n_a):
        sc = np.empty(n_b)
        for k in range(n_b):
            if per_pair:
                sc[k] = _missing_score(a, b, i, k, tol, va, vd)
            else:
                sc[k] = score[_pattern(a, b, i, k, tol)]
        mn, cnt, _, link = settle(ids, sc, n_b, -1, rtol, seed, i0 + i)
        t = truth[i]
        out_true[i] = sc[t] if t >= 0 else np.inf
        out_min[i] = mn
        out_count[i] = cnt
        out_link[i] = link


# ---------------------------------------------------------------- EM and weights
def bits(n_attr: int, patterns: np.ndarray) -> np.ndarray:
    """(len(patterns), m) 0/1 matrix of the patterns' agreement bits."""
    return ((patterns[:, None] >> np.arange(n_attr)) & 1).astype(np.float64)


@dataclass
class EMFit:
    m: np.ndarray
    u: np.ndarray
    p: float
    iterations: int
    converged: bool


class _EMModel:
    """The two-class model on the observed patterns; θ = (p, m_1..m_k, u_1..u_k)."""

    def __init__(self, counts: np.ndarray, n_attr: int, fixed_p: float | None,
                 constrain: bool = True):
        self.constrain = constrain
        nz = np.flatnonzero(counts)
        self.c = counts[nz].astype(np.float64)
        self.g = bits(n_attr, nz)
        self.k = n_attr
        self.fixed_p = fixed_p

    def _logs(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, m, u = th[0], th[1:1 + self.k], th[1 + self.k:]
        g = self.g
        lm = np.log(p) + g @ np.log(m) + (1 - g) @ np.log1p(-m)
        lu = np.log1p(-p) + g @ np.log(u) + (1 - g) @ np.log1p(-u)
        return lm, lu

    def loglik(self, th: np.ndarray) -> float:
        lm, lu = self._logs(th)
        return float(self.c @ np.logaddexp(lm, lu))

    def step(self, th: np.ndarray) -> np.ndarray:
        """One EM update: E (posterior match probability per pattern), M (weighted
        agreement rates)."""
        lm, lu = self._logs(th)
        cm = self.c * expit(lm - lu)
        cu = self.c - cm
        sm, su = cm.sum(), cu.sum()
        p = sm / self.c.sum() if self.fixed_p is None else self.fixed_p
        m = np.clip((cm @ self.g) / max(sm, 1e-300), EPS, 1 - EPS)
        u = np.clip((cu @ self.g) / max(su, 1e-300), EPS, 1 - EPS)
        if self.constrain:
            m = np.maximum(m, u)
        return np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])

    def delta(self, a: np.ndarray, b: np.ndarray) -> float:
        return max(float(np.abs(a[1:] - b[1:]).max()), abs(a[0] - b[0]) / max(a[0], 1e-300))


class _EMModelMissing(_EMModel):
    """:class:`_EMModel` with missing comparisons: ``o`` marks the attributes a pattern
    compares; the others are left out of its likelihood and of the M-step's rates."""

    def __init__(self, agree: np.ndarray, observed: np.ndarray, counts: np.ndarray,
                 n_attr: int, fixed_p: float | None, constrain: bool = True):
        self.constrain = constrain
        nz = np.flatnonzero(counts)
        self.c = counts[nz].astype(np.float64)
        self.g = bits(n_attr, agree[nz])
        self.o = bits(n_attr, observed[nz])
        self.k = n_attr
        self.fixed_p = fixed_p

    def _logs(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, m, u = th[0], th[1:1 + self.k], th[1 + self.k:]
        g, d = self.g, self.o - self.g
        lm = np.log(p) + g @ np.log(m) + d @ np.log1p(-m)
        lu = np.log1p(-p) + g @ np.log(u) + d @ np.log1p(-u)
        return lm, lu

    def step(self, th: np.ndarray) -> np.ndarray:
        lm, lu = self._logs(th)
        cm = self.c * expit(lm - lu)
        cu = self.c - cm
        p = cm.sum() / self.c.sum() if self.fixed_p is None else self.fixed_p
        m = np.clip((cm @ self.g) / np.maximum(cm @ self.o, 1e-300), EPS, 1 - EPS)
        u = np.clip((cu @ self.g) / np.maximum(cu @ self.o, 1e-300), EPS, 1 - EPS)
        if self.constrain:
            m = np.maximum(m, u)
        return np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])


def em(counts: np.ndarray, n_attr: int, p0: float, max_iter: int = 1000,
       tol: float = 1e-10, fixed_p: float | None = None, constrain: bool = True) -> EMFit:
    """Fellegi–Sunter two-class EM on pattern counts (conditional independence),
    accelerated by SQUAREM (Varadhan & Roland 2008: an extrapolated step from two EM
    steps, kept only when it does not lower the likelihood, followed by an EM step).
    ``max_iter`` counts SQUAREM cycles (3 EM steps each). ``fixed_p``: hold the match
    proportion fixed instead of estimating it. ``constrain``: project every M-step onto
    m_j ≥ u_j (Winkler's constrained EM: agreement is at least as likely among matches)."""
    model = _EMModel(counts, n_attr, fixed_p, constrain)
    u = np.clip((model.c @ model.g) / model.c.sum(), EPS, 1 - EPS)
    return _run_em(model, u, n_attr, p0, max_iter, tol, fixed_p)


def em_missing(agree: np.ndarray, observed: np.ndarray, counts: np.ndarray, n_attr: int,
               p0: float, max_iter: int = 1000, tol: float = 1e-10,
               fixed_p: float | None = None, constrain: bool = True) -> EMFit:
    """:func:`em` when comparisons can be missing: pattern ``i`` (``counts[i]`` pairs)
    agrees on the attributes of bit mask ``agree[i]`` and compares those of ``observed[i]``
    (⊇ agree); a missing comparison is left out of the pattern's likelihood, and m_j, u_j
    are estimated from the pairs that compare attribute j (Fellegi–Sunter practice, as
    fastLink and RecordLinkage treat NA comparisons). Same start, SQUAREM and constraints
    as :func:`em`, the start's agreement rates over the observed comparisons."""
    model = _EMModelMissing(agree, observed, counts, n_attr, fixed_p, constrain)
    u = np.clip((model.c @ model.g) / np.maximum(model.c @ model.o, 1e-300), EPS, 1 - EPS)
    return _run_em(model, u, n_attr, p0, max_iter, tol, fixed_p)


def _run_em(model: _EMModel, u: np.ndarray, n_attr: int, p0: float, max_iter: int,
            tol: float, fixed_p: float | None) -> EMFit:
    m = np.clip(np.maximum(0.9, (1 + u) / 2), EPS, 1 - EPS)
    p = fixed_p if fixed_p is not None else p0
    th = np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])
    ll = model.loglik(th)
    it, converged = 0, False
    while it < max_iter:
        it += 1
        t1 = model.step(th)
        t2 = model.step(t1)
        r, v = t1 - th, t2 - 2 * t1 + th
        nv = float(np.sqrt(v @ v))
        if nv > 0:
            alpha = min(-float(np.sqrt(r @ r)) / nv, -1.0)
            ext = np.clip(th - 2 * alpha * r + alpha * alpha * v, EPS, 1 - EPS)
            cand = model.step(ext)
            ll_c = model.loglik(cand)
            if not np.isfinite(ll_c) or ll_c < ll - 1e-12 * abs(ll):
                cand = t2
        else:
            cand = t2
        ll, done = model.loglik(cand), model.delta(cand, th) < tol
        th = cand
        if done:
            converged = True
            break
    p, m, u = float(th[0]), th[1:1 + n_attr], th[1 + n_attr:]
    if (m - u).sum() < 0:  # label switching: the "match" class is the one agreeing more
        m, u, p = u, m, 1 - p
    return EMFit(m, u, p, it, converged)


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


# ---------------------------------------------------------------- maximal-weight sets
#: the subset walk's hash stream: splitmix(x, _WALK) = mix(x·φ + 0x632BE59BD9B4E019), the
#: engine's tie-breaking hash (:func:`~linkrisk.engine.nearest.rules.splitmix`) keyed by x
_WALK = 0x632BE59BD9B4E019 - 1


def _walk_base(rows: np.ndarray, seed: int) -> np.ndarray:
    """Each row's start on the subset walk's hash stream: splitmix(row ^ splitmix(seed,
    _WALK), _WALK), with the engine's :func:`~linkrisk.engine.nearest.rules.splitmix_np`
    (the compiled walks continue it with :func:`~linkrisk.engine.nearest.rules.splitmix`)."""
    return splitmix_np(rows ^ splitmix_np(np.full(rows.shape[0], seed, np.uint64), _WALK),
                       _WALK)


def group_sets(cmp: Comparison, score: np.ndarray, truth: np.ndarray, seed: int,
               rtol: float = RTOL, keep: np.ndarray | None = None,
               walk: str = "compiled") -> NearestSets:
    """Minimal-score (maximal-weight) candidate sets by the subset walk, valid when every
    attribute's agreement lowers the score by more than the tie window: then for each a
    the tied subsets S on which some b agrees with a are exactly the agreement patterns of
    C(a), and their groups of B are disjoint. One walk: the minimum, recording the groups it
    meets, then the tied groups replayed in walk order
    (count and a reservoir-sampled uniform link). ``keep``: the attributes to walk; the
    others must score agreement and disagreement identically (they are left out of the
    walk and scored as disagreeing, which gives the same bits). ``walk``: ``"compiled"``
    (the pruned compiled minimum walk with events, :func:`_min_walk`, and :func:`_replay`:
    same subsets, order and draws), ``"walks"`` (the compiled minimum walk, then a
    compiled collecting walk, :func:`_walk_kernel`) or ``"numpy"`` (the plain numpy walk,
    kept as the reference computation)."""
    n_a, m = cmp.a.shape
    keep = np.arange(m) if keep is None else np.flatnonzero(np.isin(np.arange(m), keep))
    codes = _stack(cmp)[:, keep]
    full = (((np.arange(1 << keep.size)[:, None] >> np.arange(keep.size)) & 1)
            << keep).sum(axis=1)
    score_k = score[full]  # score of each walked subset as a full pattern
    best = np.full(n_a, np.inf)
    if walk == "compiled":  # one walk: the minimum, recording the groups met (events)
        base = _walk_base(np.arange(n_a, dtype=np.uint64), seed)
        ev = _min_walk(codes, cmp.size[keep], n_a, score_k, best, base)
        thr = tie_threshold_np(best, rtol)
        count = np.zeros(n_a, np.int64)
        link = np.full(n_a, -1, np.int64)
        _replay(ev, _walk_order(keep.size), score_k, thr, base, count, link)
        return _group_result(cmp, score, truth, best, count, link, thr)
    if walk == "walks":  # the minimum, then a second walk collecting the tied groups
        size = cmp.size[keep]
        _run_walk(codes, size, n_a, _MIN, score_k=score_k, best=best)
        thr = tie_threshold_np(best, rtol)
        count = np.zeros(n_a, np.int64)
        link = np.full(n_a, -1, np.int64)
        base = _walk_base(np.arange(n_a, dtype=np.uint64), seed)
        _run_walk(codes, size, n_a, _COLLECT, score_k=score_k, thr=thr, base=base,
                  count=count, link=link)
        return _group_result(cmp, score, truth, best, count, link, thr)

    def find_min(s: int, ids: np.ndarray, g: int) -> None:
        cb = np.bincount(ids[n_a:], minlength=g)
        np.minimum(best, np.where(cb[ids[:n_a]] > 0, score_k[s], np.inf), out=best)

    subset_walk(codes, cmp.size[keep], find_min)
    thr = tie_threshold_np(best, rtol)
    count = np.zeros(n_a, np.int64)
    link = np.full(n_a, -1, np.int64)
    rows = np.arange(n_a, dtype=np.uint64)
    base = _walk_base(rows, seed)

    def collect(s: int, ids: np.ndarray, g: int) -> None:
        cb = np.bincount(ids[n_a:], minlength=g)
        c = cb[ids[:n_a]]
        hit = np.flatnonzero((c > 0) & (score_k[s] <= thr))
        if hit.size == 0:
            return
        c = c[hit]
        count[hit] += c
        h = splitmix_np(base[hit] + np.uint64(s), _WALK)
        u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
        take = u * count[hit] < c  # reservoir over groups: keep with prob c / total
        if not take.any():
            return
        hit, c, h = hit[take], c[take], h[take]
        r = (splitmix_np(h, _WALK) % c.astype(np.uint64)).astype(np.int64)
        gb = ids[n_a:]
        order = np.argsort(gb, kind="stable")
        start = np.cumsum(cb) - cb
        link[hit] = order[start[ids[hit]] + r]

    subset_walk(codes, cmp.size[keep], collect)
    return _group_result(cmp, score, truth, best, count, link, thr)


def _group_result(cmp: Comparison, score: np.ndarray, truth: np.ndarray, best: np.ndarray,
                  count: np.ndarray, link: np.ndarray, thr: np.ndarray) -> NearestSets:
    ts = np.full(cmp.a.shape[0], np.inf)
    ok = truth >= 0
    if ok.any():
        ts[ok] = score[_true_patterns(cmp, truth)[ok]]
    return NearestSets(best, count, ok & (ts <= thr), ts, link)


def _true_patterns(cmp: Comparison, truth: np.ndarray) -> np.ndarray:
    """Agreement pattern of each true pair (0 where there is none)."""
    t = np.where(truth >= 0, truth, 0)
    d = np.abs(cmp.a - cmp.b[t])
    agree = d <= np.where(cmp.tol > 0, cmp.tol, 0.0)
    return (agree.astype(np.int64) << np.arange(cmp.a.shape[1])).sum(axis=1)


def engine_sets(ctx: LinkContext, cmp: Comparison, wa: np.ndarray, wd: np.ndarray
                ) -> NearestSets:
    """Candidate sets through the engine's ``mixed`` metric: per-attribute tables with −w_j
    (−w_agree on the diagonal), i.e. the score of a pair is −w."""
    tabs = []
    for j in range(cmp.a.shape[1]):
        size = int(cmp.size[j])
        tabs.append(np.where(np.eye(size, dtype=bool), -wa[j], -wd[j]))
    return ctx.nearest(cmp.a, cmp.b, "mixed", tables=Tables.from_list(tabs)).sets


def pair_sets(ctx: LinkContext, cmp: Comparison, score: np.ndarray) -> NearestSets:
    n_a = cmp.a.shape[0]
    out_min, out_true = np.empty(n_a), np.empty(n_a)
    out_count, out_link = np.empty(n_a, np.int64), np.empty(n_a, np.int64)
    for r0, r1 in _blocks(n_a):  # row i's link depends on (seed, i) only: same result
        _pair_best_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, score, _NONE, _NONE,
                          ctx.truth[r0:r1], ctx.seed, RTOL, out_min[r0:r1], out_count[r0:r1],
                          out_true[r0:r1], out_link[r0:r1], r0)
        if ctx.progress is not None:
            ctx.progress(r1, n_a)
    thr = tie_threshold_np(out_min, RTOL)
    return NearestSets(out_min, out_count, (ctx.truth >= 0) & (out_true <= thr), out_true,
                       out_link)


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
    from ..engine.budget import dense_assignment_bytes
    from ..engine.matching.assignment import dense_assignment

    n_a, n_b, m = cmp.a.shape[0], cmp.b.shape[0], cmp.a.shape[1]
    need = dense_assignment_bytes(n_a, n_b)
    if need > ctx.memory_budget:
        raise LinkriskError(
            f"one_to_one=True needs a dense {n_a}x{n_b} cost matrix (~{need / 2**30:.1f} GiB), "
            "more than the memory budget; raise memory_budget or link fewer records")
    rng = np.random.default_rng(ctx.seed)
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
            cost[r0:r0 + step] = _missing_scores(ca[r0:r0 + step, None, :], cb_[None, :, :],
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
    ok = ctx.truth >= 0
    if weights is not None:
        va, vd = -weights[0], -weights[1]
        mn[linked] = _missing_scores(cmp.a[linked], cmp.b[link[linked]], cmp.tol, va, vd)
        ts[ok] = _missing_scores(cmp.a[ok], cmp.b[ctx.truth[ok]], cmp.tol, va, vd)
        return NearestSets(mn, (link >= 0).astype(np.int64),
                           ok & (link == ctx.truth) & (link >= 0), ts, link)
    agree = np.abs(cmp.a[linked] - cmp.b[link[linked]]) <= tol
    mn[linked] = score[(agree.astype(np.int64) << np.arange(m)).sum(axis=1)]
    if ok.any():
        # the true partners' costs, from their agreement patterns (the matrix is permuted)
        ts[ok] = score[_true_patterns(cmp, ctx.truth)[ok]]
    return NearestSets(mn, (link >= 0).astype(np.int64), ok & (link == ctx.truth) & (link >= 0),
                       ts, link)


# ---------------------------------------------------------------- missing values
# A comparison with a missing value on either side weighs 0: it is neither an agreement nor
# a disagreement (docs/methods.md, "Missing values"). A pattern is then a pair of bit masks
# (the attributes compared, those agreeing); the pairs are counted per pair of missingness
# patterns (engine/nearest/missing.py's grouping) with the ordinary counts on the
# attributes observed in both, and the candidate sets come from the engine's pattern-pair
# search (mixed tables of −w_j on the common attributes) or a pair kernel.
def missing_pattern_counts(cmp: Comparison, progress: Progress | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observed, agree, counts): the distinct (compared, agreeing) bit masks of the n·n'
    pairs and how many pairs show each, exact (sorted by observed, then agree)."""
    from ..engine.nearest.missing import check_pattern_count, patterns

    m = cmp.a.shape[1]
    pa, ga = patterns(~np.isnan(cmp.a))
    pb, gb = patterns(~np.isnan(cmp.b))
    check_pattern_count(len(ga) * len(gb), len(ga), len(gb))
    bit = np.left_shift(1, np.arange(m, dtype=np.int64))
    keys, cnts = [], []
    total, done = float(cmp.a.shape[0]) * cmp.b.shape[0], 0.0
    for p, r in enumerate(ga):
        for q, s_ in enumerate(gb):
            cols = np.flatnonzero(pa[p] & pb[q])
            o = int(bit[cols].sum())
            if cols.size:
                c = pattern_counts(cmp.sub(r, s_, cols))
                nz = np.flatnonzero(c)
                agree = ((nz[:, None] >> np.arange(cols.size)) & 1) @ bit[cols]
                keys.append((o << m) | agree)
                cnts.append(c[nz])
            else:
                keys.append(np.zeros(1, np.int64))
                cnts.append(np.array([r.size * s_.size], np.int64))
            done += float(r.size) * s_.size
            if progress is not None:
                progress(int(done), int(total))
    key, inv = np.unique(np.concatenate(keys), return_inverse=True)
    counts = np.zeros(key.size, np.int64)
    np.add.at(counts, np.asarray(inv).ravel(), np.concatenate(cnts))
    return key >> m, key & ((1 << m) - 1), counts


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


def _missing_scores(a: np.ndarray, b: np.ndarray, tol: np.ndarray, va: np.ndarray,
                    vd: np.ndarray) -> np.ndarray:
    """The score of the pairs (a, b) (broadcast over the leading axes), a missing
    comparison adding 0, summed in attribute order (:func:`observed_table`'s bits)."""
    acc = np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    for j in range(a.shape[-1]):
        x, y = a[..., j], b[..., j]
        obs = ~(np.isnan(x) | np.isnan(y))
        with np.errstate(invalid="ignore"):
            agree = np.abs(x - y) <= (tol[j] if tol[j] > 0 else 0.0)
        acc = acc + np.where(obs, np.where(agree, va[j], vd[j]), 0.0)
    return acc


@nb.njit(inline="always")
def _missing_score(a, b, i, k, tol, va, vd):
    s = 0.0
    for j in range(a.shape[1]):
        x, y = a[i, j], b[k, j]
        if np.isnan(x) or np.isnan(y):
            continue
        if abs(x - y) <= (tol[j] if tol[j] > 0 else 0.0):
            s += va[j]
        else:
            s += vd[j]
    return s


def missing_sets(ctx: LinkContext, cmp: Comparison, wa: np.ndarray, wd: np.ndarray,
                 path: str) -> NearestSets:
    """Maximal-weight candidate sets with missing comparisons: ``engine`` (the pattern-pair
    search of :mod:`~linkrisk.engine.nearest.missing` with the ``mixed`` tables of −w_j
    on the attributes observed in both; nothing in common: score 0) or ``pairs``."""
    if path == "engine":
        from ..engine.nearest.missing import space_build

        tabs = [np.where(np.eye(int(cmp.size[j]), dtype=bool), -wa[j], -wd[j])
                for j in range(cmp.a.shape[1])]
        build = space_build(cmp.a, cmp.b, "mixed", rescaled=np.zeros(cmp.a.shape[1], bool),
                            tables=Tables.from_list(tabs))
        return ctx.nearest_missing(~np.isnan(cmp.a), ~np.isnan(cmp.b), build).sets
    if path != "pairs":
        raise LinkriskError(f"path {path!r} does not take missing values; use 'engine' or "
                            "'pairs'")
    n_a = cmp.a.shape[0]
    out_min, out_true = np.empty(n_a), np.empty(n_a)
    out_count, out_link = np.empty(n_a, np.int64), np.empty(n_a, np.int64)
    for r0, r1 in _blocks(n_a):
        _pair_best_kernel(cmp.a[r0:r1], cmp.b, cmp.tol, _NONE, -wa, -wd, ctx.truth[r0:r1],
                          ctx.seed, RTOL, out_min[r0:r1], out_count[r0:r1], out_true[r0:r1],
                          out_link[r0:r1], r0)
        if ctx.progress is not None:
            ctx.progress(r1, n_a)
    thr = tie_threshold_np(out_min, RTOL)
    return NearestSets(out_min, out_count, (ctx.truth >= 0) & (out_true <= thr), out_true,
                       out_link)


# ---------------------------------------------------------------- the attack
def _path(cmp: Comparison, wa: np.ndarray, wd: np.ndarray, score: np.ndarray) -> str:
    """How to find the maximal-weight sets: ``groups`` (subset walk), ``engine`` or
    ``pairs`` (tolerances). Attributes with equal agreement and disagreement weights
    (m_j = u_j) are left out of the walk."""
    # the engine needs an L×L table per attribute: many categories go to the pair kernel
    slow = "engine" if cmp.size.max(initial=0) <= MAX_CATEGORIES else "pairs"
    if not cmp.coded:
        return "pairs"
    window = 4 * RTOL * float(np.abs(score).max())
    gain = (wa - wd)[wa != wd]
    if (gain <= window).any():
        return slow
    # two subset walks against one pass of the engine's kernel over all pairs
    return "groups" if 2 * _walk_cost(cmp, int(gain.size)) < _pair_cost(cmp) else slow


def _fixed_p(value: Any, known: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) and value == "known":
        return known
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = -1.0
    if not 0 < v < 1:
        raise LinkriskError(f"match_proportion must be None (estimate), 'known' or a number in "
                            f"(0, 1), got {value!r}")
    return v


def run_prl(ctx: LinkContext, q: int = 10, tol: Any = None, max_fp: float = 0.01,
            max_fn: float = 0.01, one_to_one: bool = False, max_iter: int = 1000,
            match_proportion: Any = "known", path: str = "auto") -> Outcome:
    """The ``prl`` attack; ``path`` (``auto``, ``groups``, ``engine``, ``pairs``) forces how
    the candidate sets are found (tests)."""
    m = len(ctx.qi)
    if m > MAX_ATTRIBUTES:
        raise LinkriskError(f"prl compares at most {MAX_ATTRIBUTES} attributes (2^m agreement "
                            f"patterns); got {m}: choose fewer QIs with --qi (qi=)")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise LinkriskError(f"max_iter must be a positive integer, got {max_iter!r}")
    cmp = compare(ctx, q, tol)
    n_pairs = ctx.n_a * ctx.n_b
    known = min(ctx.n_a, ctx.n_b) / n_pairs
    if cmp.missing:  # a comparison with a missing value weighs 0 (docs/methods.md)
        return _run_prl_missing(ctx, cmp, known, max_fp, max_fn, one_to_one, max_iter,
                                match_proportion, path)
    counts = pattern_counts(cmp, ctx.progress)
    fit = em(counts, m, known, max_iter, fixed_p=_fixed_p(match_proportion, known))
    wa, wd = agreement_weights(fit.m, fit.u)
    w = pattern_table(wa, wd)
    score = pattern_table(-wa, -wd)
    th = fs_thresholds(w, pattern_probs(fit.m), pattern_probs(fit.u), max_fp, max_fn)
    if one_to_one:
        chosen = "assignment"
        sets = assignment_sets(ctx, cmp, score, grid_scores(wa, wd))
    else:
        chosen = _path(cmp, wa, wd, score) if path == "auto" else path
        if chosen == "groups":
            sets = group_sets(cmp, score, ctx.truth, ctx.seed, keep=np.flatnonzero(wa != wd))
        elif chosen == "engine":
            sets = engine_sets(ctx, cmp, wa, wd)
        elif chosen == "pairs":
            sets = pair_sets(ctx, cmp, score)
        else:
            raise LinkriskError(f"unknown path {path!r}")
    return _outcome(ctx, cmp, fit, wa, wd, th, counts, th.cls, chosen, sets)


def _run_prl_missing(ctx: LinkContext, cmp: Comparison, known: float, max_fp: float,
                     max_fn: float, one_to_one: bool, max_iter: int, match_proportion: Any,
                     path: str) -> Outcome:
    """:func:`run_prl` on files with missing values: three-state comparisons (a missing
    one weighs 0), EM over the observed comparisons, the engine's pattern-pair search or
    the pair kernel for the sets, the assignment on per-pair grid costs."""
    m = cmp.a.shape[1]
    obs, agree, counts = missing_pattern_counts(cmp, ctx.progress)
    fit = em_missing(agree, obs, counts, m, known, max_iter,
                     fixed_p=_fixed_p(match_proportion, known))
    wa, wd = agreement_weights(fit.m, fit.u)
    th, cls = missing_thresholds(obs, agree, counts, fit, wa, wd, max_fp, max_fn)
    if one_to_one:
        chosen = "assignment"
        sets = assignment_sets(ctx, cmp, None, weights=(wa, wd))
    else:
        chosen = path
        if path == "auto":
            small = cmp.size.max(initial=0) <= MAX_CATEGORIES
            chosen = "engine" if cmp.coded and small else "pairs"
        sets = missing_sets(ctx, cmp, wa, wd, chosen)
    out = _outcome(ctx, cmp, fit, wa, wd, th, counts, cls, chosen, sets)
    compared = ((obs[:, None] >> np.arange(m)) & 1).sum(axis=1)
    out.extra["missing_values"] = True
    share = float(counts @ (m - compared)) / float(counts.sum() * m)
    out.extra["missing_comparisons"] = share
    return out


def _outcome(ctx: LinkContext, cmp: Comparison, fit: EMFit, wa: np.ndarray, wd: np.ndarray,
             th: Thresholds, counts: np.ndarray, cls: np.ndarray, chosen: str,
             sets: NearestSets) -> Outcome:
    m = len(ctx.qi)

    def per_col(v: np.ndarray) -> dict[str, float]:
        return {c: float(x) for c, x in zip(ctx.qi, v, strict=True)}

    extra = {
        "comparison": dict(zip(ctx.qi, cmp.rule, strict=True)),
        "m": per_col(fit.m), "u": per_col(fit.u), "match_proportion": fit.p,
        "em_iterations": fit.iterations, "em_converged": fit.converged,
        "weight_agree": per_col(wa), "weight_disagree": per_col(wd),
        "upper_threshold": th.upper, "lower_threshold": th.lower,
        "fp_probability": th.fp, "fn_probability": th.fn,
        "linked_pairs": int(counts[cls == 2].sum()),
        "clerical_pairs": int(counts[cls == 1].sum()),
        "nonlinked_pairs": int(counts[cls == 0].sum()),
        "pairs": int(ctx.n_a * ctx.n_b), "candidate_search": chosen,
    }
    zero = [c for c, a, d in zip(ctx.qi, wa, wd, strict=True) if a == d]
    if len(zero) > 1:
        # EM collapsed several attributes (m_j = u_j): they no longer count in the weight
        extra["warnings"] = [
            f"EM gave {len(zero)} of {m} attributes zero weight (m = u): "
            f"{', '.join(map(str, zero))}; the Fellegi-Sunter weight ignores them, so the "
            "linkage rate understates what these attributes reveal (compare dbrl_hamming)"]
    if not fit.converged:
        warnings.warn(f"prl: EM stopped after {fit.iterations} cycles without converging; "
                      "raise max_iter", RuntimeWarning, stacklevel=3)
    return Outcome(sets, extra)


@register("prl", "Fellegi-Sunter probabilistic linkage: EM-estimated m/u agreement weights",
          kinds=("numeric", "ordinal", "nominal"), params=(
              Param("q", int, 10, help="numeric attributes agree when both values fall in the "
                                       "same of q quantile bins of the attacker's file (≥ 2)"),
              Param("tol", object, type_name="number or {column: number}",
                    help="numeric attributes agree when |a−b| ≤ tol instead (attribute units)"),
              Param("max_fp", float, 0.01, help="largest P(link | non-match): sets the upper "
                                                "threshold"),
              Param("max_fn", float, 0.01, help="largest P(non-link | match): sets the lower "
                                                "threshold"),
              Param("one_to_one", bool, False, help="link by a one-to-one assignment on the "
                                                    "weights instead of each record's best set"),
              Param("max_iter", int, 1000, help="most EM cycles"),
              Param("match_proportion", object, "known", type_name="'known', None or number",
                    help="share of matches among the n·n' pairs: 'known' fixes "
                         "min(n,n')/(n·n'), None estimates it by EM, a number fixes it")))
def prl(ctx: LinkContext, q: int = 10, tol: Any = None, max_fp: float = 0.01,
        max_fn: float = 0.01, one_to_one: bool = False, max_iter: int = 1000,
        match_proportion: Any = "known") -> Outcome:
    """Fellegi–Sunter probabilistic record linkage (see :mod:`.probabilistic`): agreement
    patterns (categories equal; numeric in the same of ``q`` quantile bins of A, or within
    ``tol``), m/u by EM, weights in bits, LP/CP/NP thresholds from ``max_fp`` (P(link |
    non-match)) and ``max_fn`` (P(non-link | match)); each a linked to its maximal-weight
    candidate set, or by a one-to-one assignment (``one_to_one=True``). ``match_proportion``
    of the n·n' pairs: ``"known"`` (default) fixes it at min(n,n')/(n·n') — each record of
    the smaller file has its source in the other, as in a release; None estimates it by EM
    (Jaro); a number fixes it at that value."""
    return run_prl(ctx, q=q, tol=tol, max_fp=max_fp, max_fn=max_fn, one_to_one=one_to_one,
                   max_iter=max_iter, match_proportion=match_proportion)
