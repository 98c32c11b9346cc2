"""What ``linkrisk choose`` returns: the :class:`Choice` (points, recommendation, reasons,
settings), its tables and JSON, the recommended release with its JSON sidecar, and the
command that reproduces the sweep."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import LinkriskError


@dataclass
class Choice:
    """What :func:`~linkrisk.experiments.choose.choose` found. ``points``: one row per (method, setting) with
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
        from ..choose_report import write_png

        return write_png(self, Path(path), force=force)

    def to_html(self) -> str:
        """A self-contained HTML report: the map, the recommendation, every point."""
        from ..choose_report import render_html

        return render_html(self)

    def release(self) -> pd.DataFrame:
        """The recommended release: its method and parameters applied to the original file
        with the seed of its first replication (the very file that replication assessed)."""
        if self.best is None:
            raise LinkriskError("no point meets the risk limit: there is no release to write")
        from ...masking import mask

        b = self.best
        return mask(self.original, b["method"], columns=self.settings["qi"], seed=int(b["seed"]),
                    **b["params"])

    def write_release(self, path: str | Path, *, force: bool = False) -> tuple[Path, Path]:
        """Write :meth:`release` (CSV or Parquet by extension) and its JSON sidecar
        ``<path>.json``: method, parameters, seed, linkrisk version, the measures of the
        point and of this very replication, and the risk limit it was chosen under."""
        from ..._version import __version__
        from ...fileio import atomic_write_text, check_output, write_table

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
                                 "block": self.settings.get("block"),
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
    if settings.get("block"):
        cmd += ["--block", ",".join(settings["block"])]
    cmd += ["--replications", str(settings["replications"]), "--seed", str(settings["seed"])]
    return shlex.join(cmd)

