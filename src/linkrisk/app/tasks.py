"""The work of the web app's jobs: run in a worker process (:mod:`linkrisk.app.jobs`), never
in the web server's process. Each task gets plain arguments, a private output folder and a
``send(payload)`` for progress, and returns a JSON-able dict; files it writes go into its
folder (deleted when the job is cancelled or fails). The calls mirror the CLI's: the same
public API with the same options, so the app's figures are the CLI's figures."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import pickle
import re
import secrets
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import linkrisk
from linkrisk.errors import LinkriskError, LinkriskWarning

#: rows of the per-record table shown in the page (the CSV has them all)
RECORDS_SHOWN = 50
#: example values of a column shown in the schema table
EXAMPLES = 4

Send = Callable[[dict[str, Any]], None]


def warm_up() -> None:
    """Load (or compile, on the first run after an install) the numeric kernels while the
    server is idle, so that the first assessment does not pay for it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = linkrisk.datasets.synthetic(60, 3, seed=1)
        b = linkrisk.mask(a, "rank_swap", p=10, seed=2)
        linkrisk.assess(a, b, rank_swap_p=10, assume_row_order=True)
        c = pd.DataFrame({"x": pd.Categorical(list("abcabcabca") * 6),
                          "y": pd.Categorical(list("ppqqrrsstt") * 6)})
        linkrisk.assess(c, linkrisk.mask(c, "pram", seed=3), assume_row_order=True)


@functools.lru_cache(maxsize=2)
def _load(path: str) -> pd.DataFrame:
    """A session's input as read once by :func:`load`; a worker keeps the last two in
    memory, so the jobs on one file neither parse nor copy it again (the tasks do not
    modify their inputs: linkrisk.mask/assess/choose return new frames)."""
    with open(path, "rb") as f:
        return pickle.load(f)


def _sha256(path: str) -> str:
    """The file's SHA-256 (for the report's inputs and the release's sidecar)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _plain(v: Any) -> Any:
    """``v`` as JSON: numpy scalars as Python numbers, NaN and infinities as null."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    v = v.item() if isinstance(v, np.generic) else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _caught(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, (LinkriskWarning,
                                                                        UserWarning))]


# ------------------------------------------------------------------------------ data
def load(args: dict[str, Any], out: Path, send: Send) -> dict[str, Any]:
    """Read one input once (a path read in place, an upload or a built-in name) with
    :func:`linkrisk.fileio.read_input`, and keep it for the session's jobs as a pickle."""
    from linkrisk.fileio import read_input

    send({"stage": f"reading {args['label']}"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = read_input(args["spec"])
    path = out / "data.pkl"
    with open(path, "wb") as f:
        pickle.dump(df, f, protocol=pickle.HIGHEST_PROTOCOL)
    return {"pickle": str(path), "rows": int(len(df)), "columns": [str(c) for c in df.columns],
            "warnings": _caught(caught),
            "sha256": _sha256(args["spec"]) if args.get("kind") != "dataset" else None}


def _examples(s: pd.Series) -> list[str]:
    v = s.dropna()
    vals = v.unique()[:EXAMPLES] if len(v) else []
    return [str(x) for x in vals]


def _mentions(message: str, col: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(col) + r"(?![\w])", message) is not None


def inspect(args: dict[str, Any], out: Path, send: Send) -> dict[str, Any]:
    """The schema table: each column's inferred kind, whether it is a default QI, id-like,
    weight-like, with the warnings the CLI gives (``linkrisk assess``), placed beside the
    columns they name."""
    from linkrisk.attacks import make_context
    from linkrisk.data import attribute_kinds, id_like, weight_like

    a = _load(args["original"])
    b = _load(args["release"]) if args.get("release") else None
    cols = [str(c) for c in a.columns]
    kinds = attribute_kinds(a, list(a.columns))
    general: list[str] = []
    error = None
    qi: list[str] = []
    used_kinds: dict[str, str] = {}
    if b is not None:
        settings = linkrisk.LinkSettings(qi=args.get("qi"), ids=args.get("ids"),
                                         kinds=args.get("kinds") or {}, screen_qi=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LinkriskWarning)
            try:
                ctx, _ = make_context(a, b, settings=settings)
                qi = [str(c) for c in ctx.qi]
                used_kinds = {str(k): v for k, v in ctx.kinds.items()}
            except LinkriskError as exc:
                error = str(exc)
        general = [str(w.message) for w in caught if issubclass(w.category, LinkriskWarning)]
    rows = []
    placed: set[int] = set()
    for c, name in zip(a.columns, cols, strict=True):
        mine = [i for i, m in enumerate(general) if _mentions(m, name)]
        placed.update(mine)
        rows.append({"name": name, "dtype": str(a[c].dtype),
                     "kind": used_kinds.get(name, kinds[c]), "inferred": kinds[c],
                     "qi": name in qi, "id": bool(id_like(a[c], name)),
                     "weight": bool(weight_like(name)),
                     "in_release": b is None or c in b.columns,
                     "distinct": int(a[c].nunique()), "examples": _examples(a[c]),
                     "warnings": [general[i] for i in mine]})
    return {"columns": rows, "warnings": [m for i, m in enumerate(general) if i not in placed],
            "error": error, "qi": qi, "rows": int(len(a)),
            "release_rows": None if b is None else int(len(b))}


# ------------------------------------------------------------------------------ assess
def _throttled(send: Send) -> Callable[[str], Callable[[int, int], None]]:
    last: dict[str, float] = {}

    def make(label: str) -> Callable[[int, int], None]:
        send({"attack": label, "done": 0, "total": 0})

        def cb(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last.get(label, 0.0) >= 0.2 or done == total:
                last[label] = now
                send({"attack": label, "done": int(done), "total": int(total)})
        return cb
    return make


def assess(args: dict[str, Any], out: Path, send: Send) -> dict[str, Any]:
    """``linkrisk assess`` with the page's options; writes the HTML report, the JSON and
    the per-record CSV into the job's folder."""
    a = _load(args["original"])
    point = args.get("point")
    if point is not None:  # a point of the risk–utility map: its first replication
        send({"stage": f"masking {point['label']}"})
        b = linkrisk.mask(a, point["method"], columns=point["columns"], seed=int(point["seed"]),
                          **point["params"])
    else:
        b = _load(args["release"])
    limit = args.get("max_risk")
    budget = {"memory_budget": args["memory"]} if args.get("memory") else {}  # else the CLI's
    settings = linkrisk.LinkSettings(qi=args.get("qi"), ids=args.get("ids"),
                                     kinds=args.get("kinds") or {}, **budget,
                                     seed=int(args.get("seed", 0)),
                                     assume_row_order=bool(args.get("assume_row_order")),
                                     screen_qi=True)
    attacks = args.get("attacks") or "all"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinkriskWarning)
        res = linkrisk.assess(a, b, attacks=attacks, settings=settings,
                              rank_swap_p=args.get("rank_swap_p"), progress=_throttled(send),
                              max_risk=limit, weights=args.get("weights"),
                              household=args.get("household"),
                              suda_max_size=args.get("suda_max_size"))
    send({"stage": "writing the report"})
    d = _write_assessment(res, args, out)
    w = res.worst
    rec = res.records
    return _plain({
        "worst": {"attack": w.method, "rate": w.rate, "percent": f"{100 * w.rate:.2f}",
                  "correct_links": w.correct_links, "n": w.n,
                  "attacker": res.worst_attacker},
        "certain": int((rec["max_risk"] >= 1).sum()),
        "exceeds": res.exceeds if limit is not None else None, "max_risk": limit,
        "verdict_notes": res.verdict_notes,
        "attacks": [{"attack": r.method, "rate": r.rate, "correct_links": r.correct_links,
                     "n": r.n, "seconds": r.seconds}
                    for r in sorted(res.results.values(), key=lambda r: -r.rate)],
        "skipped": dict(res.skipped), "measures": d["measures"], "qi": list(res.settings["qi"]),
        "truth": res.settings["truth"], "notes": list(res.notes),
        "warnings": _caught(caught) or list(res.warnings),
        "frequency": None if res.frequency is None else res.frequency.summary,
        **_records_view(rec),
        "seconds": res.seconds,
        "files": ["report.html", "assessment.json", "records.csv"]})


def _write_assessment(res: Any, args: dict[str, Any], out: Path) -> dict[str, Any]:
    """The HTML report, the JSON (with the inputs and the command) and the per-record CSV
    in the job's folder; returns the JSON's content."""
    names = args.get("names", {})
    inputs = [{"role": "original", "name": names.get("original", "original"),
               "sha256": args.get("sha_original") or "—"},
              {"role": "released", "name": names.get("release", "release"),
               "sha256": args.get("sha_release") or "—"}]
    title = f"{names.get('release', 'release')}: disclosure-risk report"
    (out / "report.html").write_text(res.to_html(title, inputs=inputs,
                                                 command=args.get("command")),
                                     encoding="utf-8")
    d = res.to_dict()
    d["inputs"] = inputs
    d["command"] = args.get("command")
    (out / "assessment.json").write_text(json.dumps(d, indent=2), encoding="utf-8")
    res.records.to_csv(out / "records.csv")
    return d


def _records_view(rec: pd.DataFrame) -> dict[str, Any]:
    """The page's per-record part: the ``RECORDS_SHOWN`` most exposed records (their risk
    columns) and the histogram of the per-record risk."""
    top = rec.sort_values("max_risk", ascending=False, kind="stable").head(RECORDS_SHOWN)
    risk_cols = [c for c in rec.columns if c in ("max_risk", "mean_risk", "linked_by",
                                                  "share_linked", "fk", "freq_risk")]
    hist_counts, edges = np.histogram(rec["max_risk"].to_numpy(dtype=float), bins=20,
                                      range=(0.0, 1.0))
    return {"records": {"columns": ["record", *risk_cols],
                        "rows": [[str(i), *[_plain(r[c]) for c in risk_cols]]
                                 for i, r in top.iterrows()]},
            "histogram": {"counts": hist_counts.tolist(), "edges": edges.tolist()}}


# ------------------------------------------------------------------------------ mask
def mask(args: dict[str, Any], out: Path, send: Send) -> dict[str, Any]:
    """``linkrisk mask``: the method and its parameters (strings as on the command line,
    checked against the registry's declarations), then the release in the chosen format
    with a JSON sidecar."""
    from linkrisk.fileio import write_table

    df = _load(args["original"])
    params = linkrisk.parse_params([f"{k}={v}" for k, v in args.get("params", {}).items()])
    seed = args.get("seed")
    drawn = seed in (None, "")
    seed = linkrisk.check_seed(secrets.randbelow(2**31) if drawn else int(seed))
    columns = linkrisk.parse_columns(args.get("columns") or None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinkriskWarning)
        res = linkrisk.mask(df, args["method"], columns=columns, seed=seed,
                            ids=args.get("ids") or None, **params)
    fmt = args.get("format", "csv")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.get("stem") or "release")[:80] or "release"
    name = f"{stem}-{args['method']}.{fmt}"
    write_table(res, out / name, like=df)
    side = name + ".json"
    meta = {"release": name, "records": int(len(res)), "method": args["method"],
            "params": _plain(params), "seed": int(seed), "seed_drawn": drawn,
            "columns": columns, "original": args.get("label"),
            "original_sha256": args.get("sha256"), "linkrisk": linkrisk.__version__,
            "command": args.get("command")}
    (out / side).write_text(json.dumps(_plain(meta), indent=2, ensure_ascii=False),
                            encoding="utf-8")
    with open(out / "data.pkl", "wb") as f:
        pickle.dump(res, f, protocol=pickle.HIGHEST_PROTOCOL)
    return {"seed": int(seed), "records": int(len(res)), "files": [name, side],
            "pickle": str(out / "data.pkl"), "name": name, "warnings": _caught(caught)}


# ------------------------------------------------------------------------------ choose
def choose(args: dict[str, Any], out: Path, send: Send) -> dict[str, Any]:
    """``linkrisk choose`` on the session's original file: the sweep (in this worker, so
    that a cancel stops all of it), the points of the map and the recommended release."""
    from linkrisk.experiments.choose import choose as run_choose

    df = _load(args["original"])
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.2 or done == total:
            last[0] = now
            send({"done": int(done), "total": int(total)})

    res = run_choose(df, args.get("methods") or None, max_risk=args.get("max_risk"),
                     replications=int(args.get("replications", 5)), qi=args.get("qi"),
                     confidential=args.get("confidential"), ordered=bool(args.get("ordered")),
                     seed=int(args.get("seed", 0)), processes=1, cache_dir=out / "cache",
                     progress=progress)
    d = res.to_dict()
    (out / "choice.json").write_text(json.dumps(d, indent=2), encoding="utf-8")
    files = ["choice.json"]
    (out / "points.csv").write_text(res.table().to_csv(index=False), encoding="utf-8")
    files.append("points.csv")
    if res.best is not None:
        p, side = res.write_release(out / f"recommended-{res.best['method']}.csv")
        files += [p.name, side.name]
    points = []
    for i, r in res.points.iterrows():
        points.append(_plain({"index": int(i), "point": str(r["point"]),
                              "method": r["method"], "params": r["params"],
                              "seed": int(r["seed"]), "IL": r["IL_mean"], "IL_sd": r["IL_sd"],
                              "risk": r["risk_mean"], "risk_hi": r["risk_hi"],
                              "Score": r["Score_mean"], "attack": r["deciding_attack"],
                              "feasible": bool(r["feasible"]),
                              "recommended": bool(r["recommended"]),
                              "verdict": str(r.get("verdict", ""))}))
    return {"points": points, "headline": res.headline(), "reasons": list(res.reasons),
            "notes": list(res.notes), "qi": list(res.settings["qi"]), "files": files,
            "max_risk": res.settings.get("max_risk"), "tasks": res.tasks}


TASKS: dict[str, Callable[[dict[str, Any], Path, Send], dict[str, Any]]] = {
    "load": load, "inspect": inspect, "assess": assess, "mask": mask, "choose": choose}
