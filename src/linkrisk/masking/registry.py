"""The masking-method registry and ``mask()``, the single entry point (SPEC §1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import LinkriskError
from . import categorical, ipso, microaggregation, noise, rankswap
from ._base import (
    SeedLike,
    as_rng,
    check_columns,
    check_frame,
    coerce_params,
    default_columns,
)


@dataclass(frozen=True)
class MethodSpec:
    """A registered masking method.

    ``apply(df, columns, rng, **params)`` returns the masked columns (a DataFrame with
    ``df``'s index); ``params`` maps each accepted parameter to its type (``list`` means a
    list of column names, ``object`` a value checked by the method itself); ``defaults`` are
    filled in before ``apply`` runs (a missing key means the parameter has no default).
    ``strength`` names the parameter a study sweeps from mild to strong masking.
    Calling the spec is ``mask(df, name, ...)``.
    """

    name: str
    apply: Callable[..., pd.DataFrame]
    params: Mapping[str, type]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "numeric"            # "numeric" or "categorical"
    columns_rule: str = "numeric"    # one of COLUMN_RULES
    deterministic: bool = False
    strength: str = ""
    summary: str = ""

    @property
    def doc(self) -> str:
        """The defining formulas and references: the docstring of the method's module."""
        import sys

        return sys.modules[self.apply.__module__].__doc__ or ""

    def __call__(self, df: pd.DataFrame, columns: Sequence[str] | None = None,
                 seed: SeedLike = None, **params: Any) -> pd.DataFrame:
        return mask(df, self.name, columns=columns, seed=seed, **params)


_SPECS = [
    MethodSpec("noise", noise.apply_noise, {"a": float, "percent": float},
               strength="a", summary="independent additive Gaussian noise, std a·σ_j"),
    MethodSpec("correlated_noise", noise.apply_correlated_noise, {"a": float},
               strength="a", summary="additive Gaussian noise with covariance a·Σ"),
    MethodSpec("multiplicative_noise", noise.apply_multiplicative_noise, {"b": float},
               strength="b", summary="multiplicative noise, factors ~ U(1−b, 1+b)"),
    MethodSpec("rank_swap", rankswap.apply_rank_swap, {"p": float},
               strength="p", summary="rank swapping within p% of n rank positions (Moore 1996)"),
    MethodSpec("rank_swap_pdist", rankswap.apply_rank_swap_pdist, {"p": float},
               strength="p", summary="p-distribution rank swapping (Nin et al. 2008)"),
    MethodSpec("rank_swap_pbuckets", rankswap.apply_rank_swap_pbuckets, {"p": int},
               strength="p (fewer buckets is stronger)",
               summary="p-buckets rank swapping (Nin et al. 2008)"),
    MethodSpec("rank_shuffle", rankswap.apply_rank_shuffle, {"q": int, "s": int},
               strength="q", summary="rank shuffling in windows of q, shift s (Nin et al. 2008)"),
    MethodSpec("microaggregation_ir", microaggregation.apply_microaggregation_ir, {"k": int},
               deterministic=True, strength="k",
               summary="individual-ranking microaggregation (Defays & Nanopoulos 1993)"),
    MethodSpec("mdav", microaggregation.apply_mdav, {"k": int}, deterministic=True,
               strength="k", summary="MDAV multivariate microaggregation"),
    MethodSpec("micdp", microaggregation.apply_micdp, {"k": int, "epsilon": float},
               strength="epsilon (smaller is stronger) and k",
               summary="MDAV + Laplace noise for ε-differential privacy"),
    MethodSpec("ipso", ipso.apply_ipso, {"variant": str, "confidential": list},
               strength="variant", summary="IPSO synthetic QIs from a regression on "
               "confidential attributes (Burridge 2003)"),
    MethodSpec("data_shuffle", ipso.apply_data_shuffle, {"confidential": list},
               summary="data shuffling: original values reordered by IPSO-C ranks"),
    MethodSpec("pram", categorical.apply_pram,
               {"pd": float, "alpha": float, "matrix": object, "strata": list},
               defaults={"pd": 0.8, "alpha": 0.5}, kind="categorical",
               columns_rule="categorical", strength="pd (smaller is stronger)",
               summary="post-randomization (invariant PRAM by default)"),
    MethodSpec("top_coding", categorical.apply_top_coding,
               categorical.CODING_PARAMS["top_coding"], kind="categorical",
               columns_rule="ordered", deterministic=True, strength="quantile",
               summary="values above a threshold set to it (numeric / ordinal)"),
    MethodSpec("bottom_coding", categorical.apply_bottom_coding,
               categorical.CODING_PARAMS["bottom_coding"], kind="categorical",
               columns_rule="ordered", deterministic=True, strength="quantile",
               summary="values below a threshold set to it (numeric / ordinal)"),
    MethodSpec("global_recoding", categorical.apply_global_recoding,
               categorical.CODING_PARAMS["global_recoding"],
               kind="categorical", columns_rule="any", deterministic=True,
               strength="width (ordinal/numeric), n_groups or min_frequency (nominal)",
               summary="merge categories / intervals into coarser groups"),
]

#: method name -> MethodSpec (callable as ``METHODS[name](df, columns=, seed=, **params)``)
METHODS: dict[str, MethodSpec] = {s.name: s for s in _SPECS}

NUMERIC_METHODS = tuple(n for n, s in METHODS.items() if s.kind == "numeric")
CATEGORICAL_METHODS = tuple(n for n, s in METHODS.items() if s.kind == "categorical")


def _spec(method: str) -> MethodSpec:
    if not isinstance(method, str) or method not in METHODS:
        raise LinkriskError(f"unknown masking method {method!r}; known: {', '.join(METHODS)}")
    return METHODS[method]


def method_params(name: str) -> dict[str, type]:
    """Accepted parameters of masking method ``name`` and their types (``list``: a list of
    column names, ``object``: a value the method checks itself, e.g. a threshold that may be
    a number or a category label)."""
    return dict(_spec(name).params)


def _coerce_params(spec: MethodSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    return coerce_params(spec.name, spec.params, spec.defaults, params)


def mask(df: pd.DataFrame, method: str, columns: Sequence[str] | None = None,
         seed: SeedLike = None, **params: Any) -> pd.DataFrame:
    """Mask ``columns`` of ``df`` with ``method`` and return a new DataFrame.

    The input is not modified; row order, index, column names and order are kept and the
    other columns are passed through unchanged. ``columns=None`` masks, for numeric
    methods, every numeric column that is not ``confidential``; for ``pram`` every
    non-numeric column (not in ``strata``); for ``top_coding``/``bottom_coding`` the ordered
    Categoricals, else the numeric columns; for ``global_recoding`` the non-numeric columns,
    else the numeric ones. ``seed`` (int or ``numpy.random.Generator``) drives every random
    step through ``np.random.default_rng(seed)``: same seed, same output; deterministic
    methods ignore it. Parameters by method: see ``METHODS`` / ``method_params`` and each
    module's docstring. Every bad input raises :class:`~linkrisk.errors.LinkriskError`.
    """
    spec = _spec(method)
    params = _coerce_params(spec, params)
    check_frame(df)
    exclude = list(params.get("confidential") or []) + list(params.get("strata") or [])
    if columns is None:
        cols = default_columns(df, spec.columns_rule, exclude=exclude)
        if not cols:
            want = "numeric" if spec.columns_rule == "numeric" else "categorical"
            raise LinkriskError(f"{method}: the file has no {want} column to mask; "
                                "name the columns with columns=")
    else:
        cols = check_columns(df, columns)
    rng = as_rng(seed)
    masked = spec.apply(df, cols, rng, **params)
    out = df.copy()
    for c in cols:
        out[c] = masked[c]
    out.attrs.update(masked.attrs)
    return out
