"""The masking-method registry and ``mask()``, the single entry point.

Every method and its parameters are described in docs/methods.md (generated tables)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..data import check_columns, check_frame, id_like, parse_columns
from ..errors import LinkriskError, LinkriskWarning
from ..params import Param, as_params, coerce_params
from . import categorical, ipso, microaggregation, noise, rankswap, suppression
from ._base import (
    SeedLike,
    as_rng,
    default_columns,
)


@dataclass(frozen=True)
class MethodSpec:
    """A registered masking method.

    ``apply(df, columns, rng, **params)`` returns the masked columns (a DataFrame with
    ``df``'s index); ``params`` declares each accepted parameter as a
    :class:`~linkrisk.params.Param` (name, type, default, description; given as a sequence
    of Params, or as a legacy ``{name: type}`` mapping) and is stored as ``{name: Param}``.
    ``list`` means a list of column names, ``object`` a value checked by the method itself.
    Declared defaults are filled in before ``apply`` runs (:attr:`defaults`).
    ``strength`` names the parameter a study sweeps from mild to strong masking.
    Calling the spec is ``mask(df, name, ...)``. Definitions: docs/methods.md.
    """

    name: str
    apply: Callable[..., pd.DataFrame]
    params: Mapping[str, Param] | Sequence[Param]
    kind: str = "numeric"            # "numeric" or "categorical"
    columns_rule: str = "numeric"    # numeric, categorical, ordered or any: default_columns
    deterministic: bool = False
    strength: str = ""
    summary: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", as_params(self.params))

    @property
    def defaults(self) -> dict[str, Any]:
        """Declared defaults that are set (not ``None``): filled in before ``apply``."""
        return {k: p.default for k, p in self.params.items() if p.default is not None}

    @property
    def doc(self) -> str:
        """The defining formulas and references: the docstring of the method's module."""
        import sys

        return sys.modules[self.apply.__module__].__doc__ or ""

    def __call__(self, df: pd.DataFrame, columns: Sequence[str] | None = None,
                 seed: SeedLike = None, **params: Any) -> pd.DataFrame:
        return mask(df, self.name, columns=columns, seed=seed, **params)


_CONF = Param("confidential", list, required=True,
               help="the confidential attributes the QIs are regressed on (never masked)")
_MUTUAL = Param("mutual", bool, False,
                help="also synthesize the confidential block from the masked one (two blocks "
                     "modelled on each other)")
_P_PCT = "% of n: partners at most ⌊p·n/100⌋ rank positions apart, in (0, 100]"


def _threshold_coding(name: str, apply: Callable[..., pd.DataFrame], side: str) -> MethodSpec:
    """Top or bottom coding: the same declaration but for the side of the threshold."""
    return MethodSpec(name, apply, categorical.CODING_PARAMS[name], kind="categorical",
                      columns_rule="ordered", deterministic=True, strength="quantile",
                      summary=f"values {side} a threshold set to it (numeric / ordinal)")


_SPECS = [
    MethodSpec("noise", noise.apply_noise, (
        Param("a", float, help="noise std as a fraction of each attribute's std (0.1 = 10 %); "
                               "give a or percent"),
        Param("percent", float, help="the same in percent, percent = 100·a (sdcMicro's "
                                     "noise=)"),
        Param("scale", str, "sd", choices=("sd", "variance", "range", "mean"),
              help="what a scales: the noise sd is a·sd_j (sd), √a·sd_j (variance), "
                   "a·range_j (range) or a·|mean_j| (mean)")),
        strength="a", summary="independent additive Gaussian noise, std a·σ_j"),
    MethodSpec("correlated_noise", noise.apply_correlated_noise, (
        Param("a", float, required=True, help="noise covariance a·Σ (Σ the covariance of "
                                              "the masked attributes)"),),
        strength="a", summary="additive Gaussian noise with covariance a·Σ"),
    MethodSpec("multiplicative_noise", noise.apply_multiplicative_noise, (
        Param("b", float, required=True, help="factors drawn from U(1−b, 1+b), 0 < b ≤ 1"),),
        strength="b", summary="multiplicative noise, factors ~ U(1−b, 1+b)"),
    MethodSpec("rank_swap", rankswap.apply_rank_swap, (
        Param("p", float, required=True, help=f"swap range in {_P_PCT}"),),
        strength="p", summary="rank swapping within p% of n rank positions (Moore 1996)"),
    MethodSpec("rank_swap_pdist", rankswap.apply_rank_swap_pdist, (
        Param("p", float, required=True, help="scale of the random swap distance, % of n, "
                                              "in (0, 100]"),
        Param("variant", str, rankswap.PDIST_DEFAULT, choices=rankswap.PDIST_VARIANTS,
              help="reading DRAW/SCALE/RULE: the normal draw as the swap distance or a "
                   "maximum; μ = σ = p % or p/2 % of n; partners free or not")),
        strength="p", summary="p-distribution rank swapping (Nin et al. 2008)"),
    MethodSpec("rank_swap_pbuckets", rankswap.apply_rank_swap_pbuckets, (
        Param("p", int, required=True, help="number of buckets, 1..n (fewer is stronger)"),),
        strength="p (fewer buckets is stronger)",
        summary="p-buckets rank swapping (Nin et al. 2008)"),
    MethodSpec("rank_shuffle", rankswap.apply_rank_shuffle, (
        Param("q", int, required=True, help="window length, 2..n"),
        Param("s", int, help="shift of the window, 1..q (not set: q, disjoint windows)")),
        strength="q", summary="rank shuffling in windows of q, shift s (Nin et al. 2008)"),
    MethodSpec("microaggregation_ir", microaggregation.apply_microaggregation_ir, (
        Param("k", int, required=True, help="group size, 1..n (the last group takes the "
                                            "remainder)"),),
        deterministic=True, strength="k",
        summary="individual-ranking microaggregation (Defays & Nanopoulos 1993)"),
    MethodSpec("mdav", microaggregation.apply_mdav, (
        Param("k", int, required=True, help="minimum group size, 1..n (groups of k..2k−1)"),),
        deterministic=True, strength="k",
        summary="MDAV multivariate microaggregation (Domingo-Ferrer & Mateo-Sanz 2002)"),
    MethodSpec("micdp", microaggregation.apply_micdp, (
        Param("k", int, required=True, help="minimum group size of the MDAV step"),
        Param("epsilon", float, required=True, help="privacy budget ε > 0, split evenly over "
                                                    "the attributes")),
        strength="epsilon (smaller is stronger) and k",
        summary="MDAV + Laplace noise for ε-differential privacy (Soria-Comas et al. 2014)"),
    MethodSpec("ipso", ipso.apply_ipso, (
        Param("variant", str, required=True, choices=("A", "B", "C"),
              help="A: fitted values; B: + noise; C: + noise with the residual covariance "
                   "preserved exactly"),
        _CONF, _MUTUAL),
        strength="variant", summary="IPSO synthetic QIs from a regression on "
        "confidential attributes (Burridge 2003)"),
    MethodSpec("data_shuffle", ipso.apply_data_shuffle, (_CONF, _MUTUAL),
               summary="data shuffling: original values reordered by IPSO-C ranks "
                       "(Muralidhar & Sarathy 2006)"),
    MethodSpec("pram", categorical.apply_pram, (
        Param("pd", float, 0.8, help="lower bound of the diagonal: p_cc ~ U(pd, 1), in [0, 1]"),
        Param("alpha", float, 0.5, help="the matrix used is α·R + (1−α)·I, in [0, 1]"),
        Param("matrix", object, type_name="matrix",
              help="a transition matrix to use instead of invariant PRAM (DataFrame by "
                   "category, L×L array, or {column: matrix})"),
        Param("strata", list, help="run PRAM separately within each combination of these "
                                   "columns"),
        Param("variant", str, "observed", choices=categorical.PRAM_VARIANTS,
              help="observed: matrix over the observed categories, per stratum; sdcmicro: "
                   "over all categories, once per column, as sdcMicro's pram()")),
        kind="categorical", columns_rule="categorical", strength="pd (smaller is stronger)",
        summary="post-randomization (invariant PRAM by default, as sdcMicro)"),
    _threshold_coding("top_coding", categorical.apply_top_coding, "above"),
    _threshold_coding("bottom_coding", categorical.apply_bottom_coding, "below"),
    MethodSpec("global_recoding", categorical.apply_global_recoding,
               categorical.CODING_PARAMS["global_recoding"],
               kind="categorical", columns_rule="any", deterministic=True,
               strength="width (ordinal/numeric), n_groups or min_frequency (nominal)",
        summary="merge categories / intervals into coarser groups"),
    MethodSpec("local_suppression", suppression.apply_local_suppression, (
        Param("k", int, 2, help="every record's key pattern must be shared by at least k "
                                "records (missing values match any category)"),
        Param("keys", list, help="the key variables (not set: the masked columns)"),
        Param("importance", object, type_name="list or {key: rank}",
              help="rank 1..m of each key, 1 suppressed last (not set: keys with fewer "
                   "categories rank first)"),
        Param("alpha", float, 1.0, help="weight of a wildcard match in f_k, in [0, 1] "
                                        "(sdcMicro's alpha)")),
        kind="categorical", columns_rule="any", deterministic=True, strength="k",
        summary="suppress key values (set missing) until k-anonymous (sdcMicro's greedy "
                "localSuppression)"),
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
    """Accepted parameters of masking method ``name`` and their types.

    Parameters
    ----------
    name : str
        A registered masking method.

    Returns
    -------
    dict
        Parameter name → type (``list``: a list of column names, ``object``: a value the
        method checks itself, e.g. a threshold that may be a number or a category label).
        The full declarations (defaults, descriptions) are ``METHODS[name].params``;
        docs/methods.md lists them.
    """
    return {k: p.type for k, p in _spec(name).params.items()}


def _coerce_params(spec: MethodSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """The values ``apply`` is called with: checked and coerced against the declaration by
    :func:`linkrisk.params.coerce_params` (shared with the attacks), defaults filled in."""
    out = coerce_params(spec.name, spec.params, params)
    return {**spec.defaults, **out}


def mask(df: pd.DataFrame, method: str, columns: Sequence[str] | None = None,
         seed: SeedLike = None, *, ids: str | Sequence[str] | None = None,
         **params: Any) -> pd.DataFrame:
    """Mask ``columns`` of ``df`` with ``method`` and return a new DataFrame.

    The input is not modified; row order, index, column names and order are kept and the
    other columns are passed through unchanged. Every bad input raises
    :class:`~linkrisk.errors.LinkriskError`. The methods, their parameters and their papers
    are listed in docs/methods.md (Masking methods) and by ``linkrisk methods``.

    Parameters
    ----------
    df : pandas.DataFrame
        The original file.
    method : str
        A registered masking method (``METHODS``): noise, mdav, rankswap, pram, ….
    columns : sequence of str, optional
        The columns to mask. ``None`` masks, for numeric methods, every numeric column that
        is not ``confidential``; for ``pram`` every non-numeric column (not in ``strata``);
        for ``top_coding``/``bottom_coding`` the ordered Categoricals, else the numeric
        columns; for ``global_recoding`` the non-numeric columns, else the numeric ones.
        The default never includes id columns: ``ids`` and the id-like columns
        (:func:`linkrisk.data.id_like`: unique per record, or named like an identifier),
        which pair the release with the original and are left unmasked with a
        :class:`~linkrisk.errors.LinkriskWarning`; name them in ``columns`` to mask them.
    ids : str or sequence of str, optional
        Id columns (``"a,b"`` or a list), never masked unless named in ``columns``.
    seed : int or numpy.random.Generator, optional
        Drives every random step through ``np.random.default_rng(seed)``: same seed, same
        output; deterministic methods ignore it.
    **params
        The method's parameters, checked against its declaration (:func:`method_params`).

    Returns
    -------
    pandas.DataFrame
        A copy of ``df`` with the masked columns replaced (and, for methods that synthesize
        them, the confidential columns); ``attrs`` carries what the method reports.

    References
    ----------
    Each method's paper is cited in its module's docstring and in docs/methods.md.
    """
    spec = _spec(method)
    params = _coerce_params(spec, params)
    check_frame(df, "mask()", "mask")
    exclude = list(params.get("confidential") or []) + list(params.get("strata") or [])
    id_cols = parse_columns(ids) or []
    if id_cols:
        check_columns(df, id_cols, "ids")
    if columns is None:
        likely = [c for c in df.columns if c not in id_cols and id_like(df[c], c)]
        cols = default_columns(df, spec.columns_rule, exclude=exclude + id_cols + likely)
        left = [c for c in likely if c in default_columns(df, spec.columns_rule, exclude)]
        if left and cols:
            warnings.warn(f"id-like column{'s' if len(left) > 1 else ''} "
                          f"{', '.join(map(str, left))} (unique per record or named like an "
                          f"identifier) left unmasked: ids pair the release with the "
                          f"original; name {'them' if len(left) > 1 else 'it'} in columns= "
                          "(--columns) to mask "
                          f"{'them' if len(left) > 1 else 'it'}", LinkriskWarning,
                          stacklevel=2)
        if not cols:
            want = "numeric" if spec.columns_rule == "numeric" else "categorical"
            raise LinkriskError(f"{method}: the file has no {want} column to mask"
                                + (f" but the id column(s) {', '.join(map(str, likely))}"
                                   if likely else "") + "; name the columns with columns=")
    else:
        cols = check_columns(df, columns)
    rng = as_rng(seed)
    masked = spec.apply(df, cols, rng, **params)
    out = df.copy()
    # a method may also release columns it was not asked to mask (ipso/data_shuffle with
    # mutual=True synthesize the confidential block too)
    for c in [*cols, *(c for c in masked.columns if c not in cols and c in df.columns)]:
        out[c] = masked[c]
    out.attrs.update(masked.attrs)
    return out
