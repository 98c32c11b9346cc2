"""Distance-based record linkage (DBRL) and its variants (SPEC §2).

Each attack maps both files into a space where the engine's metric gives the SPEC's score,
then asks the engine for the candidate sets C(a) (all records at minimal score, ties within
relative tolerance 1e-9).

References: Pagliuca & Seri (1999) and Domingo-Ferrer & Torra (2001) for DBRL;
Torra, Abowd & Domingo-Ferrer (2006) for the Mahalanobis variants (DBRLM-COV / -COV0);
Torra & Navarro-Arribas / Herranz et al. (2010) for kernel DBRL and the tie-aware measure.
"""

from __future__ import annotations

import numpy as np

from ..engine import standardize, whitening
from ..errors import LinkriskError
from .base import LinkContext, Outcome, register


@register("dbrl", "DBRL1: squared Euclidean on attributes standardized per file")
def dbrl(ctx: LinkContext) -> Outcome:
    """d(a,b) = Σ_j (a'_j − b'_j)², a' = (a − mean_A)/sd_A, b' = (b − mean_B)/sd_B (ddof=1)."""
    a, b = ctx.numeric()
    return ctx.nearest(standardize(a), standardize(b), "sqeuclidean")


@register("dbrl_l1", "L1 distance on attributes standardized per file")
def dbrl_l1(ctx: LinkContext) -> Outcome:
    """d(a,b) = Σ_j |a'_j − b'_j| on per-file standardized values."""
    a, b = ctx.numeric()
    return ctx.nearest(standardize(a), standardize(b), "l1")


@register("dbrl2", "DBRL2: squared differences scaled by the std of the true-pair differences")
def dbrl2(ctx: LinkContext) -> Outcome:
    """d(a,b) = Σ_j ((a_j − b_j) / σ(A_j − B_j))², σ over the true (aligned) pairs, ddof=1.

    An attribute the masking left untouched has σ = 0: any difference in it is decisive, so
    it gets the weight of σ = 1e-9·sd(A_j) (1e-9 if A_j is constant) rather than a division
    by zero."""
    a, b = ctx.numeric()
    ta, tb = ctx.aligned()
    sd = (ta - tb).std(axis=0, ddof=1)
    fallback = 1e-9 * np.where(a.std(axis=0, ddof=1) > 0, a.std(axis=0, ddof=1), 1.0)
    sd = np.where(sd > 0, sd, fallback)
    return ctx.nearest(a / sd, b / sd, "sqeuclidean")


def _mahalanobis(ctx: LinkContext, with_cov: bool) -> Outcome:
    a, b = ctx.numeric()
    s = np.atleast_2d(np.cov(a, rowvar=False)) + np.atleast_2d(np.cov(b, rowvar=False))
    if with_cov:
        ta, tb = ctx.aligned()
        m = a.shape[1]
        cab = np.atleast_2d(np.cov(ta, tb, rowvar=False))[:m, m:]
        s = s - cab - cab.T
    w = whitening(s, ctx.qi, what="Var(A)+Var(B)-2Cov(A,B)" if with_cov else "Var(A)+Var(B)")
    # centre both files on A's mean first: the score only depends on a − b, and centring
    # keeps the whitened coordinates small (exact differences, no cancellation)
    mu = a.mean(axis=0)
    return ctx.nearest((a - mu) @ w.T, (b - mu) @ w.T, "sqeuclidean")


@register("mahalanobis", "DBRLM-COV: Mahalanobis with S = Var(A)+Var(B)-2Cov(A,B)")
def mahalanobis(ctx: LinkContext) -> Outcome:
    """d(a,b) = (a−b)ᵀ S⁻¹ (a−b), S = Var(A) + Var(B) − 2·Cov(A,B), Cov on the true
    alignment (Torra et al. 2006). Computed as whitening W (WᵀW = S⁻¹) + squared Euclidean."""
    return _mahalanobis(ctx, True)


@register("mahalanobis0", "DBRLM-COV0: Mahalanobis with S = Var(A)+Var(B)")
def mahalanobis0(ctx: LinkContext) -> Outcome:
    """As :func:`mahalanobis` with Cov(A,B) = 0."""
    return _mahalanobis(ctx, False)


@register("kernel", "KDBRL: kernel distance, K(x,y)=(1+x.y)^d on standardized values",
          params=("d",))
def kernel(ctx: LinkContext, d: int = 2) -> Outcome:
    """d(a,b) = K(a,a) − 2K(a,b) + K(b,b), K(x,y) = (1 + x·y)^d on per-file standardized
    values (the squared distance in the kernel's feature space); d = 1 is Euclidean up to
    a constant."""
    d = int(d)
    if d < 1:
        raise LinkriskError(f"kernel degree d must be a positive integer, got {d}")
    a, b = ctx.numeric()
    return ctx.nearest(standardize(a), standardize(b), "kernel", degree=d)
