"""Global matching, the engine of ``gdbrl``: the minimum-cost perfect matching between two
files, certified optimal without an n×n' matrix.

Modules: :mod:`.knn` (exact k-NN lists and the other full scans: the candidate graph),
:mod:`.screened_knn` (the float32-screened k-NN pass), :mod:`.assignment` (sparse
Jonker–Volgenant with auction start), :mod:`.transport` (transport between repeated
records), :mod:`.solver` (the solvers and the optimality certificate,
:func:`min_cost_matching`). Builds on :mod:`linkrisk.engine.nearest` (its kernels and
rules). See ``docs/methods.md``.
"""

from .assignment import SparseAssignment, allowed_edges
from .knn import KNN, knn
from .solver import DEFAULT_K, DEFAULT_K_LIST, DENSE_MAX_N, Matching, min_cost_matching

__all__ = ["DEFAULT_K", "DEFAULT_K_LIST", "DENSE_MAX_N", "KNN", "Matching", "SparseAssignment",
           "allowed_edges", "knn", "min_cost_matching"]
