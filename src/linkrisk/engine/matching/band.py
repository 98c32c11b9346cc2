"""The band along the principal direction, used by the threshold pass
(:func:`~.screened_knn.knn_thresholds`).

For a unit vector v and any two records, ‖x − y‖ ≥ |v·x − v·y| (Cauchy–Schwarz). With
both files projected on their principal direction, a block of records whose projections
lie an interval apart from another's can be ruled out by that gap alone, before any
distance is computed. The projections are computed in float64; the intervals are widened
by :func:`margin`, far more than their rounding."""

from __future__ import annotations

import numpy as np


def direction(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The unit principal direction of both files pooled (the top eigenvector of their
    pooled covariance): the direction of the largest spread, hence of the widest gaps."""
    n = x.shape[0] + y.shape[0]
    mu = (x.sum(0) + y.sum(0)) / n
    cov = (x.T @ x + y.T @ y) / n - np.outer(mu, mu)
    v = np.linalg.eigh(cov)[1][:, -1]
    return v / np.linalg.norm(v)


def margin(big: float) -> float:
    """Half-width added to every interval of projections, for records of squared norm at
    most ``big``: |computed x·v − x·v| ≤ m·2⁻⁵³·‖x‖·‖v‖₁ ≤ 10⁻¹⁴‖x‖ for m ≤ 100
    attributes, and the distances the gaps are compared with are rounded at 10⁻¹⁶
    relative; this is 10⁵ times both."""
    return 1e-9 * (1.0 + np.sqrt(big))

