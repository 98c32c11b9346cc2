"""Noise addition (Kim 1986; Brand 2002, "Microdata protection through noise addition").

* ``noise``: independent additive noise, y_ij = x_ij + e_ij, e_ij ~ N(0, (a·σ_j)²), σ_j the
  sample std (ddof=1) of attribute j. ``a`` is the std factor; sdcMicro's ``noise=15``
  (a percentage) is ``percent=15`` = ``a=0.15``.
  ``scale`` sets what a multiplies (the readings of "noise with σ = s %" in the
  literature): ``sd`` (default, e_ij ~ N(0, (a·σ_j)²), sdcMicro's ``addNoise`` and the
  rank-based linkage paper), ``variance`` (Var e_ij = a·σ_j², i.e. sd √a·σ_j), ``range``
  (sd a·(max_j − min_j)) or ``mean`` (sd a·|x̄_j|). The global-linkage paper's σ = 15 … 30
  cells are closest to ``sd`` (docs/replication.md compares all four).
* ``correlated_noise``: y_i = x_i + e_i, e_i ~ N(0, a·Σ) with Σ the sample covariance
  (ddof=1) of the masked attributes, so the noise has the data's correlation structure and
  Cov(Y) ≈ (1+a)·Σ (Kim 1986).
* ``multiplicative_noise``: y_ij = x_ij · e_ij, e_ij ~ Uniform(1−b, 1+b), 0 < b < 1.

The strength parameter is ``a`` (0.05 mild … 1 strong) resp. ``b`` (0.05 … 0.9).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..errors import LinkriskError
from ._base import frame_like


def _column_std(x: np.ndarray) -> np.ndarray:
    # ddof=1 as the attacks standardize with ddof=1; one record has no spread
    return x.std(axis=0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])


def psd_sqrt(s: np.ndarray) -> np.ndarray:
    """Symmetric square root of a positive semi-definite matrix (eigenvalues clipped at 0),
    so singular covariances (e.g. an attribute that is a sum of others) still work."""
    w, v = np.linalg.eigh((s + s.T) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


NOISE_SCALES = ("sd", "variance", "range", "mean")


def noise_sd(x: np.ndarray, a: float, scale: str = "sd") -> np.ndarray:
    """Per-attribute noise standard deviation for strength ``a`` under ``scale`` (see the
    module docstring): a·σ_j, √a·σ_j, a·range_j or a·|mean_j|."""
    if scale == "sd":
        return a * _column_std(x)
    if scale == "variance":
        return np.sqrt(a) * _column_std(x)
    if scale == "range":
        return a * (x.max(axis=0) - x.min(axis=0)) if len(x) else np.zeros(x.shape[1])
    if scale == "mean":
        return a * np.abs(x.mean(axis=0)) if len(x) else np.zeros(x.shape[1])
    raise LinkriskError(f"noise: scale={scale!r} is not one of {', '.join(NOISE_SCALES)}")


def additive_noise(x: np.ndarray, a: float, rng: np.random.Generator,
                   scale: str = "sd") -> np.ndarray:
    """x + N(0, s_j²) per attribute j, s_j = :func:`noise_sd` (default a·σ_j, σ_j the
    sample std)."""
    return x + rng.standard_normal(x.shape) * noise_sd(x, a, scale)


def correlated_additive_noise(x: np.ndarray, a: float, rng: np.random.Generator) -> np.ndarray:
    """x + N(0, a·Σ) per record (Σ the sample covariance of x)."""
    if len(x) < 2:
        return x.copy()
    root = psd_sqrt(np.atleast_2d(np.cov(x, rowvar=False, ddof=1)))
    return x + np.sqrt(a) * (rng.standard_normal(x.shape) @ root)


def multiplicative(x: np.ndarray, b: float, rng: np.random.Generator) -> np.ndarray:
    """x · U(1−b, 1+b), elementwise."""
    return x * rng.uniform(1.0 - b, 1.0 + b, size=x.shape)


def _check_a(method: str, a: float) -> None:
    if not np.isfinite(a) or a <= 0:
        raise LinkriskError(f"{method}: a={a} must be a positive finite factor (e.g. a=0.1)")


def apply_noise(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                a: float | None = None, percent: float | None = None,
                scale: str | None = None) -> pd.DataFrame:
    if a is None and percent is None:
        raise LinkriskError("noise needs a (noise std as a fraction of each column's std, "
                            "e.g. a=0.1) or percent (e.g. percent=10)")
    if a is not None and percent is not None:
        raise LinkriskError("noise: give either a or percent (= 100·a), not both")
    if a is None:
        a = percent / 100.0
    _check_a("noise", a)
    scale = "sd" if scale is None else str(scale)
    if scale not in NOISE_SCALES:
        raise LinkriskError(f"noise: scale={scale!r} is not one of {', '.join(NOISE_SCALES)}")
    x = numeric_matrix(df, columns, method="noise")
    return frame_like(df, columns, additive_noise(x, a, rng, scale))


def apply_correlated_noise(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                           a: float | None = None) -> pd.DataFrame:
    if a is None:
        raise LinkriskError("correlated_noise needs a (noise covariance = a·Σ, e.g. a=0.1)")
    _check_a("correlated_noise", a)
    x = numeric_matrix(df, columns, method="correlated_noise")
    return frame_like(df, columns, correlated_additive_noise(x, a, rng))


def apply_multiplicative_noise(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                               b: float | None = None) -> pd.DataFrame:
    if b is None:
        raise LinkriskError("multiplicative_noise needs b (factors ~ U(1-b, 1+b), e.g. b=0.1)")
    # b = 1 (factors ~ U(0, 2)) is the strongest level of the published grids (docs/methods.md,
    # Nin et al. 2008); a zero factor has probability 2⁻⁵³
    if not (0 < b <= 1):
        raise LinkriskError(
            f"multiplicative_noise: b={b} must be in (0, 1]; b > 1 allows negative factors "
            "and b <= 0 is no noise"
        )
    x = numeric_matrix(df, columns, method="multiplicative_noise")
    return frame_like(df, columns, multiplicative(x, b, rng))
