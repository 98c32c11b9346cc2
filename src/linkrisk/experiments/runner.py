"""Running a study: expand the grid into replication tasks, run them in worker processes
with an on-disk cache (so an interrupted study resumes where it stopped), and collect one
tidy row per (cell, replication, attack or measure).

Seeds (docs/methods.md, Measures: replications): replication r of a cell gets the r-th child of
``SeedSequence([study seed, crc32(cell key)])``, so seeds are independent across cells and
replications, reproducible from (config, seed), and do not depend on which cells run or in
what order. Deterministic masking methods run once.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import time
import warnings
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import LinkriskError, LinkriskWarning
from ..fileio import atomic_write_text, read_input
from .config import AttackSpec, DatasetSpec, Study

#: placeholder in attack parameters for the swept masking value (e.g. rsrl's p); also
#: "$<number>/value" (e.g. "$200/value": the rank window of p-bucket swapping, in %)
VALUE = "$value"
_RATIO = re.compile(r"\$([0-9.]+)/value")


def resolve_param(v: Any, value: Any) -> Any:
    """An attack parameter with the cell's swept value substituted."""
    if v == VALUE:
        return value
    if isinstance(v, str):
        m = _RATIO.fullmatch(v)
        if m:
            return float(m.group(1)) / float(value)
    return v


@dataclass
class Task:
    """One replication of one grid cell (everything a worker needs, picklable)."""

    key: str                  # content hash: the cache file name
    dataset: DatasetSpec
    data_dir: str | None
    method: str
    masking: str              # masking label
    param: str | None
    value: Any
    params: dict[str, Any]
    replication: int
    seed: int
    attacks: list[AttackSpec]
    qi_sets: list[tuple[str, list[str] | None]]  # (label, QIs) the attacker may know
    measures: list[str]
    block: tuple[str, ...] | None = None  # blocking keys (LinkSettings.block)


def _key(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


def replication_seeds(study_seed: int, cell: str, r: int) -> list[int]:
    """Seeds of the ``r`` replications of ``cell`` (independent SeedSequence children)."""
    ss = np.random.SeedSequence([int(study_seed) & 0xFFFFFFFF, zlib.crc32(cell.encode())])
    return [int(c.generate_state(1, np.uint32)[0]) for c in ss.spawn(r)]


@lru_cache(maxsize=8)
def _load(name: str, data_dir: str | None, ordered: bool, sample: int | None,
          distinct: tuple[str, ...] | None = None) -> pd.DataFrame:
    from .. import datasets

    path = Path(name)
    if data_dir is not None and not path.exists() and (Path(data_dir) / path).exists():
        path = Path(data_dir) / path  # a file named relative to the data folder
    if path.suffix == ".pkl" and path.exists():  # a working copy written by linkrisk
        df = pd.read_pickle(path)                # (exact dtypes)
    else:
        df = (datasets.load(name, data_dir) if name in datasets.REFERENCE
              else read_input(str(path), data_dir))
    if distinct:
        # the distinct records on the QIs (first occurrence), e.g. Household's 493
        df = df.drop_duplicates(list(distinct), keep="first").reset_index(drop=True)
    if sample:
        df = df.iloc[: int(sample)].reset_index(drop=True)
    if ordered:
        df = df.apply(lambda s: s.cat.as_ordered() if isinstance(s.dtype, pd.CategoricalDtype)
                      else s)
    return df


def expand(study: Study, data_dir: str | None, replications: int | None = None) -> list[Task]:
    """All replication tasks of the study, in a stable order."""
    from ..masking import METHODS

    reps = int(replications or study.replications)
    tasks = []
    for ds in study.datasets:
        _check_keys(study.block, ds)
        for mk in study.masking:
            if mk.datasets is not None and ds.label not in mk.datasets:
                continue
            attacks = mk.attacks if mk.attacks is not None else study.attacks
            for value in mk.values_for(ds.label):
                params = {**ds.params, **mk.fixed}
                if mk.param:
                    params[mk.param] = value
                qi_sets = _qi_sets(study, ds)
                cell = {"dataset": _dataset_key(ds), "method": mk.method, "params": params,
                        "attacks": [asdict(a) for a in attacks], "qi": qi_sets,
                        "measures": study.measures}
                if study.block:  # left out without blocking: existing cells keep their seeds
                    cell["block"] = list(study.block)
                ckey = _key(cell)
                n = 1 if METHODS[mk.method].deterministic else (
                    reps if replications or not mk.replications else mk.replications)
                for r, seed in enumerate(replication_seeds(study.seed, ckey, n)):
                    tasks.append(Task(_key([ckey, seed]), ds, data_dir, mk.method, mk.label,
                                      mk.param, value, params, r, seed, attacks, qi_sets,
                                      study.measures, study.block))
    return tasks


def _check_keys(block: tuple[str, ...] | None, ds: DatasetSpec) -> None:
    """Blocking keys are known exactly: not QIs, not masked (docs/methods.md, "Blocking")."""
    for c in block or ():
        for what, cols in (("a QI", ds.qi), ("a masked column", ds.columns)):
            if cols and c in cols:
                raise LinkriskError(f"{c!r} is both a blocking key and {what} of dataset "
                                    f"{ds.label!r}: the attacker knows the keys exactly, so "
                                    "they are neither masked nor compared as QIs")


def masked_columns(task: Task, orig: pd.DataFrame) -> list[str] | None:
    """The columns the task masks: the dataset's, else (None) the method's default; with
    blocking keys every column but the keys (they are released unchanged)."""
    if task.dataset.columns or not task.block:
        return task.dataset.columns
    return [c for c in orig.columns if c not in task.block]


def _dataset_key(ds: DatasetSpec) -> dict[str, Any]:
    """The dataset's part of a cell key. Options added to DatasetSpec later are left out at
    their default value, so that existing studies keep their cells' seeds."""
    key = asdict(ds)
    if not key.get("distinct"):
        key.pop("distinct", None)
    return key


def _qi_sets(study: Study, ds: DatasetSpec) -> list[tuple[str, list[str] | None]]:
    if not study.known_attributes:
        return [("all", ds.qi)]
    if not ds.qi:
        raise LinkriskError(f"known_attributes needs the QIs of dataset {ds.label!r} "
                            "listed (qi = [...]) so that 'the first k' is defined")
    return [(f"{k} of {len(ds.qi)}", ds.qi[:k]) for k in study.known_attributes
            if k <= len(ds.qi)]


def run_task(task: Task) -> list[dict[str, Any]]:
    """Mask, attack with every QI set, add the measures; one row per result. linkrisk's
    warnings are not printed here (in a worker process they would show raw, once per
    replication): each row carries them (``warnings``) and :func:`run_tasks` warns once
    per message in the calling process."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinkriskWarning)
        rows = _run_task(task)
    said = list(dict.fromkeys(str(w.message) for w in caught
                              if issubclass(w.category, LinkriskWarning)))
    for w in caught:
        if not issubclass(w.category, LinkriskWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for r in rows:
        r["warnings"] = "\n".join(said)
    return rows


def _run_task(task: Task) -> list[dict[str, Any]]:
    from ..attacks import LinkSettings, make_context, run_attack
    from ..masking import mask

    ds = task.dataset
    orig = _load(ds.name, task.data_dir, ds.ordered, ds.sample,
                 tuple(ds.qi or ds.columns or ()) if ds.distinct else None)
    if ds.distinct and not (ds.qi or ds.columns):
        orig = orig.drop_duplicates().reset_index(drop=True)
    missing = [c for c in task.block or () if c not in orig.columns]
    if missing:
        raise LinkriskError(f"blocking key {missing[0]!r} is not a column of dataset "
                            f"{ds.label!r}")
    t0 = time.perf_counter()
    rel = mask(orig, task.method, columns=masked_columns(task, orig), seed=task.seed,
               **task.params)
    base = {"dataset": task.dataset.label, "masking": task.masking, "param": task.param or "",
            "value": task.value, "replication": task.replication, "seed": task.seed}
    rows = []
    rates: dict[str, float] = {}
    attacker = _attacker_file(orig, rel, task)
    # the study masks the file itself: row order is the truth by construction
    settings = LinkSettings(seed=task.seed, assume_row_order=True, block=task.block)
    for qlabel, qi in task.qi_sets:
        ctx, direction = make_context(attacker, rel, settings=settings.with_(qi=qi))
        done: dict[str, Any] = {}  # attack → its result (the attribute rows read its links)
        for att in task.attacks:
            params = {k: resolve_param(v, task.value) for k, v in att.params.items()}
            t1 = time.perf_counter()
            try:
                if att.method == "scenarios":  # the worst case over attacker scenarios
                    val, err = _scenarios_worst(ctx, task, params), ""
                elif att.method == "attribute":  # values inferred through an attack's links
                    val, err = _attribute_rate(ctx, direction, orig, rel, params, done), ""
                else:
                    res = run_attack(ctx, att.method, direction, **params)
                    done[att.method] = res
                    val, err = 100.0 * res.rate, ""
            except LinkriskError as exc:
                val, err = float("nan"), str(exc)
            rows.append({**base, "qi": qlabel, "kind": "attack", "name": att.label,
                         "result": val, "seconds": time.perf_counter() - t1, "error": err})
            if qlabel == task.qi_sets[-1][0]:
                rates[att.method] = val
    if task.measures:
        rows += _measure_rows(orig, rel, task, rates, base)
    for r in rows:
        r["task_seconds"] = time.perf_counter() - t0
    return rows


def _scenarios_worst(ctx: Any, task: Task, params: dict[str, Any]) -> float:
    """The worst case in % over attacker scenarios (:func:`linkrisk.scenarios.search_scenarios`,
    as ``assess`` takes it), the task's other attacks running on the worst scenario."""
    from ..attacks import why_not
    from ..scenarios import search_scenarios

    others = {a.method: {k: resolve_param(v, task.value) for k, v in a.params.items()}
              for a in task.attacks if a.method not in ("scenarios", "attribute")}
    names = [n for n, p in others.items() if why_not(ctx, n, p) is None]
    found = search_scenarios(ctx, names, others, strategy=params.get("strategy", "all"))
    return 100.0 * found.worst.rate


def _attribute_rate(ctx: Any, direction: str, orig: pd.DataFrame, rel: pd.DataFrame,
                    params: dict[str, Any], done: dict[str, Any]) -> float:
    """Attribute disclosure in %: the largest share, over the ``sensitive`` columns, of
    attacker records whose original sensitive value equals (numeric: within ±5 % of) the
    one of the released record that ``attack`` links them to
    (:func:`linkrisk.measures.attribute.linked_inference`). The attack's result of the same
    task is reused when it ran."""
    from ..attacks import run_attack
    from ..measures.attribute import linked_inference

    params = dict(params)
    name, sens = params.pop("attack"), list(params.pop("sensitive"))
    res = done.get(name) or run_attack(ctx, name, direction, **params)
    per = linked_inference(orig, rel, res.per_record["link"].to_numpy(), sens)
    return 100.0 * max(v["rate"] for v in per.values())


def _attacker_file(orig: pd.DataFrame, rel: pd.DataFrame, task: Task) -> pd.DataFrame:
    """The file the attacker links from. Global recoding replaces values by new group
    labels through a published, deterministic map, so the attacker recodes their own file
    the same way (otherwise no released label occurs in it) — and that recoded file is the
    release itself, row for row; every other method is attacked from the original file."""
    return rel if task.method == "global_recoding" else orig


def _measure_rows(orig: pd.DataFrame, rel: pd.DataFrame, task: Task, rates: dict[str, float],
                  base: dict[str, Any]) -> list[dict[str, Any]]:
    """The study's measure rows: numeric attributes through
    :func:`~linkrisk.measures.release.numeric_measures` (as ``assess``), categorical ones
    (no numeric attribute masked) through
    :func:`~linkrisk.measures.release.categorical_measures`."""
    from ..measures import categorical_measures, numeric_measures

    masked_cols = list(masked_columns(task, orig) or orig.columns)
    cols = [c for c in masked_cols if pd.api.types.is_numeric_dtype(orig[c])]
    want = set(task.measures)
    if cols:
        out = numeric_measures(orig, rel, cols, rates, want)
    else:
        out = categorical_measures(orig, rel, masked_cols, rates, want)
    return [{**base, "qi": task.qi_sets[-1][0], "kind": "measure", "name": k, "result": v,
             "seconds": 0.0, "error": ""} for k, v in out.items() if k in want]


def _init_worker() -> None:
    # each worker process is one of P parallel jobs: keep numba to one thread each
    try:
        import numba

        numba.set_num_threads(1)
    except Exception:  # numba missing or threads already fixed
        pass


def run_tasks(tasks: list[Task], cache_dir: Path, processes: int = 2,
              progress: Callable[[int, int], None] | None = None) -> tuple[pd.DataFrame, int]:
    """Run the tasks not yet in ``cache_dir``; return all rows and how many were cached."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    todo = [t for t in tasks if not (cache_dir / f"{t.key}.json").exists()]
    cached = len(tasks) - len(todo)
    done = cached
    if progress is not None:
        progress(done, len(tasks))

    def store(t: Task, rows: list[dict[str, Any]]) -> None:
        atomic_write_text(cache_dir / f"{t.key}.json", json.dumps(rows, default=_plain),
                          force=True)

    if processes <= 1 or len(todo) <= 1:
        for t in todo:
            store(t, run_task(t))
            done += 1
            if progress is not None:
                progress(done, len(tasks))
    else:
        # spawn, not fork: forking a process whose numba kernels already started OpenMP
        # threads is unsafe (GNU OpenMP aborts the child)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=processes, initializer=_init_worker,
                                 mp_context=ctx) as pool:
            futs = {pool.submit(run_task, t): t for t in todo}
            for f in as_completed(futs):
                store(futs[f], f.result())
                done += 1
                if progress is not None:
                    progress(done, len(tasks))
    rows = []
    for t in tasks:
        rows += json.loads((cache_dir / f"{t.key}.json").read_text())
    said = dict.fromkeys(m for r in rows for m in (r.get("warnings") or "").split("\n") if m)
    for msg in said:  # once each, in this process (the CLI shows them as warning: lines)
        warnings.warn(msg, LinkriskWarning, stacklevel=2)
    return pd.DataFrame(rows), cached


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"cannot store {type(v).__name__}")


def default_processes() -> int:
    return max(1, min(2, os.cpu_count() or 1))
