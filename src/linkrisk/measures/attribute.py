"""Attribute disclosure: what a release reveals about a sensitive value, with or without
re-identifying its record (definitions in docs/methods.md, "Attribute disclosure").

* :func:`l_diversity` — distinct, entropy and recursive (c,l)-diversity of every key pattern
  of the release (Machanavajjhala et al. 2007), computed as sdcMicro's ``ldiversity``: the
  entropy l-diversity is exp(H) as a real number (not floored); a missing sensitive value
  counts as one more category when its pattern has a non-missing one.
* :func:`t_closeness` — the earth mover's distance between each key pattern's sensitive
  distribution and the whole file's (Li, Li & Venkatasubramanian 2007), with the ordered or
  the equal-distance ground metric.
* :func:`linked_inference` — after a record-linkage attack, the share of attacker records
  whose sensitive value equals (categorical) or lies within ±p % of (numeric) the value of the
  released record they were linked to.

Key patterns with one sensitive value among several records disclose that value without
identifying anyone (the homogeneity attack): they are counted, never listed by value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data import check_columns
from ..errors import LinkriskError


def _keys_frame(df: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str]) -> None:
    both = set(keys) & set(sensitive)
    if both:
        raise LinkriskError(f"a sensitive column cannot also be a key: {', '.join(sorted(both))}")
    check_columns(df, list(keys), "the key columns")
    check_columns(df, list(sensitive), "the sensitive columns")


def _group_ids(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Pattern number of every record (a missing key value is a value of its own)."""
    return df.groupby(list(keys), dropna=False, sort=False, observed=True).ngroup().to_numpy()


def _recursive_l(freq_desc: np.ndarray, c: float) -> int:
    """sdcMicro's recursive (c,l)-diversity of one pattern: the largest l ≤ m with
    r₁ < c·(r_l + … + r_m), r₁ ≥ … ≥ r_m the sensitive counts (1 when no l ≥ 2 fits)."""
    m = freq_desc.size
    if m <= 1:
        return 1
    tail = c * float(freq_desc[1:].sum())
    rank = 1
    for j in range(1, m):
        if not tail > freq_desc[0]:
            break
        tail -= c * float(freq_desc[j])
        rank += 1
    return rank


@dataclass
class LDiversity:
    """Per-record and per-pattern l-diversity of one release.

    ``per_record``: for each sensitive column S, ``S_distinct``, ``S_entropy`` and
    ``S_recursive`` of the record's key pattern (as sdcMicro's ``ldiversity`` columns
    ``S_Distinct_Ldiversity`` …), and ``pattern_size``. ``summary``: per sensitive column the
    minimum of each measure, the number of records and patterns with one sensitive value
    among two or more records (``homogeneous_records``/``homogeneous_patterns``: value
    disclosed without identity), and the sample uniques (patterns of one record)."""

    keys: list[str]
    sensitive: list[str]
    c: float
    per_record: pd.DataFrame
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"keys": list(self.keys), "sensitive": list(self.sensitive), "c": self.c,
                "summary": self.summary}


def l_diversity(df: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str] | str, *,
                c: float = 2.0) -> LDiversity:
    """Distinct, entropy and recursive (c,l)-diversity of the key patterns of ``df``.

    Parameters
    ----------
    df : pandas.DataFrame
        The release (masked or k-anonymous file).
    keys : sequence of str
        The categorical key (quasi-identifier) columns that define the patterns.
    sensitive : str or sequence of str
        The sensitive column(s).
    c : float
        The constant of recursive (c,l)-diversity (sdcMicro's ``l_recurs_c``, default 2).

    Returns
    -------
    LDiversity
        Per-record values of the record's pattern and a summary per sensitive column.
    """
    sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    keys = list(keys)
    _keys_frame(df, keys, sens)
    if not c > 0:
        raise LinkriskError(f"the recursive l-diversity constant c must be positive, not {c}")
    g = _group_ids(df, keys)
    n_groups = int(g.max()) + 1 if g.size else 0
    size = np.bincount(g, minlength=n_groups)
    out = pd.DataFrame({"pattern_size": size[g]}, index=df.index)
    summary: dict[str, dict[str, Any]] = {}
    for s in sens:
        col = df[s]
        miss = col.isna().to_numpy()
        codes = pd.factorize(col, use_na_sentinel=True)[0]
        distinct = np.zeros(n_groups)
        entropy = np.ones(n_groups)
        recursive = np.ones(n_groups, np.int64)
        # (pattern, value) counts over the non-missing values; missing counted per pattern
        ok = ~miss
        pair = pd.DataFrame({"g": g[ok], "v": codes[ok]}).value_counts()
        n_miss = np.bincount(g[miss], minlength=n_groups)
        counts: dict[int, list[int]] = {}
        for (gi, _), cnt in pair.items():
            counts.setdefault(int(gi), []).append(int(cnt))
        for gi in range(n_groups):
            f = counts.get(gi, [])
            if f and n_miss[gi] > 0:       # sdcMicro: missing is a category beside others
                f = f + [int(n_miss[gi])]
            if not f:
                distinct[gi], entropy[gi], recursive[gi] = 0.0, 1.0, 1
                continue
            fa = np.sort(np.asarray(f, float))[::-1]
            p = fa / size[gi]
            distinct[gi] = fa.size
            entropy[gi] = float(np.exp(-np.sum(p * np.log(p))))
            recursive[gi] = _recursive_l(fa, c)
        out[f"{s}_distinct"] = distinct[g]
        out[f"{s}_entropy"] = entropy[g]
        out[f"{s}_recursive"] = recursive[g]
        homog = (distinct == 1) & (size >= 2)
        summary[s] = {
            "min_distinct": float(distinct.min()) if n_groups else None,
            "min_entropy": float(entropy.min()) if n_groups else None,
            "min_recursive": int(recursive.min()) if n_groups else None,
            "patterns": n_groups,
            "homogeneous_patterns": int(homog.sum()),
            "homogeneous_records": int(size[homog].sum()),
            "sample_uniques": int((size == 1).sum()),
        }
    return LDiversity(keys, sens, float(c), out, summary)


def emd_equal(p: np.ndarray, q: np.ndarray) -> float:
    """Earth mover's distance under the equal-distance ground metric (every two values at
    distance 1): ½·Σ|p_i − q_i| (Li et al. 2007, section 4.2)."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def emd_ordered(p: np.ndarray, q: np.ndarray) -> float:
    """Earth mover's distance under the ordered ground metric (values v_1 < … < v_m at
    distance |i − j|/(m − 1)): (1/(m−1))·Σ_i |Σ_{j≤i} (p_j − q_j)| (Li et al. 2007)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    m = p.size
    if m <= 1:
        return 0.0
    return float(np.abs(np.cumsum(p - q)).sum() / (m - 1))


@dataclass
class TCloseness:
    """Per-pattern and per-record t of one release: ``per_record`` has, for each sensitive
    column S, ``S_t`` (the EMD of the record's pattern); ``summary[S]``: ``t`` (the maximum
    over patterns: the release is t-close for every t at or above it), ``ground`` (ordered or
    equal), and the mean t over records."""

    keys: list[str]
    sensitive: list[str]
    per_record: pd.DataFrame
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"keys": list(self.keys), "sensitive": list(self.sensitive),
                "summary": self.summary}


def t_closeness(df: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str] | str, *,
                ground: str | dict[str, str] = "auto",
                order: dict[str, Sequence[Any]] | None = None) -> TCloseness:
    """t-closeness of the key patterns of ``df`` for each sensitive column.

    Parameters
    ----------
    df : pandas.DataFrame
        The release.
    keys : sequence of str
        The key columns.
    sensitive : str or sequence of str
        The sensitive column(s); records with a missing sensitive value are left out of the
        distributions.
    ground : {"auto", "ordered", "equal"} or dict
        The ground metric per column: ``ordered`` (values sorted, or in ``order``) for
        numeric and ordinal values, ``equal`` for nominal ones; ``auto``: ordered for numbers
        and ordered Categoricals, equal otherwise.
    order : dict, optional
        The order of an ordinal column's values (default: sorted, or the Categorical's).

    Returns
    -------
    TCloseness
    """
    sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    keys = list(keys)
    _keys_frame(df, keys, sens)
    g = _group_ids(df, keys)
    n_groups = int(g.max()) + 1 if g.size else 0
    out = pd.DataFrame(index=df.index)
    summary: dict[str, dict[str, Any]] = {}
    for s in sens:
        col = df[s]
        gr = ground.get(s, "auto") if isinstance(ground, dict) else ground
        if gr == "auto":
            ordered_cat = isinstance(col.dtype, pd.CategoricalDtype) and col.dtype.ordered
            gr = "ordered" if (pd.api.types.is_numeric_dtype(col) or ordered_cat) else "equal"
        if gr not in ("ordered", "equal"):
            raise LinkriskError(f"unknown ground metric {gr!r}; use ordered or equal")
        ok = col.notna().to_numpy()
        if order and s in order:
            values = list(order[s])
            missing = set(col[ok].unique()) - set(values)
            if missing:
                raise LinkriskError(f"{s}: values missing from the given order: {sorted(missing, key=str)[:5]}")
        elif isinstance(col.dtype, pd.CategoricalDtype):
            values = [v for v in col.cat.categories if (col == v).any()]
        else:
            values = sorted(col[ok].unique().tolist())
        pos = {v: i for i, v in enumerate(values)}
        codes = col[ok].map(pos).to_numpy(np.int64)
        m = len(values)
        tab = np.zeros((n_groups, m))
        np.add.at(tab, (g[ok], codes), 1.0)
        overall = tab.sum(axis=0)
        q = overall / max(overall.sum(), 1.0)
        tg = np.full(n_groups, np.nan)
        emd = emd_ordered if gr == "ordered" else emd_equal
        for gi in range(n_groups):
            tot = tab[gi].sum()
            if tot > 0:
                tg[gi] = emd(tab[gi] / tot, q)
        out[f"{s}_t"] = tg[g]
        summary[s] = {"t": float(np.nanmax(tg)) if np.isfinite(tg).any() else None,
                      "mean_t": float(np.nanmean(tg[g])) if np.isfinite(tg).any() else None,
                      "ground": gr, "values": m}
    return TCloseness(keys, sens, out, summary)


def linked_inference(original: pd.DataFrame, released: pd.DataFrame, link: np.ndarray,
                     sensitive: Sequence[str] | str, *, p: float = 5.0,
                     kinds: dict[str, str] | None = None,
                     correct: np.ndarray | None = None) -> dict[str, dict[str, Any]]:
    """Attribute disclosure after linkage: for every attacker record a (row of
    ``original``) linked to ``released`` row ``link[a]`` (−1: not linked), whether the
    released sensitive value is the original one (categorical) or within ±p % of it
    (numeric: |y − x| ≤ p/100·|x|).

    Returns, per sensitive column, ``inferred`` (count), ``rate`` (share of attacker
    records), the same among the correctly re-identified records when ``correct`` (the
    attack's per-record χ/|C|) is given (``inferred_reidentified``), and among the others
    (``inferred_without_identity``, counted with weight 1 − correct). Counts only: no value
    is returned."""
    sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    check_columns(original, sens, "the original file")
    check_columns(released, sens, "the release")
    link = np.asarray(link, np.int64)
    if link.shape != (len(original),):
        raise LinkriskError("linked_inference needs one link per attacker record")
    ok = link >= 0
    out: dict[str, dict[str, Any]] = {}
    for s in sens:
        x = original[s].to_numpy()
        y = np.empty(len(original), dtype=object)
        rel = released[s].to_numpy()
        y[ok] = rel[link[ok]]
        kind = (kinds or {}).get(s) or ("numeric" if pd.api.types.is_numeric_dtype(original[s])
                                        else "nominal")
        hit = np.zeros(len(original), bool)
        if kind == "numeric":
            xf = x.astype(float)
            yf = np.full(len(original), np.nan)
            yf[ok] = rel[link[ok]].astype(float)
            with np.errstate(invalid="ignore"):
                hit = np.abs(yf - xf) <= p / 100.0 * np.abs(xf)
        else:
            hit[ok] = pd.Series(y[ok]).to_numpy() == x[ok]
        rec: dict[str, Any] = {"kind": kind, "inferred": int(hit.sum()),
                               "rate": float(hit.mean()) if hit.size else 0.0,
                               "tolerance_percent": p if kind == "numeric" else None}
        if correct is not None:
            cr = np.asarray(correct, float)
            rec["inferred_reidentified"] = float((hit * cr).sum())
            rec["inferred_without_identity"] = float((hit * (1 - cr)).sum())
        out[s] = rec
    return out
