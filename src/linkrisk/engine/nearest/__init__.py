"""The nearest-set engine shared by every per-record attack: for each record of the
attacker's file, the released records at minimal score (its candidate set, ties within
the relative tolerance of :mod:`.rules`) and one seeded link among them.

Modules: :mod:`.rules` (tie threshold, tie-breaking hash, pick, progress: the rules every
path follows), :mod:`.kernels` (the compiled blocked kernels and :class:`Pairwise`, two
files under one metric), :mod:`.intkernels` (int32 kernels for whole-number scores),
:mod:`.hamming` (the Hamming kernel on narrow category codes),
:mod:`.faiss_screen` (squared-Euclidean sets screened by faiss's float32 index),
:mod:`.l1_kernel_screen` (L1 and kernel sets screened by a compiled float32 scan),
:mod:`.missing` (sets over the attributes observed in both records), :mod:`.sets` (blocked
planning and the exact sets), :mod:`.search` (the entry point :func:`nearest_sets`),
:mod:`.distributed` (Dask),
:mod:`.transforms` (standardization, ranks, whitening). See ``docs/methods.md``.
"""

from .kernels import METRIC_CODES, Pairwise, Tables
from .rules import RTOL, Progress
from .search import nearest_sets
from .sets import DEFAULT_MEMORY_BUDGET, NearestSets
from .transforms import average_ranks, covariance, standardize, whiten, whitening

__all__ = ["DEFAULT_MEMORY_BUDGET", "METRIC_CODES", "RTOL", "NearestSets", "Pairwise",
           "Progress", "Tables", "average_ranks", "covariance", "nearest_sets", "standardize",
           "whiten", "whitening"]
