"""Masking (protection) methods (definitions, parameters and references: docs/methods.md).

``mask(df, method, columns=None, seed=None, **params)`` is the entry point; ``METHODS``
maps each method name to its :class:`MethodSpec` and ``method_params(name)`` gives its
parameter names and types. One module per family:

* :mod:`.noise` — noise, correlated_noise, multiplicative_noise
* :mod:`.rankswap` — rank_swap, rank_swap_pdist, rank_swap_pbuckets, rank_shuffle
* :mod:`.microaggregation` — microaggregation_ir, mdav, micdp
* :mod:`.ipso` — ipso (A/B/C), data_shuffle
* :mod:`.categorical` — pram, top_coding, bottom_coding, global_recoding, and the
  category maps used by the ``masking_aware`` distance (``coding_map`` and friends)
"""

from .categorical import (
    bottom_coding_map,
    coding_map,
    global_recoding_map,
    invariant_pram_matrix,
    pram_matrix,
    pram_matrix_frame,
    pram_support,
    top_coding_map,
)
from .microaggregation import mdav_groups
from .registry import (
    CATEGORICAL_METHODS,
    METHODS,
    NUMERIC_METHODS,
    MethodSpec,
    mask,
    method_params,
)

__all__ = [
    "CATEGORICAL_METHODS",
    "METHODS",
    "NUMERIC_METHODS",
    "MethodSpec",
    "bottom_coding_map",
    "coding_map",
    "global_recoding_map",
    "invariant_pram_matrix",
    "mask",
    "mdav_groups",
    "method_params",
    "pram_matrix",
    "pram_matrix_frame",
    "pram_support",
    "top_coding_map",
]
