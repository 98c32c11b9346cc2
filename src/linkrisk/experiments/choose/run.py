"""Running ``linkrisk choose``: the original file and its QIs, the cached data the workers
read, one study masking spec per method with the attacks of its worst case (over the
risk attacks and the attacker scenarios), and the per-point summary of the replications
(mean, sd and 95 % interval of IL, worst-case risk, DR and Score)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...data import is_number
from ...errors import LinkriskError, LinkriskWarning
from .grid import MethodGrid, fmt_value

#: rank-swap methods → the rsrl window (in % of n) as a function of the swept p
RANK_SWAPS = {"rank_swap": "$value", "rank_swap_pdist": "$value",
              "rank_swap_pbuckets": "$200/value"}


def frame_hash(df: pd.DataFrame) -> str:
    """A digest of a frame's content (dtypes, categories and their order, values): the
    name of the cached data, so that a changed file never hits the cache."""
    h = hashlib.sha1()
    h.update(json.dumps([[str(c), str(t)] for c, t in df.dtypes.items()]).encode())
    # categories and their order are part of the data (str(dtype) is just "category")
    cats = [[str(c), [str(x) for x in t.categories], bool(t.ordered)]
            for c, t in df.dtypes.items() if isinstance(t, pd.CategoricalDtype)]
    if cats:
        h.update(json.dumps(cats).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def load_original(original: str | Path | pd.DataFrame, data_dir: str | Path | None = None
                  ) -> tuple[pd.DataFrame, str]:
    """The original file and its display name: a DataFrame, an existing file or ``-``
    (stdin), or a reference dataset name (:func:`linkrisk.fileio.read_input`)."""
    from ... import datasets
    from ...fileio import read_input

    if isinstance(original, pd.DataFrame):
        return original.reset_index(drop=True), "<DataFrame>"
    s = str(original)
    df = read_input(s, data_dir)
    if not Path(s).exists() and s.lower() in datasets.REFERENCE:
        s = s.lower()
    return df.reset_index(drop=True), s


def data_kind(df: pd.DataFrame, cols: Sequence[str]) -> str:
    """``numeric`` if every QI is numeric, ``categorical`` if none is, else ``mixed``."""
    num = [is_number(df[c]) for c in cols]
    return "numeric" if all(num) else "categorical" if not any(num) else "mixed"



@dataclass
class Original:
    """The original file as the sweep masks it (coded categories as categories, ordered
    with ``ordered``), its display name, QIs, confidential and sensitive columns, whether
    the QIs were given, and the kind of the QIs (``numeric`` or ``categorical``)."""

    df: pd.DataFrame
    name: str
    qis: list[str]
    conf: list[str]
    qi_given: bool
    sens: list[str]
    kind: str
    block: list[str] = field(default_factory=list)  # blocking keys of the risk attacks


def prepare(original: str | Path | pd.DataFrame, data_dir: str | Path | None, *,
            qi: str | Sequence[str] | None, confidential: str | Sequence[str] | None,
            ordered: bool, risk: str, sensitive: str | Sequence[str] | None,
            notes: list[str], block: str | Sequence[str] | None = None) -> Original:
    """Stage 1 of :func:`~linkrisk.experiments.choose.choose`: read the original, check
    the risk axis, pick the QIs (notes on what was left out go to ``notes``) and refuse
    QIs of mixed kinds; ``block``: blocking keys (checked, left out of the QIs)."""
    df, name = load_original(original, data_dir)
    sens = _risk_axis(df, name, risk, sensitive, qi)
    keys = _block_keys(df, name, block, qi, confidential, sens)
    qis, conf, qi_given = _choose_qis(df, name, qi, confidential, notes,
                                      exclude=sens + keys)
    df = coded_as_categories(df, qis)
    if ordered:
        df = df.apply(lambda s: s.cat.as_ordered() if isinstance(s.dtype, pd.CategoricalDtype)
                      else s.astype("category").cat.as_ordered()
                      if s.name in qis and not pd.api.types.is_numeric_dtype(s) else s)
    kind = data_kind(df, qis)
    if kind == "mixed":
        raise LinkriskError("the QIs mix numeric and categorical attributes; choose one kind "
                            "with --qi (choose compares methods of one kind)")
    return Original(df, name, qis, conf, qi_given, sens, kind, keys)


def _block_keys(df: pd.DataFrame, name: str, block: str | Sequence[str] | None,
                qi: str | Sequence[str] | None, confidential: str | Sequence[str] | None,
                sens: Sequence[str]) -> list[str]:
    """The blocking keys, checked: columns of the file, named once, and neither QIs,
    confidential nor sensitive (the attacker knows them exactly; they are not masked)."""
    from ...attacks.settings import block_keys
    from ...data import parse_columns

    keys = list(block_keys(block) or ())
    for c in keys:
        if c not in df.columns:
            raise LinkriskError(f"blocking key {c!r} is not in {name}")
        for what, cols in (("a QI", parse_columns(qi)), ("confidential", parse_columns(
                confidential)), ("sensitive", sens)):
            if cols and c in cols:
                raise LinkriskError(f"{c!r} is both a blocking key and {what}: the attacker "
                                    "knows the keys exactly, so they are neither masked nor "
                                    "compared as QIs")
    return keys


def risk_attack_names(orig: Original, risk_attacks: str | Sequence[str] | None) -> list[str]:
    """The attacks whose maximum is the worst-case risk: those given, else every attack
    that applies to the QI kinds (as :func:`linkrisk.assess` runs them)."""
    from ...assessment import applicable_attacks
    from ...attacks import resolve_methods
    from ...data import attribute_kinds

    if risk_attacks is not None:
        return resolve_methods(risk_attacks)
    n = len(orig.df)
    return applicable_attacks(attribute_kinds(orig.df, orig.qis), n, n, None)


def run_sweep(orig: Original, masking: list, cache: Path, data_name: str, *, seed: int,
              replications: int, processes: int | None,
              progress: Callable[[int, int], None] | None) -> tuple[pd.DataFrame, int, list]:
    """Run every point's replications as a study (worker processes, the cache of completed
    replications in ``cache``): (rows, replications taken from the cache, the tasks)."""
    from ..config import DatasetSpec, Study
    from ..runner import default_processes, expand, run_tasks

    # the QIs are masked and measured (IL); other columns (confidential ones) pass through
    ds = DatasetSpec(data_name, "original", qi=orig.qis, columns=orig.qis)
    study_ = Study("choose", f"choose a protection for {orig.name}", int(seed),
                   int(replications), [ds], masking, [], None, ["IL", "DR", "Score"],
                   "<choose>", block=tuple(orig.block) or None)
    tasks = expand(study_, str(cache.resolve()), int(replications))
    rows, cached = run_tasks(tasks, cache / "runs", processes or default_processes(),
                             progress)
    return rows, cached, tasks


RISKS = ("identity", "attribute", "both")


def _risk_axis(df: pd.DataFrame, name: str, risk: str, sensitive: str | Sequence[str] | None,
               qi: str | Sequence[str] | None) -> list[str]:
    """The sensitive columns of the risk axis ``risk`` (checked: required by
    ``attribute``/``both``, in the file, not among the QIs)."""
    from ...data import parse_columns

    if risk not in RISKS:
        raise LinkriskError(f"--risk {risk!r}: choose identity, attribute or both")
    sens = parse_columns(sensitive) or []
    if risk != "identity" and not sens:
        raise LinkriskError(f"--risk {risk} needs the sensitive columns: pass --sensitive "
                            "COL[,COL]")
    if risk == "identity" and sens:
        raise LinkriskError("--sensitive is for --risk attribute or both")
    missing = [c for c in sens if c not in df.columns]
    if missing:
        raise LinkriskError(f"sensitive column {missing[0]!r} is not in {name}")
    both = [c for c in sens if c in (parse_columns(qi) or [])]
    if both:
        raise LinkriskError(f"{both[0]!r} is both a QI and sensitive: the attacker infers a "
                            "sensitive value, so it is neither masked nor known")
    return sens


def coded_as_categories(df: pd.DataFrame, qis: Sequence[str]) -> pd.DataFrame:
    """Integer QIs that the attacks read as coded categories (:func:`linkrisk.data.coded`)
    are masked as categories too, with the attacks' warning: masking codes as numbers
    (noise on a region code) gives releases no category of which matches, and the sweep
    would only fail after it ran."""
    from ...data import attribute_kinds, infer_kind

    said: list[str] = []
    kinds = attribute_kinds(df, list(qis), notes=said)
    coded = [c for c in qis if kinds[c] == "nominal" and infer_kind(df[c]) == "numeric"]
    if not coded:
        return df
    for msg in said:
        warnings.warn(msg, LinkriskWarning, stacklevel=4)
    return df.assign(**{c: pd.Categorical(df[c]) for c in coded})


def _choose_qis(df: pd.DataFrame, name: str, qi: str | Sequence[str] | None,
                confidential: str | Sequence[str] | None, notes: list[str],
                exclude: Sequence[str] = ()) -> tuple[list[str], list[str], bool]:
    """Part of :func:`prepare`: (QIs, confidential columns, whether the QIs were given).
    Without ``qi`` the default QIs of assess: every column but the confidential ones,
    id-like and weight-like columns left out with a note."""
    from ...data import parse_columns, select_qi

    conf = parse_columns(confidential) or []
    qi_list = parse_columns(qi)
    missing = [c for c in (qi_list or []) + conf if c not in df.columns]
    if missing:
        raise LinkriskError(f"column {missing[0]!r} is not in {name} "
                            f"(columns: {', '.join(map(str, df.columns))})")
    if qi_list and set(qi_list) & set(conf):
        raise LinkriskError(f"{sorted(set(qi_list) & set(conf))[0]!r} is both a QI and "
                            "confidential")
    if qi_list:
        qis = qi_list
    else:
        rest = df[[c for c in df.columns if c not in conf and c not in exclude]]
        qis = select_qi(rest, rest, None, screen=True, notes=notes) if rest.shape[1] else []
    if not qis:
        raise LinkriskError("no QI columns left")
    return qis, conf, qi_list is not None



#: the cache folder used when none is given (in the working directory)
DEFAULT_CACHE = Path(".linkrisk-cache")


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/linkrisk`` (default ``~/.cache/linkrisk``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "linkrisk"


def cache_folder(cache_dir: str | Path | None) -> Path:
    """The cache folder, created: ``cache_dir``, or by default ``.linkrisk-cache`` in the
    working directory, and when that is not writable the user's cache folder
    (:func:`user_cache_dir`), else one in the temporary directory (with a warning naming
    it). A folder given explicitly that cannot be created is refused in one line."""
    from ...fileio import writable_dir

    given = cache_dir is not None and Path(cache_dir) != DEFAULT_CACHE
    cache = Path(cache_dir) if given else DEFAULT_CACHE
    if given:
        if not writable_dir(cache):
            raise LinkriskError(f"cannot use cache folder {cache}: it (or its parent) is not "
                                "writable; pass --cache DIR (cache_dir=) in a writable place")
        candidates = [cache]
    else:
        candidates = [cache, user_cache_dir(),
                      Path(tempfile.gettempdir()) / f"linkrisk-cache-{getattr(os, 'getuid', lambda: 0)()}"]
    for c in candidates:
        if not writable_dir(c):
            continue
        try:
            c.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if c != cache:
            warnings.warn(f"the working directory is not writable: the cache of completed "
                          f"replications is {c} (choose it with --cache DIR)",
                          LinkriskWarning, stacklevel=3)
        return c
    raise LinkriskError(f"cannot create the cache folder {cache}: no writable place "
                        f"({', '.join(map(str, candidates))}); pass --cache DIR "
                        "(cache_dir=) in a writable place")


def cache_data(df: pd.DataFrame, cache_dir: str | Path | None) -> tuple[Path, str, str]:
    """Stage 3 of :func:`~linkrisk.experiments.choose.choose`: the data the workers read, stored content-addressed in
    the cache folder (so a changed file never hits the cache): (cache folder, file name
    relative to it, the data's digest)."""
    cache = cache_folder(cache_dir)
    digest = frame_hash(df)
    # named relative to the cache folder: the cell keys, hence the seeds, depend on the
    # data's content only, not on where the cache lives
    # (a pickle: Parquet loses categories whose labels are integers)
    data_name = f"data-{digest}.pkl"
    data_path = cache / data_name
    if not data_path.exists():
        tmp = data_path.with_name(data_path.name + ".tmp")
        df.to_pickle(tmp)
        tmp.replace(data_path)
    return cache, data_name, digest


def sweep_specs(grids: list[MethodGrid], chosen_base: list[str], kind: str,
                *, default_risk: bool, notes: list[str], risk: str = "identity",
                sensitive: Sequence[str] = ()) -> tuple[list[Any], dict[str, list[str]]]:
    """Stage 4 of :func:`~linkrisk.experiments.choose.choose`: one study masking spec per method and fixed setting
    (its first parameter is swept), with the attacks that give its worst-case risk
    (``rsrl``/``rsrl_union`` only for a rank swap with a known p) plus those DR needs;
    and the risk attacks of each label."""
    from ..config import AttackSpec, MaskingSpec

    needed = ["dbrl", "prl"] if kind == "numeric" else ["dbrl_hamming", "prl"]
    metric = "euclidean" if kind == "numeric" else "hamming"
    masking: list[MaskingSpec] = []
    risk_by_label: dict[str, list[str]] = {}
    for g in grids:
        names = list(g.params)
        swept, rest = names[0], names[1:]
        for combo in product(*(g.params[k] for k in rest)):
            fixed = dict(zip(rest, combo, strict=True))
            label = g.method + "".join(f" {k}={fmt_value(v)}" for k, v in fixed.items()
                                       if k != "confidential")
            chosen = list(chosen_base)
            if g.method in RANK_SWAPS and swept == "p":
                if default_risk:
                    chosen += ["rsrl", "rsrl_union"]
            else:
                dropped = [a for a in chosen if a in ("rsrl", "rsrl_union")]
                chosen = [a for a in chosen if a not in dropped]
                if dropped:
                    notes.append(f"{label}: {', '.join(dropped)} left out (only for a rank "
                                 "swap with a known p)")
            chosen.append("scenarios")  # the worst case over attacker scenarios (#39)
            attacks = []
            for a in list(dict.fromkeys(chosen + needed)):
                params: dict[str, Any] = {}
                if a in ("rsrl", "rsrl_union"):
                    params = {"p": RANK_SWAPS[g.method]}
                elif a == "gdbrl":
                    params = {"metric": metric}
                attacks.append(AttackSpec(a, a, params))
            attr = []  # attribute disclosure through each risk attack's links
            if risk != "identity":
                for a in chosen:
                    if a == "scenarios":
                        continue
                    p = next(x.params for x in attacks if x.method == a)
                    attr.append(AttackSpec(f"{a} (attribute)", "attribute",
                                           {"attack": a, "sensitive": list(sensitive), **p}))
                attacks += attr
            if label in risk_by_label:
                raise LinkriskError(f"{label} is swept twice; give its values in one --method "
                                    "(a comma list)")
            risk_by_label[label] = ([] if risk == "attribute" else chosen) + [
                x.label for x in attr]
            masking.append(MaskingSpec(g.method, swept, list(g.params[swept]), {}, fixed,
                                       None, attacks, label))
    if not masking:
        raise LinkriskError("no masking method to sweep")
    return masking, risk_by_label


def failure_notes(rows: pd.DataFrame) -> list[str]:
    """Stage 5 of :func:`~linkrisk.experiments.choose.choose`: one note per attack and error that did not run on some
    points (those points' worst case leaves it out)."""
    notes = []
    failed = rows[rows["error"].fillna("") != ""] if "error" in rows else rows.iloc[:0]
    for (att, msg), g in failed.groupby(["name", "error"], sort=False):
        where = ", ".join(dict.fromkeys(f"{m} {fmt_value(v)}" for m, v in zip(g["masking"], g["value"],
                                                                      strict=True)))
        notes.append(f"{att} did not run on {where} (left out of the worst case there): {msg}")
    return notes



def points_table(rows: pd.DataFrame, masking: list, risk_by_label: dict[str, list[str]],
                 tasks: list) -> pd.DataFrame:
    """One row per point: mean, sd, 95 % interval of IL, worst-case risk, DR and Score."""
    from .. import summarize

    rows = rows.copy()
    rows["value"] = rows["value"].map(lambda v: "" if v is None else v)
    att = rows[rows["kind"] == "attack"]
    both = pd.concat([rows[rows["kind"] == "measure"], _worst_rows(att, risk_by_label)],
                     ignore_index=True)
    summ = summarize(both)
    by_attack = summarize(att)
    order = {(m.label, v): i for i, (m, v) in enumerate((m, v) for m in masking
                                                        for v in m.values)}
    seeds: dict[tuple[str, Any], int] = {}
    for t in tasks:
        if t.replication == 0:
            seeds[(t.masking, t.value)] = t.seed
    out = []
    for m in masking:
        for v in m.values:
            s = summ[(summ["masking"] == m.label) & (summ["value"] == v)]
            if s.empty:
                continue
            a = by_attack[(by_attack["masking"] == m.label) & (by_attack["value"] == v)
                          & by_attack["name"].isin(risk_by_label[m.label])]
            out.append(_point(m, v, s, a, risk_by_label[m.label], order[(m.label, v)],
                              seeds[(m.label, v)]))
    pts = pd.DataFrame(out)
    pts["value"] = pd.Series([r["value"] for r in out], dtype=object)  # keep 15, not 15.0
    front = ["point", "method", "param", "value", "n", "IL_mean", "IL_sd", "IL_lo", "IL_hi",
             "risk_mean", "risk_sd", "risk_lo", "risk_hi", "deciding_attack", "deciding_mean",
             "deciding_sd", "DR_mean", "DR_sd", "DR_lo", "DR_hi", "Score_mean", "Score_sd",
             "Score_lo", "Score_hi"]
    return pts[front + [c for c in pts.columns if c not in front]]


def _worst_rows(att: pd.DataFrame, risk_by_label: dict[str, list[str]]) -> pd.DataFrame:
    """One ``risk``/``worst`` row per point and replication: the largest result of the
    point's risk attacks (an attack that did not run is left out; none running is an
    error)."""
    worst = []
    for (label, value, _rep), g in att.groupby(["masking", "value", "replication"], sort=False):
        chosen = g[g["name"].isin(risk_by_label[label])]
        vals = chosen["result"].to_numpy(float)
        if not np.isfinite(vals).any():
            raise LinkriskError(f"{label} {value}: none of the risk attacks could run: "
                                + "; ".join(dict.fromkeys(chosen["error"])))
        worst.append({**g.iloc[0].to_dict(), "kind": "risk", "name": "worst",
                      "result": float(np.nanmax(vals))})
    return pd.DataFrame(worst)


def _point(m: Any, v: Any, s: pd.DataFrame, a: pd.DataFrame, risk_attacks: list[str],
           order: int, seed: int) -> dict[str, Any]:
    """The row of point (``m``, ``v``) from its summary rows ``s`` and the summaries ``a``
    of its risk attacks."""
    from ...masking import METHODS

    rec: dict[str, Any] = {
        "point": f"{m.label} {m.param}={fmt_value(v)}", "label": m.label,
        "method": m.method, "param": m.param, "value": v,
        "params": {**m.fixed, m.param: v}, "order": order,
        "deterministic": METHODS[m.method].deterministic, "seed": seed}
    for name, pre in (("IL", "IL"), ("worst", "risk"), ("DR", "DR"), ("Score", "Score")):
        r = s[s["name"] == name]
        if r.empty:
            rec.update({f"{pre}_mean": np.nan, f"{pre}_sd": np.nan,
                        f"{pre}_lo": np.nan, f"{pre}_hi": np.nan})
            continue
        r = r.iloc[0]
        # a t-interval may cross the range of the measure: clip it to the range
        hi = min(r["ci_high"], 100.0) if pre == "risk" else r["ci_high"]
        rec.update({f"{pre}_mean": r["mean"], f"{pre}_sd": r["std"],
                    f"{pre}_lo": max(r["ci_low"], 0.0), f"{pre}_hi": hi})
        rec["n"] = int(r["n"])
    a = a[np.isfinite(a["mean"])]
    # the deciding attack: the highest mean rate (first in attack order on ties)
    top = a.iloc[int(np.argmax(a["mean"].to_numpy()))]
    rec.update({"deciding_attack": top["name"], "deciding_mean": top["mean"],
                "deciding_sd": top["std"], "attacks": ",".join(risk_attacks),
                "rates": "; ".join(f"{x['name']} {x['mean']:.2f}" for _, x in a.iterrows())})
    return rec
