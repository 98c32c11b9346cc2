"""Record-linkage attacks behind one entry point, :func:`attack` (definitions:
docs/methods.md, Attacks)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..data import attribute_kinds, parse_columns, select_qi, truth_from_ids
from ..engine.nearest import DEFAULT_MEMORY_BUDGET, Progress
from ..errors import LinkriskError

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
    """Split ``"dbrl,rbrl_max"`` (or ``"all"``) and check every name."""
    names = parse_columns(methods) or []
    if names == ["all"]:
        return list(ATTACKS)
    unknown = [m for m in names if m not in ATTACKS]
    if unknown:
        raise LinkriskError(f"unknown attack {unknown[0]!r}; choose from {', '.join(ATTACKS)}")
    if not names:
        raise LinkriskError("no attack method given")
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


def make_context(
    original: pd.DataFrame,
    masked: pd.DataFrame,
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
) -> tuple[LinkContext, str]:
    """Validate the inputs once and build the :class:`LinkContext` shared by attacks."""
    for name, df in (("original", original), ("masked", masked)):
        if not isinstance(df, pd.DataFrame):
            raise LinkriskError(f"the {name} file must be a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise LinkriskError(f"the {name} file has no rows")
    if direction not in DIRECTIONS:
        raise LinkriskError(f"unknown direction {direction!r}; use original->masked or "
                            "masked->original")
    direction = DIRECTIONS[direction]
    cols = select_qi(original, masked, qi, ids)
    k = attribute_kinds(original, cols, kinds)
    a_df, b_df = (original, masked) if direction == "original->masked" else (masked, original)
    truth = truth_from_ids(a_df, b_df, ids)
    if backend not in ("local", "dask"):
        raise LinkriskError(f"unknown backend {backend!r}; use 'local' or 'dask'")
    if memory_budget < 2**20:
        raise LinkriskError("memory budget must be at least 1 MiB")
    ctx = LinkContext(a_df[cols].reset_index(drop=True), b_df[cols].reset_index(drop=True),
                      cols, k, truth, int(memory_budget), int(seed), progress, direction,
                      backend, scheduler)
    return ctx, direction


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
    **params: Any,
) -> AttackResult:
    """Link ``masked`` back to ``original`` with attack ``method`` and count correct links.

    ``qi``: the quasi-identifiers the attacker knows (default: all common columns);
    ``ids``: id column(s) present in both files that define the truth (default: row order);
    ``kinds``: attribute-kind overrides; ``direction``: ``original->masked`` (the attacker
    holds original records and searches the release, default) or ``masked->original``;
    ``memory_budget``: bytes of working memory for the blocked engine; ``seed``: tie
    breaking of the reported link; ``backend``: ``local`` or ``dask`` (nearest-set attacks
    run block-wise on a Dask cluster, ``scheduler`` = a ``distributed.Client`` or an
    address; same results). Extra keyword arguments are the method's parameters.

    Returns an :class:`AttackResult` with ``correct_links`` = Σ_a χ(true(a)∈C(a))/|C(a)|,
    ``rate`` = correct_links / n and a ``per_record`` table.
    """
    resolve_methods(method)
    ctx, direction = make_context(original, masked, qi, ids=ids, kinds=kinds,
                                  direction=direction, memory_budget=memory_budget, seed=seed,
                                  progress=progress, backend=backend, scheduler=scheduler)
    return run_attack(ctx, method, direction, **params)


__all__ = ["ATTACKS", "AttackResult", "attack", "attack_params", "make_context", "run_attack",
           "resolve_methods"]
