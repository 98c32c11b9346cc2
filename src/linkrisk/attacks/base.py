"""Attack results, the linkage context handed to every attack, and the attack registry
(every attack declares its parameters as :class:`~linkrisk.params.Param`; definitions in
docs/methods.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data import numeric_matrix
from ..engine.blocking import Blocks, blocked_missing_sets, blocked_nearest_sets
from ..engine.nearest import NearestSets, Progress, nearest_sets
from ..errors import LinkriskError
from ..params import Param, as_params, coerce_params
from .settings import LinkSettings


@dataclass(frozen=True)
class LinkContext:
    """What an attack sees: the attacker's file A and the released file B restricted to the
    QI columns, attribute kinds, and truth (``truth[i]`` = row of B that is A's row i, −1
    when absent), and the :class:`~linkrisk.attacks.settings.LinkSettings` of the linkage
    (``settings.direction`` says which file is the original: ``original->masked``: A).

    The context is frozen: a caller never assigns to it. One attack's progress callback is
    passed to :func:`linkrisk.attacks.run_attack` (which runs on :meth:`with_progress`, a
    copy sharing the converted matrices). ``truth_check``: the row-order check's outcome
    (None with ids or ``assume_row_order``); ``notes``: what the QI screening and kind
    inference decided; ``blocks``: the block of every record when the linkage is blocked
    (:class:`~linkrisk.engine.blocking.Blocks`, ``settings.block``), else None."""

    a_df: pd.DataFrame
    b_df: pd.DataFrame
    qi: list[str]
    kinds: dict[str, str]
    truth: np.ndarray
    settings: LinkSettings = field(default_factory=LinkSettings)
    truth_check: Any = None
    notes: tuple[str, ...] = ()
    blocks: Blocks | None = None
    #: converted matrices, shared by the copies of :meth:`with_progress` (a matrix handed
    #: over by :meth:`take_numeric` is gone for all of them: it may be overwritten)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def memory_budget(self) -> int:
        return self.settings.memory_budget

    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def progress(self) -> Progress | None:
        return self.settings.progress

    @property
    def direction(self) -> str:
        return self.settings.direction

    @property
    def backend(self) -> str:
        return self.settings.backend

    @property
    def scheduler(self) -> Any:
        return self.settings.scheduler

    def with_progress(self, progress: Progress | None) -> LinkContext:
        """This context with another progress callback (a copy; this one is unchanged)."""
        if progress is self.settings.progress:
            return self
        return dataclasses.replace(self, settings=self.settings.with_(progress=progress))

    def with_scheduler(self, scheduler: Any) -> LinkContext:
        """This context on another Dask scheduler (a copy; this one is unchanged)."""
        return dataclasses.replace(self, settings=self.settings.with_(scheduler=scheduler))

    @property
    def n_a(self) -> int:
        return len(self.a_df)

    @property
    def n_b(self) -> int:
        return len(self.b_df)

    def numeric(self) -> tuple[np.ndarray, np.ndarray]:
        """A and B as float64 matrices (errors name non-numeric columns and NaNs)."""
        if "num" not in self._cache:
            self.check_numeric()
            self._cache["num"] = (numeric_matrix(self.a_df, self.qi, what="attacker's file"),
                                  numeric_matrix(self.b_df, self.qi, what="released file"))
        return self._cache["num"]

    @property
    def has_missing(self) -> bool:
        """Whether a QI value is missing (NaN/None/NA) in either file: the attacks then
        score pairs over the attributes observed in both (docs/methods.md, "Missing
        values")."""
        if "missing" not in self._cache:
            self._cache["missing"] = bool(self.a_df[self.qi].isna().to_numpy().any()
                                          or self.b_df[self.qi].isna().to_numpy().any())
        return self._cache["missing"]

    def numeric_observed(self, cols: Sequence[str] | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """A and B (``cols``, default the QIs) as new float64 matrices with NaN where a value
        is missing; the other values are checked as :meth:`numeric` checks them."""
        cols = list(self.qi if cols is None else cols)
        out = []
        for df, what in ((self.a_df, "attacker's file"), (self.b_df, "released file")):
            na = df[cols].isna().to_numpy()
            x = numeric_matrix(df[cols].mask(na, 0), cols, what=what)
            x[na] = np.nan
            out.append(x)
        return out[0], out[1]

    def nearest_missing(self, obs_a: np.ndarray, obs_b: np.ndarray, build: Any) -> Outcome:
        """:meth:`nearest` for files with missing values: the engine's search per pair of
        missingness patterns (:func:`~linkrisk.engine.nearest.missing.nearest_sets_missing`;
        ``build`` makes each pair's sub-problem), with this context's truth, memory budget,
        seed and progress callback (on this machine, also with the Dask backend)."""
        from ..engine.nearest.missing import nearest_sets_missing

        kw = dict(memory_budget=self.memory_budget, seed=self.seed)
        if self.blocks is None:
            out = Outcome(nearest_sets_missing(obs_a, obs_b, build, truth=self.truth,
                                               progress=self.progress, **kw))
        else:  # one search per block, on the rows of the whole files
            out = Outcome(blocked_missing_sets(obs_a, obs_b, build, self.blocks,
                                               truth=self.truth, **kw))
        out.extra["missing_values"] = True
        return out

    def check_numeric(self) -> None:
        """Refuse categorical QIs, naming them (the numeric attacks' check)."""
        non_num = [c for c in self.qi if self.kinds.get(c) != "numeric"]
        if non_num:
            raise LinkriskError(
                f"this attack needs numeric QIs but {', '.join(map(repr, non_num))} "
                f"{'is' if len(non_num) == 1 else 'are'} categorical; choose numeric columns "
                "with --qi or use a categorical attack"
            )

    def take_numeric(self) -> tuple[np.ndarray, np.ndarray]:
        """A and B as float64 matrices the caller owns and may overwrite: the cached pair is
        handed over and forgotten (a later :meth:`numeric` rebuilds it). Transforms then work
        in place, so that a 10⁶-record attack holds one matrix per file, not two."""
        num = self.numeric()
        del self._cache["num"]
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
        if self.blocks is not None:
            return Outcome(self._blocked(a, b, metric, truth, kw))
        if self.backend == "dask":
            from ..engine.nearest.distributed import dask_nearest_sets

            return Outcome(dask_nearest_sets(a, b, metric=metric, truth=truth,
                                             scheduler=self.scheduler,
                                             memory_budget=self.memory_budget,
                                             seed=self.seed, progress=self.progress, **kw))
        return Outcome(nearest_sets(a, b, metric=metric, truth=truth,
                                    memory_budget=self.memory_budget, seed=self.seed,
                                    progress=self.progress, **kw))

    def _blocked(self, a: np.ndarray, b: np.ndarray, metric: str, truth: np.ndarray,
                 kw: dict[str, Any]) -> NearestSets:
        """:meth:`nearest` within blocks (:func:`~linkrisk.engine.blocking.blocked_nearest_sets`);
        with the Dask backend the large blocks are its tasks."""
        run = None
        if self.backend == "dask":
            from ..engine.nearest.distributed import dask_map_sets

            common = {k: v for k, v in kw.items() if k != "row_ids"}

            def run(problems: Any) -> list[NearestSets]:
                return dask_map_sets(problems, scheduler=self.scheduler, metric=metric,
                                     memory_budget=self.memory_budget, seed=self.seed,
                                     **common)
        return blocked_nearest_sets(a, b, self.blocks, metric=metric, truth=truth,
                                    memory_budget=self.memory_budget, seed=self.seed,
                                    progress=self.progress, run=run, **kw)

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
               "params": {k: plain(v) for k, v in self.params.items()},
               "seconds": round(self.seconds, 4)}
        out.update({k: plain(v) for k, v in self.extra.items()})
        return out

    def to_frame(self) -> pd.DataFrame:
        """This attack as a one-row table (index ``attack``): ``rate_%``, ``correct_links``,
        ``records``, ``seconds`` (:func:`results_frame`); ``per_record`` has the records."""
        return results_frame([self])

    def _repr_html_(self) -> str:
        import html

        return (f"<p>{html.escape(self.method)} on QIs "
                f"{html.escape(', '.join(map(str, self.qi)))} ({html.escape(self.direction)})"
                "</p>" + self.to_frame().to_html())

    def __repr__(self) -> str:
        return (f"AttackResult(method={self.method!r}, n={self.n}, "
                f"correct_links={self.correct_links:.2f}, rate={self.rate:.4f})")


def results_frame(results: Iterable[AttackResult], *, worst_first: bool = False
                  ) -> pd.DataFrame:
    """One row per attack result (index ``attack``): ``rate_%``, ``correct_links``,
    ``records``, ``seconds``; in the given order, or the highest rate first (stable)."""
    cols = ["attack", "rate_%", "correct_links", "records", "seconds"]
    df = pd.DataFrame([{"attack": r.method, "rate_%": 100.0 * r.rate,
                        "correct_links": r.correct_links, "records": r.n,
                        "seconds": r.seconds} for r in results], columns=cols)
    if worst_first:
        df = df.sort_values("rate_%", ascending=False, kind="stable")
    return df.set_index("attack")


def plain(v: Any) -> Any:
    """A value as plain JSON-able Python: numpy scalars become Python numbers, arrays,
    lists and tuples become lists (element by element); anything else is returned as is.

    Parameters
    ----------
    v : object
        A parameter, measure or setting value.

    Returns
    -------
    object
        ``v`` without numpy types.
    """
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


AttackFn = Callable[..., Outcome]

#: the attribute kinds (``linkrisk.data`` infers them; ``kinds=`` overrides)
KINDS = ("numeric", "ordinal", "nominal")


@dataclass(frozen=True)
class AttackSpec:
    """A registered attack.

    ``run(ctx, **params)`` computes the candidate sets; ``summary`` is one line for
    ``linkrisk methods``; ``kinds`` is the tuple of attribute kinds the attack accepts
    with its default parameters (a file qualifies when every QI has one of them);
    ``mixed`` says whether it accepts a file that mixes numeric and categorical QIs (all
    kinds being accepted); ``params`` declares each parameter as a
    :class:`~linkrisk.params.Param` (type, default, description), stored as
    ``{name: Param}``. The definitions are in docs/methods.md.
    """

    name: str
    run: AttackFn
    summary: str
    kinds: tuple[str, ...] = ("numeric",)
    params: Mapping[str, Param] = field(default_factory=dict)
    mixed: bool = True

    def __post_init__(self) -> None:
        bad = [k for k in self.kinds if k not in KINDS]
        if bad or not self.kinds:
            raise ValueError(f"attack {self.name!r}: kinds must be a non-empty subset of {KINDS}")
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "params", as_params(self.params))

    def accepts(self, kinds: Iterable[str] | Mapping[str, str]) -> bool:
        """Whether the attack runs (with its default parameters) on QIs of these kinds;
        a ``{column: kind}`` mapping or an iterable of kinds."""
        vals = set(kinds.values() if isinstance(kinds, Mapping) else kinds)
        if not vals <= set(self.kinds):
            return False
        return self.mixed or not ("numeric" in vals and vals - {"numeric"})

    def coerce(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` checked and coerced against the declaration (unknown names, types,
        choices), as :func:`linkrisk.params.coerce_params` does for masking methods too.
        Defaults are not filled in: the attack function's own defaults apply (a test
        keeps them equal to the declared ones)."""
        return coerce_params(self.name, self.params, params, fill_defaults=False)


ATTACKS: dict[str, AttackSpec] = {}


def register(name: str, summary: str, *, kinds: tuple[str, ...] = ("numeric",),
             params: Sequence[Param] = (), mixed: bool = True
             ) -> Callable[[AttackFn], AttackFn]:
    """Decorator: register ``fn(ctx, **params) -> Outcome`` as attack ``name``.

    Parameters
    ----------
    name : str
        The attack's name (``linkrisk.attack(..., method=name)``, ``--method name``).
    summary : str
        One line for ``linkrisk methods`` and docs/methods.md.
    kinds : tuple of str
        Attribute kinds the attack accepts with its default parameters.
    params : sequence of Param
        Every keyword parameter of ``fn`` besides ``ctx``, with its type and default.
    mixed : bool
        Whether files mixing numeric and categorical QIs are accepted.

    Returns
    -------
    callable
        The decorator; it returns ``fn`` unchanged.
    """

    def deco(fn: AttackFn) -> AttackFn:
        ATTACKS[name] = AttackSpec(name, fn, summary, tuple(kinds), as_params(params), mixed)
        return fn

    return deco


def attacks_for(kinds: Iterable[str] | Mapping[str, str]) -> list[str]:
    """The registered attacks that accept QIs of these kinds with their default parameters.

    Parameters
    ----------
    kinds : iterable of str or mapping
        The QIs' kinds (``numeric``, ``ordinal``, ``nominal``), or ``{column: kind}``.

    Returns
    -------
    list of str
        Attack names in registration order (see :meth:`AttackSpec.accepts`).
    """
    vals = list(kinds.values() if isinstance(kinds, Mapping) else kinds)
    return [name for name, spec in ATTACKS.items() if spec.accepts(vals)]
