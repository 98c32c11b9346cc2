"""Per-attribute transforms shared by the attacks: standardization, average ranks,
whitening. They act on float64 matrices (rows = records, columns = QI attributes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from ...errors import SingularCovarianceError

#: rows per block of the blockwise transforms (temporaries bounded at 10⁶ records)
BLOCK_ROWS = 65536


def standardize(x: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """(x − mean) / std per column, std with ddof=1 (DBRL1, docs/methods.md).

    A constant column carries no information for linkage; it is centred (all zeros)
    instead of divided by zero. ``inplace``: overwrite ``x`` (C-contiguous float64) instead
    of allocating a copy; no temporary of x's size is made either way."""
    out = _target(x, inplace)
    mu = out.mean(axis=0)
    out -= mu
    n = out.shape[0]
    # Σ(x − mean)² without squaring into a temporary matrix
    ss = np.einsum("ij,ij->j", out, out)
    sd = np.sqrt(ss / (n - 1)) if n > 1 else np.zeros(out.shape[1])
    out /= np.where(sd > 0, sd, 1.0)
    return out


def _target(x: np.ndarray, inplace: bool) -> np.ndarray:
    """``x`` itself (checked to be writable C-contiguous float64) or a float64 copy."""
    if not inplace:
        return np.array(x, dtype=np.float64, order="C")
    if x.dtype != np.float64 or not x.flags.c_contiguous or not x.flags.writeable:
        raise ValueError("inplace transforms need a writable C-contiguous float64 matrix")
    return x


def average_ranks(x: np.ndarray, *, normalize: bool = False, inplace: bool = False
                  ) -> np.ndarray:
    """Ranks 1..n per column with ties given their average rank (RBRL, docs/methods.md).

    ``normalize`` divides by the number of rows, for files of different sizes. Ranked one
    column at a time (scipy's axis= path holds several n × m temporaries); ``inplace``
    overwrites ``x``."""
    out = _target(x, inplace)
    for j in range(out.shape[1]):
        out[:, j] = rankdata(out[:, j], method="average")
    if normalize:
        out /= x.shape[0]
    return out


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


def whiten(x: np.ndarray, w: np.ndarray, mu: np.ndarray, *, inplace: bool = False,
           rows: int = BLOCK_ROWS) -> np.ndarray:
    """(x − mu) Wᵀ, row block by row block (temporaries of ``rows`` rows, not of x's size);
    ``inplace`` overwrites ``x``."""
    out = _target(x, inplace)
    wt = np.ascontiguousarray(np.asarray(w, dtype=np.float64).T)
    for r0 in range(0, out.shape[0], rows):
        blk = out[r0:r0 + rows]
        blk -= mu
        blk[...] = blk @ wt
    return out


def _rows(z: np.ndarray, iz: np.ndarray | None, r0: int, rows: int) -> np.ndarray:
    """Rows r0 … r0+rows of z, or of z[iz] when indices are given (a block-sized copy)."""
    return z[r0:r0 + rows] if iz is None else z[iz[r0:r0 + rows]]


def covariance(x: np.ndarray, y: np.ndarray | None = None, *, ix: np.ndarray | None = None,
               iy: np.ndarray | None = None, rows: int = BLOCK_ROWS) -> np.ndarray:
    """Sample cross-covariance (ddof=1) of the columns of x[ix] and y[iy] (row-aligned;
    y = x and all rows by default): Σ (x − x̄)ᵀ (y − ȳ) / (n − 1), accumulated over row
    blocks (np.cov copies and stacks its inputs: several n × m temporaries)."""
    y = x if y is None else y
    n = x.shape[0] if ix is None else ix.shape[0]
    mx = sum(_rows(x, ix, r0, rows).sum(axis=0) for r0 in range(0, n, rows)) / n
    my = sum(_rows(y, iy, r0, rows).sum(axis=0) for r0 in range(0, n, rows)) / n
    acc = np.zeros((x.shape[1], y.shape[1]))
    for r0 in range(0, n, rows):
        acc += (_rows(x, ix, r0, rows) - mx).T @ (_rows(y, iy, r0, rows) - my)
    return acc / max(n - 1, 1)


def difference_sd(x: np.ndarray, y: np.ndarray, ix: np.ndarray, iy: np.ndarray, *,
                  rows: int = BLOCK_ROWS) -> np.ndarray:
    """σ(x[ix] − y[iy]) per column (ddof=1), from the differences themselves (not
    Var x + Var y − 2 Cov, which cancels for small differences), over row blocks."""
    n = ix.shape[0]
    diff = lambda r0: _rows(x, ix, r0, rows) - _rows(y, iy, r0, rows)  # noqa: E731
    mean = sum(diff(r0).sum(axis=0) for r0 in range(0, n, rows)) / n
    ss = sum(((diff(r0) - mean) ** 2).sum(axis=0) for r0 in range(0, n, rows))
    return np.sqrt(ss / max(n - 1, 1))


def standardize_observed(x: np.ndarray) -> np.ndarray:
    """:func:`standardize` over the observed values (NaN kept):
    (x − mean) / sd per column, mean and sd (ddof=1) of the column's observed values; a
    column with no spread (or fewer than 2 observed values) is centred only. In place."""
    with np.errstate(invalid="ignore", divide="ignore"):
        n = (~np.isnan(x)).sum(axis=0)
        mu = np.where(n > 0, np.nansum(x, axis=0) / np.maximum(n, 1), 0.0)
        x -= mu
        ss = np.nansum(x * x, axis=0)
        sd = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), 0.0)
    x /= np.where(sd > 0, sd, 1.0)
    return x
