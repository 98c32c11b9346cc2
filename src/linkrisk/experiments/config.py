"""Study configurations: TOML or YAML files (or the built-in ones, by name) describing a
grid of datasets × masking methods × parameter values × attacks × QI subsets, and their
validation into :class:`Study` objects with one error message per mistake."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
    import tomli as tomllib  # type: ignore[no-redef]

from ..attacks import ATTACKS, attack_params
from ..attacks.settings import block_keys
from ..datasets import REFERENCE
from ..errors import LinkriskError
from ..masking import METHODS
from ..measures import MEASURES


def builtin_names() -> list[str]:
    """Names of the studies shipped with linkrisk."""
    root = resources.files("linkrisk.experiments") / "configs"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


@dataclass
class DatasetSpec:
    name: str                     # reference dataset name or a file path
    label: str
    qi: list[str] | None = None   # QIs the attacker knows (default: all masked columns)
    columns: list[str] | None = None  # columns to mask (default: the method's default)
    params: dict[str, Any] = field(default_factory=dict)  # masking params for this dataset
    ordered: bool = False         # make categorical columns ordered (top/bottom coding)
    sample: int | None = None     # use the first ``sample`` records (quick runs)
    distinct: bool = False        # keep the first occurrence of each distinct QI record


@dataclass
class AttackSpec:
    label: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class MaskingSpec:
    method: str
    param: str | None             # the swept parameter (None: a single setting)
    values: list[Any]
    values_by_dataset: dict[str, list[Any]]
    fixed: dict[str, Any]
    datasets: list[str] | None    # restrict to these dataset labels
    attacks: list[AttackSpec] | None  # override the study's attacks
    label: str
    replications: int | None = None  # this method's R (default: the study's)

    def values_for(self, dataset: str) -> list[Any]:
        return self.values_by_dataset.get(dataset, self.values)


@dataclass
class Study:
    name: str
    description: str
    seed: int
    replications: int
    datasets: list[DatasetSpec]
    masking: list[MaskingSpec]
    attacks: list[AttackSpec]
    known_attributes: list[int] | None  # attacker knows the first k QIs, for each k
    measures: list[str]
    source: str
    published: bool = False       # attach the published values (experiments/published)
    block: tuple[str, ...] | None = None  # blocking keys of every attack (study(block=))


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as exc:
            raise LinkriskError("YAML study files need pyyaml: pip install pyyaml") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise LinkriskError(f"{path}: not valid YAML: {exc}") from exc
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise LinkriskError(f"{path}: not valid TOML: {exc}") from exc
    if not isinstance(data, dict):
        raise LinkriskError(f"{path}: a study file must be a table of settings")
    return data


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) \
            else copy.deepcopy(v)
    return out


def load_config(config: str | Path | Mapping[str, Any], *, quick: bool = False) -> Study:
    """Read and validate a study: a path to a TOML/YAML file, a built-in name
    (:func:`builtin_names`) or an already parsed mapping. ``quick`` applies the config's
    ``[quick]`` table (smaller grid, fewer replications) over the rest."""
    if isinstance(config, Mapping):
        data, source = dict(config), "<mapping>"
    else:
        path = Path(config)
        if not path.exists():
            if str(config) in builtin_names():
                path = Path(str(resources.files("linkrisk.experiments") / "configs"
                                / f"{config}.toml"))
            else:
                raise LinkriskError(f"study {str(config)!r} is neither a file nor a built-in "
                                    f"study ({', '.join(builtin_names())})")
        data, source = _read(path), str(path)
    quick_over = data.pop("quick", {}) or {}
    if quick:
        data = _merge(data, quick_over)
    return _validate(data, source, quick_over if quick else {})


def _list(v: Any, what: str) -> list:
    if v is None:
        return []
    if isinstance(v, (str, int, float)):
        return [v]
    if not isinstance(v, list):
        raise LinkriskError(f"{what} must be a list")
    return v


def _attack(entry: Any, where: str) -> AttackSpec:
    if isinstance(entry, str):
        entry = {"method": entry}
    if not isinstance(entry, Mapping) or "method" not in entry:
        raise LinkriskError(f"{where}: an attack is a name or a table with 'method'")
    method = entry["method"]
    if method not in ATTACKS:
        raise LinkriskError(f"{where}: unknown attack {method!r}; choose from {', '.join(ATTACKS)}")
    params = dict(entry.get("params", {}))
    bad = [p for p in params if p not in attack_params(method)]
    if bad:
        raise LinkriskError(f"{where}: attack {method!r} has no parameter {bad[0]!r}")
    return AttackSpec(str(entry.get("label", method)), method, params)


def _validate(d: dict[str, Any], source: str, quick: Mapping[str, Any]) -> Study:
    """Check a parsed study mapping and build its :class:`Study` (one error per mistake,
    naming ``source``); ``quick`` is the config's ``[quick]`` reduction (empty if unused)."""
    name = str(d.get("name") or Path(source).stem)
    known = {"name", "description", "seed", "replications", "datasets", "masking", "attacks",
             "known_attributes", "measures", "max_values", "published", "block"}
    extra = set(d) - known
    if extra:
        raise LinkriskError(f"{source}: unknown setting {sorted(extra)[0]!r}; "
                            f"use {', '.join(sorted(known))}")
    datasets = [_dataset(e, i, source) for i, e in enumerate(_list(d.get("datasets"),
                                                                   "datasets"))]
    if not datasets:
        raise LinkriskError(f"{source}: the study names no datasets")
    labels = {ds.label for ds in datasets}
    attacks = [_attack(a, f"{source}: attacks") for a in _list(d.get("attacks"), "attacks")]
    max_values = quick.get("max_values", d.get("max_values"))
    masking = [_masking(e, f"{source}: masking[{i}]", labels, max_values, bool(quick))
               for i, e in enumerate(_list(d.get("masking"), "masking"))]
    if not masking:
        raise LinkriskError(f"{source}: the study has no masking methods")
    if not attacks and any(m.attacks is None for m in masking):
        raise LinkriskError(f"{source}: the study names no attacks")
    measures = [str(x) for x in _list(d.get("measures"), "measures")]
    bad = [x for x in measures if x not in MEASURES]
    if bad:
        raise LinkriskError(f"{source}: unknown measure {bad[0]!r}; choose from {', '.join(MEASURES)}")
    known_attrs = d.get("known_attributes")
    if known_attrs is not None:
        known_attrs = [int(k) for k in _list(known_attrs, "known_attributes")]
        if any(k < 1 for k in known_attrs):
            raise LinkriskError(f"{source}: known_attributes are counts of QIs, at least 1")
    reps = int(d.get("replications", 1))
    if reps < 1:
        raise LinkriskError(f"{source}: replications must be at least 1")
    return Study(name, str(d.get("description", "")), int(d.get("seed", 0)), reps, datasets,
                 masking, attacks, known_attrs, measures, source, bool(d.get("published")),
                 block_keys(d.get("block"), source))


def _dataset(e: Any, i: int, source: str) -> DatasetSpec:
    """One entry of ``datasets``: a name, or a table with a name and its options."""
    e = {"name": e} if isinstance(e, str) else dict(e)
    if "name" not in e:
        raise LinkriskError(f"{source}: datasets[{i}] needs a name")
    if e["name"] not in REFERENCE and not Path(str(e["name"])).suffix:
        raise LinkriskError(f"{source}: unknown dataset {e['name']!r}; use a reference "
                            f"name ({', '.join(REFERENCE)}) or a CSV/Parquet path")
    return DatasetSpec(str(e["name"]), str(e.get("label", e["name"])),
                       e.get("qi"), e.get("columns"), dict(e.get("params", {})),
                       bool(e.get("ordered", False)), e.get("sample"),
                       bool(e.get("distinct", False)))


def _masking(e: Any, where: str, labels: set[str], max_values: Any, quick: bool
             ) -> MaskingSpec:
    """One entry of ``masking``: the method, its swept and fixed parameters (values thinned
    to ``max_values``), the datasets and attacks it is limited to."""
    if not isinstance(e, Mapping) or "method" not in e:
        raise LinkriskError(f"{where} needs a method")
    method = e["method"]
    if method not in METHODS:
        raise LinkriskError(f"{where}: unknown masking method {method!r}; choose from "
                            f"{', '.join(METHODS)}")
    allowed = set(METHODS[method].params)
    param = e.get("param")
    fixed = dict(e.get("fixed", {}))
    for p in ([param] if param else []) + list(fixed):
        if p not in allowed:
            raise LinkriskError(f"{where}: {method} has no parameter {p!r}; it takes "
                                f"{', '.join(sorted(allowed))}")
    values = _list(e.get("values"), f"{where}.values")
    by_ds = {k: _list(v, f"{where}.values_by_dataset.{k}")
             for k, v in dict(e.get("values_by_dataset", {})).items()}
    if param and not values and not by_ds:
        raise LinkriskError(f"{where}: give values for the swept parameter {param!r}")
    if max_values:
        values = _thin(values, int(max_values))
        by_ds = {k: _thin(v, int(max_values)) for k, v in by_ds.items()}
    only = e.get("datasets")
    if only is not None:
        missing = [x for x in only if x not in labels]
        if missing:
            raise LinkriskError(f"{where}: dataset {missing[0]!r} is not in the study")
    own = e.get("attacks")
    return MaskingSpec(
        method, param, values if param else [None], by_ds, fixed, only,
        [_attack(a, where) for a in own] if own is not None else None,
        str(e.get("label", method)),
        None if quick or e.get("replications") is None else int(e["replications"]))


def _thin(values: list, k: int) -> list:
    """At most ``k`` values spread over the list (first and last kept)."""
    if len(values) <= k:
        return list(values)
    if k == 1:
        return [values[0]]
    idx = sorted({round(i * (len(values) - 1) / (k - 1)) for i in range(k)})
    return [values[i] for i in idx]
