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

from ..engine.nearest.transforms import (
    average_ranks,
    covariance,
    difference_sd,
    standardize,
    whiten,
    whitening,
)
from ..errors import LinkriskError
from ..params import Param
from .base import KINDS, LinkContext, Outcome, register
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
    if sigma not in DBRL2_SIGMAS:
        raise LinkriskError(f"dbrl2: sigma={sigma!r} is not one of {', '.join(DBRL2_SIGMAS)}")
    a, b = ctx.numeric()
    va = np.diag(covariance(a))
    if sigma == "aligned":
        ia, ib = ctx.true_pairs()
        sd = difference_sd(a, b, ia, ib)
    else:
        sd = np.sqrt(va + np.diag(covariance(b)))
    sa = np.sqrt(va)
    return np.where(sd > 0, sd, 1e-9 * np.where(sa > 0, sa, 1.0))


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
    s = covariance(a) + covariance(b)
    if with_cov:
        ia, ib = ctx.true_pairs()
        cab = covariance(a, b, ix=ia, iy=ib)
        s = s - cab - cab.T
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
    if metric in ("hamming", "mixed") or (
            metric in ("euclidean", "sqeuclidean", "l1")
            and any(ctx.kinds[c] != "numeric" for c in ctx.qi)):
        from .categorical import categorical_space

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
    """Nearest-record candidate sets under a named distance."""
    sp = space(ctx, metric, **kw)
    return ctx.nearest(sp.a, sp.b, sp.metric, **sp.kw)


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
