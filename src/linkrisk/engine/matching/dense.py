"""gdbrl's dense cost matrix, and the costs of listed pairs, of a small problem with
numpy, no compiled kernel.

:func:`~.knn.dense_costs` fills the n_x × n_y cost matrix with a compiled kernel whose
first-call compilation costs far more than the matrix on a small problem (issue 43).
:func:`dense_costs` gives the same matrix bit for bit from the small-problem path's
scores (:func:`~..nearest.small.block_scores`, the arithmetic of the kernels) and the
same cost map (√s when ``root`` and s > 0, else 0; the score itself otherwise) while the
kernel is not compiled (:func:`~..nearest.small.is_usable_for`), and calls the kernel
otherwise. :func:`pair_costs` does the same for :func:`~.knn.pair_costs` (the true pairs'
costs that gdbrl reports).
"""

from __future__ import annotations

import numpy as np

from ..nearest import small
from ..nearest.kernels import Pairwise
from .knn import dense_costs as kernel_dense_costs
from .knn import pair_costs as kernel_pair_costs


def dense_costs(pw: Pairwise) -> np.ndarray:
    """The full n_x × n_y cost matrix of ``pw`` (the bits of :func:`~.knn.dense_costs`):
    numpy when :func:`~..nearest.small.is_usable_for` takes the problem, else the
    compiled kernel."""
    if not small.is_usable_for(pw, kernel_dense_costs):
        return kernel_dense_costs(pw)
    return _costs(small.block_scores(pw, 0, pw.x.shape[0]), pw.root)


def pair_costs(pw: Pairwise, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Costs of the pairs (x[ia[p]], y[ib[p]]), +∞ where an index is −1 (the bits of
    :func:`~.knn.pair_costs`): numpy when :func:`~..nearest.small.is_usable_for` takes
    the problem, else the compiled kernel."""
    if not small.is_usable_for(pw, kernel_pair_costs):
        return kernel_pair_costs(pw, ia, ib)
    ia = np.asarray(ia, np.int64)
    ib = np.asarray(ib, np.int64)
    out = np.full(ia.shape[0], np.inf)
    ok = (ia >= 0) & (ib >= 0)
    out[ok] = _costs(small.pair_scores(pw, ia[ok], ib[ok]), pw.root)
    return out


def _costs(s: np.ndarray, root: bool) -> np.ndarray:
    """The kernels' cost of a score (in place): √s when ``root`` and s > 0, else 0; the
    score itself without ``root``."""
    if root:
        np.sqrt(s, out=s, where=s > 0.0)
        s[~(s > 0.0)] = 0.0
    return s
