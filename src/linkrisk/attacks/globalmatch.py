"""Global distance-based record linkage (``gdbrl``; docs/methods.md, ``gdbrl``).

The attacker knows that the release is a one-to-one transformation of the original file
(masking never adds or drops records), so instead of linking every record to its nearest
neighbour independently — several originals may then claim the same masked record — he
links the files *globally*: the bijection σ: A → B that minimises the total distance,

    σ* = argmin_σ Σ_a d(a, σ(a)),    d = Euclidean distance on standardized values (default),

a linear assignment problem (Herranz, Matwin, Nin & Torra 2010, "Classifying data from
protected statistical datasets", Computers & Security 29(8):875–890; the one-to-one
linkage constraint goes back to Winkler's assignment step and Lenz 2006, "Measuring the
disclosure protection of micro aggregated business microdata", J. Official Statistics
22(4):681–710). Correct links are the fixed points of σ*: records matched to their own
masked version. The squared Euclidean distance used by DBRL would give a different
optimum (a sum of squares favours many medium errors over one large one), which is why the
definition uses the distance itself.

Options (docs/methods.md):

* ``delta=Δ`` keeps only the edges with d ≤ Δ; ``delta="owner"`` takes Δ = the largest
  distance between a record and its own masked version, the smallest threshold that keeps
  the true bijection feasible (a data owner's choice: it uses the truth).
* ``approx="agdbrl1"`` / ``"agdbrl2"`` (AGDBRL¹/², Herranz et al. 2010): with
  h(a) = #{b : d(a, b) < d(a, true(a))} (masked records strictly closer than a's true
  image), keep edge (a, b) iff rank_a(b) = #{b' : d(a, b') < d(a, b)} ≤ h, with
  h = max_a h(a) (AGDBRL¹) or h = h(a) per record (AGDBRL²). Ranks count strictly closer
  records, so ties share a rank and the true image (rank h(a)) is always kept. These
  graphs are owner-side approximations (they use the truth); records with no true image
  use h = max h(a).
* Edges in no perfect matching of a restricted graph are pruned before solving (Tassa
  2012, see :mod:`linkrisk.engine.matching.assignment`); ``pruned_edges`` reports how many.
* Unequal sizes (n ≠ n'): the smaller file is padded with dummy records at a constant
  cost. Since every perfect matching uses each dummy exactly once, the constant adds the
  same total to all of them, so the real records' matching is the same for any constant:
  the solvers work on the equivalent rectangular problem (every record of the smaller file
  gets a distinct partner). Records matched to a dummy are not links (``link = −1``).
  ``pad=False`` refuses files of different sizes.

Missing values (docs/methods.md, "Missing values"): the cost of a pair is the distance over
the attributes observed in both (as for the per-record attacks); the dense cost matrix is
built per pair of missingness patterns and solved densely when it fits the memory budget
(:func:`missing_costs`), larger files are refused. With blocking, one dense matrix and one
matching per block (the largest block's matrix must fit the budget).

Blocking (docs/methods.md, "Blocking"): one matching per block. AGDBRL's ranks count the
records of a's block and h is the maximum of h(a) over the records of every block whose
true image is in their block; a record whose true image is in another block has no rank
for it and keeps every record of its block (so that each block's graph still holds a
matching of its smaller side when every record has a true image).

Exactness: small files use a dense solver; large ones a k-NN candidate graph whose
optimum is certified for the complete graph by LP duality (``certified`` in the result's
extra; see :mod:`linkrisk.engine.matching`). Files that repeat their records
(categorical data: Adult's 32,561 records hold 8,688 distinct ones) are solved as a
transport between distinct records, also certified (:mod:`linkrisk.engine.matching.transport`).

Ties: with duplicate records several matchings are optimal. Rows are processed in a
seeded random order so the reported one does not favour the truth. ``ties="matching"``
(default) scores the reported matching averaged over the permutations of identical records
(:mod:`.orbit`: correct = fixed point when no record repeats; the draw's own count is
``fixed_points``); ``ties="expected"`` computes C(a) = partners of a over *all* optimal
matchings and scores χ(true ∈ C(a))/|C(a)| as DBRL does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..engine.blocking import Blocks, blocked_matching, local_truth
from ..engine.matching.dense import pair_costs
from ..engine.matching.knn import count_within, kth_cost
from ..engine.matching.solver import (
    DEFAULT_K,
    DEFAULT_K_LIST,
    DENSE_MAX_N,
    SCREEN_K,
    Matching,
    dense_matrix_matching,
    min_cost_matching,
)
from ..engine.nearest import NearestSets, Pairwise
from ..errors import LinkriskError
from ..params import Param
from .base import KINDS, LinkContext, Outcome, register
from .distance import METRICS, space
from .orbit import orbit_probabilities


@register("gdbrl", "global DBRL: minimum-cost perfect matching (the release is a bijection)",
          kinds=KINDS, params=(
              Param("metric", str, "euclidean", choices=METRICS,
                    help="the distance d(a, b) whose sum is minimised (euclidean: not squared, "
                         "on per-file standardized values; categorical QIs: the mixed "
                         "distance's square root)"),
              Param("delta", object, type_name="number or 'owner'",
                    help="keep only edges with d ≤ Δ; 'owner': Δ = the largest true-pair "
                         "distance"),
              Param("approx", str, choices=(None, "agdbrl1", "agdbrl2"),
                    help="owner-side approximations AGDBRL¹ / AGDBRL² (use the truth)"),
              Param("solver", str, "auto", choices=("auto", "dense", "sparse", "graph",
                                                    "patterns"),
                    help="dense for small files, else a certified sparse solver"),
              Param("k", int, None, help="degree of the sparse solver's candidate graph "
                                         f"(default {DEFAULT_K}; {SCREEN_K} for the "
                                         "float32-screened lists of large Euclidean files)"),
              Param("ties", str, "matching", choices=("matching", "expected"),
                    help="score the reported matching (averaged over identical records), "
                         "or every optimal matching's partners with the χ/|C| rule"),
              Param("pad", bool, True, help="allow files of different sizes (dummy records at "
                                            "a constant cost)"),
              Param("dense_max_n", int, DENSE_MAX_N, help="largest file solver='auto' solves "
                                                          "densely"),
              Param("d", int, 2, help="degree of the kernel metric"),
              Param("k_list", int, None,
                    help="length of the sparse solver's k-NN lists (the screened lists of "
                         f"large Euclidean problems: their width; default {DEFAULT_K_LIST}, "
                         f"{SCREEN_K} when screened)"),
              Param("standardize", bool, True,
                    help="standardize each file's attributes for the euclidean, l1 and "
                         "kernel metrics (False: raw values, the global-linkage paper's "
                         "plain distance)")))
def gdbrl(
    ctx: LinkContext,
    metric: str = "euclidean",
    delta: float | str | None = None,
    approx: str | None = None,
    solver: str = "auto",
    k: int | None = None,
    ties: str = "matching",
    pad: bool = True,
    dense_max_n: int = DENSE_MAX_N,
    d: int = 2,
    k_list: int | None = None,
    standardize: bool = True,
) -> Outcome:
    """Minimum-cost perfect matching σ* = argmin_σ Σ_a d(a, σ(a)) between the attacker's
    file and the release; correct links = fixed points σ*(a) = true(a).

    ``metric``: any distance of :func:`~linkrisk.attacks.distance.space` (default
    ``euclidean``: Euclidean, not squared, on per-file standardized values); ``d``: the
    kernel metric's degree; ``standardize=False``: raw values for the euclidean, l1 and
    kernel metrics (the global-linkage paper's plain Euclidean distance). ``delta``: a distance threshold Δ or ``"owner"``; ``approx``:
    ``agdbrl1`` or ``agdbrl2``; ``solver``: ``auto``, ``dense``, ``sparse``, ``graph`` or
    ``patterns``;
    ``k`` / ``k_list``: degree of the candidate graph / length of the k-NN lists of the
    sparse solver; ``dense_max_n``: largest file solved densely by ``auto``; ``ties``:
    ``matching`` or ``expected``; ``pad``: allow files of different sizes.

    ``extra``: ``total_cost`` (Σ d over matched pairs), ``certified`` (optimality proven),
    ``gap_bound`` (cost − optimum ≤ gap_bound), ``fixed_points``, ``solver``, ``k``,
    ``n_edges``, ``dummies`` (records matched to padding), ``delta``/``h`` when used, and
    the solver's diagnostics (rounds, scanned rows, pruned edges, …)."""
    n_a, n_b = ctx.n_a, ctx.n_b
    if n_a != n_b and not pad:
        raise LinkriskError(f"gdbrl matches the files one-to-one but they have {n_a} and {n_b} "
                            "records; pass pad=True to pad the smaller file with dummies")
    if approx not in (None, "agdbrl1", "agdbrl2"):
        raise LinkriskError(f"unknown approx {approx!r}; use 'agdbrl1' or 'agdbrl2'")
    kw: dict[str, Any] = {"d": d} if metric == "kernel" else {}
    if not standardize:
        kw["standardize"] = False
    if ctx.has_missing:
        return _missing(ctx, metric, kw, delta, approx, solver, ties)
    sp = space(ctx, metric, **kw)
    pw = Pairwise.build(sp.a, sp.b, sp.metric, root=sp.root, transpose=False, **sp.kw)
    truth, away = _block_truth(ctx)
    has = truth >= 0
    true_cost = np.full(n_a, np.inf)
    true_cost[has] = pair_costs(pw, np.flatnonzero(has), truth[has])
    extra: dict[str, Any] = {"metric": metric}
    dlt = _delta(delta, has, true_cost, extra)
    row_limit = _row_limit(approx, pw, has, true_cost, extra, ctx.blocks, away)
    opts = dict(metric=sp.metric, root=sp.root, delta=dlt, solver=solver, k=k, k_list=k_list,
                dense_max_n=dense_max_n, ties=ties, seed=ctx.seed,
                memory_budget=ctx.memory_budget, **sp.kw)
    if ctx.blocks is None:
        res = min_cost_matching(pw.x, pw.y, row_limit=row_limit, progress=ctx.progress,
                                **opts)
    else:  # one matching per block (docs/methods.md, "Blocking")
        res = blocked_matching(pw, ctx.blocks, row_limit=row_limit, progress=ctx.progress,
                               **opts)
    sets = _sets(res, truth, true_cost, extra)
    _average_identical(ctx, sets, truth, ties, approx, extra)
    extra.update(ties=ties)
    extra.update({k_: v for k_, v in res.info.items() if k_ not in ("k",)})
    return Outcome(sets, extra)


# ---------------------------------------------------------------- missing values
class _Captured:
    """A context whose pattern-pair search only records its inputs: the missing-value
    space of :func:`~linkrisk.attacks.distance.missing_linked` (standardization over the
    observed values, rescaling by m/m_o, …) is then the same as dbrl's."""

    def __init__(self, ctx: LinkContext):
        self._ctx = ctx
        self.got: tuple[np.ndarray, np.ndarray, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def nearest_missing(self, obs_a: np.ndarray, obs_b: np.ndarray, build: Any) -> None:
        self.got = (obs_a, obs_b, build)


def missing_space(ctx: LinkContext, metric: str, kw: dict[str, Any]
                  ) -> tuple[np.ndarray, np.ndarray, Any]:
    """(obs_a, obs_b, build): the observed cells of both files and the pattern-pair builder
    of :func:`~linkrisk.attacks.distance.missing_linked` (transforms of the whole files)."""
    from .distance import missing_linked

    cap = _Captured(ctx)
    missing_linked(cap, metric, **kw)  # type: ignore[arg-type]
    assert cap.got is not None
    return cap.got


def missing_costs(space: tuple[np.ndarray, np.ndarray, Any], ia: np.ndarray, ib: np.ndarray,
                  root: bool) -> tuple[np.ndarray, np.ndarray]:
    """(cost, no_info): the dense |ia| × |ib| matrix of the distances d(a, b) between the
    attacker's rows ``ia`` and the released rows ``ib`` (all rows, or a block's) over the
    attributes observed in both records (docs/methods.md, "Missing values": the same
    distance as the per-record attack of that metric, square-rooted when ``root``, i.e.
    for ``euclidean``), built per pair of missingness patterns with the engine's kernels
    from the :func:`missing_space` ``space``; ``no_info`` marks the pairs with no numeric
    attribute in common (d = +∞)."""
    from ..engine.matching.knn import dense_costs
    from ..engine.nearest.missing import check_pattern_count, patterns

    obs_a, obs_b, build = space
    pa, ga = patterns(obs_a[ia])
    pb, gb = patterns(obs_b[ib])
    check_pattern_count(len(ga) * len(gb), len(ga), len(gb))
    cost = np.empty((ia.size, ib.size))
    no_info = np.zeros((ia.size, ib.size), bool)
    for p, r in enumerate(ga):
        for q, s in enumerate(gb):
            sub = build(ia[r], ib[s], pa[p] & pb[q])
            if sub.x is None:
                cost[np.ix_(r, s)] = np.sqrt(sub.const) if root else sub.const
                no_info[np.ix_(r, s)] = sub.const == np.inf
                continue
            k = sub.kw or {}
            pw = Pairwise.build(sub.x, sub.y, sub.metric, root=root,
                                degree=k.get("degree", 2), tables=k.get("tables"),
                                transpose=False)
            cost[np.ix_(r, s)] = dense_costs(pw)
    return cost, no_info


def _missing(ctx: LinkContext, metric: str, kw: dict[str, Any], delta: float | str | None,
             approx: str | None, solver: str, ties: str) -> Outcome:
    """gdbrl on files with missing QI values: the dense cost matrix of
    :func:`missing_costs` (when it fits the memory budget), solved by
    :func:`~linkrisk.engine.matching.solver.dense_matrix_matching` with the same seeded
    order, tie rule, Δ and AGDBRL limits. A pair with no numeric attribute in common
    (d = +∞) costs more than any matching of finite pairs, so the fewest such pairs are
    used; they count as links at distance +∞. With blocking, one dense matrix and one
    matching per block (:func:`~linkrisk.engine.blocking.assembled_matching`): Δ = 'owner'
    and AGDBRL's h are those of all blocks together, ranks are within the record's
    block."""
    from ..engine.blocking import assembled_matching
    from ..engine.budget import dense_matrix_bytes

    n_a, n_b = ctx.n_a, ctx.n_b
    if solver not in ("auto", "dense"):
        raise LinkriskError(f"gdbrl on files with missing values solves the dense cost matrix; "
                            f"solver={solver!r} does not take missing values yet (use 'auto' "
                            "or 'dense')")
    blocks = ctx.blocks
    groups = ([(np.arange(n_a), np.arange(n_b))] if blocks is None else blocks.groups())
    sizes = [dense_matrix_bytes(ia.size, ib.size) for ia, ib in groups]
    need = max(sizes, default=0)
    if need > ctx.memory_budget:
        ia, ib = groups[int(np.argmax(sizes))]
        what = "" if blocks is None else " of its largest block"
        raise LinkriskError(
            f"gdbrl on files with missing values needs the dense {ia.size:,}x{ib.size:,} cost "
            f"matrix{what} (~{need / 2**20:,.0f} MiB), more than the memory budget "
            f"({ctx.memory_budget / 2**20:,.0f} MiB): the sparse certified solver does not "
            "take missing values yet; raise memory_budget (--memory), link a sample, or use "
            "dbrl, which scores such files")
    space = missing_space(ctx, metric, kw)
    root = metric == "euclidean"
    truth, away = _block_truth(ctx)
    has = truth >= 0
    true_cost = np.full(n_a, np.inf)
    extra: dict[str, Any] = {"metric": metric, "missing_values": True}
    if approx is not None:
        _need_truth(has, f"approx={approx!r}")
    # Δ = 'owner' and AGDBRL's h need every block's true-pair costs before any solve: a
    # first pass, whose matrices are kept for the second when all of them fit the budget
    first = approx is not None or isinstance(delta, str)
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    h_a = np.full(n_a, -1, np.int64)
    for g, (ia, ib) in enumerate(groups if first else ()):
        cost, no_info = missing_costs(space, ia, ib, root)
        hs = _true_costs(cost, truth, ia, ib, true_cost)
        if approx is not None:
            h_a[ia[hs]] = (cost[hs] < true_cost[ia[hs], None]).sum(axis=1)
        if sum(sizes) <= ctx.memory_budget:
            kept[g] = cost, no_info
    dlt = _delta(delta, has, true_cost, extra)
    h = int(h_a.max())
    if approx is not None:
        extra.update(h=h, approx=approx)

    def solved() -> Iterator[tuple[np.ndarray, np.ndarray, Matching]]:
        for g, (ia, ib) in enumerate(groups):
            cost, no_info = kept.pop(g) if g in kept else missing_costs(space, ia, ib, root)
            hs = _true_costs(cost, truth, ia, ib, true_cost) if not first else has[ia]
            limit = None
            if approx is not None:
                kth = min(h, ib.size - 1)
                tau = np.partition(cost, kth, axis=1)[:, kth]
                limit = tau if approx == "agdbrl1" else np.where(hs, true_cost[ia], tau)
                limit[away[ia]] = np.inf
            if np.isfinite(dlt):
                limit = np.full(ia.size, dlt) if limit is None else np.minimum(limit, dlt)
            work = cost.copy()
            if limit is not None:
                work[work > limit[:, None]] = np.inf
            if no_info.any():  # +∞ pairs still allowed: dearer than any matching of finite pairs
                fin = work[np.isfinite(work)]
                big = (float(fin.max(initial=0.0)) + 1.0) * (min(ia.size, ib.size) + 1)
                work[no_info & (limit is None or np.isinf(limit)[:, None])] = big
            res = dense_matrix_matching(work, limit=limit, ties=ties, seed=ctx.seed,
                                        approx=approx is not None)
            del work
            linked = res.link >= 0
            res.cost[linked] = cost[np.flatnonzero(linked), res.link[linked]]
            res.total_cost = float(res.cost[linked & np.isfinite(res.cost)].sum())
            yield ia, ib, res

    if blocks is None:
        _, _, res = next(solved())
    else:
        res = assembled_matching(n_a, solved(), len(groups), expected=ties == "expected",
                                 progress=ctx.progress)
    linked = res.link >= 0
    extra["no_information_links"] = int(np.isinf(res.cost[linked]).sum())
    sets = _sets(res, truth, true_cost, extra)
    _average_identical(ctx, sets, truth, ties, approx, extra)
    extra.update(ties=ties)
    extra.update({k_: v for k_, v in res.info.items() if k_ not in ("k",)})
    return Outcome(sets, extra)


def _block_truth(ctx: LinkContext) -> tuple[np.ndarray, np.ndarray]:
    """(truth, away): the true partners within the record's block (−1 for none: a partner
    in another block is no true pair of the matching) and the records whose partner is in
    another block (none without blocking)."""
    truth = np.asarray(ctx.truth, np.int64)
    if ctx.blocks is None:
        return truth, np.zeros(truth.shape[0], bool)
    inside = ctx.blocks.linkable(truth)
    return np.where(inside, truth, -1), (truth >= 0) & ~inside


def _true_costs(cost: np.ndarray, truth: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                true_cost: np.ndarray) -> np.ndarray:
    """Fill ``true_cost`` of the rows ``ia`` whose true partner is among ``ib`` from their
    cost matrix; returns which of them have one."""
    lt = local_truth(truth[ia], ib)
    hs = lt >= 0
    true_cost[ia[hs]] = cost[np.flatnonzero(hs), lt[hs]]
    return hs


def _delta(delta: float | str | None, has: np.ndarray, true_cost: np.ndarray,
           extra: dict[str, Any]) -> float:
    """The distance threshold Δ: a number, ``"owner"`` (the largest true-pair distance)
    or ∞ (None)."""
    if delta is None:
        return np.inf
    if isinstance(delta, str):
        if delta != "owner":
            raise LinkriskError(f"delta must be a number or 'owner', got {delta!r}")
        _need_truth(has, "delta='owner'")
        dlt = float(true_cost[has].max())
    else:
        dlt = float(delta)
        if not dlt >= 0:
            raise LinkriskError(f"delta must be a non-negative distance, got {delta}")
    extra["delta"] = dlt
    return dlt


def _row_limit(approx: str | None, pw: Pairwise, has: np.ndarray, true_cost: np.ndarray,
               extra: dict[str, Any], blocks: Blocks | None = None,
               away: np.ndarray | None = None) -> np.ndarray | None:
    """Per-row distance limits of the approximate attacks (None for the exact one):
    h = max_a #{b : d(a, b) < d(a, true(a))}; agdbrl1 keeps each row's h+1 nearest
    records, agdbrl2 the records no farther than its true image. With ``blocks`` the
    records b are those of a's block and h is the maximum over the records whose true image
    is in their block; a record whose true image is in another block (``away``) keeps its
    whole block (it has no rank there), so that every block still has a perfect matching;
    a row of no block gets no limit (it is not matched)."""
    if approx is None:
        return None
    n_a = pw.x.shape[0]
    _need_truth(has, f"approx={approx!r}")
    groups = ([(np.arange(n_a), np.arange(pw.y.shape[0]))] if blocks is None
              else blocks.groups())
    subs = [pw if blocks is None else pw.block(ia, ib) for ia, ib in groups]
    # h(a) = #{b : d(a, b) < d(a, true(a))}: one counting pass
    h_a = np.full(n_a, -1, np.int64)
    for (ia, _), sub in zip(groups, subs, strict=True):
        hs = has[ia]
        if hs.any():
            h_a[ia[hs]] = count_within(sub if hs.all() else sub.rows(hs),
                                       true_cost[ia[hs]], strict=True)
    h = int(h_a.max())
    extra["h"] = h
    extra["approx"] = approx
    # rank_a(b) ≤ h(a)  ⇔  d(a, b) ≤ d(a, true(a)) (agdbrl2, rows with a true image);
    # rank_a(b) ≤ h  ⇔  d(a, b) ≤ (h+1)-th smallest distance of a (the others)
    two = approx == "agdbrl2"
    limit = np.where(has, true_cost, np.inf) if two else np.full(n_a, np.inf)
    rest = ~has if two else np.ones(n_a, bool)
    if away is not None:
        rest &= ~away
    for (ia, _), sub in zip(groups, subs, strict=True):
        r = rest[ia]
        if r.any():
            limit[ia[r]] = kth_cost(sub if r.all() else sub.rows(r), h + 1)
    return limit


def _sets(res: Matching, truth: np.ndarray, true_cost: np.ndarray, extra: dict[str, Any]
          ) -> NearestSets:
    """The matching as candidate sets: the matched record, or under ties="expected" every
    record some optimal matching links (expected correct links in ``extra``)."""
    n_a = truth.shape[0]
    has = truth >= 0
    link = res.link
    linked = link >= 0
    fixed = linked & has & (link == truth)
    if res.cand_indptr is not None:
        count = np.diff(res.cand_indptr)
        rows = np.repeat(np.arange(n_a), count)
        hit = res.cand_indices == truth[rows]
        true_in = np.zeros(n_a, bool)
        true_in[rows[hit]] = True
        extra["expected_correct_links"] = float((true_in / np.maximum(count, 1)).sum())
    else:
        count = linked.astype(np.int64)
        true_in = fixed
    extra.update(total_cost=res.total_cost, certified=res.certified, gap_bound=res.gap_bound,
                 fixed_points=int(fixed.sum()), solver=res.solver, k=res.k,
                 n_edges=res.n_edges, dummies=int((~linked).sum()))
    return NearestSets(min_score=res.cost, count=count, true_in_set=true_in,
                       true_score=true_cost, link=link)


def _average_identical(ctx: LinkContext, sets: NearestSets, truth: np.ndarray, ties: str,
                       approx: str | None, extra: dict[str, Any]) -> None:
    """Under ties="matching", the matching's correct links averaged over the permutations
    of identical records (:mod:`.orbit`: the solver's choice among them is a seeded draw).
    Not with ``approx``: its per-record limits come from each record's true partner, so
    identical records are not interchangeable there."""
    if ties != "matching" or approx is not None:
        return
    p = orbit_probabilities(ctx, sets.link, truth)
    if p is not None:
        sets.prob = p
        extra["expected_correct_links"] = float(p.sum())


def _need_truth(has: np.ndarray, what: str) -> None:
    if not has.any():
        raise LinkriskError(f"{what} uses the true pairs but no record has a known true "
                            "image; give matching id columns with ids=")
