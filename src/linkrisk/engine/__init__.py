"""The blocked pairwise engine shared by all attacks: nearest-record sets with ties,
transforms (standardization, ranks, whitening), exact k-NN lists and the certified
minimum-cost matching of the global attack."""

from .assignment import SparseAssignment, allowed_edges
from .kernels import Tables
from .knn import KNN, Pairwise, knn
from .matching import Matching, min_cost_matching
from .nearest import DEFAULT_MEMORY_BUDGET, RTOL, NearestSets, nearest_sets
from .transforms import average_ranks, covariance, standardize, whiten, whitening

__all__ = ["DEFAULT_MEMORY_BUDGET", "RTOL", "NearestSets", "Tables", "nearest_sets", "average_ranks",
           "covariance", "standardize", "whiten", "whitening", "KNN", "Pairwise", "knn", "Matching", "min_cost_matching",
           "SparseAssignment", "allowed_edges"]
