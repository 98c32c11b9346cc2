"""Information loss of a masked numeric file (docs/methods.md, Measures).

* IL1–IL5 and IL: Domingo-Ferrer & Torra (2001), "A quantitative comparison of disclosure
  control methods for microdata", in *Confidentiality, Disclosure and Data Access*.
* PIL: Mateo-Sanz, Domingo-Ferrer & Sebé (2005), "Probabilistic information loss measures
  in confidentiality protection of continuous microdata", DMKD 11(2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import norm

from ..data import numeric_matrix
from ..errors import LinkriskError

#: quantiles compared by PIL (Mateo-Sanz et al. use 5 %, 10 %, …, 95 %)
PIL_QUANTILES = np.arange(0.05, 0.951, 0.05)


def paired_matrices(original: pd.DataFrame, masked: pd.DataFrame,
                    columns: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The numeric attributes of X (original) and X' (masked) as two n×m float64 matrices
    whose rows are the same records: the input of every record-by-record measure (IL, PIL,
    interval disclosure; docs/methods.md, Measures).

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files; row i of ``masked`` is the masked image of row i of ``original``.
    columns : sequence of str, optional
        The attributes; ``None`` takes every column numeric in both files.

    Returns
    -------
    x, y : numpy.ndarray
        float64, shape (n, m), from :func:`linkrisk.data.numeric_matrix`.
    columns : list of str
        The attributes, in the order of the matrix columns.
    """
    cols = list(columns) if columns is not None else [
        c for c in original.columns if c in masked.columns
        and pd.api.types.is_numeric_dtype(original[c]) and pd.api.types.is_numeric_dtype(masked[c])]
    if not cols:
        raise LinkriskError("information loss needs numeric attributes present in both files")
    if len(original) != len(masked):
        raise LinkriskError(f"information loss compares records one to one but the files have "
                            f"{len(original)} and {len(masked)} records")
    if len(original) < 3:
        raise LinkriskError("information loss needs at least 3 records")
    return (numeric_matrix(original, cols, what="original file"),
            numeric_matrix(masked, cols, what="masked file"), cols)


def _rel(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """mean |a − b| / |a| over entries with a ≠ 0, and how many entries were skipped."""
    ok = a != 0
    if not ok.any():
        return float("nan"), int(a.size)
    return float(np.mean(np.abs(a[ok] - b[ok]) / np.abs(a[ok]))), int((~ok).sum())


@dataclass
class InformationLoss:
    """IL1..IL5 (fractions) and IL = 100·mean(IL1..IL5) in %. ``skipped`` names terms or
    entries left out because their denominator is zero."""

    il1: float
    il2: float
    il3: float
    il4: float
    il5: float
    il: float
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"IL1": self.il1, "IL2": self.il2, "IL3": self.il3, "IL4": self.il4,
                "IL5": self.il5, "IL": self.il, "skipped": list(self.skipped)}


def information_loss(original: pd.DataFrame, masked: pd.DataFrame,
                     columns: Sequence[str] | None = None) -> InformationLoss:
    """Domingo-Ferrer & Torra (2001) information loss between X (original) and X' (masked):

    IL1 = mean_ij |x_ij − x'_ij| / |x_ij|;  IL2 = mean_j |x̄_j − x̄'_j| / |x̄_j|;
    IL3 = mean_{j≤k} |v_jk − v'_jk| / |v_jk| (covariances);  IL4 = mean_j |v_jj − v'_jj| / |v_jj|;
    IL5 = mean_{j<k} |ρ_jk − ρ'_jk|;  IL = 100·(IL1 + IL2 + IL3 + IL4 + IL5) / 5.

    Zero denominators: the entry is left out of its mean and reported in ``skipped``; a
    term with no usable entry is left out of IL (mean of the remaining terms). See
    docs/methods.md, Measures.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record (row i of ``masked`` is the image of row i of
        ``original``); at least 3 records.
    columns : sequence of str, optional
        The numeric attributes; ``None`` takes every column numeric in both files.

    Returns
    -------
    InformationLoss
        IL1–IL5 (fractions), IL (in %) and ``skipped``.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata. In *Confidentiality, Disclosure and Data Access*, 111–134.
    """
    x, y, cols = paired_matrices(original, masked, columns)
    skipped: list[str] = []
    il1, z1 = _rel(x, y)
    if z1:
        skipped.append(f"IL1: {z1} zero original values")
    il2, z2 = _rel(x.mean(0), y.mean(0))
    if z2:
        skipped.append(f"IL2: {z2} attributes with zero mean")
    vx, vy = np.atleast_2d(np.cov(x, rowvar=False)), np.atleast_2d(np.cov(y, rowvar=False))
    iu = np.triu_indices(len(cols))
    il3, z3 = _rel(vx[iu], vy[iu])
    if z3:
        skipped.append(f"IL3: {z3} zero covariances")
    il4, z4 = _rel(np.diag(vx), np.diag(vy))
    if z4:
        skipped.append(f"IL4: {z4} constant attributes")
    if len(cols) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            rx, ry = np.corrcoef(x, rowvar=False), np.corrcoef(y, rowvar=False)
        ju = np.triu_indices(len(cols), 1)
        d = np.abs(rx[ju] - ry[ju])
        ok = np.isfinite(d)
        il5 = float(d[ok].mean()) if ok.any() else float("nan")
        if (~ok).sum():
            skipped.append(f"IL5: {int((~ok).sum())} correlations of constant attributes")
    else:
        il5 = float("nan")
        skipped.append("IL5: one attribute, no correlations")
    terms = np.array([il1, il2, il3, il4, il5])
    il = 100.0 * float(np.nanmean(terms)) if np.isfinite(terms).any() else float("nan")
    return InformationLoss(il1, il2, il3, il4, il5, il, skipped)


def pil(original: pd.DataFrame, masked: pd.DataFrame, columns: Sequence[str] | None = None,
        quantiles: Sequence[float] = PIL_QUANTILES) -> dict[str, float]:
    """Probabilistic information loss (Mateo-Sanz et al. 2005), in %.

    Each statistic q of X and its masked counterpart q' give pil(q) = 2·(Φ(|q − q'| / se(q))
    − 0.5) ∈ [0, 1), averaged per family and × 100: PIL(Q) quantiles, PIL(m) means,
    PIL(v) variances, PIL(c) covariances (j < k), PIL(r) correlations (j < k); ``PIL`` is the
    mean of the five. Standard errors under the paper's normal approximations, n records:
    se(mean) = s/√n; se(var) = s²·√(2/(n−1)); se(cov_jk) = √((v_jk² + v_jj·v_kk)/(n−1));
    se(ρ) = (1 − ρ²)/√(n−1); se(quantile α) = s·√(α(1−α)/n) / φ(z_α). A statistic with
    se = 0 counts 0 if unchanged, 1 otherwise. See docs/methods.md, Measures.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record; at least 3 records.
    columns : sequence of str, optional
        The numeric attributes; ``None`` takes every column numeric in both files.
    quantiles : sequence of float
        The quantile levels α of PIL(Q) (default 0.05, 0.10, …, 0.95).

    Returns
    -------
    dict of str to float
        ``PIL(Q)``, ``PIL(m)``, ``PIL(v)``, ``PIL(c)``, ``PIL(r)`` and ``PIL`` (mean of the
        finite ones), in %.

    References
    ----------
    Mateo-Sanz, J. M., Domingo-Ferrer, J. & Sebé, F. (2005). Probabilistic information loss
    measures in confidentiality protection of continuous microdata. *Data Mining and
    Knowledge Discovery* 11(2), 181–193.
    """
    x, y, cols = paired_matrices(original, masked, columns)
    n, m = x.shape

    def loss(q: np.ndarray, q2: np.ndarray, se: np.ndarray) -> float:
        d = np.abs(q - q2)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(se > 0, 2 * (norm.cdf(d / np.where(se > 0, se, 1)) - 0.5),
                         np.where(d > 0, 1.0, 0.0))
        return 100.0 * float(np.mean(v)) if v.size else float("nan")

    sd = x.std(0, ddof=1)
    vx, vy = np.atleast_2d(np.cov(x, rowvar=False)), np.atleast_2d(np.cov(y, rowvar=False))
    qs = np.asarray(quantiles, float)
    z = norm.ppf(qs)
    out = {
        "PIL(Q)": loss(np.quantile(x, qs, axis=0), np.quantile(y, qs, axis=0),
                       np.outer(np.sqrt(qs * (1 - qs) / n) / norm.pdf(z), sd)),
        "PIL(m)": loss(x.mean(0), y.mean(0), sd / np.sqrt(n)),
        "PIL(v)": loss(np.diag(vx), np.diag(vy), np.diag(vx) * np.sqrt(2 / (n - 1))),
    }
    ju = np.triu_indices(m, 1)
    dv = np.diag(vx)
    out["PIL(c)"] = loss(vx[ju], vy[ju], np.sqrt((vx[ju] ** 2 + np.outer(dv, dv)[ju]) / (n - 1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        rx = np.atleast_2d(np.corrcoef(x, rowvar=False))
        ry = np.atleast_2d(np.corrcoef(y, rowvar=False))
    r = np.nan_to_num(rx[ju])
    out["PIL(r)"] = loss(r, np.nan_to_num(ry[ju]), (1 - r ** 2) / np.sqrt(n - 1))
    vals = [v for v in out.values() if np.isfinite(v)]
    out["PIL"] = float(np.mean(vals)) if vals else float("nan")
    return out


def categorical_information_loss(original: pd.DataFrame, masked: pd.DataFrame,
                                 columns: Sequence[str] | None = None) -> float:
    """Entropy-based information loss of categorical attributes, in %.

    For attribute j, H(X_j | Y_j) is the entropy of the original value left once the
    released value is known, estimated from the n record pairs (x_ij, y_ij):
    H(X_j | Y_j) = −Σ_{x,y} p(x, y)·log p(x, y)/p(y). The loss is the share of the
    attribute's entropy H(X_j) the release destroys, averaged over attributes:
    IL = 100·mean_j H(X_j | Y_j) / H(X_j) (0: every original value can be read back from
    the release; 100: the release says nothing about it). It is the normalized form of the
    entropy-based loss EBIL of Domingo-Ferrer & Torra (2001) with the transition
    probabilities estimated from the file, so it applies alike to PRAM, global recoding
    (whose new labels need not match the old ones) and top/bottom coding. Attributes with a
    single value (H(X_j) = 0) lose nothing and are left out. See docs/methods.md.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The files, record for record.
    columns : sequence of str, optional
        The categorical attributes; ``None`` takes every column of both files that is not
        numeric in ``original``.

    Returns
    -------
    float
        IL in % (0 when every attribute has a single value).

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). Disclosure control methods and information loss
    for microdata. In *Confidentiality, Disclosure and Data Access*, 91–110.
    """
    cols = list(columns) if columns is not None else [
        c for c in original.columns if c in masked.columns
        and not pd.api.types.is_numeric_dtype(original[c])]
    if not cols:
        raise LinkriskError("categorical information loss needs categorical attributes "
                            "present in both files")
    missing = [c for c in cols if c not in original.columns or c not in masked.columns]
    if missing:
        raise LinkriskError(f"column {missing[0]!r} is not in both files")
    if len(original) != len(masked):
        raise LinkriskError(f"information loss compares records one to one but the files have "
                            f"{len(original)} and {len(masked)} records")

    def entropy(counts: np.ndarray) -> float:
        p = counts[counts > 0] / counts.sum()
        return float(-(p * np.log(p)).sum())

    losses = []
    for c in cols:
        x = pd.factorize(original[c].astype(object), use_na_sentinel=False)[0]
        y = pd.factorize(masked[c].astype(object), use_na_sentinel=False)[0]
        hx = entropy(np.bincount(x))
        if hx <= 0:
            continue
        joint = np.bincount(x * (y.max() + 1) + y)
        # H(X|Y) = H(X, Y) − H(Y)
        losses.append((entropy(joint) - entropy(np.bincount(y))) / hx)
    return 100.0 * float(np.mean(losses)) if losses else 0.0
