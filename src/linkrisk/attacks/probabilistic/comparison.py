"""prl's comparison vectors: the agreement state of a pair on each attribute.

γ(a,b) ∈ {0,1}^m, γ_j = 1 when a and b agree on attribute j: categorical (nominal or
ordinal) attributes agree when the categories are equal; a numeric attribute agrees when
both values fall into the same of ``q`` quantile bins (default 10; the bin edges are the
quantiles of the attacker's file A — the original file in the default direction — applied
to both files; values on an edge go to the upper bin), or, with ``tol=`` (one value, or
{col: tol}, in the attribute's units), when |a−b| ≤ tol. Pattern index: bit j of the
index is γ_j.

A comparison with a missing value (NaN on either side) is a third state: neither an
agreement nor a disagreement, it weighs 0 (docs/methods.md, "Missing values"). The
per-pair scores that honour it (:func:`missing_scores`, :func:`missing_score`) live
here beside the plain pattern of a pair (:func:`pair_pattern`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np

from ...data import numeric_matrix
from ...errors import LinkriskError
from ..base import LinkContext
from ..categorical import shared_codes


@dataclass
class Comparison:
    """Both files as per-attribute comparison values: integer codes (agreement = equality)
    or, where ``tol[j] > 0``, raw numeric values (agreement = |a−b| ≤ tol)."""

    a: np.ndarray      # float64 (n_a, m)
    b: np.ndarray      # float64 (n_b, m)
    tol: np.ndarray    # float64 (m,); -1 marks code attributes
    size: np.ndarray   # int64 (m,): number of codes (0 for tolerance attributes)
    rule: list[str]    # human-readable comparison rule per attribute

    @property
    def coded(self) -> bool:
        return bool((self.tol < 0).all())

    @property
    def missing(self) -> bool:
        """Whether a value is missing (NaN) in either file: its comparisons weigh 0."""
        return bool(np.isnan(self.a).any() or np.isnan(self.b).any())

    def sub(self, rows_a: np.ndarray, rows_b: np.ndarray, cols: np.ndarray) -> Comparison:
        """The comparison of some rows of A and B on the attributes ``cols``."""
        return Comparison(np.ascontiguousarray(self.a[np.ix_(rows_a, cols)]),
                          np.ascontiguousarray(self.b[np.ix_(rows_b, cols)]), self.tol[cols],
                          self.size[cols], [self.rule[j] for j in cols])


def quantile_bins(x: np.ndarray, ref: np.ndarray, q: int) -> np.ndarray:
    """Bin number of each value of ``x`` among the ``q`` quantile bins of ``ref``."""
    edges = np.unique(np.quantile(ref, np.arange(1, q) / q))
    return np.searchsorted(edges, x, side="right")


def compare(ctx: LinkContext, q: int = 10, tol: Any = None) -> Comparison:
    """Encode both files for the comparison vector (see the module docstring)."""
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or q < 2:
        raise LinkriskError(f"q (number of quantile bins) must be an integer >= 2, got {q!r}")
    num = [c for c in ctx.qi if ctx.kinds[c] == "numeric"]
    if tol is None:
        tols = {}
    elif isinstance(tol, Mapping):
        tols = {}
        for c, t in tol.items():
            if c not in ctx.qi:
                raise LinkriskError(f"tol given for {c!r}, which is not a QI column")
            if ctx.kinds[c] != "numeric":
                raise LinkriskError(f"tol applies to numeric attributes; {c!r} is categorical")
            tols[c] = float(t)
    else:
        if not num:
            raise LinkriskError("tol applies to numeric attributes and all QIs are categorical")
        tols = dict.fromkeys(num, float(tol))
    if any(not np.isfinite(t) or t < 0 for t in tols.values()):
        raise LinkriskError("tol must be a finite non-negative number")
    m = len(ctx.qi)
    miss = ctx.has_missing  # NaN where a value is missing (docs/methods.md, "Missing values")
    a, b = np.empty((ctx.n_a, m)), np.empty((ctx.n_b, m))
    tv, size, rule = np.full(m, -1.0), np.zeros(m, np.int64), []
    for j, c in enumerate(ctx.qi):
        if ctx.kinds[c] != "numeric":
            cats, a[:, j], b[:, j] = shared_codes(ctx, c, missing=miss)
            if miss:
                a[a[:, j] < 0, j] = np.nan
                b[b[:, j] < 0, j] = np.nan
            size[j] = len(cats)
            rule.append("equal category")
            continue
        if miss:
            xa, xb = (x[:, 0] for x in ctx.numeric_observed([c]))
        else:
            xa = numeric_matrix(ctx.a_df, [c], what="attacker's file")[:, 0]
            xb = numeric_matrix(ctx.b_df, [c], what="released file")[:, 0]
        if c in tols:
            a[:, j], b[:, j], tv[j] = xa, xb, tols[c]
            rule.append(f"|a-b| <= {tols[c]:g}")
        elif miss:
            ref = xa[~np.isnan(xa)]
            for x, out in ((xa, a), (xb, b)):
                ok = ~np.isnan(x)
                out[:, j] = np.nan
                out[ok, j] = quantile_bins(x[ok], ref, q) if ref.size else 0
            size[j] = int(max(np.nanmax(a[:, j], initial=0), np.nanmax(b[:, j], initial=0))) + 1
            rule.append(f"same of {q} quantile bins")
        else:
            a[:, j], b[:, j] = quantile_bins(xa, xa, q), quantile_bins(xb, xa, q)
            size[j] = int(max(a[:, j].max(), b[:, j].max())) + 1
            rule.append(f"same of {q} quantile bins")
    return Comparison(a, b, tv, size, rule)


def stack_columns(cmp: Comparison) -> np.ndarray:
    return np.ascontiguousarray(np.vstack([cmp.a, cmp.b]).astype(np.int64))


def true_patterns(cmp: Comparison, truth: np.ndarray) -> np.ndarray:
    """Agreement pattern of each true pair (0 where there is none)."""
    t = np.where(truth >= 0, truth, 0)
    d = np.abs(cmp.a - cmp.b[t])
    agree = d <= np.where(cmp.tol > 0, cmp.tol, 0.0)
    return (agree.astype(np.int64) << np.arange(cmp.a.shape[1])).sum(axis=1)


@nb.njit(inline="always")
def pair_pattern(a, b, i, k, tol):
    p = 0
    for j in range(a.shape[1]):
        d = abs(a[i, j] - b[k, j])
        if d <= (tol[j] if tol[j] > 0 else 0.0):
            p |= 1 << j
    return p


#: blocks of A of the pair kernels (progress reports; the counts and links do not depend
#: on it)
PAIR_PARTS = 20


def pattern_blocks(n: int) -> list[tuple[int, int]]:
    step = max(1, -(-n // PAIR_PARTS))
    return [(r0, min(n, r0 + step)) for r0 in range(0, n, step)]


def missing_scores(a: np.ndarray, b: np.ndarray, tol: np.ndarray, va: np.ndarray,
                    vd: np.ndarray) -> np.ndarray:
    """The score of the pairs (a, b) (broadcast over the leading axes), a missing
    comparison adding 0, summed in attribute order (:func:`observed_table`'s bits)."""
    acc = np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    for j in range(a.shape[-1]):
        x, y = a[..., j], b[..., j]
        obs = ~(np.isnan(x) | np.isnan(y))
        with np.errstate(invalid="ignore"):
            agree = np.abs(x - y) <= (tol[j] if tol[j] > 0 else 0.0)
        acc = acc + np.where(obs, np.where(agree, va[j], vd[j]), 0.0)
    return acc


@nb.njit(inline="always")
def missing_score(a, b, i, k, tol, va, vd):
    s = 0.0
    for j in range(a.shape[1]):
        x, y = a[i, j], b[k, j]
        if np.isnan(x) or np.isnan(y):
            continue
        if abs(x - y) <= (tol[j] if tol[j] > 0 else 0.0):
            s += va[j]
        else:
            s += vd[j]
    return s
