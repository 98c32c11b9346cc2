"""Record-linkage attacks behind one entry point, :func:`attack`, which runs one method or
several on one frozen :class:`LinkContext` built from one :class:`LinkSettings`
(definitions: docs/methods.md, Attacks)."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data import (
    attribute_kinds,
    check_scale,
    normalise_categories,
    parse_columns,
    select_qi,
    truth_from_ids,
)
from ..engine.nearest import Progress
from ..errors import LinkriskError, LinkriskWarning
from ..truth import row_order_check
from . import registry  # noqa: F401  (registers the attacks, in registry.ATTACK_MODULES' order)
from .base import ATTACKS, AttackResult, LinkContext, Outcome, results_frame
from .blocking import block_index, check_keys
from .settings import DIRECTIONS, LinkSettings, resolve_settings

#: ``method="all"`` (and ``assess``) leaves the global attack out above this many records
#: (it is O(n log n) in practice but minutes at 10⁵; ask for it by name to run it)
GLOBAL_MAX_N = 20_000


def resolve_methods(methods: str | Sequence[str]) -> list[str]:
    """Split ``"dbrl,rbrl_max"`` or take a list of names, and check every name.

    Parameters
    ----------
    methods : str or sequence of str
        Attack names (``ATTACKS``), comma-separated or as a list, or ``"all"``.

    Returns
    -------
    list of str
        The names; ``"all"`` returns every registered attack (:func:`applicable` narrows that
        to the files).
    """
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
    settings: LinkSettings | None = None,
    **options: Any,
) -> tuple[LinkContext, str]:
    """Validate the inputs once and build the (frozen) :class:`LinkContext` shared by
    attacks; returns it with the canonical direction.

    The linkage options are ``settings`` (a :class:`LinkSettings`, default
    ``LinkSettings()``) with the keywords given (``options``: any field of
    :class:`LinkSettings`, not None) applied, ``qi`` included. Blocking keys
    (``block``) are checked against both files, left out of the QIs and turned into the
    block of every record (``ctx.blocks``, :func:`.blocking.block_index`).
    Integer columns with few distinct values are read as nominal codes
    (:func:`linkrisk.data.attribute_kinds`); with ``screen_qi`` (``assess``) the default
    QIs also leave out id-like and weight-like columns (:func:`linkrisk.data.select_qi`);
    columns of one file only are named; categories that differ between the files only by
    case or spaces are matched (:func:`linkrisk.data.normalise_categories`). Each such
    decision is a :class:`LinkriskWarning` (and in ``ctx.notes``). Numeric QIs whose
    values cannot be standardized are refused (:func:`linkrisk.data.check_scale`). The
    truth is checked first unless ``assume_row_order``: without ``ids`` row order
    (:func:`linkrisk.truth.row_order_check`), with ``ids`` the share of records they pair
    (at least half of the smaller file) and the same test on the records they pair; the
    check's outcome is ``ctx.truth_check``."""
    st = resolve_settings(settings, qi=qi, **options)
    _check_frames(original, masked)
    direction = st.direction
    ids_ = None if st.ids is None else list(st.ids)
    keys = list(st.block or ())
    if keys:
        check_keys(keys, (("original", original), ("released", masked)), st.qi, ids_)
    a_df, b_df = (original, masked) if direction == "original->masked" else (masked, original)
    truth = truth_from_ids(a_df, b_df, ids_)
    if ids_ is not None:
        _check_id_share(truth, len(a_df), len(b_df), ids_)
    notes: list[str] = []
    t_ab = truth if direction == "original->masked" else _invert(truth, len(original))
    cols = select_qi(original, masked, None if st.qi is None else list(st.qi),
                     (ids_ or []) + keys or None, truth=t_ab, notes=notes,
                     screen=st.screen_qi)
    k = attribute_kinds(original, cols, dict(st.kinds or {}), notes=notes)
    for df, what in ((a_df, "attacker's file"), (b_df, "released file")):
        check_scale(df, [c for c in cols if k[c] == "numeric"], what)
    blocks = block_index(a_df, b_df, keys, notes) if keys else None
    a_q, b_q = a_df[cols].reset_index(drop=True), b_df[cols].reset_index(drop=True)
    normalise_categories(a_q, b_q, cols, k, notes)
    for note in notes:
        warnings.warn(note, LinkriskWarning, stacklevel=2)
    check = None
    if not st.assume_row_order:
        if ids_ is None:
            check = row_order_check(a_q, b_q, cols, k, st.seed)
        else:
            check = _check_id_pairs(a_q, b_q, truth, cols, k, st.seed, ids_)
    ctx = LinkContext(a_q, b_q, cols, k, truth, st, truth_check=check, notes=tuple(notes),
                      blocks=blocks)
    return ctx, direction


def _check_frames(original: pd.DataFrame, masked: pd.DataFrame) -> None:
    """Both files are non-empty DataFrames without duplicate column names."""
    for name, df in (("original", original), ("masked", masked)):
        if not isinstance(df, pd.DataFrame):
            raise LinkriskError(f"the {name} file must be a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise LinkriskError(f"the {name} file has no rows")
        if df.columns.has_duplicates:
            dup = df.columns[df.columns.duplicated()][0]
            raise LinkriskError(f"the {name} file has two columns named {dup!r}; rename one")


#: the ids must pair at least this share of the smaller file's records
MIN_ID_SHARE = 0.5


def _check_id_share(truth: np.ndarray, n_a: int, n_b: int, ids: Sequence[str]) -> None:
    """Refuse ids that pair too few records (:data:`MIN_ID_SHARE` of the smaller file): an
    id that was masked, reassigned or taken from another file pairs (almost) nothing, and
    every attack would then "fail" against a truth that is not there."""
    paired = int((truth >= 0).sum())
    small = min(n_a, n_b)
    if paired < MIN_ID_SHARE * small:
        raise LinkriskError(
            f"the id column{'s' if len(ids) > 1 else ''} {', '.join(ids)} pair"
            f"{'' if len(ids) > 1 else 's'} only {paired:,} of the {small:,} records of the "
            f"smaller file ({100 * paired / max(small, 1):.1f} %, at least "
            f"{100 * MIN_ID_SHARE:.0f} % needed): the ids do not identify the same records "
            "in both files (masked, reassigned or from another file?); give the right id "
            "column with --ids")


def _check_id_pairs(a: pd.DataFrame, b: pd.DataFrame, truth: np.ndarray,
                    cols: Sequence[str], kinds: Mapping[str, str], seed: int,
                    ids: Sequence[str]) -> Any:
    """The plausibility test of :func:`linkrisk.truth.row_order_check` on the records the
    ids pair (each original record next to its released record by id): refuses ids that
    pair records no closer than random ones."""
    ok = np.flatnonzero(truth >= 0)
    pa = a.iloc[ok].reset_index(drop=True)
    pb = b.iloc[truth[ok]].reset_index(drop=True)
    try:
        return row_order_check(pa, pb, cols, kinds, seed)
    except LinkriskError as exc:
        m = re.search(r"mean rank [0-9.]+", str(exc))
        raise LinkriskError(
            f"the ids do not pair masked records with their originals: under "
            f"{', '.join(ids)} a record's supposed released partner is no closer than a "
            f"random released record ({m.group(0) if m else 'mean rank near 0.5'}, expected "
            "well below 0.5); check that the id column was not masked or reassigned, or "
            "pass --assume-row-order (in Python assume_row_order=True) to trust the ids "
            "as they are") from None


def _invert(truth: np.ndarray, n_b: int) -> np.ndarray:
    """Row of B for each row of A from the row of A for each row of B (−1 when none)."""
    out = np.full(n_b, -1, np.int64)
    ok = truth >= 0
    out[truth[ok]] = np.flatnonzero(ok)
    return out


def truth_description(ctx: LinkContext, ids: str | Sequence[str] | None = None) -> str:
    """One phrase for the verdict: how the true pairs were defined (and checked); ``ids``
    defaults to the context's."""
    cols = parse_columns(ids) or (list(ctx.settings.ids) if ctx.settings.ids else None)
    check = ctx.truth_check
    if cols:
        head = f"id column{'s' if len(cols) > 1 else ''} {', '.join(cols)}"
        paired = int((np.asarray(ctx.truth) >= 0).sum())
        small = min(ctx.n_a, ctx.n_b)
        pairs = (f"{paired:,} records paired, {100 * paired / max(small, 1):.0f} % of the "
                 "smaller file")
        if check is None:
            return f"{head} ({pairs}; pairing assumed: --assume-row-order, not checked)"
        if not check.checked:
            return f"{head} ({pairs}; pairing not checkable: too few or identical records)"
        return (f"{head} ({pairs}; checked: a record's released partner is on average "
                f"closer than {100 * (1 - check.mean_rank):.0f} % of other released records)")
    if check is None:
        return "row order (assumed: --assume-row-order, not checked)"
    return check.describe()


def run_attack(ctx: LinkContext, method: str, direction: str | None = None, *,
               progress: Progress | None = None, **params: Any) -> AttackResult:
    """Run one registered attack on a prepared context and package its result.

    ``direction`` defaults to the context's (it must agree with it); ``progress(done,
    total)`` reports this attack's progress (default: the settings' callback): the
    attack runs on :meth:`LinkContext.with_progress`, the context itself is unchanged."""
    if method not in ATTACKS:
        raise LinkriskError(f"unknown attack {method!r}; choose from {', '.join(ATTACKS)}")
    if direction is None:
        direction = ctx.direction
    spec = ATTACKS[method]
    accepted = attack_params(method)
    bad = [p for p in params if p not in accepted]
    if bad:
        raise LinkriskError(f"attack {method!r} has no parameter {bad[0]!r}; "
                            f"it accepts: {', '.join(accepted) or 'none'}")
    params = spec.coerce(params)
    if progress is not None:
        ctx = ctx.with_progress(progress)
    t0 = time.perf_counter()
    out: Outcome = spec.run(ctx, **params)
    secs = time.perf_counter() - t0
    s = out.sets
    correct = s.correct
    per = pd.DataFrame({"link": s.link, "candidates": s.count, "true_in_set": s.true_in_set,
                        "correct": correct, "score": s.min_score})
    per.index.name = "record"
    if ctx.blocks is not None:  # the true partner is in another block (or a key missing)
        per["blocked_out"] = (np.asarray(ctx.truth) >= 0) & ~ctx.blocks.linkable(ctx.truth)
        out.extra.update(block=list(ctx.blocks.keys), blocks=ctx.blocks.count,
                         not_linkable_blocking=int(per["blocked_out"].sum()))
    total = float(correct.sum())
    return AttackResult(method=method, n=ctx.n_a, n_released=ctx.n_b, correct_links=total,
                        rate=total / ctx.n_a, per_record=per, qi=list(ctx.qi),
                        direction=direction, params=dict(params), extra=dict(out.extra),
                        seconds=secs)


class AttackResults(dict):
    """The results of several attacks on one pair of files: ``{method: AttackResult}`` in
    the order asked for (registry order for ``"all"``), as :func:`attack` returns them for
    several methods.

    Besides the mapping: ``skipped`` (method → why it did not run: not applicable, or with
    ``"all"`` failed), ``failed`` (named methods that raised while running, with
    ``errors="collect"``), ``qi``, ``kinds``, ``direction``, ``truth`` (how the true pairs
    were defined and checked) and ``settings`` (the :class:`LinkSettings`)."""

    def __init__(self, results: Mapping[str, AttackResult] = (), *,
                 skipped: Mapping[str, str] | None = None,
                 failed: Mapping[str, str] | None = None, qi: Sequence[str] = (),
                 kinds: Mapping[str, str] | None = None, direction: str = "original->masked",
                 truth: str = "", settings: LinkSettings | None = None) -> None:
        super().__init__(results)
        self.skipped = dict(skipped or {})
        self.failed = dict(failed or {})
        self.qi = list(qi)
        self.kinds = dict(kinds or {})
        self.direction = direction
        self.truth = truth
        self.settings = settings if settings is not None else LinkSettings()

    def to_dicts(self) -> list[dict[str, Any]]:
        """Each result's summary (:meth:`AttackResult.to_dict`), in order."""
        return [r.to_dict() for r in self.values()]

    def to_frame(self) -> pd.DataFrame:
        """One row per attack (index ``attack``, in order): ``rate_%``, ``correct_links``,
        ``records``, ``seconds``; the attacks not run are left out (see ``skipped``)."""
        return results_frame(self.values())

    def _repr_html_(self) -> str:
        import html

        skipped = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>"
                          for k, v in self.skipped.items())
        return (f"<p>QIs: {html.escape(', '.join(map(str, self.qi)))}; truth: "
                f"{html.escape(self.truth)}</p>" + self.to_frame().to_html()
                + (f"<p>not run:</p><ul>{skipped}</ul>" if skipped else ""))

    def __repr__(self) -> str:
        rates = ", ".join(f"{k}: {r.rate:.4f}" for k, r in self.items())
        return (f"AttackResults({{{rates}}}"
                + (f", skipped={list(self.skipped)}" if self.skipped else "")
                + (f", failed={list(self.failed)}" if self.failed else "") + ")")


def route_params(names: Sequence[str], params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each attack's share of ``params``: a parameter goes to every named attack that
    declares it; one that none declares is an error."""
    unused = [k for k in params if not any(k in ATTACKS[m].params for m in names)]
    if unused:
        raise LinkriskError(f"no chosen attack takes parameter {unused[0]!r}")
    return {m: {k: v for k, v in params.items() if k in ATTACKS[m].params} for m in names}


def run_attacks(ctx: LinkContext, names: Sequence[str],
                params: Mapping[str, Mapping[str, Any]] | None = None, *,
                progress_for: Callable[[str], Progress | None] | None = None,
                stop: bool = False) -> tuple[dict[str, AttackResult], dict[str, str]]:
    """Run ``names`` one after the other on one prepared context (its column checks,
    truth, kinds and converted matrices are shared); ``progress_for(name)`` gives each
    attack its callback. Returns (results, failures): an attack that raises a
    :class:`LinkriskError` is listed with the message and the others still run (with
    ``stop``, the error is raised, naming the attack). With
    ``backend="dask"`` and no scheduler, one local cluster serves every attack (closed
    at the end)."""
    params = params or {}
    owned = None
    if ctx.backend == "dask" and ctx.scheduler is None and names:
        from ..engine.nearest.distributed import client_for

        client, own = client_for(None)
        ctx = ctx.with_scheduler(client)
        owned = client if own else None
    results: dict[str, AttackResult] = {}
    failed: dict[str, str] = {}
    try:
        for name in names:
            cb = progress_for(name) if progress_for is not None else None
            try:
                results[name] = run_attack(ctx, name, progress=cb, **params.get(name, {}))
            except LinkriskError as exc:
                if stop:
                    raise LinkriskError(f"{name}: {exc}") from exc
                failed[name] = str(exc)
    finally:
        if owned is not None:
            owned.close()
    return results, failed


def attack(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    method: str | Sequence[str] = "dbrl",
    qi: str | Sequence[str] | None = None,
    *,
    settings: LinkSettings | None = None,
    ids: str | Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    direction: str | None = None,
    memory_budget: int | str | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
    scheduler: Any = None,
    assume_row_order: bool | None = None,
    block: str | Sequence[str] | None = None,
    progress_for: Callable[[str], Progress | None] | None = None,
    errors: str = "raise",
    **params: Any,
) -> AttackResult | AttackResults:
    """Link ``masked`` back to ``original`` with one attack or several and count correct
    links.

    Parameters
    ----------
    original, masked : pandas.DataFrame
        The original file and the release.
    method : str or sequence of str
        One attack (``"dbrl"`` or ``["dbrl"]``), several (``"dbrl,rbrl_sum"`` or a list),
        or ``"all"``: every attack that applies to the QIs' kinds (the others, and the
        global attack above :data:`GLOBAL_MAX_N` records, are listed in ``.skipped``).
    qi, ids, kinds, direction, memory_budget, seed, progress, backend, scheduler, assume_row_order, block
        The linkage options (:class:`LinkSettings`): the keywords given (not None) override
        those of ``settings``; without ``settings`` they build one. ``qi``: the
        quasi-identifiers the attacker knows (default: all common columns); ``ids``: id
        column(s) in both files defining the truth (default: row order, checked unless
        ``assume_row_order``); ``direction``: ``original->masked`` (default) or
        ``masked->original``; ``memory_budget``: bytes of working memory of the blocked
        engine; ``seed``: tie breaking of the reported links; ``backend``: ``local`` or
        ``dask`` (``scheduler`` = a ``distributed.Client`` or an address; same results);
        ``block``: blocking keys, records compared only within blocks of equal keys
        (docs/methods.md, "Blocking").
    settings : LinkSettings, optional
        All linkage options in one validated object.
    progress_for : callable, optional
        Several methods: ``progress_for(method)`` returns that attack's ``(done, total)``
        callback (e.g. one progress bar each); default: ``settings.progress`` for all.
    errors : {"raise", "collect"}
        ``"raise"`` stops at the first attack that fails with a :class:`LinkriskError`;
        ``"collect"`` runs the others and lists it in ``.failed`` (named methods).
        With ``"all"`` a failing attack is listed in ``.skipped``.
    **params
        The method's parameters; with several methods each goes to every method that
        declares it (one that none declares is an error).

    Returns
    -------
    AttackResult or AttackResults
        An :class:`AttackResult` for one method; an :class:`AttackResults` mapping
        (method → result) for several, for ``"all"``, and with ``errors="collect"`` (a
        failure is then listed, not raised). ``correct_links`` = Σ_a χ(true(a)∈C(a))/|C(a)| (Herranz et al.'s DBRL measure),
        ``rate`` = correct_links / n and a ``per_record`` table, for each attack. Several
        attacks share one validated context (column checks, truth, kinds, the row-order
        check and the numeric conversion are done once); each result equals the one
        method's separate call bit for bit. Definitions: docs/methods.md, Attacks.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control
    methods for microdata (distance-based and probabilistic record linkage). Each attack's
    paper: docs/methods.md, Attacks.
    """
    if errors not in ("raise", "collect"):
        raise LinkriskError(f"errors must be 'raise' or 'collect', got {errors!r}")
    everything = isinstance(method, str) and method.strip() == "all"
    names = resolve_methods(method)
    single = not everything and len(names) == 1 and errors == "raise"
    routed = {names[0]: dict(params)} if single else route_params(names, params)
    st = resolve_settings(settings, qi=qi, ids=ids, kinds=kinds, direction=direction,
                          memory_budget=memory_budget, seed=seed, progress=progress,
                          backend=backend, scheduler=scheduler,
                          assume_row_order=assume_row_order, block=block)
    ctx, direction = make_context(original, masked, settings=st)
    skipped = _not_applicable(ctx, names, routed, everything)
    if single:
        return run_attack(ctx, names[0], direction, **routed[names[0]])
    runnable = [n for n in names if n not in skipped]
    results, failed = run_attacks(ctx, runnable, routed, progress_for=progress_for,
                                  stop=errors == "raise" and not everything)
    if everything:
        skipped.update(failed)
        failed = {}
    if everything and not results:  # every attack skipped or failed: no verdict at all
        raise LinkriskError("no attack could run: " + "; ".join(f"{k}: {v}"
                                                               for k, v in skipped.items()))
    return AttackResults(results, skipped=skipped, failed=failed, qi=ctx.qi, kinds=ctx.kinds,
                         direction=direction, truth=truth_description(ctx), settings=st)


def _not_applicable(ctx: LinkContext, names: Sequence[str],
                    routed: Mapping[str, Mapping[str, Any]], everything: bool
                    ) -> dict[str, str]:
    """Every attack's applicability, checked before any runs: method → why not. A named
    method that cannot run is an error; with ``"all"`` it is skipped (the global attack
    also above :data:`GLOBAL_MAX_N` records), and nothing left is an error."""
    skipped: dict[str, str] = {}
    for name in names:
        why = why_not(ctx, name, routed[name])
        if why is None and everything and name == "gdbrl" and max(ctx.n_a, ctx.n_b) > GLOBAL_MAX_N:
            why = (f"files above {GLOBAL_MAX_N:,} records (the global attack takes minutes "
                   "there); ask for it by name (--method gdbrl) to run it")
        if why is not None:
            if not everything:
                raise LinkriskError(f"{name} cannot run on these files: {why}")
            skipped[name] = why
    if everything and len(skipped) == len(names):
        raise LinkriskError("no attack applies to these files: "
                            + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return skipped


__all__ = ["ATTACKS", "DIRECTIONS", "GLOBAL_MAX_N", "AttackResult", "AttackResults",
           "LinkContext", "LinkSettings", "LinkriskWarning", "attack", "attack_params",
           "make_context", "resolve_methods", "route_params", "run_attack", "run_attacks",
           "truth_description", "why_not"]
