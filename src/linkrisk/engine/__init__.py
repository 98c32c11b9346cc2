"""The blocked pairwise engine shared by all attacks: nearest-record sets with ties,
transforms (standardization, ranks, whitening)."""

from .kernels import Tables
from .nearest import DEFAULT_MEMORY_BUDGET, RTOL, NearestSets, nearest_sets
from .transforms import average_ranks, standardize, whitening

__all__ = ["DEFAULT_MEMORY_BUDGET", "RTOL", "NearestSets", "Tables", "nearest_sets", "average_ranks",
           "standardize", "whitening"]
