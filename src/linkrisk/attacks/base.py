"""Attack results, the linkage context handed to every attack, and the attack registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..engine.nearest import DEFAULT_MEMORY_BUDGET, NearestSets, Progress, nearest_sets
from ..errors import LinkriskError


@dataclass
class LinkContext:
    """What an attack sees: the attacker's file A and the released file B restricted to the
    QI columns, attribute kinds, and truth (``truth[i]`` = row of B that is A's row i, −1
    when absent). ``direction`` says which file is the original (``original->masked``: A)."""

    a_df: pd.DataFrame
    b_df: pd.DataFrame
    qi: list[str]
    kinds: dict[str, str]
    truth: np.ndarray
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    seed: int = 0
    progress: Progress | None = None
    direction: str = "original->masked"
    backend: str = "local"
    scheduler: Any = None
    _num: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def n_a(self) -> int:
        return len(self.a_df)

    @property
    def n_b(self) -> int:
        return len(self.b_df)

    def numeric(self) -> tuple[np.ndarray, np.ndarray]:
        """A and B as float64 matrices (errors name non-numeric columns and NaNs)."""
        if self._num is None:
            non_num = [c for c in self.qi if self.kinds.get(c) != "numeric"]
            if non_num:
                raise LinkriskError(
                    f"this attack needs numeric QIs but {', '.join(map(repr, non_num))} "
                    f"{'is' if len(non_num) == 1 else 'are'} categorical; choose numeric columns "
                    "with --qi or use a categorical attack"
                )
            self._num = (numeric_matrix(self.a_df, self.qi, what="attacker's file"),
                         numeric_matrix(self.b_df, self.qi, what="released file"))
        return self._num

    def take_numeric(self) -> tuple[np.ndarray, np.ndarray]:
        """A and B as float64 matrices the caller owns and may overwrite: the cached pair is
        handed over and forgotten (a later :meth:`numeric` rebuilds it). Transforms then work
        in place, so that a 10⁶-record attack holds one matrix per file, not two."""
        num = self.numeric()
        self._num = None
        return num

    def nearest(self, a: np.ndarray, b: np.ndarray, metric: str, *,
                rows: np.ndarray | None = None, **kw: Any) -> Outcome:
        """Candidate sets of the rows of ``a`` among the rows of ``b`` under ``metric``,
        with this context's truth, memory budget, seed and progress callback; on a Dask
        cluster when ``backend == "dask"`` (same result). ``rows``: ``a`` holds only these
        rows of the attacker's file (their truth and tie-breaking ids are used)."""
        truth = self.truth if rows is None else self.truth[rows]
        if rows is not None:
            kw["row_ids"] = rows
        if self.backend == "dask":
            from ..engine.nearest.distributed import dask_nearest_sets

            return Outcome(dask_nearest_sets(a, b, metric=metric, truth=truth,
                                             scheduler=self.scheduler,
                                             memory_budget=self.memory_budget,
                                             seed=self.seed, progress=self.progress, **kw))
        return Outcome(nearest_sets(a, b, metric=metric, truth=truth,
                                    memory_budget=self.memory_budget, seed=self.seed,
                                    progress=self.progress, **kw))

    def true_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Row indices (in A, in B) of the true pairs, for the statistics of dbrl2 and
        mahalanobis (indices rather than aligned copies: no extra n × m matrices)."""
        ok = np.flatnonzero(self.truth >= 0)
        if ok.size < 2:
            raise LinkriskError("this attack estimates statistics over the true pairs and "
                                "needs at least 2 of them")
        return ok, self.truth[ok]


@dataclass
class Outcome:
    """An attack's per-record result before packaging: candidate sets summarised as in
    :class:`~linkrisk.engine.NearestSets`, plus attack-specific facts."""

    sets: NearestSets
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class AttackResult:
    """Result of one record-linkage attack.

    ``correct_links`` = Σ_a χ(true(a) ∈ C(a)) / |C(a)| (Herranz et al.'s DBRL measure: the
    expected number of correct links under random tie breaking); ``rate`` = that / n.
    ``per_record`` has one row per attacker record: ``link`` (row of the other file chosen
    among the candidates, seeded), ``candidates`` (|C(a)|), ``true_in_set``, ``correct``
    (χ/|C|, the record's probability of being re-identified) and ``score`` (minimal score).
    """

    method: str
    n: int
    n_released: int
    correct_links: float
    rate: float
    per_record: pd.DataFrame
    qi: list[str]
    direction: str
    params: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Summary as plain JSON-able values (no per-record table)."""
        out = {"method": self.method, "n": self.n, "n_released": self.n_released,
               "correct_links": float(self.correct_links), "rate": float(self.rate),
               "qi": list(self.qi), "direction": self.direction,
               "params": {k: _plain(v) for k, v in self.params.items()},
               "seconds": round(self.seconds, 4)}
        out.update({k: _plain(v) for k, v in self.extra.items()})
        return out

    def __repr__(self) -> str:
        return (f"AttackResult(method={self.method!r}, n={self.n}, "
                f"correct_links={self.correct_links:.2f}, rate={self.rate:.4f})")


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


AttackFn = Callable[..., Outcome]


@dataclass
class AttackSpec:
    name: str
    run: AttackFn
    summary: str
    kinds: tuple[str, ...] = ("numeric",)  # attribute kinds the attack accepts
    params: tuple[str, ...] = ()


ATTACKS: dict[str, AttackSpec] = {}


def register(name: str, summary: str, *, kinds: tuple[str, ...] = ("numeric",),
             params: tuple[str, ...] = ()) -> Callable[[AttackFn], AttackFn]:
    """Decorator: register ``fn(ctx, **params) -> Outcome`` as attack ``name``."""

    def deco(fn: AttackFn) -> AttackFn:
        ATTACKS[name] = AttackSpec(name, fn, summary, kinds, params)
        return fn

    return deco
