"""Choose a protection: sweep masking methods × parameters, measure each point's information
loss and worst-case re-identification risk over seeded replications, and recommend the
release that loses least information under a risk limit (``linkrisk choose``).

The sweep is a study (:mod:`linkrisk.experiments`): the same grid expansion, seeds,
worker processes and resumable cache. Per point (one method with one setting) and per
replication r it records

* **IL** — information loss in %: numeric files IL of Domingo-Ferrer & Torra (2001)
  (mean of IL1..IL5 × 100); categorical files the entropy-based loss
  100·mean_j H(X_j | Y_j)/H(X_j) (:func:`linkrisk.measures.categorical_information_loss`);
* **risk** — the worst-case re-identification rate in %: max over the risk attacks of the
  attack's correct-link rate (docs/methods.md, Measures: "Worst-case and per-record
  risk");
* **DR** — numeric: 0.25·DLD + 0.25·PLD + 0.5·ID, or (RSLD + DLD + PLD)/6 + 0.5·ID for rank
  swaps (Domingo-Ferrer & Torra 2001; Nin, Herranz & Torra 2008); categorical:
  (DLD + PLD)/2 with DLD the Hamming-distance linkage rate;
* **Score** = (IL + DR)/2;

and summarizes each over the R replications by its mean, standard deviation (ddof = 1) and
95 % Student-t interval mean ± t₀.₉₇₅,R−1·sd/√R, clipped to the measure's range (rates
within [0, 100] %, the others ≥ 0); deterministic methods run once: their interval is
the value itself. See docs/methods.md.

Recommendation (:func:`recommend`), deterministic:

1. *feasible* points: upper 95 % bound of worst-case risk ≤ ``max_risk``;
2. among them the least mean IL, IL*; its *near ties* are the feasible points whose mean
   IL is ≤ the upper 95 % bound of IL* (indistinguishable from it at R replications);
3. among the near ties: the least mean worst-case risk, then the least mean Score, then a
   deterministic method before a random one, then the earlier point of the sweep (method
   order, then parameter order as given).

Without ``max_risk`` the same rule runs on Score instead of IL (every point feasible):
least mean Score, near ties up to its upper bound, then least risk, then least IL, then
deterministic, then sweep order. If no point is feasible there is no recommendation; the
*closest* point is the one with the least upper risk bound (ties: least mean risk, then
least IL, then sweep order).

Grid syntax (:func:`parse_method`): ``METHOD:PARAM=GRID[/PARAM=GRID…]``, several
parameters giving their Cartesian product; GRID is a comma list of items, each a value
(``3``, ``0.5``, ``B``), ``a..b`` (:data:`DEFAULT_STEPS` evenly spaced values from a to b
inclusive) or ``a..b:step`` (a, a + step, … up to b). Values are rounded to integers
when the parameter is an integer or both ends are written as integers; duplicates are
dropped, order kept. ``METHOD`` alone uses the method's default grid.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data import is_number
from ..errors import LinkriskError, LinkriskWarning

#: values of ``a..b`` without a step
DEFAULT_STEPS = 6
#: replications per point when not given
DEFAULT_REPLICATIONS = 5

#: default grids (method → {param: values}) per data kind (see module docstring)
NUMERIC_DEFAULTS: dict[str, dict[str, list[Any]]] = {
    "noise": {"a": [0.1, 0.2, 0.3, 0.5, 0.75, 1.0]},
    "rank_swap": {"p": [2, 5, 10, 15, 20]},
    "microaggregation_ir": {"k": [3, 5, 10, 20, 30]},
    "mdav": {"k": [3, 5, 10, 15, 20, 30]},
    "ipso": {"variant": ["A", "B", "C"]},  # only with confidential columns
}
CATEGORICAL_DEFAULTS: dict[str, dict[str, list[Any]]] = {
    "pram": {"pd": [0.9, 0.8, 0.7, 0.5, 0.3]},
    "global_recoding": {"width": [2, 3, 4, 6]},        # ordered categories
    "top_coding": {"quantile": [0.9, 0.8, 0.7, 0.5]},   # ordered categories
    "bottom_coding": {"quantile": [0.1, 0.2, 0.3, 0.5]},
    # suppression to k-anonymity (releases with missing values: docs/methods.md)
    "local_suppression": {"k": [2, 3, 5, 10]},
}
#: nominal categories: recode by keeping the n_groups − 1 most frequent ones
NOMINAL_RECODING = {"n_groups": [8, 6, 4, 2]}

#: rank-swap methods → the rsrl window (in % of n) as a function of the swept p
RANK_SWAPS = {"rank_swap": "$value", "rank_swap_pdist": "$value",
              "rank_swap_pbuckets": "$200/value"}

_NUM = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number(text: str, where: str) -> float:
    if not _NUM.fullmatch(text.strip()):
        raise LinkriskError(f"{where}: {text!r} is not a number")
    return float(text)


def _is_int_text(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text.strip()) is not None


def parse_grid(text: str, typ: type = float, where: str = "grid") -> list[Any]:
    """Values of a grid: comma list of values, ``a..b`` (:data:`DEFAULT_STEPS` evenly
    spaced values) and ``a..b:step`` items (see the module docstring)."""
    out: list[Any] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            raise LinkriskError(f"{where}: empty value in {text!r}")
        if ".." in item:
            if typ not in (int, float):
                raise LinkriskError(f"{where}: a range needs a numeric parameter")
            rng, _, step_txt = item.partition(":")
            a_txt, _, b_txt = rng.partition("..")
            a, b = _number(a_txt, where), _number(b_txt, where)
            if b < a:
                raise LinkriskError(f"{where}: range {item!r} runs downwards; write a..b with "
                                    "a ≤ b")
            if step_txt:
                step = _number(step_txt, where)
                if step <= 0:
                    raise LinkriskError(f"{where}: the step of {item!r} must be positive")
                count = int(math.floor((b - a) / step + 1e-9)) + 1
                if count > 1000:
                    raise LinkriskError(f"{where}: {item!r} gives {count} values; at most 1000")
                vals = [a + i * step for i in range(count)]
            else:
                vals = list(np.linspace(a, b, DEFAULT_STEPS)) if b > a else [a]
            as_int = typ is int or (_is_int_text(a_txt) and _is_int_text(b_txt)
                                    and (not step_txt or _is_int_text(step_txt)))
            out += [int(round(v)) if as_int else float(f"{v:.10g}") for v in vals]
        elif typ is int:
            v = _number(item, where)
            if v != int(v):
                raise LinkriskError(f"{where}: {item!r} is not an integer")
            out.append(int(v))
        elif typ is float:
            v = _number(item, where)
            out.append(int(v) if _is_int_text(item) else v)
        else:
            out.append(item)
    return list(dict.fromkeys(out))


@dataclass
class MethodGrid:
    """One ``--method``: a masking method and the values of each of its parameters (the
    points are their Cartesian product; the first parameter is the swept one)."""

    method: str
    params: dict[str, list[Any]]

    def label(self) -> str:
        return self.method + (":" + "/".join(f"{k}={','.join(map(str, v))}"
                                             for k, v in self.params.items())
                              if self.params else "")


def parse_method(spec: str) -> MethodGrid:
    """Parse a method grid ``METHOD[:PARAM=GRID[/PARAM=GRID…]]`` (see the module docstring).

    Parameters
    ----------
    spec : str
        E.g. ``"rank_swap:p=2..20"``, ``"microaggregation_ir:k=3,5,10"``.

    Returns
    -------
    MethodGrid
        The method and the values of each swept parameter.
    """
    from ..masking import METHODS

    method, _, rest = spec.strip().partition(":")
    method = method.strip()
    if method not in METHODS:
        raise LinkriskError(f"--method {spec!r}: unknown masking method {method!r}; choose "
                            f"from {', '.join(METHODS)}")
    accepted = METHODS[method].params
    params: dict[str, list[Any]] = {}
    for part in (p for p in rest.split("/") if rest):
        name, eq, grid = part.partition("=")
        name = name.strip()
        if not eq or not grid.strip():
            raise LinkriskError(f"--method {spec!r}: write PARAM=VALUES, e.g. "
                                f"{method}:{next(iter(accepted), 'p')}=1..10")
        if name not in accepted:
            raise LinkriskError(f"--method {spec!r}: {method} has no parameter {name!r}; it "
                                f"takes {', '.join(accepted) or 'none'}")
        if name in params:
            raise LinkriskError(f"--method {spec!r}: {name} given twice")
        typ = getattr(accepted[name], "type", accepted[name])  # a declared Param's type
        if typ is list:
            params[name] = [[c.strip() for c in grid.split(",") if c.strip()]]
        else:
            params[name] = parse_grid(grid, typ if typ in (int, float) else str,
                                      f"--method {spec!r}")
    if not params:
        params = _default_grid(method)
        if params is None:
            raise LinkriskError(f"--method {spec!r}: {method} has no default grid; give one, "
                                f"e.g. {method}:{next(iter(accepted), 'p')}=…")
    return MethodGrid(method, params)


def _default_grid(method: str) -> dict[str, list[Any]] | None:
    grid = {**NUMERIC_DEFAULTS, **CATEGORICAL_DEFAULTS}.get(method)
    return {k: list(v) for k, v in grid.items()} if grid is not None else None


def default_methods(kind: str, *, ordered: bool, confidential: Sequence[str] | None
                    ) -> tuple[list[MethodGrid], list[str]]:
    """The default sweep for a data kind (``numeric`` or ``categorical``) and notes on what
    was left out and why."""
    notes: list[str] = []
    grids: list[MethodGrid] = []
    if kind == "numeric":
        for m, g in NUMERIC_DEFAULTS.items():
            if m == "ipso" and not confidential:
                notes.append("IPSO left out: it regresses the QIs on confidential attributes; "
                             "name them with --confidential to include it")
                continue
            params = {k: list(v) for k, v in g.items()}
            if m == "ipso":
                params["confidential"] = [list(confidential or [])]
            grids.append(MethodGrid(m, params))
        return grids, notes
    for m, g in CATEGORICAL_DEFAULTS.items():
        if not ordered and m in ("top_coding", "bottom_coding"):
            notes.append(f"{m} left out: the categories have no order to code from; pass "
                         "--ordered to take them as ordered (in their sorted order)")
            continue
        if m == "global_recoding" and not ordered:
            g = NOMINAL_RECODING
        grids.append(MethodGrid(m, {k: list(v) for k, v in g.items()}))
    return grids, notes


def parse_percent(text: str | float | None) -> float | None:
    """Parse a percentage: ``"5%"``, ``"5"`` or ``5`` → 5.0.

    Parameters
    ----------
    text : str or float, optional
        The percentage, in [0, 100].

    Returns
    -------
    float or None
        The value in %, ``None`` when ``text`` is None.
    """
    if text is None:
        return None
    s = str(text).strip().rstrip("%").strip()
    v = _number(s, "--max-risk")
    if not 0 <= v <= 100:
        raise LinkriskError(f"--max-risk {text!r}: a percentage between 0 and 100")
    return v


# ----------------------------------------------------------------------------- the sweep


@dataclass
class Choice:
    """What :func:`choose` found. ``points``: one row per (method, setting) with
    ``IL_*``, ``risk_*``, ``DR_*``, ``Score_*`` (``mean``, ``sd``, ``lo``, ``hi``: the
    95 % interval), the deciding attack, feasibility and a verdict; ``recommended``: its
    row index (None when no point meets the limit); ``closest``: the point nearest the
    limit when none meets it; ``reasons``: why the others lose; ``rows``: the study rows
    (one per replication × attack/measure)."""

    points: pd.DataFrame
    recommended: int | None
    closest: int | None
    reasons: list[str]
    suggestion: str
    rows: pd.DataFrame
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    cached: int = 0
    tasks: int = 0
    original: pd.DataFrame | None = None

    @property
    def best(self) -> pd.Series | None:
        """The recommended point (None if no point meets the limit)."""
        return None if self.recommended is None else self.points.loc[self.recommended]

    def headline(self) -> str:
        """One sentence: the recommendation, or why there is none."""
        lim = self.settings.get("max_risk")
        if self.recommended is None:
            c = self.points.loc[self.closest]
            return (f"No point meets the risk limit {lim:g} %: the closest is {c['point']} "
                    f"with worst-case risk {c['risk_mean']:.2f} % (95 % upper bound "
                    f"{c['risk_hi']:.2f} %, {c['deciding_attack']}). {self.suggestion}")
        b = self.points.loc[self.recommended]
        k = int(self.points["feasible"].sum())
        why = ((f"the least information loss among the {k} points" if k > 1 else
                "the only point") + f" whose worst-case risk is at most {lim:g} % with 95 % "
               "confidence" if lim is not None else "the least Score = (IL + DR)/2")
        return (f"Recommended: {b['point']} — IL {_pm(b, 'IL')} %, worst-case risk "
                f"{_pm(b, 'risk')} % ({b['deciding_attack']}), Score {b['Score_mean']:.2f}: "
                f"{why}.")

    def table(self) -> pd.DataFrame:
        """The tidy table written as CSV/Parquet/JSON (one row per point)."""
        t = self.points.copy()
        t["params"] = t["params"].map(lambda d: json.dumps(d, sort_keys=True))
        return t

    def to_dict(self) -> dict[str, Any]:
        return {"recommended": None if self.best is None else _row_dict(self.best),
                "closest": None if self.closest is None
                else _row_dict(self.points.loc[self.closest]),
                "headline": self.headline(), "reasons": list(self.reasons),
                "suggestion": self.suggestion, "notes": list(self.notes),
                "settings": _jsonable(self.settings),
                "points": [_row_dict(r) for _, r in self.points.iterrows()]}

    def plot(self, path: str | Path, *, force: bool = False) -> Path:
        """The risk–utility map as PNG (needs matplotlib: ``pip install 'linkrisk[report]'``)."""
        from .choose_report import write_png

        return write_png(self, Path(path), force=force)

    def to_html(self) -> str:
        """A self-contained HTML report: the map, the recommendation, every point."""
        from .choose_report import render_html

        return render_html(self)

    def release(self) -> pd.DataFrame:
        """The recommended release: its method and parameters applied to the original file
        with the seed of its first replication (the very file that replication assessed)."""
        if self.best is None:
            raise LinkriskError("no point meets the risk limit: there is no release to write")
        from ..masking import mask

        b = self.best
        return mask(self.original, b["method"], columns=self.settings["qi"], seed=int(b["seed"]),
                    **b["params"])

    def write_release(self, path: str | Path, *, force: bool = False) -> tuple[Path, Path]:
        """Write :meth:`release` (CSV or Parquet by extension) and its JSON sidecar
        ``<path>.json``: method, parameters, seed, linkrisk version, the measures of the
        point and of this very replication, and the risk limit it was chosen under."""
        from .._version import __version__
        from ..fileio import atomic_write_text, check_output, write_table

        p = Path(path)
        side = sidecar_path(p)
        check_output(p, force, table=True)
        check_output(side, force)
        rel = self.release()
        b = self.best
        first = self.rows[(self.rows["masking"] == b["label"]) & (self.rows["seed"] == b["seed"])]
        this = {r["name"]: r["result"] for _, r in first.iterrows()}
        meta = {"release": p.name, "records": len(rel), "method": b["method"],
                "params": b["params"], "seed": int(b["seed"]), "linkrisk": __version__,
                "original": self.settings["original"], "qi": self.settings["qi"],
                "chosen_under": {"max_risk_%": self.settings["max_risk"],
                                 "risk_attacks": self.settings["risk_attacks"],
                                 "rule": self.settings["rule"],
                                 "replications": int(b["n"])},
                "point": _row_dict(b),
                "this_release": {"worst_case_%": max(this.get(a, float("-inf"))
                                                     for a in b["attacks"].split(",")),
                                 **{k: v for k, v in this.items()}},
                "command": self.settings["command"]}
        write_table(rel, p, force=force)
        atomic_write_text(side, json.dumps(_jsonable(meta), indent=2, ensure_ascii=False),
                          force=force)
        return p, side


def sidecar_path(path: str | Path) -> Path:
    """Where :meth:`Choice.write_release` puts the JSON sidecar of ``path``.

    Parameters
    ----------
    path : str or pathlib.Path
        The released file.

    Returns
    -------
    pathlib.Path
        ``path`` with ``.json`` appended to its name.
    """
    p = Path(path)
    return p.with_name(p.name + ".json")


def _pm(row: pd.Series, what: str) -> str:
    m, sd = row[f"{what}_mean"], row[f"{what}_sd"]
    return f"{m:.2f}" + (f" ± {sd:.2f}" if row["n"] > 1 and np.isfinite(sd) else "")


def _row_dict(row: pd.Series) -> dict[str, Any]:
    return _jsonable({k: v for k, v in row.items()})


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _frame_hash(df: pd.DataFrame) -> str:
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
    from .. import datasets
    from ..fileio import read_input

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


def choose(
    original: str | Path | pd.DataFrame,
    methods: Sequence[str | MethodGrid] | None = None,
    *,
    max_risk: float | str | None = None,
    risk_attacks: str | Sequence[str] | None = None,
    replications: int = DEFAULT_REPLICATIONS,
    qi: str | Sequence[str] | None = None,
    confidential: str | Sequence[str] | None = None,
    ordered: bool = False,
    seed: int = 0,
    processes: int | None = None,
    cache_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    risk: str = "identity",
    sensitive: str | Sequence[str] | None = None,
) -> Choice:
    """Sweep masking methods × parameters on ``original`` and recommend a release.

    ``original``: a DataFrame, a CSV/Parquet path or a reference dataset name.
    ``methods``: grid specs such as ``"rank_swap:p=2..20"``, ``"noise:a=0.05..1"``,
    ``"microaggregation_ir:k=3,5,10"`` (module docstring), default: the defaults of the
    data kind (numeric: noise, rank swapping, IR and MDAV microaggregation, and IPSO when
    ``confidential`` columns are named; categorical: PRAM, global recoding, local
    suppression and, with ``ordered``, top/bottom coding). ``max_risk``: the limit on worst-case
    re-identification in % (``"5%"`` or ``5``); without it the least Score is chosen.
    ``risk_attacks``: the attacks whose maximum is the worst-case risk (default: every
    attack that applies to the QI kinds, as in :func:`linkrisk.assess`, with ``rsrl`` and
    ``rsrl_union`` for rank swaps at their known p). ``qi``: the QIs the attacker knows
    and that are masked (default: every column but the ``confidential`` ones, leaving out
    id-like and weight-like columns as :func:`linkrisk.assess` does; other columns are
    released unchanged).
    ``ordered``: take categorical attributes as ordered. ``replications``: R seeded
    replications per point of a random method (deterministic methods run once).
    ``cache_dir``: completed replications are kept there and reused (default
    ``.linkrisk-cache`` in the working directory); ``processes``: worker processes
    (default 2; they are spawned, so a script calling ``choose`` needs the usual
    ``if __name__ == "__main__":`` guard, or pass ``processes=1``); ``progress(done, total)``.

    ``risk``: the risk axis. ``"identity"`` (default): worst-case re-identification;
    ``"attribute"``: worst-case attribute disclosure, the largest share of records whose
    ``sensitive`` value (columns not masked, not known to the attacker) is inferred
    through a risk attack's links (:func:`linkrisk.measures.attribute.linked_inference`,
    max over the risk attacks and the sensitive columns); ``"both"``: the larger of the two
    per replication.

    Returns a :class:`Choice`; the rule is :func:`recommend`. See docs/methods.md."""
    from ..assessment import applicable_attacks
    from ..attacks import resolve_methods
    from ..data import attribute_kinds
    from .config import DatasetSpec, Study
    from .runner import default_processes, expand, run_tasks

    lim = parse_percent(max_risk)
    if int(replications) < 1:
        raise LinkriskError("replications must be at least 1")
    df, name = load_original(original, data_dir)
    notes: list[str] = []
    sens = _risk_axis(df, name, risk, sensitive, qi)
    qis, conf, qi_given = _choose_qis(df, name, qi, confidential, notes, exclude=sens)
    df = _coded_as_categories(df, qis)
    if ordered:
        df = df.apply(lambda s: s.cat.as_ordered() if isinstance(s.dtype, pd.CategoricalDtype)
                      else s.astype("category").cat.as_ordered()
                      if s.name in qis and not pd.api.types.is_numeric_dtype(s) else s)
    kind = data_kind(df, qis)
    if kind == "mixed":
        raise LinkriskError("the QIs mix numeric and categorical attributes; choose one kind "
                            "with --qi (choose compares methods of one kind)")
    grids = _choose_grids(methods, kind, ordered, conf, notes)

    kinds = attribute_kinds(df, qis)
    n = len(df)
    if risk_attacks is None:
        chosen_base = applicable_attacks(kinds, n, n, None)
    else:
        chosen_base = resolve_methods(risk_attacks)
    needed = ["dbrl", "prl"] if kind == "numeric" else ["dbrl_hamming", "prl"]
    metric = "euclidean" if kind == "numeric" else "hamming"

    cache, data_name, digest = _cache_data(df, cache_dir)
    # the QIs are masked and measured (IL); other columns (confidential ones) pass through
    ds = DatasetSpec(data_name, "original", qi=qis, columns=qis)

    masking, risk_by_label = _sweep(grids, chosen_base, needed, metric,
                                    default_risk=risk_attacks is None, notes=notes,
                                    risk=risk, sensitive=sens)

    study_ = Study("choose", f"choose a protection for {name}", int(seed), int(replications),
                   [ds], masking, [], None, ["IL", "DR", "Score"], "<choose>")
    tasks = expand(study_, str(cache.resolve()), int(replications))
    rows, cached = run_tasks(tasks, cache / "runs", processes or default_processes(),
                             progress)
    points = _points(rows, masking, risk_by_label, tasks)
    settings = {"original": name, "rows": n, "kind": kind, "qi": qis, "qi_given": qi_given,
                "confidential": conf, "ordered": ordered, "max_risk": lim,
                "risk_attacks": "default" if risk_attacks is None else ",".join(chosen_base),
                "replications": int(replications), "seed": int(seed),
                "methods": [g.label() for g in grids], "data_sha1": digest,
                "risk": risk, "sensitive": sens,
                "rule": RULE_WITH_LIMIT if lim is not None else RULE_SCORE,
                "linkrisk": _version()}
    settings["command"] = reproduce_command(settings)
    rec, closest, reasons, suggestion = recommend(points, lim)
    points = _verdicts(points, rec, closest, lim)
    notes += _failure_notes(rows)
    return Choice(points, rec, closest, reasons, suggestion, rows, settings, notes, cached,
                  len(tasks), df)


RISKS = ("identity", "attribute", "both")


def _risk_axis(df: pd.DataFrame, name: str, risk: str, sensitive: str | Sequence[str] | None,
               qi: str | Sequence[str] | None) -> list[str]:
    """The sensitive columns of the risk axis ``risk`` (checked: required by
    ``attribute``/``both``, in the file, not among the QIs)."""
    from ..data import parse_columns

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


def _coded_as_categories(df: pd.DataFrame, qis: Sequence[str]) -> pd.DataFrame:
    """Integer QIs that the attacks read as coded categories (:func:`linkrisk.data.coded`)
    are masked as categories too, with the attacks' warning: masking codes as numbers
    (noise on a region code) gives releases no category of which matches, and the sweep
    would only fail after it ran."""
    from ..data import attribute_kinds, infer_kind

    said: list[str] = []
    kinds = attribute_kinds(df, list(qis), notes=said)
    coded = [c for c in qis if kinds[c] == "nominal" and infer_kind(df[c]) == "numeric"]
    if not coded:
        return df
    for msg in said:
        warnings.warn(msg, LinkriskWarning, stacklevel=3)
    return df.assign(**{c: pd.Categorical(df[c]) for c in coded})


def _choose_qis(df: pd.DataFrame, name: str, qi: str | Sequence[str] | None,
                confidential: str | Sequence[str] | None, notes: list[str],
                exclude: Sequence[str] = ()) -> tuple[list[str], list[str], bool]:
    """Stage 1 of :func:`choose`: (QIs, confidential columns, whether the QIs were given).
    Without ``qi`` the default QIs of assess: every column but the confidential ones,
    id-like and weight-like columns left out with a note."""
    from ..data import parse_columns, select_qi

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


def _choose_grids(methods: Sequence[str | MethodGrid] | None, kind: str, ordered: bool,
                  conf: list[str], notes: list[str]) -> list[MethodGrid]:
    """Stage 2 of :func:`choose`: the method grids (given or the defaults of the data
    kind), checked against the kind, the confidential columns filled in, no repeats."""
    from ..masking import METHODS

    if methods:
        grids = [m if isinstance(m, MethodGrid) else parse_method(m) for m in methods]
    else:
        grids, more = default_methods(kind, ordered=ordered, confidential=conf)
        notes += more
    for g in grids:
        mkind = METHODS[g.method].kind
        if mkind != kind:
            raise LinkriskError(f"{g.method} masks {mkind} attributes but the QIs are {kind}")
        if g.method in ("ipso", "data_shuffle"):
            if not conf and "confidential" not in g.params:
                raise LinkriskError(f"{g.method} needs the confidential columns: pass "
                                    "--confidential")
            g.params.setdefault("confidential", [list(conf)])
    labels = [g.label() for g in grids]
    dup = [x for x in labels if labels.count(x) > 1]
    if dup:
        raise LinkriskError(f"--method {dup[0]!r} is given twice")
    return grids


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
    from ..fileio import writable_dir

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


def _cache_data(df: pd.DataFrame, cache_dir: str | Path | None) -> tuple[Path, str, str]:
    """Stage 3 of :func:`choose`: the data the workers read, stored content-addressed in
    the cache folder (so a changed file never hits the cache): (cache folder, file name
    relative to it, the data's digest)."""
    cache = cache_folder(cache_dir)
    digest = _frame_hash(df)
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


def _sweep(grids: list[MethodGrid], chosen_base: list[str], needed: list[str], metric: str,
           *, default_risk: bool, notes: list[str], risk: str = "identity",
           sensitive: Sequence[str] = ()) -> tuple[list[Any], dict[str, list[str]]]:
    """Stage 4 of :func:`choose`: one study masking spec per method and fixed setting
    (its first parameter is swept), with the attacks that give its worst-case risk
    (``rsrl``/``rsrl_union`` only for a rank swap with a known p) plus those DR needs;
    and the risk attacks of each label."""
    from .config import AttackSpec, MaskingSpec

    masking: list[MaskingSpec] = []
    risk_by_label: dict[str, list[str]] = {}
    for g in grids:
        names = list(g.params)
        swept, rest = names[0], names[1:]
        for combo in product(*(g.params[k] for k in rest)):
            fixed = dict(zip(rest, combo, strict=True))
            label = g.method + "".join(f" {k}={_fmt(v)}" for k, v in fixed.items()
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


def _failure_notes(rows: pd.DataFrame) -> list[str]:
    """Stage 5 of :func:`choose`: one note per attack and error that did not run on some
    points (those points' worst case leaves it out)."""
    notes = []
    failed = rows[rows["error"].fillna("") != ""] if "error" in rows else rows.iloc[:0]
    for (att, msg), g in failed.groupby(["name", "error"], sort=False):
        where = ", ".join(dict.fromkeys(f"{m} {_fmt(v)}" for m, v in zip(g["masking"], g["value"],
                                                                      strict=True)))
        notes.append(f"{att} did not run on {where} (left out of the worst case there): {msg}")
    return notes


RULE_WITH_LIMIT = ("feasible: upper 95 % bound of worst-case risk ≤ the limit; among them the "
                   "least mean IL; near ties (mean IL ≤ the upper 95 % bound of the least) go "
                   "to the least mean risk, then least Score, then deterministic, then sweep "
                   "order")
RULE_SCORE = ("least mean Score; near ties (mean Score ≤ the upper 95 % bound of the least) go "
              "to the least mean risk, then least IL, then deterministic, then sweep order")


def _version() -> str:
    from .._version import __version__

    return __version__


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


def reproduce_command(settings: Mapping[str, Any]) -> str:
    """The ``linkrisk choose`` command that reproduces a sweep from its settings (every
    grid spelled out, so that it does not depend on the defaults of a linkrisk version)."""
    cmd = ["linkrisk", "choose", str(settings["original"])]
    for m in settings["methods"]:
        if m.startswith(("ipso", "data_shuffle")):
            m = "/".join(p for p in m.split("/") if not p.startswith("confidential="))
        cmd += ["--method", m]
    if settings["max_risk"] is not None:
        cmd += ["--max-risk", f"{settings['max_risk']:g}%"]
    if settings["risk_attacks"] != "default":
        cmd += ["--risk-attacks", settings["risk_attacks"]]
    if settings["qi_given"]:
        cmd += ["--qi", ",".join(settings["qi"])]
    if settings["confidential"]:
        cmd += ["--confidential", ",".join(settings["confidential"])]
    if settings["ordered"]:
        cmd.append("--ordered")
    if settings.get("risk", "identity") != "identity":
        cmd += ["--risk", settings["risk"], "--sensitive", ",".join(settings["sensitive"])]
    cmd += ["--replications", str(settings["replications"]), "--seed", str(settings["seed"])]
    return shlex.join(cmd)


def _points(rows: pd.DataFrame, masking: list, risk_by_label: dict[str, list[str]],
            tasks: list) -> pd.DataFrame:
    """One row per point: mean, sd, 95 % interval of IL, worst-case risk, DR and Score."""
    from . import summarize

    rows = rows.copy()
    rows["value"] = rows["value"].map(lambda v: "" if v is None else v)
    att = rows[rows["kind"] == "attack"]
    worst = []
    for (label, value, _rep), g in att.groupby(["masking", "value", "replication"], sort=False):
        chosen = g[g["name"].isin(risk_by_label[label])]
        vals = chosen["result"].to_numpy(float)
        if not np.isfinite(vals).any():
            raise LinkriskError(f"{label} {value}: none of the risk attacks could run: "
                                + "; ".join(dict.fromkeys(chosen["error"])))
        worst.append({**g.iloc[0].to_dict(), "kind": "risk", "name": "worst",
                      "result": float(np.nanmax(vals))})
    both = pd.concat([rows[rows["kind"] == "measure"], pd.DataFrame(worst)], ignore_index=True)
    summ = summarize(both)
    by_attack = summarize(att)
    order = {(m.label, v): i for i, (m, v) in enumerate((m, v) for m in masking
                                                        for v in m.values)}
    seeds: dict[tuple[str, Any], int] = {}
    for t in tasks:
        if t.replication == 0:
            seeds[(t.masking, t.value)] = t.seed
    from ..masking import METHODS

    out = []
    for m in masking:
        for v in m.values:
            key = (m.label, v)
            s = summ[(summ["masking"] == m.label) & (summ["value"] == v)]
            if s.empty:
                continue
            rec: dict[str, Any] = {
                "point": f"{m.label} {m.param}={_fmt(v)}", "label": m.label,
                "method": m.method, "param": m.param, "value": v,
                "params": {**m.fixed, m.param: v}, "order": order[key],
                "deterministic": METHODS[m.method].deterministic, "seed": seeds[key]}
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
            a = by_attack[(by_attack["masking"] == m.label) & (by_attack["value"] == v)
                          & by_attack["name"].isin(risk_by_label[m.label])]
            a = a[np.isfinite(a["mean"])]
            # the deciding attack: the highest mean rate (first in attack order on ties)
            top = a.iloc[int(np.argmax(a["mean"].to_numpy()))]
            rec.update({"deciding_attack": top["name"], "deciding_mean": top["mean"],
                        "deciding_sd": top["std"], "attacks": ",".join(risk_by_label[m.label]),
                        "rates": "; ".join(f"{x['name']} {x['mean']:.2f}"
                                           for _, x in a.iterrows())})
            out.append(rec)
    pts = pd.DataFrame(out)
    pts["value"] = pd.Series([r["value"] for r in out], dtype=object)  # keep 15, not 15.0
    front = ["point", "method", "param", "value", "n", "IL_mean", "IL_sd", "IL_lo", "IL_hi",
             "risk_mean", "risk_sd", "risk_lo", "risk_hi", "deciding_attack", "deciding_mean",
             "deciding_sd", "DR_mean", "DR_sd", "DR_lo", "DR_hi", "Score_mean", "Score_sd",
             "Score_lo", "Score_hi"]
    return pts[front + [c for c in pts.columns if c not in front]]


def recommend(points: pd.DataFrame, max_risk: float | None
              ) -> tuple[int | None, int | None, list[str], str]:
    """Apply the rule of the module docstring to a points table; returns (recommended
    index or None, closest index when none is feasible, reasons the others lose, a
    suggestion when none is feasible)."""
    p = points
    feasible, ties = _feasible_and_ties(p, max_risk)
    if not feasible.any():
        closest = min(p.index, key=lambda i: (p.at[i, "risk_hi"], p.at[i, "risk_mean"],
                                              p.at[i, "IL_mean"], p.at[i, "order"]))
        return None, closest, _reasons_none(p, closest, max_risk), _suggest(p, max_risk)
    other = "Score" if max_risk is not None else "IL"
    t = p.loc[ties]
    rec = min(t.index, key=lambda i: (t.at[i, "risk_mean"], t.at[i, f"{other}_mean"],
                                      not t.at[i, "deterministic"], t.at[i, "order"]))
    return rec, None, _reasons(p, rec, feasible, ties, max_risk), ""


def _feasible_and_ties(p: pd.DataFrame, max_risk: float | None) -> tuple[pd.Series, pd.Index]:
    """Feasible points (upper risk bound ≤ limit; all without a limit) and the near ties of
    the best one (goal mean ≤ the best's upper bound; goal IL with a limit, else Score)."""
    if max_risk is None:  # a point without a Score (an attack DR needs did not run) is out
        feasible = p["Score_mean"].notna()
        goal = "Score"
    else:
        feasible = p["risk_hi"] <= max_risk + 1e-12
        goal = "IL"
    if not feasible.any():
        return feasible, pd.Index([])
    f = p[feasible]
    least = min(f.index, key=lambda i: (f.at[i, f"{goal}_mean"], f.at[i, "order"]))
    bound = f.at[least, f"{goal}_hi"]
    return feasible, f.index[f[f"{goal}_mean"] <= bound + 1e-12]


def _rel(a: float, b: float) -> str:
    """'40 % less' / '25 % more' of a relative to b."""
    if b == 0:
        return "the same" if a == 0 else "more"
    d = 100.0 * (a - b) / abs(b)
    return f"{abs(d):.0f} % {'less' if d < 0 else 'more'}"


def _risk_txt(r: pd.Series) -> str:
    sd = f" ± {r['deciding_sd']:.1f}" if r["n"] > 1 and np.isfinite(r["deciding_sd"]) else ""
    return f"{r['deciding_attack']} re-identifies {r['deciding_mean']:.1f}{sd} %"


def _reasons(p: pd.DataFrame, rec: int, feasible: pd.Series, ties: pd.Index,
             max_risk: float | None) -> list[str]:
    """Why the others lose, per method. With a limit: the method's most tempting point
    over the limit (of the points with less IL than the recommended one, the one with the
    least risk) and its best point within the limit (least IL); a method with no point
    within the limit also gets its safest point. Without a limit: its best Score."""
    b = p.loc[rec]
    out = []
    for _, part in p.groupby("label", sort=False):
        others = part.drop(index=[rec], errors="ignore")
        if others.empty:
            continue
        if max_risk is None:
            i = min(others.index, key=lambda j: (others.at[j, "Score_mean"],
                                                 others.at[j, "order"]))
            out.append(_why(p.loc[i], b, True, i in ties, max_risk))
            continue
        tempting = others[(~feasible[others.index]) & (others["IL_mean"] < b["IL_mean"])]
        shown = None
        if len(tempting):
            shown = min(tempting.index, key=lambda j: (tempting.at[j, "risk_mean"],
                                                       tempting.at[j, "order"]))
            out.append(_why(p.loc[shown], b, False, False, max_risk))
        within = others[feasible[others.index]]
        if len(within):
            i = min(within.index, key=lambda j: (within.at[j, "IL_mean"], within.at[j, "order"]))
            out.append(_why(p.loc[i], b, True, i in ties, max_risk))
        elif not feasible[part.index].any():
            i = min(part.index, key=lambda j: (part.at[j, "risk_hi"], part.at[j, "risk_mean"],
                                               part.at[j, "order"]))
            r = p.loc[i]
            if i == shown:
                out[-1] += "; no setting of it meets the limit"
                continue
            out.append(f"{r['label']}: no setting meets the limit; even the safest, "
                       f"{r['param']}={_fmt(r['value'])}, {_risk_txt(r).replace(' re-', ' still re-')}"
                       f" (95 % upper bound {r['risk_hi']:.1f} %)")
    return out


def _why(r: pd.Series, b: pd.Series, feasible: bool, tie: bool, max_risk: float | None) -> str:
    if max_risk is not None and not feasible:
        less = r["IL_mean"] < b["IL_mean"]
        il = (f"has {_rel(r['IL_mean'], b['IL_mean'])} IL {'but' if less else 'and'}"
              if r["IL_mean"] != b["IL_mean"] else "has the same IL but")
        return (f"{r['point']} {il} {_risk_txt(r)} (95 % upper bound "
                f"{r['risk_hi']:.1f} % > {max_risk:g} %)")
    if tie:
        return (f"{r['point']} is a near tie (its {'IL' if max_risk is not None else 'Score'} "
                f"lies within the interval of the best) but its worst-case risk is "
                f"{r['risk_mean']:.2f} % vs {b['risk_mean']:.2f} %"
                + ("" if r["risk_mean"] != b["risk_mean"] else " (same; later tie-breaks)"))
    if max_risk is not None:
        return (f"{r['point']} meets the limit ({r['risk_hi']:.1f} %) but has "
                f"{_rel(r['IL_mean'], b['IL_mean'])} IL ({r['IL_mean']:.2f} vs "
                f"{b['IL_mean']:.2f})")
    return (f"{r['point']} has Score {r['Score_mean']:.2f} vs {b['Score_mean']:.2f} "
            f"(IL {r['IL_mean']:.2f}, {_risk_txt(r)})")


def _reasons_none(p: pd.DataFrame, closest: int, max_risk: float | None) -> list[str]:
    out = []
    for _, part in p.groupby("label", sort=False):
        i = min(part.index, key=lambda j: (part.at[j, "risk_hi"], part.at[j, "risk_mean"],
                                           part.at[j, "order"]))
        r = p.loc[i]
        out.append(f"{r['label']}: safest point {r['param']}={_fmt(r['value'])}, but "
                   f"{_risk_txt(r)} (95 % upper bound {r['risk_hi']:.1f} % > {max_risk:g} %)")
    return out


def _suggest(p: pd.DataFrame, max_risk: float | None) -> str:
    """What to try next: extend the grid of the closest methods in the direction in which
    their risk fell, or protect fewer QIs."""
    tips = []
    for label, part in sorted(p.groupby("label", sort=False),
                              key=lambda kv: kv[1]["risk_hi"].min()):
        part = part.sort_values("order")
        if len(part) < 2 or part["param"].iloc[0] is None:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        end = first if first["risk_mean"] < last["risk_mean"] else last
        if not isinstance(end["value"], (int, float, np.number)):
            continue
        tips.append(f"{label} beyond {end['param']}={_fmt(end['value'])} (its risk falls "
                    f"that way: {part['risk_mean'].max():.1f} → {part['risk_mean'].min():.1f} %)")
        if len(tips) == 2:
            break
    tip = "Try " + " or ".join(tips) + "; " if tips else "Try stronger settings; "
    return (tip + "or another method, fewer QIs released (--qi), a higher limit, or fewer "
            "attack assumptions (--risk-attacks) if some attacks do not fit your scenario.")


def _verdicts(p: pd.DataFrame, rec: int | None, closest: int | None,
              max_risk: float | None) -> pd.DataFrame:
    p = p.copy()
    feasible, ties = _feasible_and_ties(p, max_risk)
    p["feasible"] = feasible
    p["near_tie"] = p.index.isin(ties) & (p.index != rec)
    p["recommended"] = p.index == rec
    verdict = []
    for i, r in p.iterrows():
        if i == rec:
            verdict.append("recommended")
        elif rec is None:
            verdict.append("closest to the limit" if i == closest else
                           f"risk {r['risk_hi']:.1f} % > {max_risk:g} %")
        else:
            verdict.append(_why(r, p.loc[rec], bool(r["feasible"]), bool(r["near_tie"]),
                                max_risk)
                           .removeprefix(f"{r['point']} "))
    p["verdict"] = verdict
    return p
