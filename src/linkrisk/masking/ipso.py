"""IPSO synthetic data (Burridge 2003, "Information preserving statistical obfuscation") and
data shuffling (Muralidhar & Sarathy 2006, "Data shuffling — a new masking approach for
numerical data").

The masked attributes (QIs) Y (n×m) are regressed with intercept on the confidential
attributes X (n×p) named by the user: W = [1, X], B̂ = (WᵀW)⁻¹WᵀY, residuals R = Y − WB̂,
Σ̂ = RᵀR/n.

* ``ipso`` variant **A**: Y' = W B̂ (fitted values; deterministic).
* variant **B**: Y' = W B̂ + E, E ~ N(0, Σ̂) row-wise, then projected orthogonally to the
  columns of W, so regressing Y' on [1, X] returns B̂ exactly.
* variant **C**: as B, then E ← U·(RᵀR)^{1/2} with U = E(EᵀE)^{−1/2} the orthonormal polar
  factor of E, so EᵀE = RᵀR: B̂ and Σ̂ are both preserved exactly. Symmetric square roots
  (not Cholesky) are used so a singular RᵀR (a QI that is an exact linear function of the
  others and X, like Census's PTOTVAL = PEARNVAL + POTHVAL) still works.

``data_shuffle``: generate Ỹ with IPSO-C (same roles), then per QI column j replace the
value of rank r in Ỹ_j by the original value of rank r in Y_j (stable ranks). The released
values are the original values permuted, with the rank dependence on X of the IPSO-C data.

``mutual=True`` (both methods): the two attribute blocks are modelled on each other, as in
the global-linkage paper's IPSO-C setting (Herranz, Nin, Rodríguez & Tassa 2015: Census
attributes 1–6 and 7–13): the masked columns are generated from the original
``confidential`` block *and* the ``confidential`` block is generated (same variant) from the
original masked columns, so every attribute of the release is synthetic (shuffled). Each
block is regressed on the other's original values; the two draws use the same generator
one after the other.

IPSO has no sweepable strength (variant A < B ≈ C in perturbation); study the choice of
confidential attributes instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..errors import LinkriskError
from ._base import confidential_columns, frame_like, require
from .noise import psd_sqrt

VARIANTS = ("A", "B", "C")


def _check_regressors(x: np.ndarray, names: list[str], method: str) -> np.ndarray:
    """W = [1, X]; raise naming the collinear columns when WᵀW is singular."""
    n, p = x.shape
    if n <= p + 1:
        raise LinkriskError(
            f"{method}: {n} records are too few to regress on {p} confidential attributes "
            "plus an intercept; use fewer confidential columns"
        )
    sd = x.std(axis=0)
    const = [names[j] for j in range(p) if not sd[j] > 0]
    if const:
        raise LinkriskError(
            f"{method}: confidential column(s) {const} are constant, i.e. collinear with the "
            "intercept; drop them from confidential"
        )
    # rank test on standardized regressors so units do not matter
    ws = np.column_stack([np.ones(n) / np.sqrt(n), (x - x.mean(axis=0)) / (sd * np.sqrt(n))])
    _, s, vt = np.linalg.svd(ws, full_matrices=False)
    tol = s[0] * max(ws.shape) * np.finfo(float).eps * 100
    null = vt[s <= tol]
    if len(null):
        involved = np.abs(null).max(axis=0) > 1e-6
        cols = [names[j] for j in range(p) if involved[j + 1]]
        raise LinkriskError(
            f"{method}: singular regression: confidential columns {cols} are collinear "
            "(one is a linear combination of the others); drop one of them from confidential"
        )
    return np.column_stack([np.ones(n), x])


def ipso_values(y: np.ndarray, x: np.ndarray, variant: str, rng: np.random.Generator,
                x_names: list[str] | None = None, method: str = "ipso") -> np.ndarray:
    """IPSO synthetic version of ``y`` (n×m QIs) given confidential ``x`` (n×p)."""
    names = x_names or [f"x{j}" for j in range(x.shape[1])]
    w = _check_regressors(x, names, method)
    q, _ = np.linalg.qr(w)                      # orthonormal basis of span(W)
    beta, *_ = np.linalg.lstsq(w, y, rcond=None)
    fitted = w @ beta
    if variant == "A":
        return fitted
    n = len(y)
    resid = y - fitted
    rtr = resid.T @ resid
    e = rng.standard_normal(y.shape) @ psd_sqrt(rtr / n)   # rows ~ N(0, Σ̂)
    e -= q @ (q.T @ e)                                      # orthogonal to [1, X]
    if variant == "C":
        ete = e.T @ e
        w_e, v_e = np.linalg.eigh((ete + ete.T) / 2)
        keep = w_e > w_e.max() * 1e-12
        inv_root = (v_e[:, keep] / np.sqrt(w_e[keep])) @ v_e[:, keep].T   # (EᵀE)^{+1/2}
        e = e @ inv_root @ psd_sqrt(rtr)
        e -= q @ (q.T @ e)  # remove round-off drift back into span(W)
    return fitted + e


def _ipso_inputs(df: pd.DataFrame, columns: list[str], confidential, method: str):
    conf = confidential_columns(df, confidential, columns, method)
    y = numeric_matrix(df, columns, method=method)
    x = numeric_matrix(df, conf, method=method)
    return y, x, conf


def _with_mutual(df: pd.DataFrame, columns: list[str], conf: list[str], first: pd.DataFrame,
                 second: np.ndarray, keep_dtype: bool = False) -> pd.DataFrame:
    """The release of both blocks: ``first`` (the masked columns) plus the confidential
    block's synthetic values ``second``; ``mask`` copies every returned column."""
    other = frame_like(df, conf, second, keep_dtype=keep_dtype)
    out = pd.concat([first, other], axis=1)
    out.attrs.update(first.attrs)
    return out


def apply_ipso(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
               variant: str | None = None, confidential: list[str] | None = None,
               mutual: bool = False) -> pd.DataFrame:
    require("ipso", "variant", variant, "A, B or C")
    v = str(variant).strip().upper()
    if v not in VARIANTS:
        raise LinkriskError(f"ipso: variant={variant!r} is not one of A, B, C")
    y, x, conf = _ipso_inputs(df, columns, confidential, "ipso")
    first = frame_like(df, columns, ipso_values(y, x, v, rng, conf))
    if not mutual:
        return first
    return _with_mutual(df, columns, conf, first,
                        ipso_values(x, y, v, rng, list(columns)))


def shuffle_by_ranks(y: np.ndarray, y_synth: np.ndarray) -> np.ndarray:
    """Per column: the value of rank r in ``y_synth`` replaced by the original value of rank r."""
    out = np.empty_like(y)
    for j in range(y.shape[1]):
        out[np.argsort(y_synth[:, j], kind="stable"), j] = np.sort(y[:, j], kind="stable")
    return out


def apply_data_shuffle(df: pd.DataFrame, columns: list[str], rng: np.random.Generator,
                       confidential: list[str] | None = None,
                       mutual: bool = False) -> pd.DataFrame:
    y, x, conf = _ipso_inputs(df, columns, confidential, "data_shuffle")
    synth = ipso_values(y, x, "C", rng, conf, method="data_shuffle")
    first = frame_like(df, columns, shuffle_by_ranks(y, synth), keep_dtype=True)
    if not mutual:
        return first
    synth2 = ipso_values(x, y, "C", rng, list(columns), method="data_shuffle")
    return _with_mutual(df, columns, conf, first, shuffle_by_ranks(x, synth2),
                        keep_dtype=True)
