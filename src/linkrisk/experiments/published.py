"""The published figures the ``replicate`` study reproduces, and their mapping onto the
study's cells.

``published/published.csv`` (shipped with the package, provenance in its README) holds 339
cells of Muralidhar & Domingo-Ferrer, "Rank-based record linkage for re-identification risk
assessment" (Tables 1–5, % correctly linked) and Herranz, Nin, Rodríguez & Tassa,
"Revisiting distance-based record linkage for privacy-preserving release of statistical
datasets" (Tables 2 and 6, correct links of 1080). :func:`cell_key` maps each to the
(dataset, masking label, value, attack label) of ``configs/replicate.toml``;
:func:`attach_published` adds the column ``published`` (in %, like the study's results) to a
study summary.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pandas as pd

RBRL = "Muralidhar"
#: the global paper's cells count correct links out of Census's 1080 records
CENSUS_N = 1080


def load_published() -> pd.DataFrame:
    """The 339 published cells with the columns of the CSV plus ``study`` (rbrl / gdbrl),
    ``published_pct`` (the value in %) and the study cell it maps to (``dataset_label``,
    ``masking_label``, ``value_key``, ``attack_label``)."""
    path = resources.files("linkrisk.experiments") / "published" / "published.csv"
    with resources.as_file(path) as p:
        df = pd.read_csv(p, dtype={"parameter": str}, keep_default_na=False)
    df["published"] = df["published"].astype(float)
    keys = [cell_key(r) for r in df.to_dict("records")]
    df["study"] = ["rbrl" if r.startswith(RBRL) else "gdbrl" for r in df["paper"]]
    df["dataset_label"] = [k[0] for k in keys]
    df["masking_label"] = [k[1] for k in keys]
    df["value_key"] = [k[2] for k in keys]
    df["attack_label"] = [k[3] for k in keys]
    counts = df["unit"].str.startswith("correct links")
    df["published_pct"] = df["published"].where(~counts, 100.0 * df["published"] / CENSUS_N)
    return df


def value_key(v: Any) -> str:
    """A swept value as a comparable string ('' for none): 0.25 → '0.25', 5 → '5'."""
    if v is None or v == "" or (isinstance(v, float) and v != v):
        return ""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{f:g}"


_GLOBAL_MASKING = {"noise": "gdbrl noise", "rank_swap_pdist": "gdbrl rank_swap_pdist",
                   "rank_shuffle": "gdbrl rank_shuffle"}
_METRIC = {"euclidean": "", "l1 (absolute)": "_l1", "mahalanobis": "_mahalanobis"}


def cell_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    """(dataset label, masking label, value key, attack label) of a published row."""
    table, masking, param, attack = (int(row["table"]), str(row["masking"]),
                                     str(row["parameter"]), str(row["attack"]))
    nums = dict((k.strip(), float(v)) for k, v in re.findall(r"([a-z ()%]+)=([0-9.]+)", param))
    if str(row["paper"]).startswith(RBRL):
        method = masking.split(" ")[0]
        value = next(iter(nums.values()))
        return row["dataset"], f"rbrl-t{table} {method}", value_key(value), attack
    m = re.fullmatch(r"(\w+)(?: \[(.+)\])?", attack)
    base, metric = m.group(1), m.group(2) or "euclidean"
    label = base + _METRIC[metric]
    method = masking.split(" ")[0]
    if method == "noise":
        return "census", "gdbrl noise", value_key(nums["sigma"] / 100.0), label
    if method in ("rank_swap_pdist",):
        return "census", "gdbrl rank_swap_pdist", value_key(nums["p"]), label
    if method == "rank_shuffle":
        return "census", "gdbrl rank_shuffle", value_key(nums["q"]), label
    if method == "ipso":
        return "census (blocks 1-6 | 7-13)", "gdbrl ipso C", "", label
    if method == "data_shuffle":
        return "census (blocks 1-6 | 7-13)", "gdbrl data_shuffle", "", label
    if method == "micdp":
        return ("census", f"gdbrl micdp k={int(nums['k'])}", value_key(nums["eps"]), label)
    raise ValueError(f"unmapped published cell: {row}")


def attach_published(summary: pd.DataFrame, skip: set[str] | frozenset[str] = frozenset()
                     ) -> pd.DataFrame:
    """``summary`` with a ``published`` column: the published value (in %) of each cell the
    papers report (first one when two tables report the same cell), NaN elsewhere and for
    the dataset labels in ``skip`` (e.g. samples of the published files)."""
    pub = load_published()
    first = pub.drop_duplicates(["dataset_label", "masking_label", "value_key", "attack_label"])
    look = {(r.dataset_label, r.masking_label, r.value_key, r.attack_label): r.published_pct
            for r in first.itertuples()}
    out = summary.copy()
    out["published"] = [float("nan") if r["dataset"] in skip else
                        look.get((r["dataset"], r["masking"], value_key(r["value"]), r["name"]),
                                 float("nan")) for _, r in out.iterrows()]
    return out
