"""Per-attribute transforms shared by the attacks: standardization, average ranks,
whitening. They act on float64 matrices (rows = records, columns = QI attributes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from ..errors import SingularCovarianceError


def standardize(x: np.ndarray) -> np.ndarray:
    """(x − mean) / std per column, std with ddof=1 (SPEC §2, DBRL1).

    A constant column carries no information for linkage; it is centred (all zeros)
    instead of divided by zero."""
    mu = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1])
    sd = np.where(sd > 0, sd, 1.0)
    return np.ascontiguousarray((x - mu) / sd)


def average_ranks(x: np.ndarray, *, normalize: bool = False) -> np.ndarray:
    """Ranks 1..n per column with ties given their average rank (SPEC §2, RBRL).

    ``normalize`` divides by the number of rows, for files of different sizes."""
    r = rankdata(x, method="average", axis=0).astype(np.float64)
    if normalize:
        r /= x.shape[0]
    return np.ascontiguousarray(r)


def collinear_names(cov: np.ndarray, names: Sequence[str], rtol: float = 1e-10) -> list[str]:
    """Attributes involved in the (near-)null space of a covariance matrix."""
    w, v = np.linalg.eigh(cov)
    scale = max(float(np.abs(w).max()), 1e-300)
    null = v[:, w <= rtol * scale]
    if null.size == 0:
        return []
    involved = np.abs(null).max(axis=1) > 1e-6
    return [names[j] for j in np.flatnonzero(involved)]


def whitening(cov: np.ndarray, names: Sequence[str], *, what: str = "covariance") -> np.ndarray:
    """W with Wᵀ W = cov⁻¹, so that (a−b)ᵀ cov⁻¹ (a−b) = |W a − W b|² (Mahalanobis as
    whitening + squared Euclidean). Raises SingularCovarianceError naming the collinear
    attributes when ``cov`` is not positive definite."""
    cov = np.asarray(cov, dtype=np.float64)
    bad = collinear_names(cov, names)
    try:
        if bad:
            raise np.linalg.LinAlgError
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        bad = bad or list(names)
        raise SingularCovarianceError(
            f"the {what} matrix is singular: attribute(s) {', '.join(map(str, bad))} are "
            "collinear or unperturbed; drop one of them from --qi or use another metric"
        ) from None
    # W = L⁻¹ with cov = L Lᵀ  ⇒  Wᵀ W = L⁻ᵀ L⁻¹ = cov⁻¹
    return np.linalg.solve(chol, np.eye(cov.shape[0]))
