"""Distance-based record linkage (DBRL) and its variants (docs/methods.md, Attacks).

Each attack maps both files into a *space* where one of the engine's metrics gives the
documented score (:func:`space`), then asks the engine for the candidate sets C(a) (all records
at minimal score, ties within relative tolerance 1e-9). The global attack reuses the same
spaces for its matching costs.

References: Pagliuca & Seri (1999) and Domingo-Ferrer & Torra (2001) for DBRL;
Torra, Abowd & Domingo-Ferrer (2006) for the Mahalanobis variants (DBRLM-COV / -COV0);
Herranz, Nin & Torra (2010) for kernel DBRL and the tie-aware measure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import rankdata

from ..engine.nearest.transforms import (
    average_ranks,
    covariance,
    difference_sd,
    standardize,
    standardize_observed,
    whiten,
    whitening,
)
from ..errors import LinkriskError
from ..params import Param
from .base import KINDS, LinkContext, Outcome, register
from .categorical import categorical_space
from .spaces import Space

DBRL2_SIGMAS = ("spread", "aligned")


def _dbrl2_scale(ctx: LinkContext, sigma: str = "spread") -> np.ndarray:
    """Per-attribute σ_j of DBRL2 (Torra, Abowd & Domingo-Ferrer 2006 as used by the IPSO
    paper). ``sigma="spread"`` (default, the attacker's view): σ_j = √(Var A_j + Var B_j),
    the spread of A_j − B_j when the files are *not* aligned, needing no knowledge of the
    true pairs; it reproduces the IPSO paper's published DBRL2 figures.
    ``sigma="aligned"`` (the data owner's view): σ_j = σ(A_j − B_j) over the true pairs
    (ddof=1). A zero σ_j (an attribute the masking left untouched, under "aligned", or a
    constant one) gets the weight of σ = 1e-9·sd(A_j) (1e-9 if A_j is constant) rather than
    a division by zero."""
    _check_sigma(sigma)
    a, b = ctx.numeric()
    va = np.diag(covariance(a))
    if sigma == "aligned":
        ia, ib = ctx.true_pairs()
        return _sigma_floor(difference_sd(a, b, ia, ib), va)
    return _sigma_floor(np.sqrt(va + np.diag(covariance(b))), va)


def _check_sigma(sigma: str) -> None:
    if sigma not in DBRL2_SIGMAS:
        raise LinkriskError(f"dbrl2: sigma={sigma!r} is not one of {', '.join(DBRL2_SIGMAS)}")


def _sigma_floor(sd: np.ndarray, va: np.ndarray) -> np.ndarray:
    """σ_j, a zero one replaced by 1e-9·sd(A_j) (1e-9 if A_j is constant)."""
    sa = np.sqrt(va)
    return np.where(sd > 0, sd, 1e-9 * np.where(sa > 0, sa, 1.0))


def _categorical_metric(ctx: LinkContext, metric: str) -> bool:
    """Whether ``metric`` is served by :mod:`.categorical` on these QIs."""
    return metric in ("hamming", "mixed") or (
        metric in ("euclidean", "sqeuclidean", "l1")
        and any(ctx.kinds[c] != "numeric" for c in ctx.qi))


#: largest kernel degree: (1 + x·y)^d of standardized records overflows float64 (or loses
#: every digit of the distance K(a,a) − 2K(a,b) + K(b,b)) long before d = 200
MAX_KERNEL_DEGREE = 50


def kernel_degree(d: object) -> int:
    """The kernel degree as an integer in 1..:data:`MAX_KERNEL_DEGREE`, refusing
    fractions (2.5 is not silently truncated), booleans and text."""
    if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
        raise LinkriskError(f"kernel degree d must be an integer from 1 to "
                            f"{MAX_KERNEL_DEGREE}, got {d!r}")
    if not np.isfinite(d) or float(d) != int(d) or not 1 <= int(d) <= MAX_KERNEL_DEGREE:
        raise LinkriskError(f"kernel degree d must be an integer from 1 to "
                            f"{MAX_KERNEL_DEGREE}, got {d!r}")
    return int(d)


def _whitened(ctx: LinkContext, with_cov: bool) -> tuple[np.ndarray, np.ndarray]:
    m = len(ctx.qi)
    if min(ctx.n_a, ctx.n_b) <= m:
        raise LinkriskError(f"Mahalanobis distances need more records than QIs to estimate "
                            f"a {m}×{m} covariance (here {min(ctx.n_a, ctx.n_b):,} records); "
                            "use fewer QIs (--qi) or another attack")
    a, b = ctx.numeric()
    if with_cov:
        ia, ib = ctx.true_pairs()
        cab = covariance(a, b, ix=ia, iy=ib)
        if ia.size == ctx.n_a and ib.size == ctx.n_b:
            s = covariance(a) + covariance(b) - cab - cab.T
        else:
            # records of one file without a partner (added or dropped records): the three
            # terms on the same (true-pair) rows, else S need not be positive semi-definite
            # and would be refused as "collinear" for a reason that is not
            s = (covariance(a, a, ix=ia, iy=ia) + covariance(b, b, ix=ib, iy=ib)
                 - cab - cab.T)
    else:
        s = covariance(a) + covariance(b)
    w = whitening(s, ctx.qi, what="Var(A)+Var(B)-2Cov(A,B)" if with_cov else "Var(A)+Var(B)")
    # centre both files on A's mean first: the score only depends on a − b, and centring
    # keeps the whitened coordinates small
    mu = a.mean(axis=0)
    a, b = ctx.take_numeric()
    return whiten(a, w, mu, inplace=True), whiten(b, w, mu, inplace=True)


def space(ctx: LinkContext, metric: str = "euclidean", **kw: Any) -> Space:
    """The named distance as engine inputs. Metrics: ``euclidean`` / ``sqeuclidean`` /
    ``l1`` (per-file standardized attributes), ``dbrl2``, ``mahalanobis``,
    ``mahalanobis0``, ``kernel`` (``d=``), ``rank_sum``, ``rank_max``; ``hamming`` and
    ``mixed`` (and ``euclidean``/``sqeuclidean``/``l1`` on QIs that include categorical
    attributes) encode categories, see :mod:`.categorical`. ``standardize=False`` (for
    ``euclidean``, ``sqeuclidean``, ``l1`` and ``kernel``) keeps the raw, unstandardized
    values: the distance is then dominated by the attributes of largest scale, as in the
    global-linkage paper's text (Herranz, Nin, Rodríguez & Tassa 2015), which defines the
    plain Euclidean distance. ``sigma`` selects DBRL2's σ (see :func:`_dbrl2_scale`)."""
    kw = dict(kw)
    standardized = bool(kw.pop("standardize", True))
    sigma = str(kw.pop("sigma", "spread"))
    if _categorical_metric(ctx, metric):
        return categorical_space(ctx, metric, **kw)
    if metric in ("euclidean", "sqeuclidean", "l1", "kernel"):
        a, b = ctx.take_numeric()  # standardized in place: one matrix per file at 10⁶
        if standardized:
            sa, sb = standardize(a, inplace=True), standardize(b, inplace=True)
        else:
            sa, sb = a, b
        if metric == "kernel":
            return Space(sa, sb, "kernel", {"degree": kernel_degree(kw.get("d", 2))})
        if metric == "l1":
            return Space(sa, sb, "l1")
        return Space(sa, sb, "sqeuclidean", root=metric == "euclidean")
    if not standardized:
        raise LinkriskError(f"standardize=False applies to the euclidean, sqeuclidean, l1 and "
                            f"kernel metrics, not to {metric!r}")
    if metric == "dbrl2":
        sd = _dbrl2_scale(ctx, sigma)
        a, b = ctx.take_numeric()
        a /= sd
        b /= sd
        return Space(a, b, "sqeuclidean")
    if metric in ("mahalanobis", "mahalanobis0"):
        wa, wb = _whitened(ctx, metric == "mahalanobis")
        return Space(wa, wb, "sqeuclidean")
    if metric in ("rank_sum", "rank_max"):
        a, b = ctx.take_numeric()
        norm = a.shape[0] != b.shape[0]
        ra = average_ranks(a, normalize=norm, inplace=True)
        rb = average_ranks(b, normalize=norm, inplace=True)
        return Space(ra, rb, "l1" if metric == "rank_sum" else "linf")
    raise LinkriskError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")


METRICS = ("euclidean", "sqeuclidean", "l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel",
           "rank_sum", "rank_max", "hamming", "mixed")


_STANDARDIZE = Param("standardize", bool, True,
                     help="standardize each file's attributes (False: raw values, the "
                          "global-linkage paper's plain distance)")


def linked(ctx: LinkContext, metric: str, **kw: Any) -> Outcome:
    """Nearest-record candidate sets under a named distance (over the attributes observed
    in both records when values are missing: :func:`missing_linked`)."""
    if ctx.has_missing:
        return missing_linked(ctx, metric, **kw)
    sp = space(ctx, metric, **kw)
    return ctx.nearest(sp.a, sp.b, sp.metric, **sp.kw)


# ---------------------------------------------------------------- missing values
def _observed_ranks(x: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """Average ranks 1..n_j over each column's n_j observed values (NaN kept), divided by
    n_j where ``norm`` says so. In place."""
    for j in range(x.shape[1]):
        ok = ~np.isnan(x[:, j])
        x[ok, j] = rankdata(x[ok, j], method="average")
        if norm[j]:
            x[ok, j] /= ok.sum()
    return x


def _complete(x: np.ndarray) -> np.ndarray:
    return np.flatnonzero(~np.isnan(x).any(axis=1))


def _missing_whitening(ctx: LinkContext, a: np.ndarray, b: np.ndarray, with_cov: bool):
    """Mahalanobis with missing values: S = Var(A) + Var(B) estimated on each file's
    complete records (mahalanobis0), or Var(A) + Var(B) − 2 Cov(A,B) on the complete true
    pairs (mahalanobis; one set of rows for the three terms), once; each pattern pair whitens its
    observed sub-vectors with S restricted to them (the Mahalanobis distance of the
    observed sub-vector), centred on the complete records' mean of A."""
    ca, cb = _complete(a), _complete(b)
    m = len(ctx.qi)
    if min(ca.size, cb.size) <= m:
        raise LinkriskError(f"Mahalanobis distances with missing values estimate the {m}×{m} "
                            f"covariance on complete records and need more of them than QIs "
                            f"(here {min(ca.size, cb.size):,}); use fewer QIs (--qi) or "
                            "another attack")
    if with_cov:  # all three terms on the same rows, so that S stays positive semi-definite
        ia, ib = ctx.true_pairs()
        ok = ~(np.isnan(a[ia]).any(axis=1) | np.isnan(b[ib]).any(axis=1))
        if ok.sum() <= m:
            raise LinkriskError(f"mahalanobis with missing values estimates its {m}×{m} "
                                "covariance on the complete true pairs and needs more of them "
                                f"than QIs (here {int(ok.sum()):,}); use mahalanobis0, fewer "
                                "QIs (--qi) or another attack")
        ia, ib = ia[ok], ib[ok]
        cab = covariance(a, b, ix=ia, iy=ib)
        s = covariance(a, a, ix=ia, iy=ia) + covariance(b, b, ix=ib, iy=ib) - cab - cab.T
    else:
        s = covariance(a[ca]) + covariance(b[cb])
    mu = a[ca].mean(axis=0)
    what = "Var(A)+Var(B)-2Cov(A,B)" if with_cov else "Var(A)+Var(B)"
    cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def whiten_cols(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = tuple(cols.tolist())
        if key not in cache:
            names = [ctx.qi[j] for j in cols]
            cache[key] = (whitening(s[np.ix_(cols, cols)], names, what=what), mu[cols])
        return cache[key]

    return whiten_cols


def missing_linked(ctx: LinkContext, metric: str, **kw: Any) -> Outcome:
    """Candidate sets when QI values are missing (docs/methods.md, "Missing values"): the
    distance of a pair over the attributes observed in both, the numeric part rescaled
    from the m_o attributes observed in both to all m (sums × m/m_o; L∞ unscaled),
    standardization, ranks and σ over each attribute's observed values; categorical
    attributes: a missing category matches any (see :mod:`.categorical`)."""
    from ..engine.nearest.missing import space_build

    kw = dict(kw)
    standardized = bool(kw.pop("standardize", True))
    sigma = str(kw.pop("sigma", "spread"))
    if _categorical_metric(ctx, metric):
        sp = categorical_space(ctx, metric, missing=True, **kw)
        num = np.array([ctx.kinds[c] == "numeric" for c in ctx.qi])
        build = space_build(sp.a, sp.b, sp.metric, rescaled=num, tables=sp.kw["tables"])
        return ctx.nearest_missing(~np.isnan(sp.a), ~np.isnan(sp.b), build)
    ctx.check_numeric()
    a, b = ctx.numeric_observed()
    obs_a, obs_b = ~np.isnan(a), ~np.isnan(b)
    every = np.ones(a.shape[1], bool)
    whiten = None
    if metric in ("euclidean", "sqeuclidean", "l1", "kernel"):
        if standardized:
            standardize_observed(a)
            standardize_observed(b)
        eng = {"kernel": "kernel", "l1": "l1"}.get(metric, "sqeuclidean")
    elif not standardized:
        raise LinkriskError(f"standardize=False applies to the euclidean, sqeuclidean, l1 and "
                            f"kernel metrics, not to {metric!r}")
    elif metric == "dbrl2":
        _check_sigma(sigma)
        va = np.nanvar(a, axis=0, ddof=1)
        if sigma == "aligned":  # over the true pairs observed in both
            ia, ib = ctx.true_pairs()
            sd = _sigma_floor(np.nanstd(a[ia] - b[ib], axis=0, ddof=1), va)
        else:
            sd = _sigma_floor(np.sqrt(va + np.nanvar(b, axis=0, ddof=1)), va)
        a /= sd
        b /= sd
        eng = "sqeuclidean"
    elif metric in ("mahalanobis", "mahalanobis0"):
        whiten = _missing_whitening(ctx, a, b, metric == "mahalanobis")
        eng = "sqeuclidean"
    elif metric in ("rank_sum", "rank_max"):
        norm = (obs_a.sum(axis=0) != obs_b.sum(axis=0)) | (a.shape[0] != b.shape[0])
        _observed_ranks(a, norm)
        _observed_ranks(b, norm)
        eng = "l1" if metric == "rank_sum" else "linf"
    else:
        raise LinkriskError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    build = space_build(a, b, eng, rescaled=every, degree=kernel_degree(kw.get("d", 2)),
                        whiten=whiten)
    return ctx.nearest_missing(obs_a, obs_b, build)


@register("dbrl", "DBRL1: squared Euclidean on attributes standardized per file "
          "(categorical QIs: the dbrl_mixed distance)", kinds=KINDS, params=(_STANDARDIZE,))
def dbrl(ctx: LinkContext, standardize: bool = True) -> Outcome:
    """d(a,b) = Σ_j (a'_j − b'_j)², a' = (a − mean_A)/sd_A, b' = (b − mean_B)/sd_B (ddof=1).
    A constant attribute is centred instead of divided by zero. ``standardize=False``: raw
    values, d(a,b) = Σ_j (a_j − b_j)² (see docs/methods.md)."""
    return linked(ctx, "sqeuclidean", standardize=standardize)


@register("dbrl_l1", "L1 distance on attributes standardized per file (categorical QIs: "
          "the dbrl_mixed distance)", kinds=KINDS, mixed=False, params=(_STANDARDIZE,))
def dbrl_l1(ctx: LinkContext, standardize: bool = True) -> Outcome:
    """d(a,b) = Σ_j |a'_j − b'_j| on per-file standardized values (raw values with
    ``standardize=False``)."""
    return linked(ctx, "l1", standardize=standardize)


@register("dbrl2", "DBRL2: squared differences scaled per attribute by the spread of A−B",
          params=(Param("sigma", str, "spread", choices=DBRL2_SIGMAS,
                        help="spread: σ_j = √(Var A_j + Var B_j) (no true pairs needed); "
                             "aligned: σ_j = sd of A_j − B_j over the true pairs (owner)"),))
def dbrl2(ctx: LinkContext, sigma: str = "spread") -> Outcome:
    """d(a,b) = Σ_j ((a_j − b_j) / σ_j)². ``sigma="spread"`` (default):
    σ_j = √(Var A_j + Var B_j), the spread of A_j − B_j without knowledge of the true pairs,
    which reproduces the published DBRL2 figures of the IPSO paper (Domingo-Ferrer &
    Torra-style evaluation of IPSO, Census and EIA); ``sigma="aligned"``: σ_j = σ(A_j − B_j)
    over the true (aligned) pairs, the data owner's view (the definition before this
    revision). See docs/methods.md."""
    return linked(ctx, "dbrl2", sigma=sigma)


@register("mahalanobis", "DBRLM-COV: Mahalanobis with S = Var(A)+Var(B)-2Cov(A,B)")
def mahalanobis(ctx: LinkContext) -> Outcome:
    """d(a,b) = (a−b)ᵀ S⁻¹ (a−b), S = Var(A) + Var(B) − 2·Cov(A,B), Cov on the true
    alignment (Torra et al. 2006). Computed as whitening W (WᵀW = S⁻¹) + squared Euclidean."""
    return linked(ctx, "mahalanobis")


@register("mahalanobis0", "DBRLM-COV0: Mahalanobis with S = Var(A)+Var(B)")
def mahalanobis0(ctx: LinkContext) -> Outcome:
    """As :func:`mahalanobis` with Cov(A,B) = 0."""
    return linked(ctx, "mahalanobis0")


@register("kernel", "KDBRL: kernel distance, K(x,y)=(1+x.y)^d on standardized values",
          params=(Param("d", int, 2, help="degree of the polynomial kernel, ≥ 1 (1: "
                                           "Euclidean up to a constant)"), _STANDARDIZE))
def kernel(ctx: LinkContext, d: int = 2, standardize: bool = True) -> Outcome:
    """d(a,b) = K(a,a) − 2K(a,b) + K(b,b), K(x,y) = (1 + x·y)^d on per-file standardized
    values (the squared distance in the kernel's feature space); d = 1 is Euclidean up to
    a constant. ``standardize=False``: raw values."""
    return linked(ctx, "kernel", d=d, standardize=standardize)


# ---------------------------------------------------------------- categorical and mixed QIs
# (registered here, after the numeric distances: the registry keeps this order)
ALL_KINDS = KINDS
_WEIGHTS = Param("weights", object, type_name="{column: weight} or list",
                 help="attribute weights w_j ≥ 0 (not set: all 1)")
_CATEGORIES = Param("categories", object, type_name="{column: [categories]}",
                    help="category order D(V) of ordinal columns (also makes a column ordinal)")
_AWARE = Param("masking_aware", bool, help="distance ∞ for category pairs the known masking "
                                            "cannot produce (not set: true when masking_map "
                                            "is given)")
_MAP = Param("masking_map", object, type_name="{column: {original: released}}",
             help="the known masking's category map (top/bottom coding, global recoding, "
                  "PRAM support)")


@register("dbrl_mixed", "DBRL on categorical/mixed QIs: nominal 0/1, ordinal rank distance, "
          "standardized numeric", kinds=ALL_KINDS,
          params=(_WEIGHTS, _CATEGORIES, _AWARE, _MAP))
def dbrl_mixed(ctx: LinkContext, weights: Any = None, categories: Any = None,
               masking_aware: bool | None = None, masking_map: Any = None) -> Outcome:
    """d(a,b) = Σ_j w_j d_j(a_j, b_j): nominal 0/1, ordinal (|r−r'|+1)/|D(V)|, numeric
    (a'_j − b'_j)² on per-file standardized values; ∞ for category pairs the known
    masking cannot produce (``masking_map``). ``dbrl`` on categorical QIs is this attack
    with default parameters. The space: :mod:`linkrisk.attacks.categorical`."""
    out = linked(ctx, "mixed", weights=weights, categories=categories,
                  masking_aware=masking_aware, masking_map=masking_map)
    out.extra["metric"] = "mixed"
    return out


@register("dbrl_hamming", "DBRL with the Hamming distance (number of differing categories)",
          kinds=("ordinal", "nominal"), params=(_WEIGHTS, _AWARE, _MAP))
def dbrl_hamming(ctx: LinkContext, weights: Any = None, masking_aware: bool | None = None,
                 masking_map: Any = None) -> Outcome:
    """d(a,b) = Σ_j w_j·χ(a_j ≠ b_j) over categorical QIs (ordinal ones compared as
    nominal); ∞ for category pairs the known masking cannot produce."""
    out = linked(ctx, "hamming", weights=weights, masking_aware=masking_aware,
                  masking_map=masking_map)
    out.extra["metric"] = "hamming"
    return out
