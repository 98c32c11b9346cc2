"""One-call assessment of a release: every applicable attack, the measures of docs/methods.md,
per-record risk and an HTML report (:func:`assess`)."""

from __future__ import annotations

import datetime as _dt
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .attacks import (
    GLOBAL_MAX_N,
    LinkSettings,
    make_context,
    resolve_methods,
    run_attacks,
    truth_description,
    why_not,
)
from .attacks.base import AttackResult, plain, results_frame
from .attacks.settings import resolve_settings
from .data import unchanged_qis, unmatched_columns
from .engine.nearest import Progress
from .errors import LinkriskError, LinkriskWarning
from .measures import numeric_measures, per_record_risk, worst_case
from .scenarios import (
    as_scenario_result,
    fast_attacks,
    parse_scenarios,
    search_scenarios,
    table_rows,
)

#: attacks of ``attacks="all"`` by the kinds of the QIs
NUMERIC_ATTACKS = ("dbrl", "dbrl2", "dbrl_l1", "mahalanobis", "mahalanobis0", "kernel",
                   "rbrl_sum", "rbrl_max", "prl")
CATEGORICAL_ATTACKS = ("dbrl_hamming", "prl")
MIXED_ATTACKS = ("dbrl_mixed", "prl")
# GLOBAL_MAX_N (imported above): ``attacks="all"`` adds the global attack up to this many
# records, the same limit as ``linkrisk.attack(..., method="all")``


@dataclass
class Assessment:
    """What :func:`assess` found. ``results``: attack name → :class:`AttackResult`;
    ``skipped``: attack name → why it could not run; ``measures``: DLD, PLD, RSLD, ID, IL
    (and IL1..IL5), PIL, DR, Score (numeric files); ``records``: per-record risk joined with
    the attacker's QI values; ``settings``: what was run."""

    results: dict[str, AttackResult]
    skipped: dict[str, str]
    measures: dict[str, Any]
    records: pd.DataFrame
    settings: dict[str, Any]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: frequency and population risk of the release on its categorical QIs, or None
    frequency: Any = None
    #: attacker scenarios (:mod:`linkrisk.scenarios`): the full QI set, the user
    #: scenarios and those of the search, each a :class:`~linkrisk.scenarios.Scenario`
    scenarios: list[Any] = field(default_factory=list)
    #: the scenario that gives the worst case when it is not the full QI set, else None
    worst_scenario: Any = None
    #: per QI: best fast-attack rate alone and without it (leave one out), or None
    drivers: pd.DataFrame | None = None
    #: per attacker record: the QI whose removal most lowers its link probability
    record_drivers: pd.DataFrame | None = None
    #: the search's strategy, bound, scenarios scored, attacks run, seconds, greedy path
    scenario_search: dict[str, Any] = field(default_factory=dict)
    #: QIs the release carries unchanged for all or most records: column →
    #: ``{"share_identical", "unique_records"}`` (:func:`linkrisk.data.unchanged_qis`)
    unchanged: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: columns of one file only, not assessed (the default QIs are the common columns)
    dropped: list[str] = field(default_factory=list)
    #: attribute disclosure of the ``sensitive`` columns (:func:`_attribute`), or None
    attribute: dict[str, Any] | None = None
    #: anonymeter's linkability attack on the release (``linkability=True``), or None
    linkability: dict[str, Any] | None = None

    @property
    def attribute_worst(self) -> dict[str, Any] | None:
        """The attribute section's figure: the largest share of attacker records whose
        sensitive value is inferred through an attack's links (``attack``, ``sensitive``,
        ``rate``, ``inferred``), or None without sensitive columns."""
        linked = (self.attribute or {}).get("linked") or {}
        cand = [{"attack": k, "sensitive": s, "rate": float(v["rate"]),
                 "inferred": int(v["inferred"])}
                for k, per in linked.items() for s, v in per.items()]
        return max(cand, key=lambda d: d["rate"]) if cand else None

    @property
    def sections(self) -> list[dict[str, Any]]:
        """One entry per threat model present: ``identity`` (the worst-case
        re-identification) and, with sensitive columns, ``attribute`` (values inferred
        through the links); each with its ``risk`` in [0, 1], what it measures and whether
        it ``exceeds`` ``max_risk``. The overall verdict is the worst of them."""
        mr = self.max_risk
        w = self.worst
        out = [{"threat": "identity", "risk": float(w.rate), "attack": w.method,
                "measure": "records re-identified by the worst attack"}]
        aw = self.attribute_worst
        if aw is not None:
            out.append({"threat": "attribute", "risk": aw["rate"], "attack": aw["attack"],
                        "sensitive": aw["sensitive"],
                        "measure": f"records whose {aw['sensitive']} is inferred through "
                                   f"{aw['attack']}'s links"})
        for d in out:
            d["exceeds"] = mr is not None and 100.0 * d["risk"] > mr
        return out

    @property
    def verdict_section(self) -> dict[str, Any]:
        """The section with the highest risk: it gives the overall verdict."""
        return max(self.sections, key=lambda d: d["risk"])

    @property
    def verdict_notes(self) -> list[str]:
        """What the verdict must say besides the worst case: the QIs released unchanged
        that identify records on their own, and the columns not assessed because they are
        in one file only."""
        out = []
        ident = {c: u for c, u in self.unchanged.items() if u["unique_records"] > 0}
        if ident:
            out.append("QIs released unchanged that identify records alone (records unique "
                       "on that value): " + ", ".join(
                           f"{c} {u['unique_records']:,}" + (
                               "" if u["share_identical"] == 1 else
                               f" ({100 * u['share_identical']:.0f} % of values unchanged)")
                           for c, u in ident.items()))
        if self.dropped:
            out.append("not assessed (in one file only): " + ", ".join(map(str, self.dropped)))
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per attack run: rate (%), correct links, records, seconds (worst first)."""
        return results_frame(self.results.values(), worst_first=True)

    def _repr_html_(self) -> str:
        w = self.worst
        head = (f"<p><b>Worst case</b>: {_html(w.method)} re-identifies "
                f"{100 * w.rate:.2f} % of {w.n:,} records; QIs: "
                f"{_html(', '.join(map(str, self.settings.get('qi', []))))}</p>")
        extra = "".join(f"<p>{_html(t)}</p>" for t in self.verdict_notes)
        return head + extra + self.to_frame().to_html()

    @property
    def max_risk(self) -> float | None:
        """The acceptable worst case in % given to :func:`assess` (None: not set)."""
        return self.settings.get("max_risk")

    @property
    def exceeds(self) -> bool:
        """Whether any section (:attr:`sections`: the worst case of re-identification, and
        the attribute disclosure when sensitive columns are given) exceeds ``max_risk``
        (False when it is not set)."""
        return any(d["exceeds"] for d in self.sections)

    @property
    def worst(self) -> AttackResult:
        """The attack that re-identifies the most records, over the attacker scenarios
        (its ``qi`` are the QIs of the scenario; :attr:`worst_scenario` names it)."""
        full = worst_case(self.results)
        sc = self.worst_scenario
        if sc is not None and sc.result is not None and sc.result.rate > full.rate:
            return sc.result
        return full

    @property
    def worst_attacker(self) -> str:
        """Who gives the worst case: 'an attacker who knows PTOTVAL alone' or 'an attacker
        who knows all N QIs'."""
        if self.worst_scenario is not None and self.worst.qi != self.settings["qi"]:
            return self.worst_scenario.describe()
        return f"an attacker who knows all {len(self.settings['qi'])} QIs"

    def to_dict(self) -> dict[str, Any]:
        w = self.worst
        sc = self.worst_scenario if w.qi != self.settings["qi"] else None
        return {"worst_case": {"attack": w.method, "rate": w.rate,
                               "correct_links": w.correct_links,
                               "scenario": "all QIs" if sc is None else sc.name,
                               "qi": list(w.qi), "attacker": self.worst_attacker},
                "scenarios": [sc.to_dict() for sc in self.scenarios],
                "scenario_search": {k: plain(v) for k, v in self.scenario_search.items()},
                "drivers": table_rows(self.drivers),
                "record_drivers": ({} if self.record_drivers is None else
                                   {k: int(v) for k, v in self.record_drivers["driver"]
                                    .value_counts().items() if k}),
                "attacks": [r.to_dict() for r in self.results.values()],
                "skipped": dict(self.skipped),
                "measures": {k: plain(v) for k, v in self.measures.items()},
                "records_at_risk": {f"max_risk>={t}": int((self.records["max_risk"] >= t).sum())
                                    for t in (0.5, 1.0)},
                "settings": {k: plain(v) for k, v in self.settings.items()},
                "exceeds_max_risk": self.exceeds if self.max_risk is not None else None,
                "sections": [{k: plain(v) for k, v in d.items()} for d in self.sections],
                "verdict": {"section": self.verdict_section["threat"],
                            "risk": self.verdict_section["risk"],
                            "exceeding": [d["threat"] for d in self.sections if d["exceeds"]]},
                **({"attribute": _plain_tree(self.attribute)}
                   if self.attribute is not None else {}),
                **({"linkability": _plain_tree(self.linkability)}
                   if self.linkability is not None else {}),
                "unchanged": {k: dict(v) for k, v in self.unchanged.items()},
                "not_assessed": list(self.dropped),
                "notes": list(self.notes), "warnings": list(self.warnings),
                "seconds": round(self.seconds, 3),
                **({"frequency_risk": self.frequency.to_dict()}
                   if self.frequency is not None else {})}

    def to_html(self, title: str | None = None, *, include_records: bool = False,
                inputs: Sequence[Mapping[str, Any]] | None = None,
                command: str | None = None) -> str:
        """A self-contained HTML report (see :mod:`linkrisk.report`). Record values are
        left out unless ``include_records`` (the report then carries a banner);
        ``inputs``: ``[{"role", "name", "sha256"}]`` of the files; ``command``: the command
        that reproduces the run."""
        from .report import render_html

        page = render_html(self, title=title, include_records=include_records,
                           inputs=inputs, command=command)
        if self.frequency is not None:  # the frequency-risk section before </body>
            cut = page.rfind("</body>")
            cut = len(page) if cut < 0 else cut
            page = page[:cut] + self.frequency.to_html() + page[cut:]
        return page


def _plain_tree(v: Any) -> Any:
    """Dicts and lists of numpy scalars as plain JSON-able Python."""
    if isinstance(v, Mapping):
        return {str(k): _plain_tree(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain_tree(x) for x in v]
    return plain(v)


def _html(text: str) -> str:
    import html

    return html.escape(str(text))


def default_attacks(kinds: Mapping[str, str], rank_swap_p: float | None = None) -> list[str]:
    """The attacks ``attacks="all"`` considers for QIs of these kinds: the numeric family
    (with the rank-swap attacks when ``rank_swap_p`` is given), the mixed or the categorical
    one, and the global attack. :func:`linkrisk.attacks.why_not` then removes those that
    cannot run on the files (each is listed as skipped with the reason)."""
    vals = set(kinds.values())
    if vals == {"numeric"}:
        names = list(NUMERIC_ATTACKS)
        if rank_swap_p is not None:
            names += ["rsrl", "rsrl_union"]
    elif "numeric" in vals:
        names = list(MIXED_ATTACKS)
    else:
        names = list(CATEGORICAL_ATTACKS)
    return names + ["gdbrl"]


def applicable_attacks(kinds: Mapping[str, str], n_a: int, n_b: int,
                       rank_swap_p: float | None = None,
                       global_max_n: int = GLOBAL_MAX_N) -> list[str]:
    """The attacks ``attacks="all"`` runs for QIs of these kinds and these file sizes."""
    names = default_attacks(kinds, rank_swap_p)
    if not (n_a == n_b and n_a <= global_max_n):
        names.remove("gdbrl")
    return names


def _global_metric(kinds: Mapping[str, str]) -> str:
    vals = set(kinds.values())
    return "euclidean" if vals == {"numeric"} else "hamming" if "numeric" not in vals else "mixed"


def assess(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    qi: str | Sequence[str] | None = None,
    attacks: str | Sequence[str] = "all",
    *,
    ids: str | Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    rank_swap_p: float | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    global_max_n: int = GLOBAL_MAX_N,
    settings: LinkSettings | None = None,
    memory_budget: int | str | None = None,
    seed: int | None = None,
    progress: Callable[[str], Progress | None] | None = None,
    assume_row_order: bool | None = None,
    max_risk: float | None = None,
    weights: str | None = None,
    household: str | None = None,
    suda_max_size: int | None = None,
    scenarios: str = "all",
    max_scenarios: int | None = None,
    user_scenarios: str | Sequence[str] | Mapping[str, Any] | None = None,
    synthetic: bool = False,
    holdout: pd.DataFrame | None = None,
    sensitive: str | Sequence[str] | None = None,
    linkability: bool = False,
    block: str | Sequence[str] | None = None,
) -> Assessment:
    """Run the attacks and measures a data owner needs before releasing ``masked``.

    ``attacks``: ``"all"`` (every attack applicable to the QI kinds: distance, rank,
    Mahalanobis, kernel, probabilistic, the global attack when the files have equal sizes
    up to ``global_max_n`` records, and the rank-swap attacks when ``rank_swap_p`` is
    given; the others are listed in ``skipped`` with the reason) or a list of names (each
    must apply to the files). ``params``: per-attack parameters, e.g. ``{"prl": {"q":
    20}}``. ``settings``: the linkage options as one :class:`~linkrisk.LinkSettings`
    (``qi``, ``ids``, ``kinds``, ``memory_budget``, ``seed``, ``assume_row_order`` given
    as keywords override it; the default QIs are screened, ``screen_qi=True``).
    ``progress(label)`` returns a ``(done, total)`` callback for each attack (or
    None). ``assume_row_order``: skip the check that row order is a plausible truth when no
    ``ids`` are given (:func:`linkrisk.truth.row_order_check`). ``max_risk``: the
    acceptable worst case in % (sets the verdict bands, see :attr:`Assessment.exceeds`).

    Measures (docs/methods.md, Measures), for numeric QIs with records in the same order: DLD (dbrl rate, %),
    PLD (prl), RSLD (rsrl), ID (interval disclosure), IL (Domingo-Ferrer & Torra 2001) and
    PIL (Mateo-Sanz et al. 2005), DR = 0.25·DLD + 0.25·PLD + 0.5·ID (with RSLD:
    (RSLD+DLD+PLD)/6 + 0.5·ID), Score = (IL + DR)/2. Per-record risk: each record's best
    attack probability of re-identification and the share of attacks that link it.

    Frequency and population risk (when the QIs include categorical ones): sample and
    population frequencies, the individual, global and household risk (``weights`` and
    ``household``: columns of the released file) and SUDA2 scores (MSUs of at most
    ``suda_max_size`` keys) of the release on its categorical QIs, sdcMicro's measures
    (:func:`linkrisk.measures.frequency.frequency_risk`, docs/methods.md); the per-record
    table gains ``fk``, ``freq_risk`` (and ``household_risk``, ``dis_score``) of each
    record's released counterpart.

    Attacker scenarios (docs/methods.md, Attacker scenarios): the worst case is taken over
    the QI sets an attacker may know, not only over the attacks on all QIs. ``scenarios``:
    ``"all"`` (every single QI, every pair and a greedy forward search, scored with the
    fast attacks; the other attacks run on the worst scenario found), ``"greedy"`` (no
    pairs) or ``"none"``; ``max_scenarios`` bounds the QI sets scored;
    ``user_scenarios``: what the owner believes an intruder holds, ``{"name": ["a",
    "b"]}`` or ``["name=a,b"]`` (every attack runs on each). :attr:`Assessment.worst`,
    :attr:`~Assessment.exceeds` and the verdict use the worst scenario; ``drivers`` and
    ``record_drivers`` say which attribute drives the risk.

    ``synthetic=True``: ``masked`` is a synthetic release (no record of it is a version of
    an original one); returns a :class:`linkrisk.synthetic.SyntheticRisk` instead (DCR,
    membership inference, anonymeter's attacks; ``holdout``: original records the
    generator never saw; ``sensitive``: the inference attack's secrets). Otherwise
    ``sensitive`` adds attribute disclosure (:mod:`linkrisk.measures.attribute`) to the
    assessment's ``attribute`` (l-diversity and t-closeness of the release's categorical
    QI patterns, and the sensitive values inferred through each attack's links).

    ``linkability=True`` (masked releases): also anonymeter's linkability attack on the
    release (:func:`linkrisk.synthetic.linkability`, the QIs split in two halves, no
    control set), shown beside true re-identification in :attr:`Assessment.linkability`
    and the report: it counts attacker records whose two halves point to the same
    released record, right or wrong, and needs no truth; re-identification counts the
    links to the record's own released version.

    ``block``: blocking keys (e.g. categorical QIs such as region and sex, known exactly by
    the attacker): every attack compares records only within blocks of equal keys, and the
    keys leave the QIs (docs/methods.md, "Blocking"); the report names them."""
    t0 = time.perf_counter()
    if synthetic:
        return _synthetic(original, masked, holdout, qi, sensitive, seed,  # type: ignore[return-value]
                          max_risk)
    if holdout is not None:
        raise LinkriskError("a holdout file is for synthetic releases: pass synthetic=True")
    given = parse_scenarios(user_scenarios)
    _check_percentages(max_risk, rank_swap_p)
    explicit = not (isinstance(attacks, str) and attacks == "all")
    names = resolve_methods(attacks) if explicit else []
    st = resolve_settings(settings, qi=qi, ids=ids, kinds=kinds,
                          memory_budget=memory_budget, seed=seed,
                          assume_row_order=assume_row_order, screen_qi=True, block=block)
    if st.direction != "original->masked":
        raise LinkriskError("assess links the original file to the release "
                            "(direction original->masked); use linkrisk.attack for the "
                            "other direction")
    ids = None if st.ids is None else list(st.ids)
    sens = _sensitive_columns(sensitive, st, original, masked)
    ctx, direction, warned = _linkage_context(original, masked, sens, st)
    if not explicit:
        names = default_attacks(ctx.kinds, rank_swap_p)
    params = _attack_params(names, params, rank_swap_p, ctx)
    # every attack's applicability is checked before any runs
    skipped = _skipped(ctx, names, params, explicit, global_max_n)
    runnable = [n for n in names if n not in skipped]

    results, failed = run_attacks(ctx, runnable, params, progress_for=progress)
    skipped.update(failed)
    if not results:
        raise LinkriskError("no attack could run: " + "; ".join(f"{k}: {v}"
                                                               for k, v in skipped.items()))

    found = search_scenarios(ctx, runnable, params, results=results, strategy=scenarios,
                             max_scenarios=max_scenarios, user=given,
                             fast=fast_attacks(names, explicit))
    worst_sc = max([found.worst, *found.user], key=lambda sc: sc.rate)
    worst_sc = None if worst_sc.kind == "all QIs" else worst_sc
    measures, notes = _measures(original, masked, ctx.qi, ctx.kinds, ids, results,
                                ctx.truth)
    extra = [] if worst_sc is None else [as_scenario_result(worst_sc)]
    per = per_record_risk({**results, **{r.method: r for r in extra if r is not None}})
    records = pd.concat([per, ctx.a_df.reset_index(drop=True).set_axis(per.index)], axis=1)
    t_ab = np.asarray(ctx.truth)
    unchanged = unchanged_qis(original.reset_index(drop=True), masked.reset_index(drop=True),
                              ctx.qi, t_ab)
    dropped = [] if st.qi is not None else sum(
        unmatched_columns(original, masked, ids or [])[:2], [])
    settings = _settings_record(ctx, st, direction, ids, names, params, rank_swap_p, max_risk)
    freq = _frequency(masked, ctx, weights, household, suda_max_size, records, notes)
    if freq is not None:
        settings.update(weights=weights, household=household)
    if worst_sc is not None and worst_sc.rate > worst_case(results).rate:
        measures["worst_case_%"] = 100.0 * worst_sc.rate
    settings.update(scenarios=scenarios, max_scenarios=found.info["max_scenarios"],
                    user_scenarios={k: list(v) for k, v in given.items()})
    if found.info["stopped_at_limit"]:
        notes.append(f"the scenario search stopped at {found.info['max_scenarios']} QI sets "
                     "(max_scenarios); the worst case is over those scored")
    return Assessment(results, skipped, measures, records, settings,
                      time.perf_counter() - t0, notes, warned, freq,
                      scenarios=[*found.scenarios[:1], *found.user, *found.scenarios[1:]],
                      worst_scenario=worst_sc, drivers=found.drivers,
                      record_drivers=found.record_drivers,
                      scenario_search={**found.info, "greedy": found.greedy},
                      unchanged=unchanged, dropped=dropped,
                      attribute=_attribute(original, masked, results, sensitive, kinds_used(ctx)),
                      linkability=_linkability(original, masked, ctx.qi, int(ctx.seed))
                      if linkability else None)


def _synthetic(original: pd.DataFrame, masked: pd.DataFrame, holdout: Any, qi: Any,
               sensitive: Any, seed: int | None, max_risk: float | None) -> Any:
    """``assess(synthetic=True)``: the synthetic-data risk of the release."""
    from .synthetic import synthetic_risk

    sens = [sensitive] if isinstance(sensitive, str) else sensitive
    return synthetic_risk(original, masked, holdout, qi=None if qi is None else (
        [qi] if isinstance(qi, str) else list(qi)), sensitive=sens,
        seed=0 if seed is None else int(seed), max_risk=max_risk)


def _settings_record(ctx: Any, st: Any, direction: str, ids: list[str] | None,
                     names: list[str], params: dict[str, dict[str, Any]],
                     rank_swap_p: float | None, max_risk: float | None) -> dict[str, Any]:
    """The settings an assessment records (report, JSON, reproduction)."""
    return {"qi": list(ctx.qi), "kinds": dict(ctx.kinds), "direction": direction,
            "n_attacker": ctx.n_a, "n_released": ctx.n_b,
            "truth": truth_description(ctx, ids),
            "attacks": names, "params": params, "rank_swap_p": rank_swap_p,
            "memory_budget": int(ctx.memory_budget), "seed": int(ctx.seed),
            "max_risk": None if max_risk is None else float(max_risk),
            "block": None if st.block is None else list(st.block),
            "linkrisk": _version(), "date": _dt.datetime.now().isoformat(timespec="seconds")}


def _check_percentages(max_risk: Any, rank_swap_p: Any) -> None:
    """``max_risk`` and ``rank_swap_p`` are percentages in (0, 100] when given."""
    if max_risk is not None and not (isinstance(max_risk, (int, float))
                                     and 0 < float(max_risk) <= 100):
        raise LinkriskError(f"max_risk must be a percentage in (0, 100], got {max_risk!r}")
    if rank_swap_p is not None and not (isinstance(rank_swap_p, (int, float))
                                        and 0 < float(rank_swap_p) <= 100):
        raise LinkriskError(f"rank_swap_p must be in (0, 100], got {rank_swap_p}")


def _sensitive_columns(sensitive: str | Sequence[str] | None, st: Any,
                       original: pd.DataFrame, masked: pd.DataFrame) -> list[str]:
    """The sensitive columns: in both files and not QIs (the attacker infers them)."""
    sens = [] if not sensitive else [sensitive] if isinstance(sensitive, str) else list(sensitive)
    both = [c for c in sens if st.qi is not None and c in st.qi]
    if both:
        raise LinkriskError(f"{both[0]!r} is both a QI and a sensitive column: the attacker "
                            "infers a sensitive value, so it cannot know it")
    for c in sens:
        for what, df in (("original", original), ("released", masked)):
            if c not in df.columns:
                raise LinkriskError(f"sensitive column {c!r} is not in the {what} file")
    return sens


def _linkage_context(original: pd.DataFrame, masked: pd.DataFrame, sens: list[str],
                     st: Any) -> tuple[Any, str, list[str]]:
    """The linkage context without the sensitive columns (the attacker does not know
    them), its direction, and the linkrisk warnings it raised (re-emitted)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinkriskWarning)
        ctx, direction = make_context(original.drop(columns=sens) if sens else original,
                                      masked.drop(columns=sens) if sens else masked,
                                      settings=st)
    warned = [str(w.message) for w in caught if issubclass(w.category, LinkriskWarning)]
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return ctx, direction, warned


def _attack_params(names: list[str], params: Any, rank_swap_p: float | None,
                   ctx: Any) -> dict[str, dict[str, Any]]:
    """Each attack's parameters: only for attacks run, rsrl's p from ``rank_swap_p``,
    gdbrl's metric from the QIs' kinds."""
    params = {k: dict(v) for k, v in (params or {}).items()}
    unknown = [k for k in params if k not in names]
    if unknown:
        raise LinkriskError(f"parameters given for {unknown[0]!r}, which is not among the "
                            f"attacks run ({', '.join(names)})")
    for rs in ("rsrl", "rsrl_union"):
        if rs in names and "p" not in params.get(rs, {}):
            if rank_swap_p is None:
                raise LinkriskError(f"{rs} needs the swapping parameter: pass rank_swap_p "
                                    "(--rank-swap-p) or p in its parameters")
            params.setdefault(rs, {})["p"] = float(rank_swap_p)
    if "gdbrl" in names and "metric" not in params.get("gdbrl", {}):
        params.setdefault("gdbrl", {})["metric"] = _global_metric(ctx.kinds)
    return params


def _skipped(ctx: Any, names: list[str], params: dict[str, dict[str, Any]], explicit: bool,
             global_max_n: int) -> dict[str, str]:
    """``{attack: why}`` for the attacks that cannot run (an explicitly named one that
    cannot is an error); the default gdbrl is left out on unequal or large files."""
    skipped: dict[str, str] = {}
    for name in names:
        why = why_not(ctx, name, params.get(name))
        if why is None and name == "gdbrl" and not explicit:
            if ctx.n_a != ctx.n_b:
                why = (f"files of unequal size ({ctx.n_a:,} and {ctx.n_b:,}): the global "
                       "attack would pad the smaller one; ask for it by name to run it")
            elif ctx.n_a > global_max_n:
                why = (f"files above {global_max_n:,} records (the global attack takes "
                       "minutes there); ask for it by name (--method gdbrl) to run it")
        if why is not None:
            if explicit:
                raise LinkriskError(f"{name} cannot run on these files: {why}")
            skipped[name] = why
    return skipped


def _linkability(original: pd.DataFrame, masked: pd.DataFrame, qi: Sequence[str],
                 seed: int) -> dict[str, Any]:
    """anonymeter's linkability attack on a masked release (docs/methods.md, "Synthetic
    data"): the QIs in file order split in two halves, every original record attacked, no
    control set (its risk is the attack's success rate)."""
    from .synthetic import linkability

    cols = list(qi)
    if len(cols) < 2:
        raise LinkriskError("linkability needs at least 2 QIs (it splits them in two halves)")
    aux = (cols[: len(cols) // 2], cols[len(cols) // 2:])
    return linkability(original.reset_index(drop=True)[cols],
                       masked.reset_index(drop=True)[cols], aux, seed=seed).to_dict()


def _frequency(masked: pd.DataFrame, ctx: Any, weights: str | None, household: str | None,
               max_size: int | None, records: pd.DataFrame, notes: list[str]) -> Any:
    """Frequency risk of the release on its categorical QIs; adds ``fk``/``freq_risk``
    (and ``household_risk``) of each attacker record's true released record to
    ``records``."""
    keys = [c for c in ctx.qi if ctx.kinds[c] != "numeric"]
    if not keys:
        if weights is not None or household is not None:
            notes.append("frequency and population risk need categorical QIs; not computed")
        return None
    from .measures.frequency import MAX_SUDA_KEYS, MAX_SUDA_SUBSETS, frequency_risk

    for what, col in (("weights", weights), ("household", household)):
        if col is not None and col not in masked.columns:
            raise LinkriskError(f"{what}: no column named {col!r} in the released file")
    m = len(keys)
    suda_max = max_size if max_size is not None else m
    suda = m <= MAX_SUDA_KEYS and sum(
        math.comb(m, k) for k in range(1, min(int(suda_max), m) + 1)) <= MAX_SUDA_SUBSETS
    rel = masked.reset_index(drop=True)
    try:
        fr = frequency_risk(rel, keys, weights=weights, household=household,
                            max_size=suda_max if suda else None, suda=suda)
    except LinkriskError as exc:
        if not suda or "SUDA2" not in str(exc):
            raise
        notes.append(f"SUDA2 skipped: {exc}")
        fr = frequency_risk(rel, keys, weights=weights, household=household, suda=False)
    if not suda:
        notes.append(f"SUDA2 skipped: too many key subsets for {len(keys)} keys; give a "
                     "smaller suda_max_size")
    t = np.asarray(ctx.truth)
    ok = t >= 0
    for col, name in (("fk", "fk"), ("risk", "freq_risk"), ("household_risk", "household_risk"),
                      ("dis_score", "dis_score")):
        if col in fr.per_record:
            v = np.full(len(records), np.nan)
            v[ok] = fr.per_record[col].to_numpy()[t[ok]]
            records[name] = v
    return fr


def _measures(original: pd.DataFrame, masked: pd.DataFrame, qi: list[str],
              kinds: Mapping[str, str], ids: Any, results: Mapping[str, AttackResult],
              truth: np.ndarray | None = None) -> tuple[dict[str, Any], list[str]]:
    rate = {k: 100.0 * r.rate for k, r in results.items()}
    out: dict[str, Any] = {"worst_case_%": max(rate.values())}
    for key, name in (("DLD", "dbrl"), ("PLD", "prl"), ("RSLD", "rsrl")):
        if name in rate:
            out[key] = rate[name]
    notes: list[str] = []
    if set(kinds[c] for c in qi) != {"numeric"}:
        notes.append("information loss, interval disclosure, DR and Score are defined for "
                     "numeric attributes only (docs/methods.md, Measures); not computed")
        return out, notes
    if ids is not None and truth is not None and len(original) == len(masked) and (
            np.sort(truth) == np.arange(len(masked))).all():
        masked = masked.iloc[truth].reset_index(drop=True)  # released records in A's order
        original = original.reset_index(drop=True)
    elif ids is not None or len(original) != len(masked):
        notes.append("IL, PIL and ID compare records one to one; not computed because the "
                     "files have different sizes or the id columns do not pair every record")
        return out, notes
    out.update(numeric_measures(original, masked, qi, rate, notes=notes))
    return out, notes


def kinds_used(ctx: Any) -> tuple[list[str], dict[str, str]]:
    """The linkage's QIs and their kinds."""
    return list(ctx.qi), dict(ctx.kinds)


def _attribute(original: pd.DataFrame, masked: pd.DataFrame, results: Mapping[str, Any],
               sensitive: str | Sequence[str] | None, qk: tuple[list[str], dict[str, str]]
               ) -> dict[str, Any] | None:
    """Attribute disclosure of ``sensitive`` (docs/methods.md, "Attribute disclosure"):
    l-diversity and t-closeness of the release's categorical QI patterns, and per attack
    the sensitive values inferred through its links (counts, never values)."""
    if not sensitive:
        return None
    from .measures.attribute import l_diversity, linked_inference, t_closeness

    sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    qi, kinds = qk
    keys = [c for c in qi if kinds.get(c) != "numeric" and c not in sens]
    out: dict[str, Any] = {"sensitive": sens, "keys": keys}
    if keys:
        out["l_diversity"] = l_diversity(masked, keys, sens).summary
        out["t_closeness"] = t_closeness(masked, keys, sens).summary
    else:
        out["note"] = "no categorical QI: l-diversity and t-closeness need key patterns"
    # what a guess of the most frequent original value gets without any link (a share)
    out["majority_share"] = {s: float(original[s].value_counts(normalize=True).max())
                             for s in sens if not pd.api.types.is_numeric_dtype(original[s])
                             and original[s].notna().any()}
    out["linked"] = {}
    for name, r in results.items():
        pr = getattr(r, "per_record", None)
        if pr is None or "link" not in pr or r.direction != "original->masked":
            continue
        out["linked"][name] = linked_inference(original, masked, pr["link"].to_numpy(), sens,
                                               correct=pr["correct"].to_numpy())
    return out


def _version() -> str:
    from ._version import __version__

    return __version__
