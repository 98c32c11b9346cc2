"""Record-linkage attacks behind one entry point, :func:`attack` (definitions:
docs/methods.md, Attacks)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data import attribute_kinds, parse_columns, select_qi, truth_from_ids
from ..engine.nearest import DEFAULT_MEMORY_BUDGET, Progress
from ..errors import LinkriskError, LinkriskWarning
from ..options import check_seed, parse_size
from ..truth import row_order_check

# the import order is the registry's order (docs, ``linkrisk methods``, "all"): dbrl and its
# variants first
from . import distance  # noqa: F401  (registers the attacks)

# isort: split
from . import categorical, globalmatch, probabilistic, rank, rankswap  # noqa: F401
from .base import ATTACKS, AttackResult, LinkContext, Outcome

DIRECTIONS = {
    "original->masked": "original->masked", "forward": "original->masked",
    "o2m": "original->masked",
    "masked->original": "masked->original", "backward": "masked->original",
    "m2o": "masked->original",
}


def resolve_methods(methods: str | Sequence[str]) -> list[str]:
    """Split ``"dbrl,rbrl_max"`` or take a list of names, and check every name. ``"all"``
    returns every registered attack; :func:`applicable` narrows that to the files."""
    if not isinstance(methods, str) and not (
            isinstance(methods, Sequence) and all(isinstance(m, str) for m in methods)):
        raise LinkriskError(f"method must be an attack name, 'a,b' or a list of names, "
                            f"got {methods!r}")
    names = parse_columns(methods) or []
    if names == ["all"]:
        return list(ATTACKS)
    unknown = [m for m in names if m not in ATTACKS]
    if unknown:
        raise LinkriskError(f"unknown attack {unknown[0]!r}; choose from {', '.join(ATTACKS)}")
    if not names:
        raise LinkriskError("no attack method given")
    if len(set(names)) != len(names):
        raise LinkriskError("an attack is named twice")
    return names


def attack_params(method: str) -> list[str]:
    """Names of the parameters attack ``method`` accepts.

    Parameters
    ----------
    method : str
        A registered attack name.

    Returns
    -------
    list of str
        The declared parameter names, in declaration order. The declarations themselves
        (types, defaults, descriptions) are ``ATTACKS[method].params``; docs/methods.md
        lists them.
    """
    return list(ATTACKS[method].params)


def why_not(ctx: LinkContext, method: str, params: Mapping[str, Any] | None = None
            ) -> str | None:
    """Why attack ``method`` cannot run on these files (None when it can): QI kinds it does
    not accept (:meth:`AttackSpec.accepts`, from the registry), too few true pairs for the
    attacks that estimate statistics on them, parameters it does not declare or of the
    wrong type (:meth:`AttackSpec.coerce`)."""
    spec = ATTACKS[method]
    params = dict(params or {})
    vals = set(ctx.kinds.values())
    if not spec.accepts(ctx.kinds):
        if vals <= set(spec.kinds):  # every kind accepted, but not mixed
            return (f"{method} is not available for files mixing numeric and categorical "
                    "QIs; use dbrl_mixed")
        bad_kind = sorted(vals - set(spec.kinds))
        cols = [c for c in ctx.qi if ctx.kinds[c] in bad_kind]
        if method == "dbrl_hamming":
            return (f"hamming compares categories but {cols[0]!r} is numeric; declare it "
                    f"nominal (--kinds {cols[0]}=nominal) or use the mixed metric (dbrl_mixed)")
        return (f"needs {' or '.join(spec.kinds)} QIs, but {', '.join(map(str, cols[:5]))}"
                f"{' …' if len(cols) > 5 else ''} {'is' if len(cols) == 1 else 'are'} "
                f"{'/'.join(bad_kind)}"
                f"{' (categorical)' if 'numeric' not in bad_kind else ''} "
                "(change with --kinds or --qi)")
    if method in ("dbrl2", "mahalanobis") and int((ctx.truth >= 0).sum()) < 2:
        return "estimates statistics over the true pairs and needs at least 2 of them"
    accepted = attack_params(method)
    extra = [p for p in params if p not in accepted]
    if extra:
        return f"has no parameter {extra[0]!r}; it accepts: {', '.join(accepted) or 'none'}"
    try:
        spec.coerce(params)
    except LinkriskError as exc:
        return str(exc)
    return None


def make_context(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    qi: str | Sequence[str] | None = None,
    *,
    ids: str | Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    direction: str = "original->masked",
    memory_budget: int | str = DEFAULT_MEMORY_BUDGET,
    seed: int = 0,
    progress: Progress | None = None,
    backend: str = "local",
    scheduler: Any = None,
    assume_row_order: bool = False,
    screen_qi: bool = False,
) -> tuple[LinkContext, str]:
    """Validate the inputs once and build the :class:`LinkContext` shared by attacks.

    Integer columns with few distinct values are read as nominal codes
    (:func:`linkrisk.data.attribute_kinds`); with ``screen_qi`` (``assess`` and the CLI)
    the default QIs also leave out id-like, weight-like and unchanged columns
    (:func:`linkrisk.data.select_qi`). Each such decision is a :class:`LinkriskWarning`. Without ``ids`` the truth is row order, which is checked
    first (:func:`linkrisk.truth.row_order_check`) unless ``assume_row_order``; the check's
    outcome is ``ctx.truth_check``."""
    for name, df in (("original", original), ("masked", masked)):
        if not isinstance(df, pd.DataFrame):
            raise LinkriskError(f"the {name} file must be a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise LinkriskError(f"the {name} file has no rows")
        if df.columns.has_duplicates:
            dup = df.columns[df.columns.duplicated()][0]
            raise LinkriskError(f"the {name} file has two columns named {dup!r}; rename one")
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise LinkriskError(f"unknown direction {direction!r}; use original->masked or "
                            "masked->original")
    direction = DIRECTIONS[direction]
    seed = check_seed(seed)
    memory_budget = parse_size(memory_budget)
    if memory_budget < 2**20:
        raise LinkriskError("memory budget must be at least 1 MiB")
    if backend not in ("local", "dask"):
        raise LinkriskError(f"unknown backend {backend!r}; use 'local' or 'dask'")
    if kinds is not None and not isinstance(kinds, Mapping):
        raise LinkriskError(f"kinds must be a mapping column → kind, got {kinds!r}")
    a_df, b_df = (original, masked) if direction == "original->masked" else (masked, original)
    truth = truth_from_ids(a_df, b_df, ids)
    notes: list[str] = []
    t_ab = truth if direction == "original->masked" else _invert(truth, len(original))
    cols = select_qi(original, masked, qi, ids, truth=t_ab, notes=notes, screen=screen_qi)
    k = attribute_kinds(original, cols, kinds, notes=notes)
    for note in notes:
        warnings.warn(note, LinkriskWarning, stacklevel=2)
    check = None
    if parse_columns(ids) is None and not assume_row_order:
        check = row_order_check(a_df[cols], b_df[cols], cols, k, seed)
    ctx = LinkContext(a_df[cols].reset_index(drop=True), b_df[cols].reset_index(drop=True),
                      cols, k, truth, int(memory_budget), int(seed), progress, direction,
                      backend, scheduler)
    ctx.truth_check = check  # type: ignore[attr-defined]
    ctx.notes = notes  # type: ignore[attr-defined]
    return ctx, direction


def _invert(truth: np.ndarray, n_b: int) -> np.ndarray:
    """Row of B for each row of A from the row of A for each row of B (−1 when none)."""
    out = np.full(n_b, -1, np.int64)
    ok = truth >= 0
    out[truth[ok]] = np.flatnonzero(ok)
    return out


def truth_description(ctx: LinkContext, ids: str | Sequence[str] | None) -> str:
    """One phrase for the verdict: how the true pairs were defined (and checked)."""
    cols = parse_columns(ids)
    if cols:
        return f"id column{'s' if len(cols) > 1 else ''} {', '.join(cols)}"
    check = getattr(ctx, "truth_check", None)
    if check is None:
        return "row order (assumed: --assume-row-order, not checked)"
    return check.describe()


def run_attack(ctx: LinkContext, method: str, direction: str, **params: Any) -> AttackResult:
    """Run one registered attack on a prepared context and package its result."""
    if method not in ATTACKS:
        raise LinkriskError(f"unknown attack {method!r}; choose from {', '.join(ATTACKS)}")
    spec = ATTACKS[method]
    accepted = attack_params(method)
    bad = [p for p in params if p not in accepted]
    if bad:
        raise LinkriskError(f"attack {method!r} has no parameter {bad[0]!r}; "
                            f"it accepts: {', '.join(accepted) or 'none'}")
    params = spec.coerce(params)
    t0 = time.perf_counter()
    out: Outcome = spec.run(ctx, **params)
    secs = time.perf_counter() - t0
    s = out.sets
    correct = s.correct
    per = pd.DataFrame({"link": s.link, "candidates": s.count, "true_in_set": s.true_in_set,
                        "correct": correct, "score": s.min_score})
    per.index.name = "record"
    total = float(correct.sum())
    return AttackResult(method=method, n=ctx.n_a, n_released=ctx.n_b, correct_links=total,
                        rate=total / ctx.n_a, per_record=per, qi=list(ctx.qi),
                        direction=direction, params=dict(params), extra=dict(out.extra),
                        seconds=secs)


def attack(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    method: str = "dbrl",
    qi: str | Sequence[str] | None = None,
    *,
    ids: str | Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    direction: str = "original->masked",
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    seed: int = 0,
    progress: Progress | None = None,
    backend: str = "local",
    scheduler: Any = None,
    assume_row_order: bool = False,
    **params: Any,
) -> AttackResult:
    """Link ``masked`` back to ``original`` with attack ``method`` and count correct links.

    The attack links every record a of the attacker's file to a set C(a) of released
    records (the nearest ones, ties included, for the distance attacks); a link counts
    χ(true(a) ∈ C(a))/|C(a)|. The attacks and their papers: docs/methods.md, Attacks.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The attacker's original records and the release.
    method : str
        A registered attack (``ATTACKS``): dbrl, prl, rsrl, gdbrl, ….
    qi : str or sequence of str, optional
        The quasi-identifiers the attacker knows (default: all common columns).
    ids : str or sequence of str, optional
        Id column(s) present in both files that define the truth (default: row order).
    kinds : mapping of str to str, optional
        Attribute-kind overrides (``numeric``, ``ordinal``, ``nominal``).
    direction : str
        ``original->masked`` (the attacker holds original records and searches the release,
        default) or ``masked->original``.
    memory_budget : int
        Bytes of working memory for the blocked engine.
    seed : int
        Tie breaking of the reported link.
    progress : Progress, optional
        ``(done, total)`` callback.
    backend : str
        ``local`` or ``dask`` (nearest-set attacks run block-wise on a Dask cluster; same
        results).
    scheduler : object, optional
        With ``backend="dask"``: a ``distributed.Client`` or an address.
    assume_row_order : bool
        Skip the check that row order is a plausible truth when no ``ids`` are given (see
        :func:`make_context`).
    **params
        The method's parameters (:func:`attack_params`).

    Returns
    -------
    AttackResult
        ``correct_links`` = Σ_a χ(true(a)∈C(a))/|C(a)|, ``rate`` = correct_links / n and a
        ``per_record`` table.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata (distance-based and probabilistic record linkage). Each attack's
    paper: docs/methods.md, Attacks.
    """
    names = resolve_methods(method)
    if len(names) != 1:
        raise LinkriskError(f"attack() runs one method, got {', '.join(names)}; loop over them "
                            "or use linkrisk.assess(..., attacks=[...])")
    ctx, direction = make_context(original, masked, qi, ids=ids, kinds=kinds,
                                  direction=direction, memory_budget=memory_budget, seed=seed,
                                  progress=progress, backend=backend, scheduler=scheduler,
                                  assume_row_order=assume_row_order)
    why = why_not(ctx, names[0], params)
    if why:
        raise LinkriskError(f"{names[0]} cannot run: {why}")
    return run_attack(ctx, names[0], direction, **params)


__all__ = ["ATTACKS", "AttackResult", "LinkriskWarning", "attack", "attack_params",
           "make_context", "resolve_methods", "run_attack", "truth_description", "why_not"]
