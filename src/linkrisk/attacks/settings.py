"""The settings of a linkage, :class:`LinkSettings`: built (and validated) once, then
passed down to every attack, :func:`linkrisk.assess`, the study runner and the CLI.

A variant is derived, never assigned::

    s = linkrisk.LinkSettings(qi="age,income", seed=3)
    quiet = s.with_(progress=None)          # or dataclasses.replace(s, progress=None)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data import KINDS, parse_columns, parse_kinds
from ..engine.budget import DEFAULT_MEMORY_BUDGET
from ..engine.nearest import Progress
from ..errors import LinkriskError
from ..options import check_seed, parse_size

#: accepted spellings of the two linkage directions → the canonical one
DIRECTIONS = {
    "original->masked": "original->masked", "forward": "original->masked",
    "o2m": "original->masked",
    "masked->original": "masked->original", "backward": "masked->original",
    "m2o": "masked->original",
}
#: the smallest memory budget the blocked engine accepts
MIN_MEMORY_BUDGET = 2**20
BACKENDS = ("local", "dask")


class FrozenKinds(dict):
    """A read-only ``{column: kind}`` mapping (the ``kinds`` of a :class:`LinkSettings`):
    reading works as for a dict, every write raises ``TypeError``."""

    def _read_only(self, *args: Any, **kw: Any) -> None:
        raise TypeError("LinkSettings.kinds is read-only; derive new settings with "
                        "settings.with_(kinds={...})")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


def _columns(spec: Any, what: str) -> tuple[str, ...] | None:
    """``"a,b"`` or a sequence of names → a tuple of names (None when not given)."""
    if spec is None or isinstance(spec, str) or (
            isinstance(spec, Sequence) and all(isinstance(c, str) for c in spec)):
        cols = parse_columns(spec)
        return None if cols is None else tuple(cols)
    raise LinkriskError(f"{what} must be a column name, 'a,b,c' or a list of column names, "
                        f"got {spec!r}")


def block_keys(spec: Any, where: str = "") -> tuple[str, ...] | None:
    """Blocking keys (``"region,sex"`` or a list of names) checked once for every caller
    (:class:`LinkSettings`, a study file's ``block``, ``choose``): names, each given once;
    None when none. ``where`` prefixes the error (a study file's path)."""
    pre = f"{where}: " if where else ""
    try:
        keys = _columns(spec, "block")
    except LinkriskError as exc:
        raise LinkriskError(pre + str(exc)) from None
    if not keys:
        return None
    if len(set(keys)) != len(keys):
        raise LinkriskError(f"{pre}a blocking key is named twice")
    return keys


@dataclass(frozen=True)
class LinkSettings:
    """How a linkage is set up: every option an attack shares, validated once.

    Parameters
    ----------
    qi : str or sequence of str, optional
        The quasi-identifiers the attacker knows (``"a,b"`` or a list). Default: every
        column both files share (but the ``ids``); with ``screen_qi`` also without id-like,
        weight-like and unchanged columns.
    ids : str or sequence of str, optional
        Id column(s) in both files that define the true pairs. Default: row order (checked
        unless ``assume_row_order``).
    kinds : mapping or str, optional
        Attribute-kind overrides ``{column: "numeric" | "ordinal" | "nominal"}`` (or the CLI
        form ``"a=ordinal,b=nominal"``); the other kinds are inferred. Stored read-only.
    direction : str
        ``"original->masked"`` (the attacker holds original records and searches the
        release; default) or ``"masked->original"`` (aliases: forward/o2m, backward/m2o).
    memory_budget : int or str
        Bytes of working memory of the blocked engine (``"2GiB"`` is read too); at least
        1 MiB. Default: 1/8 of the memory available at import, within 256 MiB–4 GiB, or
        the environment variable ``LINKRISK_MEMORY`` (:mod:`linkrisk.engine.budget`);
        ``to_dict`` holds the resolved number.
    seed : int
        Seed of the tie breaking of the reported links (≥ 0).
    backend : str
        ``"local"`` or ``"dask"`` (nearest-set attacks run block-wise on a Dask cluster;
        same results).
    scheduler : object, optional
        With ``backend="dask"``: a ``distributed.Client`` or a scheduler address (default:
        the current client or a new local cluster).
    progress : callable, optional
        ``progress(done, total)``, called during long attacks (see
        :class:`linkrisk.engine.nearest.Progress`).
    assume_row_order : bool
        Without ``ids``, trust that row i of one file is row i of the other (skip the
        check of :func:`linkrisk.truth.row_order_check`).
    screen_qi : bool
        Leave id-like, weight-like and unchanged columns out of the default QIs (what
        :func:`linkrisk.assess` and the CLI do; :func:`linkrisk.attack` does not by default).
    block : str or sequence of str, optional
        Blocking keys (``"region,sex"`` or a list): columns of both files the attacker knows
        exactly; records are compared only within blocks of equal keys (categories compared
        by :func:`linkrisk.data.category_key`), and a record whose true partner is in another
        block is not linkable. The keys are not QIs of the distance (docs/methods.md,
        "Blocking").

    Notes
    -----
    The object is frozen: derive a variant with :meth:`with_` (or
    ``dataclasses.replace``), which validates again. Invalid values raise a one-line
    :class:`~linkrisk.errors.LinkriskError`. Definitions: docs/methods.md, Attacks.
    """

    qi: tuple[str, ...] | None = None
    ids: tuple[str, ...] | None = None
    kinds: Mapping[str, str] | None = None
    direction: str = "original->masked"
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    seed: int = 0
    backend: str = "local"
    scheduler: Any = None
    progress: Progress | None = None
    assume_row_order: bool = False
    screen_qi: bool = False
    block: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__  # the one place fields are set: validation of a new object
        put(self, "qi", _columns(self.qi, "qi"))
        put(self, "ids", _columns(self.ids, "ids"))
        put(self, "block", block_keys(self.block))
        if self.kinds is not None and not isinstance(self.kinds, (Mapping, str)):
            raise LinkriskError(f"kinds must be a mapping column → kind, got {self.kinds!r}")
        kinds = parse_kinds(self.kinds)
        for c, k in kinds.items():
            if k not in KINDS:
                raise LinkriskError(f"unknown attribute kind {k!r} for {c!r}; use one of "
                                    f"{', '.join(KINDS)}")
        put(self, "kinds", FrozenKinds(kinds))
        if not isinstance(self.direction, str) or self.direction not in DIRECTIONS:
            raise LinkriskError(f"unknown direction {self.direction!r}; use original->masked "
                                "or masked->original")
        put(self, "direction", DIRECTIONS[self.direction])
        budget = parse_size(self.memory_budget)
        if budget < MIN_MEMORY_BUDGET:
            raise LinkriskError("memory budget must be at least 1 MiB")
        put(self, "memory_budget", int(budget))
        put(self, "seed", check_seed(self.seed))
        if self.backend not in BACKENDS:
            raise LinkriskError(f"unknown backend {self.backend!r}; use 'local' or 'dask'")
        if self.progress is not None and not callable(self.progress):
            raise LinkriskError(f"progress must be a callable progress(done, total), got "
                                f"{self.progress!r}")
        for name in ("assume_row_order", "screen_qi"):
            if not isinstance(getattr(self, name), bool):
                raise LinkriskError(f"{name} must be True or False, got "
                                    f"{getattr(self, name)!r}")

    def with_(self, **changes: Any) -> LinkSettings:
        """A copy with ``changes`` applied and validated (``dataclasses.replace``); e.g.
        ``settings.with_(progress=cb)`` for one attack's progress callback."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values (without the progress callback and the
        scheduler object)."""
        return {"qi": None if self.qi is None else list(self.qi),
                "ids": None if self.ids is None else list(self.ids),
                "kinds": dict(self.kinds or {}), "direction": self.direction,
                "memory_budget": self.memory_budget, "seed": self.seed,
                "backend": self.backend, "assume_row_order": self.assume_row_order,
                "screen_qi": self.screen_qi,
                "block": None if self.block is None else list(self.block)}


#: the fields of :class:`LinkSettings` (the linkage keywords of ``attack``/``make_context``)
FIELDS = tuple(f.name for f in dataclasses.fields(LinkSettings))


def resolve_settings(settings: LinkSettings | None = None, **given: Any) -> LinkSettings:
    """``settings`` (default: ``LinkSettings()``) with the keywords that were given (not
    None) applied: the rule of every function that takes both ``settings=`` and the
    linkage keywords."""
    if settings is not None and not isinstance(settings, LinkSettings):
        raise LinkriskError(f"settings must be a linkrisk.LinkSettings, got "
                            f"{type(settings).__name__}")
    unknown = [k for k in given if k not in FIELDS]
    if unknown:
        raise TypeError(f"unknown linkage option {unknown[0]!r}")
    changes = {k: v for k, v in given.items() if v is not None}
    if settings is None:
        return LinkSettings(**changes)
    return settings.with_(**changes) if changes else settings
