"""Categorical and mixed distances for distance-based record linkage
(docs/methods.md, ``dbrl_mixed``).

Both files are encoded with **one shared category → code mapping per attribute** (a
category seen in only one file still gets a code) and each categorical attribute gets an
L×L table of category distances; the engine's ``mixed`` metric then scores a pair as the
sum of the table entries (plus (a−b)² for numeric attributes), blockwise and without Python
loops over pairs. The result is a :class:`~linkrisk.attacks.spaces.Space` with metric
``"mixed"`` and ``kw={"tables": Tables}``, usable for nearest sets and global-matching
costs alike (``pair_scores`` below scores listed pairs with the same tables).

Per-attribute distances (Domingo-Ferrer & Torra 2001; docs/methods.md):

* nominal: 0 if the categories are equal, else 1;
* ordinal: d(c, c') = #{c'' : min(c,c') ≤ c'' ≤ max(c,c')} / |D(V)| = (|r(c)−r(c')|+1)/|D(V)|,
  exactly as the paper writes it, so equal categories are at 1/|D(V)| (a constant per
  attribute: it changes no candidate set and no optimal matching). D(V) is the category
  order: ``categories={col: [...]}`` if given (this also makes ``col`` ordinal), else the
  categories of an ordered pandas Categorical, else (a column declared ordinal with
  ``kinds=``) the sorted categories of both files, leaving out new labels that a known
  masking creates (map images that are not categories of the original file);
* numeric (mixed files): standardized per file with its own mean and std (ddof=1), as dbrl,
  contributing the squared difference. Categorical parts are in [0, 1] per attribute, a
  numeric part is ~2 on average for unrelated records: a Gower-like equally weighted sum
  in which a numeric attribute counts about as much as a categorical one.

A record pair's distance is the equally weighted sum over attributes, or Σ_j w_j·d_j with
``weights=`` ({col: w} or one weight per QI; numeric attributes are scaled by √w_j so
their squared difference gets weight w_j).

Metric names (``space(ctx, metric)``): ``hamming`` — every attribute nominal (Hamming =
number of differing attributes; numeric QIs refused); ``mixed`` — the per-kind distances
above. ``dbrl``'s default ``sqeuclidean`` (and ``dbrl_l1``'s ``l1``) on QIs that include
categorical attributes is ``mixed``; ``euclidean`` (global matching's default cost) is the
square root of the ``mixed`` score, the categorical analogue of "Euclidean, not squared".
``l1`` on files mixing numeric and categorical QIs is refused (the engine squares numeric
parts).

``masking_aware=True`` with ``masking_map={col: {original_category: released_category}}``:
the distance is ∞ for category pairs the known masking cannot produce (released ≠
map(original)). Categories absent from a column's map are released unchanged; a map value
may also be a list/set of possible released categories (e.g. the support of a PRAM row).
This covers top/bottom coding (categories beyond the threshold → the threshold
category) and global recoding (merged categories → their group label). Possible pairs keep
their ordinary distance; an ordinal released category outside the order (a new group
label) is at exact-match distance (1/|D(V)|) from the categories that map to it. Without a
map, such a label is at the largest distance, 1, from every category but itself: the
attribute then says nothing about the records carrying it. The map is
from the original file's categories to the released file's; which of A and B is the
original (the attack direction) is read from the true pairs, which must all be possible.
Weights scale finite distances only: ∞ stays ∞ even at weight 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..engine.nearest import Pairwise, Tables, standardize
from ..engine.nearest.transforms import standardize_observed
from ..errors import LinkriskError
from .base import LinkContext
from .spaces import Space

#: metrics served by this module (besides the categorical defaults of dbrl and friends)
CATEGORICAL_METRICS = ("hamming", "mixed")
#: largest category count per attribute (an L×L float64 table of 128 MiB)
MAX_CATEGORIES = 4096


# ---------------------------------------------------------------- category domains, codes
def _sorted(values: list) -> list:
    try:
        return sorted(values)
    except TypeError:  # mixed types: keep first-seen order
        return list(values)


def _domain(s: pd.Series) -> list:
    """A column's categories: the dtype's categories for a Categorical (including unused
    ones), else its distinct non-missing values sorted."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return list(s.cat.categories)
    return _sorted(list(pd.unique(s.dropna())))


def _observed(s: pd.Series) -> list:
    return list(pd.unique(s.dropna()))


def _union(*lists: list) -> list:
    return list(dict.fromkeys(x for lst in lists for x in lst))


def _codes(s: pd.Series, cats: list, col: str, what: str, missing: bool = False
           ) -> np.ndarray:
    """Category codes of ``s`` under ``cats`` (−1 for a missing value when ``missing``;
    refused otherwise)."""
    if not missing and s.isna().any():
        i = int(np.flatnonzero(s.isna().to_numpy())[0])
        raise LinkriskError(f"column {col!r} of the {what} has missing values (first at row {i}); "
                            "impute them or make 'missing' a category before linking")
    codes = pd.Categorical(s, categories=pd.Index(cats, dtype=object)).codes.astype(np.int64)
    unknown = (codes < 0) & s.notna().to_numpy()
    if unknown.any():  # cannot happen when cats covers both files; guard anyway
        i = int(np.flatnonzero(unknown)[0])
        raise LinkriskError(f"column {col!r}: category {s.iloc[i]!r} of the {what} has no code")
    return codes


def _check_coding(col: str, sa: pd.Series, sb: pd.Series) -> None:
    """Refuse the classic coding mismatch: no category in common and different value types
    (e.g. 1, 2 in one file and '1', '2' in the other)."""
    oa, ob = _observed(sa), _observed(sb)
    if oa and ob and not set(oa) & set(ob):
        ta, tb = {type(v).__name__ for v in oa}, {type(v).__name__ for v in ob}
        if ta != tb:
            raise LinkriskError(
                f"column {col!r}: no category occurs in both files (attacker's: {oa[0]!r} …, "
                f"released: {ob[0]!r} …); code the column the same way in both files")


def shared_codes(ctx: LinkContext, col: str, cats: list | None = None, *,
                 missing: bool = False) -> tuple[list, np.ndarray, np.ndarray]:
    """(categories, codes of A, codes of B) with one mapping for both files; by default the
    categories are A's domain followed by B's extra categories. ``missing``: a missing
    value gets code −1 (refused otherwise)."""
    sa, sb = ctx.a_df[col], ctx.b_df[col]
    if cats is None:
        _check_coding(col, sa, sb)
        cats = _union(_domain(sa), _domain(sb))
    return (cats, _codes(sa, cats, col, "attacker's file", missing),
            _codes(sb, cats, col, "released file", missing))


def _order(ctx: LinkContext, col: str, user: Sequence | None, images: set,
           a_original: bool) -> list:
    """The category order D(V) of an ordinal attribute: the user's, else the original
    file's ordered Categorical, else the other file's, else the sorted categories of both
    files except new labels the known masking creates (map images that are not categories
    of the original file). Without a masking map the file with more categories is taken as
    the original (coding only merges categories)."""
    if user is not None:
        order = list(user)
        if len(set(order)) != len(order):
            raise LinkriskError(f"categories for {col!r} list a category twice")
        return order
    orig, rel = (ctx.a_df[col], ctx.b_df[col]) if a_original else (ctx.b_df[col], ctx.a_df[col])
    if not images and len(_domain(rel)) > len(_domain(orig)):
        orig, rel = rel, orig  # no map: the finer file is taken as the original
    do, dr = orig.dtype, rel.dtype
    oo = isinstance(do, pd.CategoricalDtype) and do.ordered
    orl = isinstance(dr, pd.CategoricalDtype) and dr.ordered
    if oo and orl:
        co, cr = list(do.categories), list(dr.categories)
        common_o = [c for c in co if c in set(cr)]
        common_r = [c for c in cr if c in set(co)]
        if common_o != common_r:
            raise LinkriskError(f"column {col!r} is ordered differently in the two files; "
                                f"give the order with categories={{{col!r}: [...]}}")
    if oo or orl:
        return list((do if oo else dr).categories)
    base = _domain(orig)
    values = _union(base, [v for v in _domain(rel) if v not in set(base) and v not in images])
    try:
        return sorted(values)
    except TypeError:
        raise LinkriskError(f"cannot sort the categories of ordinal column {col!r}; give the "
                            f"order with categories={{{col!r}: [...]}}") from None


# ---------------------------------------------------------------- masking relations
def _as_set(v: Any) -> set:
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple, set, frozenset,
                                                         np.ndarray, pd.Index)):
        return {v}
    return set(v)


def _relations(ctx: LinkContext, masking_aware: bool | None, masking_map: Any
               ) -> dict[str, dict[Any, set]]:
    if masking_aware is None:
        masking_aware = masking_map is not None
    if not masking_aware:
        if masking_map is not None:
            raise LinkriskError("masking_map given with masking_aware=False; drop one of them")
        return {}
    if masking_map is None:
        raise LinkriskError("masking_aware=True needs the known masking as masking_map="
                            "{column: {original_category: released_category}}")
    if not isinstance(masking_map, Mapping):
        raise LinkriskError("masking_map must map column names to {original: released} maps")
    out = {}
    for col, mp in masking_map.items():
        if col not in ctx.qi:
            raise LinkriskError(f"masking_map names {col!r}, which is not a QI column")
        if ctx.kinds[col] == "numeric":
            raise LinkriskError(f"masking_map applies to categorical columns; {col!r} is numeric "
                                "(declare it with kinds= if it holds category codes)")
        if isinstance(mp, pd.Series):
            mp = mp.to_dict()
        if not isinstance(mp, Mapping):
            raise LinkriskError(f"masking_map[{col!r}] must be a mapping original → released")
        out[col] = {k: _as_set(v) for k, v in mp.items()}
    return out


def _possible(rel: dict[Any, set], cats: list) -> np.ndarray:
    """P[i, k]: category cats[i] of the original file can be released as cats[k]."""
    pos = {c: k for k, c in enumerate(cats)}
    p = np.zeros((len(cats), len(cats)), bool)
    for i, c in enumerate(cats):
        for r in rel.get(c, {c}):
            k = pos.get(r)
            if k is not None:
                p[i, k] = True
    return p


# ---------------------------------------------------------------- tables and the space
def category_table(kind: str, n_cats: int, n_order: int | None = None) -> np.ndarray:
    """Distance table over codes 0..n_cats−1. ``nominal``: 0/1. ``ordinal``: codes
    0..n_order−1 follow the order, d = (|r−r'|+1)/n_order; codes beyond the order (labels
    of a recoding) are at the largest distance, 1, from every other category and at
    1/n_order from themselves."""
    if kind == "nominal":
        return 1.0 - np.eye(n_cats)
    n_order = n_cats if n_order is None else n_order
    r = np.arange(n_cats, dtype=np.float64)
    t = (np.abs(r[:, None] - r[None, :]) + 1.0) / n_order
    t[n_order:, :] = 1.0
    t[:, n_order:] = 1.0
    idx = np.arange(n_order, n_cats)
    t[idx, idx] = 1.0 / n_order
    return t


def _weights(ctx: LinkContext, weights: Any) -> np.ndarray:
    m = len(ctx.qi)
    if weights is None:
        return np.ones(m)
    if isinstance(weights, Mapping):
        bad = [c for c in weights if c not in ctx.qi]
        if bad:
            raise LinkriskError(f"weights name {bad[0]!r}, which is not a QI column")
        w = np.array([float(weights.get(c, 1.0)) for c in ctx.qi])
    else:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.size != m:
            raise LinkriskError(f"weights: give one weight per QI ({m}), got {w.size}; or a "
                                "{column: weight} mapping")
    if not np.isfinite(w).all() or (w < 0).any():
        raise LinkriskError("weights must be finite and non-negative")
    return w


def _user_categories(ctx: LinkContext, categories: Any) -> dict[str, list]:
    if categories is None:
        return {}
    if not isinstance(categories, Mapping):
        raise LinkriskError("categories must map column names to their ordered categories")
    for c in categories:
        if c not in ctx.qi:
            raise LinkriskError(f"categories given for {c!r}, which is not a QI column")
    return {c: list(v) for c, v in categories.items()}


def categorical_space(ctx: LinkContext, metric: str = "mixed", *, weights: Any = None,
                      categories: Any = None, masking_aware: bool | None = None,
                      masking_map: Any = None, missing: bool = False, **_other: Any) -> Space:
    """Encode both files for the engine's ``mixed`` metric (see the module docstring).

    ``metric``: ``mixed`` / ``sqeuclidean`` / ``l1`` (the per-kind sum), ``euclidean`` (its
    square root, ``root=True``) or ``hamming`` (every attribute nominal). Other keyword
    arguments (numeric metrics' parameters) are ignored, as :func:`.distance.space` does.
    ``missing=True``: missing values are NaN in the matrices (numeric attributes
    standardized over their observed values), for :func:`.distance.missing_linked`."""
    if metric not in CATEGORICAL_METRICS + ("euclidean", "sqeuclidean", "l1"):
        raise LinkriskError(f"metric {metric!r} is not defined for categorical attributes; use "
                            "hamming or mixed")
    w = _weights(ctx, weights)
    user = _user_categories(ctx, categories)
    rels = _relations(ctx, masking_aware, masking_map)
    kinds = {}
    for c in ctx.qi:
        k = "ordinal" if c in user else ctx.kinds[c]
        if metric == "hamming":
            if k == "numeric":
                raise LinkriskError(
                    f"hamming compares categories but {c!r} is numeric; declare it nominal "
                    f"(--kinds {c}=nominal; in Python kinds={{{c!r}: 'nominal'}}) or use "
                    "the mixed metric (dbrl_mixed)")
            k = "nominal"
        kinds[c] = k
    if metric == "l1" and any(k == "numeric" for k in kinds.values()):
        raise LinkriskError("dbrl_l1 is not available for files mixing numeric and categorical "
                            "QIs; use dbrl (squared numeric parts) or dbrl_mixed")
    a_original = _orientation(ctx, rels)
    num = [c for c in ctx.qi if kinds[c] == "numeric"]
    n_a, n_b, m = ctx.n_a, ctx.n_b, len(ctx.qi)
    a, b = np.empty((n_a, m)), np.empty((n_b, m))
    if num and missing:
        idx = [ctx.qi.index(c) for c in num]
        na, nb = ctx.numeric_observed(num)
        a[:, idx] = standardize_observed(na) * np.sqrt(w[idx])
        b[:, idx] = standardize_observed(nb) * np.sqrt(w[idx])
    elif num:
        from ..data import numeric_matrix

        idx = [ctx.qi.index(c) for c in num]
        a[:, idx] = standardize(numeric_matrix(ctx.a_df, num, what="attacker's file"),
                                  inplace=True)
        a[:, idx] *= np.sqrt(w[idx])
        b[:, idx] = standardize(numeric_matrix(ctx.b_df, num, what="released file"),
                                  inplace=True)
        b[:, idx] *= np.sqrt(w[idx])
    tables: list[np.ndarray | None] = []
    for j, c in enumerate(ctx.qi):
        k = kinds[c]
        if k == "numeric":
            tables.append(None)
            continue
        rel = rels.get(c)
        if k == "ordinal":
            images = set().union(*rel.values()) if rel else set()
            order = _order(ctx, c, user.get(c), images, a_original)
            seen = _union(_observed(ctx.a_df[c]), _observed(ctx.b_df[c]))
            outside = [v for v in seen if v not in set(order)]
            stray = [v for v in outside if v not in images]
            if stray and c in user:
                raise LinkriskError(
                    f"ordinal column {c!r}: category {stray[0]!r} is not in the order given "
                    f"with categories=; list every category")
            cats = order + outside
            n_order = len(order)
        else:
            if rel is None:
                _check_coding(c, ctx.a_df[c], ctx.b_df[c])
            cats = _union(_domain(ctx.a_df[c]), _domain(ctx.b_df[c]))
            n_order = len(cats)
        if len(cats) > MAX_CATEGORIES:
            raise LinkriskError(f"column {c!r} has {len(cats)} categories (at most "
                                f"{MAX_CATEGORIES}); recode it or treat it as numeric")
        t = category_table(k, len(cats), n_order)
        _, ca, cb = shared_codes(ctx, c, cats, missing=missing)
        a[:, j], b[:, j] = ca, cb
        if missing:
            a[ca < 0, j] = np.nan
            b[cb < 0, j] = np.nan
        if rel is not None:
            ok = _possible(rel, cats)
            ok = ok if a_original else ok.T
            if k == "ordinal":  # a possible pair with a recoding label: exact-match distance
                new = np.arange(len(cats)) >= n_order
                t = np.where(ok & (new[:, None] | new[None, :]), 1.0 / n_order, t)
            t = np.where(ok, t, np.inf)
        tables.append(np.where(np.isinf(t), np.inf, t * w[j]))
    return Space(np.ascontiguousarray(a), np.ascontiguousarray(b), "mixed",
                 {"tables": Tables.from_list(tables)}, root=metric == "euclidean")


def _orientation(ctx: LinkContext, rels: dict[str, dict[Any, set]]) -> bool:
    """True when A is the original file (the map reads A-category → B-category): the
    orientation under which every true pair is possible. Without true pairs: A original."""
    ok = ctx.truth >= 0
    if not rels or not ok.any():
        return True
    ia, ib = np.flatnonzero(ok), ctx.truth[ok]
    pairs = {c: pd.DataFrame({"x": ctx.a_df[c].iloc[ia].astype(object).to_numpy(),
                              "y": ctx.b_df[c].iloc[ib].astype(object).to_numpy()}
                             ).dropna().drop_duplicates() for c in rels}
    bad = {}
    for fwd in (True, False):
        for c, rel in rels.items():
            for x, y in pairs[c].itertuples(index=False):
                o, r = (x, y) if fwd else (y, x)
                if r not in rel.get(o, {o}):
                    bad[fwd] = (c, x, y)
                    break
            if fwd in bad:
                break
        if fwd not in bad:
            return fwd
    c, x, y = bad[True]
    raise LinkriskError(
        f"masking_map cannot produce the data: a true pair has {c!r} = {x!r} in the attacker's "
        f"file and {y!r} in the released one; give the masking's real category map "
        "{original: released}")


def pair_scores(sp: Space, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Scores of the pairs (A[ia], B[ib]) of a ``mixed`` space with the engine's own
    arithmetic (:meth:`~linkrisk.engine.nearest.Pairwise.pair_scores`), square-rooted when
    ``sp.root``."""
    pw = Pairwise.build(sp.a, sp.b, "mixed", tables=sp.kw["tables"], transpose=False)
    acc = pw.pair_scores(np.asarray(ia, np.int64), np.asarray(ib, np.int64))
    return np.sqrt(acc) if sp.root else acc
