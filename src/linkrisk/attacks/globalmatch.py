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

Exactness: small files use a dense solver; large ones a k-NN candidate graph whose
optimum is certified for the complete graph by LP duality (``certified`` in the result's
extra; see :mod:`linkrisk.engine.matching`). Files that repeat their records
(categorical data: Adult's 32,561 records hold 8,688 distinct ones) are solved as a
transport between distinct records, also certified (:mod:`linkrisk.engine.matching.transport`).

Ties: with duplicate records several matchings are optimal. Rows are processed in a
seeded random order so the reported one does not favour the truth. ``ties="matching"``
(default) scores the reported matching (correct = fixed point); ``ties="expected"``
computes C(a) = partners of a over *all* optimal matchings and scores χ(true ∈ C(a))/|C(a)|
as DBRL does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.matching.knn import count_within, kth_cost, pair_costs
from ..engine.matching.solver import (
    DEFAULT_K,
    DEFAULT_K_LIST,
    DENSE_MAX_N,
    SCREEN_K,
    Matching,
    min_cost_matching,
)
from ..engine.nearest import NearestSets, Pairwise
from ..errors import LinkriskError
from ..params import Param
from .base import KINDS, LinkContext, Outcome, register
from .distance import METRICS, space


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
                    help="score the reported matching, or every optimal matching's partners "
                         "with the χ/|C| rule"),
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
    if ctx.has_missing:
        raise LinkriskError(MISSING)
    kw: dict[str, Any] = {"d": d} if metric == "kernel" else {}
    if not standardize:
        kw["standardize"] = False
    sp = space(ctx, metric, **kw)
    pw = Pairwise.build(sp.a, sp.b, sp.metric, root=sp.root, transpose=False, **sp.kw)
    truth = np.asarray(ctx.truth, np.int64)
    has = truth >= 0
    true_cost = np.full(n_a, np.inf)
    true_cost[has] = pair_costs(pw, np.flatnonzero(has), truth[has])
    extra: dict[str, Any] = {"metric": metric}
    dlt = _delta(delta, has, true_cost, extra)
    row_limit = _row_limit(approx, pw, has, true_cost, extra)
    res = min_cost_matching(
        pw.x, pw.y, metric=sp.metric, root=sp.root, delta=dlt, row_limit=row_limit,
        solver=solver, k=k, k_list=k_list, dense_max_n=dense_max_n, ties=ties, seed=ctx.seed,
        memory_budget=ctx.memory_budget, progress=ctx.progress, **sp.kw)
    sets = _sets(res, truth, true_cost, extra)
    extra.update(ties=ties)
    extra.update({k_: v for k_, v in res.info.items() if k_ not in ("k",)})
    return Outcome(sets, extra)


#: why gdbrl refuses files with missing QI values (docs/methods.md, "Missing values")
MISSING = ("missing values: the global matching's costs over the attributes observed in both "
           "records are not implemented; the per-record attacks (dbrl_hamming, dbrl, "
           "dbrl_mixed …) score such files")


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
               extra: dict[str, Any]) -> np.ndarray | None:
    """Per-row distance limits of the approximate attacks (None for the exact one):
    h = max_a #{b : d(a, b) < d(a, true(a))}; agdbrl1 keeps each row's h+1 nearest
    records, agdbrl2 the records no farther than its true image."""
    if approx is None:
        return None
    n_a = pw.x.shape[0]
    _need_truth(has, f"approx={approx!r}")
    # h(a) = #{b : d(a, b) < d(a, true(a))}: one counting pass
    h_a = np.full(n_a, -1, np.int64)
    h_a[has] = count_within(pw if has.all() else pw.rows(has), true_cost[has], strict=True)
    h = int(h_a.max())
    extra["h"] = h
    # rank_a(b) ≤ h  ⇔  d(a, b) ≤ (h+1)-th smallest distance of a
    tau = kth_cost(pw, np.full(n_a, h + 1)) if (approx == "agdbrl1" or not has.all()) \
        else None
    extra["approx"] = approx
    if approx == "agdbrl1":
        return tau
    # rank_a(b) ≤ h(a)  ⇔  d(a, b) ≤ d(a, true(a))
    return np.where(has, true_cost, tau if tau is not None else np.inf)


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


def _need_truth(has: np.ndarray, what: str) -> None:
    if not has.any():
        raise LinkriskError(f"{what} uses the true pairs but no record has a known true "
                            "image; give matching id columns with ids=")
