"""Masking of categorical (and coarsening of numeric) attributes.

* ``pram`` — Post-RAndomization Method (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998,
  "Post randomisation for statistical disclosure control: theory and implementation"). Each
  value c is replaced by c' drawn from row c of a Markov matrix. Default, as sdcMicro's
  ``pram()``: *invariant* PRAM. Over the L observed categories with relative frequencies f:
  P has p_cc ~ U(pd, 1) and off-diagonals (1−p_cc)/(L−1); the backward matrix
  Q_dc = P_cd·f_c / Σ_e P_ed·f_e; R = P·Q satisfies fᵀR = fᵀ; the matrix used is
  α·R + (1−α)·I, so the category frequencies are unchanged in expectation. ``matrix=`` gives
  a user matrix instead (a DataFrame indexed and labelled by categories, rows = from; or an
  L×L array over the column's categories — a Categorical's categories, else the sorted
  distinct values; or a dict column → matrix), used as is (rows must sum to 1).
  ``strata=[cols]`` runs PRAM separately within each combination of the strata columns
  (invariant matrices from the stratum's own frequencies). The matrices used are kept in
  ``result.attrs["pram_matrices"]`` as plain Python data (so pandas can compare attrs):
  column → {"categories": [...], "matrix": [[...]]}, or column → {stratum key: that} with
  strata; ``pram_matrix_frame()`` turns one entry into a DataFrame.
  Strength: ``pd`` (0.95 mild … 0 strong) at fixed ``alpha`` (0 = no change … 1).
  ``variant="sdcmicro"`` reproduces sdcMicro's ``pram()`` (R/pram.R, versions ≥ 4.7) where
  it differs from the default ``variant="observed"``: the matrix is built over *all* the
  column's categories (a factor's levels; here a Categorical's categories, unused ones
  included, which get frequency 0 but still receive off-diagonal mass in P, so R differs
  from the observed-only matrix when a category is unused) and it is computed once from the
  whole column's frequencies and applied unchanged within every stratum (the default builds
  one matrix per stratum from the stratum's own frequencies). Without unused categories and
  without strata both variants give the same matrix and the same distribution of released
  values (the draws differ from R's: another generator). Earlier sdcMicro versions (before
  4.7, numeric codes recoded to 1..L, L = the observed categories, NA as an extra category;
  the first versions indexed the matrix by the raw code, right only for codes 1..L) built
  the same α·P·Q + (1−α)·I matrix; the normalisation of f by Σ codes instead of n in every
  version cancels in Q.
* ``top_coding`` / ``bottom_coding`` — values above (below) a threshold are replaced by the
  threshold (numeric) or merged into the threshold category (ordinal: ordered Categorical;
  the dtype keeps all its categories, those beyond the threshold become unused, so codes stay
  aligned with the original file). ``threshold=`` is a value or category label;
  ``quantile=`` takes the threshold as the q-quantile of the column by the inverted CDF (the
  smallest observed value/category whose cumulative share is ≥ q), so the threshold is always
  an observed value. Strength: ``quantile`` (top: 0.99 mild … 0.5 strong; bottom: 0.01 …
  0.5) or ``threshold``. Nominal columns have no order and are refused.
* ``global_recoding`` — numeric: the value x goes to the interval
  [origin + b·w, origin + (b+1)·w), b = ⌊(x − origin)/w⌋ (origin default: the largest
  multiple of w not above the minimum, so age 23 with w=5 → [20, 25)), released as an
  ordered Categorical of ``pandas.Interval`` (``midpoint=True``: the interval midpoint, a
  number). Ordinal: consecutive categories merged into groups of ``width`` from the first
  category on, labelled ``"first..last"`` (string labels). Nominal: ``n_groups`` keeps the
  n_groups−1 most frequent categories and merges the rest into ``other_label``; or
  ``min_frequency`` merges every category with fewer records (a count, or a share of n when
  < 1) — if that would relabel a single observed category, the next least frequent one joins
  it so that the merged group really pools categories. Strength: ``width`` (larger is
  stronger) for ordinal/numeric; ``n_groups`` (smaller is stronger) or ``min_frequency``
  (larger is stronger) for nominal.

For the ``masking_aware`` linkage distance, ``top_coding_map``, ``bottom_coding_map`` and
``global_recoding_map`` return, for one column, the dict original value/category → released
value/category that the coding method applies (deterministic given the data), and
``coding_map(series, method, **params)`` dispatches by method name; ``pram_support(entry)``
gives the possible released categories of each category under a PRAM matrix actually used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas

from ..data import check_columns, check_no_missing, infer_kind
from ..errors import LinkriskError
from ..params import Param, as_params, coerce_params

# ---------------------------------------------------------------- categories <-> codes


def categories_and_codes(s: pandas.Series) -> tuple[pandas.Index, np.ndarray, bool]:
    """(categories, integer codes, ordered) of a column: a Categorical's own categories
    (unused ones included), else its sorted distinct values."""
    if isinstance(s.dtype, pandas.CategoricalDtype):
        return s.cat.categories, s.cat.codes.to_numpy().astype(np.int64), bool(s.dtype.ordered)
    try:
        codes, uniq = pandas.factorize(s, sort=True)
    except TypeError:  # unorderable mix of types
        codes, uniq = pandas.factorize(s, sort=False)
    return pandas.Index(uniq), np.asarray(codes, dtype=np.int64), False


def _rebuild(s: pandas.Series, codes: np.ndarray, categories: pandas.Index,
             ordered: bool) -> pandas.Series:
    """Series of ``categories[codes]``, in ``s``'s dtype where it can hold the values."""
    if isinstance(s.dtype, pandas.CategoricalDtype):
        dtype = pandas.CategoricalDtype(categories, ordered=ordered)
        return pandas.Series(pandas.Categorical.from_codes(codes, dtype=dtype),
                             index=s.index, name=s.name)
    out = pandas.Series(categories.take(codes), index=s.index, name=s.name)
    try:
        cast = out.astype(s.dtype)
    except (TypeError, ValueError):
        return out.astype(object)
    # astype can succeed lossily (e.g. "other" → True in a bool column): keep it only if exact
    if (cast.astype(object) == out.astype(object)).all():
        return cast
    return out.astype(object)


def _match_labels(labels: Sequence[Any], cats: pandas.Index) -> np.ndarray:
    """Position of each label in ``cats`` (−1 if absent); falls back to matching by str()
    so CLI strings like "3" find integer categories."""
    pos = np.asarray(cats.get_indexer(pandas.Index(list(labels), dtype=object)), dtype=np.int64)
    if (pos < 0).any():
        by_str = {str(c): i for i, c in enumerate(cats)}
        for t, lab in enumerate(labels):
            if pos[t] < 0:
                pos[t] = by_str.get(str(lab), -1)
    return pos


# ---------------------------------------------------------------- PRAM


def invariant_pram_matrix(freq: np.ndarray, pd: float, alpha: float,
                          rng: np.random.Generator) -> np.ndarray:
    """sdcMicro's invariant PRAM matrix α·P·Q + (1−α)·I for category counts ``freq``.

    Parameters
    ----------
    freq : numpy.ndarray
        Count of each category (> 0).
    pd : float
        Lower bound of the diagonal of P: p_cc ~ U(pd, 1), off-diagonals (1 − p_cc)/(k − 1).
    alpha : float
        The weight α of the invariant matrix P·Q (0 = no change … 1).
    rng : numpy.random.Generator
        Draws the diagonal of P.

    Returns
    -------
    numpy.ndarray
        The k×k transition matrix (rows = from, each summing to 1).

    References
    ----------
    Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J. & de Wolf, P.-P. (1998). Post
    randomisation for statistical disclosure control: theory and implementation. *Journal
    of Official Statistics* 14(4), 463–478. See docs/methods.md, ``pram``.
    """
    # every count > 0: Σ_e f_e P_ed > 0 for every d, the matrix over all categories is this one
    return invariant_pram_matrix_all(freq, pd, alpha, rng)


PRAM_VARIANTS = ("observed", "sdcmicro")


def invariant_pram_matrix_all(counts: np.ndarray, pd: float, alpha: float,
                              rng: np.random.Generator) -> np.ndarray:
    """sdcMicro's invariant matrix over all L categories, unused ones (count 0) included:
    P over L, Q_dc = P_cd·f_c / Σ_e P_ed·f_e (zero columns for unused c), α·P·Q + (1−α)·I.
    Rows of unused categories are never used (no record holds them)."""
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    if size == 1:
        return np.ones((1, 1))
    diag = rng.uniform(pd, 1.0, size)
    p = np.repeat(((1.0 - diag) / (size - 1))[:, None], size, axis=1)
    np.fill_diagonal(p, diag)
    f = counts / counts.sum()
    denom = f @ p                              # Σ_e f_e P_ed
    with np.errstate(invalid="ignore", divide="ignore"):  # Q_dc = P_cd f_c / Σ_e P_ed f_e
        q = np.where(denom[:, None] > 0, (p * f[:, None]).T / denom[:, None], 0.0)
    m = alpha * (p @ q) + (1.0 - alpha) * np.eye(size)
    return m / m.sum(axis=1, keepdims=True)    # exact stochastic rows despite round-off


def _transitions(codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw c' from row c of ``matrix`` for every code c (one uniform per record)."""
    u = rng.random(len(codes))
    cum = np.cumsum(matrix, axis=1)
    cum[:, -1] = 1.0
    out = np.empty_like(codes)
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    bounds = np.flatnonzero(np.diff(sc)) + 1
    for block in np.split(order, bounds):
        if len(block):
            out[block] = np.searchsorted(cum[codes[block[0]]], u[block], side="right")
    return np.minimum(out, matrix.shape[1] - 1)


def _user_matrix(matrix: Any, col: Any, cats: pandas.Index, observed: np.ndarray
                 ) -> tuple[np.ndarray, pandas.Index]:
    """The user's transition matrix over ``cats`` (+ any new categories it introduces)."""
    if isinstance(matrix, Mapping):
        if col not in matrix:
            raise LinkriskError(f"pram: matrix= is a dict but has no entry for column {col!r}")
        matrix = matrix[col]
    if isinstance(matrix, pandas.DataFrame):
        rows, cols_ = list(matrix.index), list(matrix.columns)
        if len(set(rows)) != len(rows) or set(map(str, rows)) != set(map(str, cols_)):
            raise LinkriskError(
                f"pram: the matrix for {col!r} must be square with the same categories as row "
                "index and column labels"
            )
        by_str = {str(c): c for c in cols_}
        arr = matrix[[by_str[str(r)] for r in rows]].to_numpy(dtype=np.float64)
        labels = rows
    else:
        try:
            arr = np.asarray(matrix, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise LinkriskError(f"pram: matrix for {col!r} is not numeric") from exc
        if arr.ndim != 2 or arr.shape != (len(cats), len(cats)):
            raise LinkriskError(
                f"pram: the matrix for {col!r} must be {len(cats)}×{len(cats)} (one row and "
                f"column per category {list(cats)}), got shape {arr.shape}; or pass a "
                "DataFrame indexed by category"
            )
        labels = list(cats)
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise LinkriskError(f"pram: the matrix for {col!r} must hold probabilities (finite, >= 0)")
    sums = arr.sum(axis=1)
    if np.abs(sums - 1).max() > 1e-6:
        bad = labels[int(np.argmax(np.abs(sums - 1)))]
        raise LinkriskError(
            f"pram: rows of the matrix for {col!r} must sum to 1 (row {bad!r} sums to "
            f"{sums[int(np.argmax(np.abs(sums - 1)))]:.6g})"
        )
    arr = arr / sums[:, None]
    pos = _match_labels(labels, cats)
    extra = [lab for lab, p in zip(labels, pos, strict=True) if p < 0]
    out_cats = cats.append(pandas.Index(extra)) if extra else cats
    pos = _match_labels(labels, out_cats)
    missing = sorted(set(np.unique(observed)) - set(pos.tolist()))
    if missing:
        raise LinkriskError(
            f"pram: the matrix for {col!r} has no row for categor{'y' if len(missing) == 1 else 'ies'} "
            f"{[out_cats[i] for i in missing]}; add them"
        )
    full = np.eye(len(out_cats))
    full[np.ix_(pos, pos)] = arr
    return full, out_cats


def _plain(m: np.ndarray, cats: pandas.Index) -> dict:
    return {"categories": [c.item() if hasattr(c, "item") else c for c in cats],
            "matrix": m.tolist()}


def pram_matrix_frame(entry: Mapping[str, Any]) -> pandas.DataFrame:
    """One ``attrs["pram_matrices"]`` entry as a DataFrame.

    Parameters
    ----------
    entry : mapping
        An entry with ``categories`` and ``matrix``.

    Returns
    -------
    pandas.DataFrame
        The transition matrix, rows = from, columns = to, labelled by category.
    """
    return pandas.DataFrame(entry["matrix"], index=entry["categories"],
                            columns=entry["categories"])


def pram_support(entry: Mapping[str, Any]) -> dict:
    """Category → set of categories it can be released as.

    Parameters
    ----------
    entry : mapping
        One ``attrs["pram_matrices"]`` entry (``categories`` and ``matrix``).

    Returns
    -------
    dict
        The positive entries of each category's row: a ``masking_map`` for masking-aware
        linkage.
    """
    cats, m = entry["categories"], np.asarray(entry["matrix"])
    return {c: {cats[j] for j in np.flatnonzero(m[i] > 0)} for i, c in enumerate(cats)}


def pram_matrix(series: pandas.Series, pd: float = 0.8, alpha: float = 0.5,
                seed: int | np.random.Generator | None = None) -> pandas.DataFrame:
    """The invariant PRAM matrix for ``series``, as ``mask(..., "pram", pd=, alpha=)`` would
    draw it for a single column without strata given the same generator state.

    Parameters
    ----------
    series : pandas.Series
        The categorical column; the matrix is over its observed categories.
    pd : float
        Lower bound of the diagonal of P (:func:`invariant_pram_matrix`).
    alpha : float
        The weight of the invariant matrix P·Q.
    seed : int or numpy.random.Generator, optional
        Seed of the draw.

    Returns
    -------
    pandas.DataFrame
        The transition matrix, rows = from, columns = to.

    References
    ----------
    Gouweleeuw, Kooiman, Willenborg & de Wolf (1998); docs/methods.md, ``pram``.
    """
    _check_pram(pd, alpha)
    cats, codes, _ = categories_and_codes(series)
    obs, counts = np.unique(codes, return_counts=True)
    m = invariant_pram_matrix(counts, pd, alpha, np.random.default_rng(seed))
    return pandas.DataFrame(m, index=cats[obs], columns=cats[obs])


def _check_pram(pd: float, alpha: float) -> None:
    if not (0 <= pd <= 1):
        raise LinkriskError(f"pram: pd={pd} must be in [0, 1] (lower bound of the diagonal)")
    if not (0 <= alpha <= 1):
        raise LinkriskError(f"pram: alpha={alpha} must be in [0, 1]")


def apply_pram(df: pandas.DataFrame, columns: list[str], rng: np.random.Generator,
               **params: Any) -> pandas.DataFrame:
    pd_, alpha = params.get("pd", 0.8), params.get("alpha", 0.5)
    matrix, strata = params.get("matrix"), params.get("strata")
    variant = str(params.get("variant") or "observed").lower()
    if variant not in PRAM_VARIANTS:
        raise LinkriskError(f"pram: variant={params.get('variant')!r} is not one of "
                            f"{', '.join(PRAM_VARIANTS)}")
    _check_pram(pd_, alpha)
    check_no_missing(df, columns, "pram")
    if strata:
        strata = check_columns(df, strata, what="strata")
        both = [c for c in strata if c in columns]
        if both:
            raise LinkriskError(f"pram: {both} are both masked and strata columns; pick one role")
        check_no_missing(df, strata, "pram (strata)")
        groups = list(df.groupby(strata, sort=True, observed=True).indices.items())
    else:
        groups = [(None, np.arange(len(df)))]
    out, used = {}, {}
    for col in columns:
        s = df[col]
        cats, codes, ordered = categories_and_codes(s)
        new = codes.copy()
        if matrix is not None:
            full, cats_out = _user_matrix(matrix, col, cats, codes)
            for _, idx in groups:
                new[idx] = _transitions(codes[idx], full, rng)
            used[col] = _plain(full, cats_out)
        elif variant == "sdcmicro":
            # one matrix over every category of the column, from the whole column's
            # frequencies, used unchanged in every stratum (sdcMicro's pramWORK)
            cats_out = cats
            m = invariant_pram_matrix_all(np.bincount(codes, minlength=len(cats)), pd_,
                                          alpha, rng)
            for _, idx in groups:
                new[idx] = _transitions(codes[idx], m, rng)
            used[col] = _plain(m, cats)
        else:
            cats_out = cats
            per = {}
            for key, idx in groups:
                obs, local, counts = np.unique(codes[idx], return_inverse=True, return_counts=True)
                m = invariant_pram_matrix(counts, pd_, alpha, rng)
                new[idx] = obs[_transitions(local.ravel(), m, rng)]
                per[key] = _plain(m, cats[obs])
            used[col] = per[None] if strata is None or not strata else per
        out[col] = _rebuild(s, new, cats_out, ordered)
    res = pandas.DataFrame(out, index=df.index)
    res.attrs["pram_matrices"] = used
    return res


# ---------------------------------------------------------------- recodings (deterministic)


@dataclass
class Recoding:
    """A deterministic per-column recoding. Either a category map (``cmap[old code] = new
    code`` into ``new_categories``) or, for numeric columns, ``func`` on the values (giving
    values, or codes into ``new_categories`` when those are set)."""

    categories: pandas.Index | None = None
    cmap: np.ndarray | None = None
    new_categories: pandas.Index | None = None
    ordered: bool = False
    func: Callable[[np.ndarray], np.ndarray] | None = None

    def apply(self, s: pandas.Series) -> pandas.Series:
        if self.func is None:
            _, codes, _ = categories_and_codes(s)
            return _rebuild(s, self.cmap[codes], self.new_categories, self.ordered)
        vals = self.func(s.to_numpy())
        if self.new_categories is None:
            return pandas.Series(vals, index=s.index, name=s.name)
        dtype = pandas.CategoricalDtype(self.new_categories, ordered=True)
        return pandas.Series(pandas.Categorical.from_codes(vals, dtype=dtype),
                             index=s.index, name=s.name)

    def mapping(self, s: pandas.Series) -> dict:
        if self.func is None:
            return {c: self.new_categories[self.cmap[i]] for i, c in enumerate(self.categories)}
        uniq = np.unique(s.to_numpy())
        vals = self.func(uniq)
        if self.new_categories is not None:
            vals = self.new_categories.take(vals)
        return {u.item() if hasattr(u, "item") else u: (v.item() if hasattr(v, "item") else v)
                for u, v in zip(uniq, vals, strict=True)}


def _per_column(value: Any, col: Any, name: str, method: str) -> Any:
    if isinstance(value, Mapping):
        if col not in value:
            raise LinkriskError(f"{method}: {name} is given per column but not for {col!r}")
        return value[col]
    return value


def _quantile_index(counts: np.ndarray, q: float) -> int:
    """Inverted-CDF quantile on category counts: first category with cumulative share ≥ q."""
    cdf = np.cumsum(counts) / counts.sum()
    return int(min(np.searchsorted(cdf, q - 1e-12, side="left"), len(counts) - 1))


def _threshold_recoding(s: pandas.Series, side: str, threshold: Any, quantile: Any,
                        method: str) -> Recoding:
    col = s.name
    if (threshold is None) == (quantile is None):
        raise LinkriskError(
            f"{method}: give exactly one of threshold= (a value or category) or quantile= "
            f"(e.g. {'0.95' if side == 'top' else '0.05'}) for column {col!r}"
        )
    if quantile is not None:
        quantile = float(quantile)
        if not (0 <= quantile <= 1):
            raise LinkriskError(f"{method}: quantile={quantile} must be in [0, 1]")
    kind = infer_kind(s)
    if kind == "nominal":
        raise LinkriskError(
            f"{method}: column {col!r} is nominal (no order); make it an ordered Categorical "
            "or use global_recoding"
        )
    if kind == "numeric":
        x = s.to_numpy()
        if quantile is not None:
            t = np.quantile(x, quantile, method="inverted_cdf")
        else:
            try:
                t = float(threshold)
            except (TypeError, ValueError):
                raise LinkriskError(f"{method}: threshold={threshold!r} for numeric column "
                                    f"{col!r} must be a number") from None
        if pandas.api.types.is_integer_dtype(s.dtype) and float(t).is_integer():
            t = s.dtype.type(t)  # keep integer columns integer
        return Recoding(func=(lambda v: np.minimum(v, t)) if side == "top"
                        else (lambda v: np.maximum(v, t)))
    cats, codes, ordered = categories_and_codes(s)
    if quantile is not None:
        ti = _quantile_index(np.bincount(codes, minlength=len(cats)), quantile)
    else:
        ti = int(_match_labels([threshold], cats)[0])
        if ti < 0:
            raise LinkriskError(f"{method}: threshold {threshold!r} is not a category of "
                                f"{col!r}; categories: {list(cats)}")
    idx = np.arange(len(cats))
    cmap = np.minimum(idx, ti) if side == "top" else np.maximum(idx, ti)
    return Recoding(categories=cats, cmap=cmap, new_categories=cats, ordered=ordered)


def _interval_bins(x: np.ndarray, width: float, origin: float | None) -> tuple[np.ndarray, float]:
    if origin is None:
        origin = math.floor(np.min(x) / width) * width
    # round before floor so 0.3/0.1 = 2.9999999999999996 lands in bin 3
    return np.floor(np.round((x - origin) / width, 9)).astype(np.int64), origin


def _nice(v: float) -> float | int:
    """Interval bound for labels: integral → int; else 12 significant digits (0.30000000000000004
    → 0.3)."""
    v = float(f"{float(v):.12g}")
    return int(v) if v.is_integer() else v


def _recoding(s: pandas.Series, method: str, params: Mapping[str, Any]) -> Recoding:
    """The deterministic recoding a coding method applies to column ``s``."""
    col = s.name
    p = {k: _per_column(v, col, k, method) for k, v in params.items()}
    if method in ("top_coding", "bottom_coding"):
        return _threshold_recoding(s, method.split("_")[0], p.get("threshold"),
                                   p.get("quantile"), method)
    if method != "global_recoding":  # pragma: no cover - internal
        raise LinkriskError(f"{method} has no deterministic category map")
    kind = infer_kind(s)
    width, n_groups, min_freq = p.get("width"), p.get("n_groups"), p.get("min_frequency")
    if kind in ("numeric", "ordinal"):
        if width is None:
            raise LinkriskError(
                f"global_recoding: column {col!r} is {kind}; give width= (merge consecutive "
                f"{'intervals' if kind == 'numeric' else 'categories'} into groups of width w)"
            )
        if not width > 0 or (kind == "ordinal" and float(width) != int(width)):
            raise LinkriskError(f"global_recoding: width={width} must be a positive "
                                f"{'number' if kind == 'numeric' else 'whole number'}")
    if kind == "numeric":
        x = s.to_numpy(dtype=np.float64)
        width = float(width)
        bins, origin = _interval_bins(x, width, p.get("origin"))
        lo, hi = int(bins.min()), int(bins.max())
        if hi - lo + 1 > 1_000_000:
            raise LinkriskError(f"global_recoding: width={width} makes {hi - lo + 1} intervals "
                                f"for {col!r}; use a larger width")

        def codes_of(v: np.ndarray, origin: float = origin, lo: int = lo) -> np.ndarray:
            return _interval_bins(np.asarray(v, dtype=np.float64), width, origin)[0] - lo

        if p.get("midpoint"):
            return Recoding(func=lambda v: origin + (codes_of(v) + lo + 0.5) * width)
        intervals = pandas.Index([
            pandas.Interval(_nice(origin + b * width), _nice(origin + (b + 1) * width),
                            closed="left") for b in range(lo, hi + 1)
        ])
        return Recoding(func=codes_of, new_categories=intervals, ordered=True)
    cats, codes, ordered = categories_and_codes(s)
    if kind == "ordinal":
        w = int(width)
        gid = np.arange(len(cats)) // w
        labels = []
        for g in range(int(gid.max()) + 1 if len(cats) else 0):
            members = cats[gid == g]
            labels.append(str(members[0]) if len(members) == 1
                          else f"{members[0]}..{members[-1]}")
        if w == 1:
            return Recoding(categories=cats, cmap=np.arange(len(cats)), new_categories=cats,
                            ordered=ordered)
        return Recoding(categories=cats, cmap=gid, new_categories=pandas.Index(labels),
                        ordered=ordered)
    # nominal
    if (n_groups is None) == (min_freq is None):
        raise LinkriskError(
            f"global_recoding: column {col!r} is nominal; give exactly one of n_groups= "
            "(categories kept, the rest merged) or min_frequency= (merge rarer categories)"
        )
    other = p.get("other_label") or "other"
    counts = np.bincount(codes, minlength=len(cats))
    by_freq = np.argsort(-counts, kind="stable")        # most frequent first, ties by order
    if n_groups is not None:
        if n_groups < 1:
            raise LinkriskError(f"global_recoding: n_groups={n_groups} must be >= 1")
        merged = set(by_freq[n_groups - 1:].tolist()) if n_groups < len(cats) else set()
    else:
        if not min_freq > 0:
            raise LinkriskError(f"global_recoding: min_frequency={min_freq} must be > 0")
        limit = min_freq * len(s) if min_freq < 1 else min_freq
        merged = {i for i in range(len(cats)) if counts[i] < limit}
        rare_observed = [i for i in merged if counts[i] > 0]
        if len(rare_observed) == 1:  # pool it with the next least frequent category
            kept_obs = [i for i in by_freq[::-1] if counts[i] > 0 and i not in merged]
            if kept_obs:
                merged.add(kept_obs[0])
    if not merged:
        return Recoding(categories=cats, cmap=np.arange(len(cats)), new_categories=cats,
                        ordered=ordered)
    kept = [i for i in range(len(cats)) if i not in merged and str(cats[i]) != str(other)]
    new_cats = pandas.Index([cats[i] for i in kept] + [other], dtype=object)
    cmap = np.full(len(cats), len(kept), dtype=np.int64)
    for j, i in enumerate(kept):
        cmap[i] = j
    if cats.dtype != object:  # keep e.g. the str dtype, unless the cast would change labels
        try:
            cast = new_cats.astype(cats.dtype)
            if list(cast.astype(object)) == list(new_cats):
                new_cats = cast
        except (TypeError, ValueError):
            pass
    return Recoding(categories=cats, cmap=cmap, new_categories=new_cats, ordered=ordered)


def _apply_coding(method: str) -> Callable[..., pandas.DataFrame]:
    def apply(df: pandas.DataFrame, columns: list[str], rng: np.random.Generator,
              **params: Any) -> pandas.DataFrame:
        check_no_missing(df, columns, method)
        return pandas.DataFrame({c: _recoding(df[c], method, params).apply(df[c])
                                 for c in columns}, index=df.index)

    apply.__name__ = f"apply_{method}"
    return apply


apply_top_coding = _apply_coding("top_coding")
apply_bottom_coding = _apply_coding("bottom_coding")
apply_global_recoding = _apply_coding("global_recoding")


# ---------------------------------------------------------------- public category maps
_THRESHOLD = "value, label or {column: value}"
#: the parameters of the recoding methods (declared here, registered by
#: :mod:`.registry`, and used by :func:`coding_map`)
CODING_PARAMS: dict[str, tuple[Param, ...]] = {
    "top_coding": (
        Param("threshold", object, type_name=_THRESHOLD,
              help="values above it are replaced by it (ordinal: merged into that category)"),
        Param("quantile", float, help="threshold = this quantile of the column (inverted "
                                      "CDF); give threshold or quantile")),
    "bottom_coding": (
        Param("threshold", object, type_name=_THRESHOLD,
              help="values below it are replaced by it (ordinal: merged into that category)"),
        Param("quantile", float, help="threshold = this quantile of the column (inverted "
                                      "CDF); give threshold or quantile")),
    "global_recoding": (
        Param("width", float, help="numeric: interval width; ordinal: number of consecutive "
                                   "categories per group"),
        Param("origin", float, help="numeric: start of the intervals (not set: the largest "
                                    "multiple of width not above the minimum)"),
        Param("midpoint", bool, False, help="numeric: release interval midpoints (numbers) "
                                            "instead of intervals"),
        Param("n_groups", int, help="nominal: keep the n_groups−1 most frequent categories, "
                                    "merge the rest"),
        Param("min_frequency", float, help="nominal: merge categories with fewer records (a "
                                           "count, or a share of n when < 1)"),
        Param("other_label", str, "other", help="nominal: label of the merged group")),
}


def coding_map(series: pandas.Series, method: str, **params: Any) -> dict:
    """Original value/category → released value/category that ``method`` applies to
    ``series`` (docs/methods.md, Masking methods).

    Parameters
    ----------
    series : pandas.Series
        The column.
    method : {"top_coding", "bottom_coding", "global_recoding"}
        The coding method.
    **params
        Its parameters, as in :func:`linkrisk.masking.mask`.

    Returns
    -------
    dict
        Each distinct observed value (numeric columns) or category → its released value;
        a ``masking_map`` for masking-aware linkage.
    """
    if method not in CODING_PARAMS:
        raise LinkriskError(f"no category map for {method!r}: use top_coding, bottom_coding "
                            "or global_recoding")
    declared = as_params(CODING_PARAMS[method])
    defaults = {k: p.default for k, p in declared.items() if p.default is not None}
    params = {**defaults, **coerce_params(method, declared, params)}
    if series.isna().any():
        raise LinkriskError(f"{method}: column {series.name!r} contains missing values")
    return _recoding(series, method, params).mapping(series)


def _threshold_map(method: str, side: str, relation: str) -> Callable[..., dict]:
    """The public category map of ``top_coding`` or ``bottom_coding``: one definition for
    both, which differ only in the side of the threshold."""

    def threshold_map(series: pandas.Series, threshold: Any = None,
                      quantile: float | None = None) -> dict:
        return coding_map(series, method, threshold=threshold, quantile=quantile)

    threshold_map.__name__ = threshold_map.__qualname__ = f"{method}_map"
    threshold_map.__doc__ = f"""Value/category → released value/category under ``{method}``
    (see module doc).

    Parameters
    ----------
    series : pandas.Series
        The column (numeric or ordered Categorical).
    threshold : object, optional
        The {side} code: values {relation} it are released as it.
    quantile : float, optional
        The threshold as a quantile of the column, instead of ``threshold``.

    Returns
    -------
    dict
        As :func:`coding_map`.
    """
    return threshold_map


top_coding_map = _threshold_map("top_coding", "top", "above")
bottom_coding_map = _threshold_map("bottom_coding", "bottom", "below")


def global_recoding_map(series: pandas.Series, **params: Any) -> dict:
    """Value/category → released value/category under ``global_recoding``.

    Parameters
    ----------
    series : pandas.Series
        The column.
    **params
        ``width=``, ``origin=``, ``midpoint=`` for numeric/ordinal columns; ``n_groups=`` or
        ``min_frequency=``, ``other_label=`` for nominal columns.

    Returns
    -------
    dict
        As :func:`coding_map`.
    """
    return coding_map(series, "global_recoding", **params)
