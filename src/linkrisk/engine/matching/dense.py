"""gdbrl's dense cost matrix of a small problem with numpy, no compiled kernel.

:func:`~.knn.dense_costs` fills the n_x × n_y cost matrix with a compiled kernel whose
first-call compilation costs far more than the matrix on a small problem (issue 43).
:func:`dense_costs` gives the same matrix bit for bit from the small-problem path's
scores (:func:`~..nearest.small.block_scores`, the arithmetic of the kernels) and the
same cost map (√s when ``root`` and s > 0, else 0; the score itself otherwise) while the
kernel is not compiled (:func:`~..nearest.small.is_usable_for`), and calls the kernel
otherwise.
"""

from __future__ import annotations

import numpy as np

from ..nearest import small
from ..nearest.kernels import Pairwise
from .knn import dense_costs as kernel_dense_costs


def dense_costs(pw: Pairwise) -> np.ndarray:
    """The full n_x × n_y cost matrix of ``pw`` (the bits of :func:`~.knn.dense_costs`):
    numpy when :func:`~..nearest.small.is_usable_for` takes the problem, else the
    compiled kernel."""
    if not small.is_usable_for(pw, kernel_dense_costs):
        return kernel_dense_costs(pw)
    s = small.block_scores(pw, 0, pw.x.shape[0])
    if pw.root:
        np.sqrt(s, out=s, where=s > 0.0)
        s[~(s > 0.0)] = 0.0
    return s
