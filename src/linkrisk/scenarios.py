"""Attacker scenarios: the worst case of a release over the subsets of the QIs an intruder
may hold, not only over the attacks on all of them (docs/methods.md, Attacker scenarios).

An attacker who knows fewer attributes can do far better than one who knows them all: on
all QIs, noisy attributes drown an exact one (a column released unchanged, or an exact
function of the others). :func:`search_scenarios` scores, with the fast attacks
(:data:`FAST_ATTACKS`: dbrl, the rank attacks, the Hamming and mixed distances),

* every single QI and (strategy ``"all"``) every pair;
* a greedy forward search: from the best single QI, add at each step the QI that raises
  the best attack's rate most, up to all QIs;
* every leave-one-out set (all QIs but one), for the drivers of the risk;

then runs the expensive attacks (Mahalanobis, kernel, probabilistic, rank-swap, global)
on the worst scenario found only. User scenarios (what the owner believes an intruder
holds) get every attack. ``max_scenarios`` bounds the number of QI sets scored by the
search (user scenarios are not counted)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .attacks import run_attack, why_not
from .attacks.base import AttackResult, LinkContext, plain
from .errors import LinkriskError

#: the attacks that score every scenario of the search (those that apply to its QIs' kinds)
FAST_ATTACKS = ("dbrl", "rbrl_sum", "rbrl_max", "dbrl_hamming", "dbrl_mixed")
#: ``scenarios=``: singles, pairs and greedy; greedy (with singles, its first step); none
STRATEGIES = ("all", "greedy", "none")
#: default bound on the QI sets the search scores (m = 20 QIs need about 400)
DEFAULT_MAX_SCENARIOS = 500
#: files of at most this many record pairs (|A|·|B|) are searched on one engine thread
SMALL_PAIRS = 1 << 22


@dataclass
class Scenario:
    """One set of QIs an attacker may know and how well the attacks do with it.

    ``kind``: how it was found (``single``, ``pair``, ``greedy``, ``leave-one-out``,
    ``user``, ``all QIs``); ``rates``: attack → rate (0..1); ``result``: the best attack's
    :class:`AttackResult` (its ``qi`` is the scenario's), kept for the worst and the user
    scenarios only; ``complete``: every applicable attack ran, not only the fast ones."""

    name: str
    qi: list[str]
    kind: str
    rates: dict[str, float] = field(default_factory=dict)
    result: AttackResult | None = None
    complete: bool = False

    @property
    def attack(self) -> str:
        """The best attack ('' when none could run)."""
        return max(self.rates, key=lambda k: self.rates[k]) if self.rates else ""

    @property
    def rate(self) -> float:
        """The best attack's rate (0..1; 0 when none could run)."""
        return max(self.rates.values()) if self.rates else 0.0

    def describe(self) -> str:
        """'an attacker who knows PTOTVAL alone' and the like."""
        return f"an attacker who knows {knows(self.qi)}" + (
            f" (scenario {self.name!r})" if self.kind == "user" else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "qi": list(self.qi), "kind": self.kind,
                "attack": self.attack, "rate": float(self.rate),
                "rates": {k: float(v) for k, v in self.rates.items()},
                "all_attacks": self.complete}


def knows(qi: Sequence[str]) -> str:
    """'PTOTVAL alone', 'AGI and FICA', 'AGI, FICA and TAXINC', '8 QIs (A, B, C, …)'."""
    q = [str(c) for c in qi]
    if len(q) == 1:
        return f"{q[0]} alone"
    if len(q) <= 4:
        return ", ".join(q[:-1]) + f" and {q[-1]}"
    return f"{len(q)} QIs ({', '.join(q[:3])}, …)"


def scenario_name(qi: Sequence[str]) -> str:
    """A search scenario's name: its QIs joined by '+'."""
    return "+".join(map(str, qi))


def parse_scenarios(specs: str | Sequence[str] | Mapping[str, Any] | None
                    ) -> dict[str, list[str]]:
    """User scenarios from ``{"name": "a,b"}`` / ``{"name": ["a", "b"]}``, ``"name=a,b"``
    or a list of such strings (``--scenario``, repeatable). A spec without ``name=`` is
    named by its QIs."""
    from .data import parse_columns

    if specs is None:
        return {}
    items: list[tuple[str, Any]]
    if isinstance(specs, Mapping):
        items = list(specs.items())
    else:
        items = []
        for s in [specs] if isinstance(specs, str) else list(specs):
            if not isinstance(s, str):
                raise LinkriskError(f"a scenario is 'name=a,b,c', got {s!r}")
            name, sep, cols = s.partition("=")
            items.append((name.strip(), cols) if sep else ("", name))
    out: dict[str, list[str]] = {}
    for name, cols in items:
        qi = parse_columns(cols) or []
        if not qi:
            raise LinkriskError(f"scenario {name or cols!r} names no QI (write 'name=a,b,c')")
        if len(set(qi)) != len(qi):
            raise LinkriskError(f"scenario {name or cols!r} names a QI twice")
        name = str(name) or scenario_name(qi)
        if name in out:
            raise LinkriskError(f"two scenarios are named {name!r}")
        out[name] = qi
    return out


@dataclass
class ScenarioSearch:
    """What :func:`search_scenarios` found. ``scenarios``: every QI set scored by the
    search (the full set first, as ``all QIs``); ``user``: the user scenarios; ``worst``:
    the scenario of the highest rate (the full set when no subset does better);
    ``greedy``: the greedy path, (QI added, best rate after adding it); ``drivers``: per
    QI, the best rate with it alone and without it (leave one out) and how many records
    it drives; ``record_drivers``: per attacker record, the QI whose removal most lowers
    its link probability (best fast attack on all QIs) and by how much."""

    scenarios: list[Scenario]
    user: list[Scenario]
    worst: Scenario
    greedy: list[tuple[str, float]]
    drivers: pd.DataFrame | None
    record_drivers: pd.DataFrame | None
    info: dict[str, Any]


class _Budget(Exception):
    """The search reached ``max_scenarios``."""


class _Search:
    def __init__(self, ctx: LinkContext, names: Sequence[str],
                 params: Mapping[str, Mapping[str, Any]], fast: Sequence[str],
                 max_scenarios: int) -> None:
        self.ctx = ctx
        self.names = list(names)
        self.params = params
        self.fast = list(fast)
        self.left = self.limit = int(max_scenarios)
        self.sets: dict[frozenset[str], Scenario] = {}
        self.records: dict[frozenset[str], np.ndarray] = {}
        self.attacks_run = 0
        self.best: Scenario | None = None
        self._num = None
        if all(ctx.kinds[c] == "numeric" for c in ctx.qi):
            a, b = ctx.numeric()  # copies: the context's own may be handed over later
            self._num = (a.copy(), b.copy())

    def sub(self, cols: Sequence[str]) -> LinkContext:
        """The context restricted to ``cols``: the same truth, kinds and settings, and the
        columns of the full numeric matrices (standardization and ranks are per column,
        so each attack's transform of the sub-matrix is that of the columns alone)."""
        ctx = self.ctx
        cols = list(cols)
        sub = LinkContext(ctx.a_df[cols], ctx.b_df[cols], cols,
                          {c: ctx.kinds[c] for c in cols}, ctx.truth,
                          ctx.settings.with_(qi=cols), truth_check=ctx.truth_check,
                          notes=ctx.notes, blocks=ctx.blocks)
        if getattr(LinkContext, "has_missing", None) is not None and not ctx.has_missing:
            sub._cache["missing"] = False  # no value missing in any column of the full set
        self.refill(sub)
        return sub

    def refill(self, sub: LinkContext) -> None:
        """Give ``sub`` its own copy of its columns (an attack may take and overwrite it)."""
        if self._num is not None and "num" not in sub._cache:
            idx = [self.ctx.qi.index(c) for c in sub.qi]
            sub._cache["num"] = (np.ascontiguousarray(self._num[0][:, idx]),
                                 np.ascontiguousarray(self._num[1][:, idx]))

    def run(self, sc: Scenario, names: Sequence[str], keep_records: bool = False,
            results: Mapping[str, AttackResult] | None = None) -> Scenario:
        """Score ``sc`` with ``names`` (those that apply; ``results`` already run are
        reused); keeps the best result when it is the best so far. Attacks that would
        repeat another's candidate sets are left out: on one QI dbrl_l1 ranks the records
        as dbrl does and rbrl_max as rbrl_sum does; dbrl with default parameters is
        dbrl_mixed."""
        ctx = None
        got: dict[str, AttackResult] = {}
        for name in names:
            if name in sc.rates and results is None:
                continue
            if results is not None and name in results:
                got[name] = results[name]
                continue
            if (name in ("dbrl_l1", "rbrl_max") and len(sc.qi) == 1) or (
                    name == "dbrl_mixed" and "dbrl" in self.fast
                    and not self.params.get("dbrl_mixed")):
                continue
            ctx = ctx or self.sub(sc.qi)
            if why_not(ctx, name, self.params.get(name)) is not None:
                continue
            self.refill(ctx)
            try:
                got[name] = run_attack(ctx, name, **self.params.get(name, {}))
            except LinkriskError:
                continue
            self.attacks_run += 1
        for name, r in got.items():
            sc.rates[name] = float(r.rate)
        if got:
            top = max(got.values(), key=lambda r: r.rate)
            if (sc.result is None or top.rate > sc.result.rate) and (
                    sc.kind == "user" or self.best is None or sc is self.best
                    or top.rate > self.best.rate):
                sc.result = top
        if keep_records:
            fast = [r for n, r in got.items() if n in self.fast]
            if fast:
                self.records[frozenset(sc.qi)] = np.max(
                    [r.per_record["correct"].to_numpy(float) for r in fast], axis=0)
        if sc.kind != "user" and sc is not self.best and (
                self.best is None or sc.rate > self.best.rate):
            if self.best is not None:
                self.best.result = None  # only the worst keeps its per-record table
            self.best = sc
        return sc

    def certain(self) -> bool:
        """Whether a scenario already re-identifies every record (none can do more)."""
        return self.best is not None and self.best.rate >= 1.0 - 1e-12

    def score(self, cols: Sequence[str], kind: str, keep_records: bool = False) -> Scenario:
        """The scenario of these QIs (in the file's QI order), scored once."""
        cols = [c for c in self.ctx.qi if c in set(cols)]
        keep_records = keep_records or len(cols) >= len(self.ctx.qi) - 1
        key = frozenset(cols)
        sc = self.sets.get(key)
        if sc is not None:
            if keep_records and key not in self.records:
                self.run(sc, self.fast, keep_records=True, results={})
            return sc
        if self.left <= 0:
            raise _Budget
        self.left -= 1
        out = [c for c in self.ctx.qi if c not in key]
        # a name that tells the sets apart (two greedy candidates of one size differ)
        name = (scenario_name(cols) if len(cols) <= 3 else
                f"all but {', '.join(map(str, out))}" if len(out) <= 4 else
                f"{', '.join(map(str, cols[:3]))} + {len(cols) - 3} more")
        sc = Scenario(name, cols, kind)
        self.sets[key] = sc
        return self.run(sc, self.fast, keep_records)


def fast_attacks(names: Sequence[str] | None, explicit: bool) -> list[str]:
    """The attacks that score the search's scenarios: :data:`FAST_ATTACKS`, or (when the
    attacks were named) the named ones among them, dbrl when none is."""
    if not explicit or names is None:
        return list(FAST_ATTACKS)
    return [n for n in names if n in FAST_ATTACKS] or ["dbrl"]


def search_scenarios(ctx: LinkContext, names: Sequence[str],
                     params: Mapping[str, Mapping[str, Any]] | None = None, *,
                     results: Mapping[str, AttackResult] | None = None,
                     strategy: str = "all", max_scenarios: int | None = None,
                     user: Mapping[str, Sequence[str]] | None = None,
                     fast: Sequence[str] | None = None) -> ScenarioSearch:
    """The worst case of the release over attacker scenarios (module docstring).

    ``ctx``: the context of the full QI set; ``names``: every attack that runs on it (the
    expensive ones run on the worst scenario and on the user scenarios);
    ``results``: those attacks' results on the full set (reused, not rerun);
    ``strategy``: ``"all"`` (singles, pairs, greedy), ``"greedy"`` (singles and greedy)
    or ``"none"`` (the full set and the user scenarios only); ``max_scenarios``: bound on
    the QI sets scored (default :data:`DEFAULT_MAX_SCENARIOS`); ``user``: name → QIs;
    ``fast``: the attacks that score the search (default :func:`fast_attacks`).

    Cost, m QIs: singles m, pairs m(m−1)/2, greedy at most (m−1)(m−2)/2 sets beyond the
    pairs (fewer with ``"all"``: its first two steps are singles and pairs), leave-one-out
    m; each set scored by the fast attacks that apply (3 for numeric QIs: dbrl, rbrl_sum,
    rbrl_max; 2 on one QI)."""
    if strategy not in STRATEGIES:
        raise LinkriskError(f"scenarios must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    limit = DEFAULT_MAX_SCENARIOS if max_scenarios is None else max_scenarios
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise LinkriskError(f"max_scenarios must be an integer >= 0, got {max_scenarios!r}")
    t0 = time.perf_counter()
    params = params or {}
    qi = list(ctx.qi)
    user = dict(user or {})
    for name, cols in user.items():
        bad = [c for c in cols if c not in qi]
        if bad:
            raise LinkriskError(f"scenario {name!r}: {bad[0]!r} is not among the QIs "
                                f"({', '.join(map(str, qi))}); add it with --qi")
    s = _Search(ctx, names, params, fast if fast is not None else FAST_ATTACKS, int(limit))
    with _threads(ctx):
        found = _run_search(s, ctx, names, strategy, results, user)
    found.info["seconds"] = time.perf_counter() - t0
    return found


@contextlib.contextmanager
def _threads(ctx: LinkContext) -> Iterator[None]:
    """One engine thread for files of at most :data:`SMALL_PAIRS` record pairs: each
    scenario's attack is then a few milliseconds, and waking the threads of a parallel
    kernel hundreds of times costs more than it saves (twice the time on a busy
    machine); the setting is restored afterwards."""
    if ctx.n_a * ctx.n_b > SMALL_PAIRS or ctx.backend != "local":
        yield
        return
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _run_search(s: _Search, ctx: LinkContext, names: Sequence[str], strategy: str,
                results: Mapping[str, AttackResult] | None,
                user: Mapping[str, Sequence[str]]) -> ScenarioSearch:
    qi = list(ctx.qi)
    full = Scenario("all QIs", qi, "all QIs", complete=True)
    s.sets[frozenset(qi)] = full
    s.run(full, list(dict.fromkeys(list(results or {}) + s.fast)), keep_records=True,
          results=dict(results or {}))
    greedy: list[tuple[str, float]] = []
    stopped = False
    m = len(qi)
    if strategy != "none" and m > 1:
        try:
            singles = [s.score([c], "single") for c in qi]
            cur = max(singles, key=lambda sc: sc.rate)
            greedy.append((cur.qi[0], cur.rate))
            while len(cur.qi) < m and not s.certain():
                steps = [s.score(cur.qi + [c], "greedy") for c in qi if c not in cur.qi]
                cur = max(steps, key=lambda sc: sc.rate)
                added = [c for c in cur.qi if c not in {g for g, _ in greedy}]
                greedy.append((added[0], cur.rate))
            for c in qi:
                s.score([x for x in qi if x != c], "leave-one-out", keep_records=True)
            if strategy == "all":
                for i, c in enumerate(qi):
                    for d in qi[i + 1:]:
                        if not s.certain():
                            s.score([c, d], "pair")
        except _Budget:
            stopped = True
    worst = s.best if s.best is not None else full
    if not worst.complete:  # the expensive attacks on the worst scenario only
        worst.complete = True
        s.run(worst, [n for n in names if n not in worst.rates])
        worst = s.best if s.best is not None else worst
    users = []
    for name, cols in user.items():
        sc = Scenario(name, [c for c in qi if c in set(cols)], "user", complete=True)
        users.append(s.run(sc, list(dict.fromkeys(list(names) + s.fast))))
    drivers, record_drivers = _drivers(s, full, qi)
    info = {"strategy": strategy, "max_scenarios": s.limit,
            "scenarios_scored": len(s.sets) - 1, "attacks_run": s.attacks_run,
            "fast_attacks": list(s.fast), "stopped_at_limit": stopped}
    return ScenarioSearch(list(s.sets.values()), users, worst, greedy, drivers,
                          record_drivers, info)


def _drivers(s: _Search, full: Scenario, qi: list[str]
             ) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Per QI: best fast rate alone and without it; per record: the QI whose removal
    most lowers its probability (of the best fast attack on all QIs)."""
    if len(qi) < 2:
        return None, None
    all_rate = max((v for k, v in full.rates.items() if k in s.fast), default=full.rate)
    p_full = s.records.get(frozenset(qi))
    drops = {}
    if p_full is not None:
        for c in qi:
            p = s.records.get(frozenset(x for x in qi if x != c))
            if p is not None:
                drops[c] = p_full - p
    rec = None
    if drops and len(drops) == len(qi):
        d = np.column_stack([drops[c] for c in qi])
        best = d.argmax(1)
        drop = d[np.arange(len(d)), best]
        rec = pd.DataFrame({"driver": np.where(drop > 1e-12, np.array(qi, dtype=object)[best],
                                               ""),
                            "drop": np.where(drop > 1e-12, drop, 0.0)})
        rec.index.name = "record"
    def fast_rate(sc: Scenario | None) -> float | None:
        if sc is None:
            return None
        return max((v for k, v in sc.rates.items() if k in s.fast), default=None)

    rows = []
    for c in qi:
        alone = s.sets.get(frozenset([c]))
        loo = s.sets.get(frozenset(x for x in qi if x != c))
        without = fast_rate(loo)
        rows.append({"qi": c,
                     "alone %": None if fast_rate(alone) is None else 100 * fast_rate(alone),
                     "without it %": None if without is None else 100 * without,
                     "all QIs %": 100 * all_rate,
                     "drop %": None if without is None else 100 * (all_rate - without),
                     "records it drives": (None if rec is None
                                           else int((rec["driver"] == c).sum()))})
    return pd.DataFrame(rows), rec


def scenario_rows(search: ScenarioSearch, top: int | None = None) -> list[dict[str, Any]]:
    """The scenarios table: the full set, the user scenarios, then the search's scenarios
    by decreasing rate (``top`` of them)."""
    rest = sorted((sc for sc in search.scenarios if sc.kind != "all QIs"),
                  key=lambda sc: -sc.rate)
    if top is not None:
        rest = rest[:top]
    full = [sc for sc in search.scenarios if sc.kind == "all QIs"]
    return [plain(sc.to_dict()) for sc in full + search.user + rest]


def table_rows(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """A table as JSON-able rows (NaN as None)."""
    if df is None:
        return []
    return [{k: None if isinstance(v, float) and v != v else plain(v) for k, v in r.items()}
            for r in df.to_dict("records")]


def as_scenario_result(sc: Scenario) -> AttackResult | None:
    """The scenario's best result renamed ``attack (QIs)`` for the per-record risk table."""
    if sc.result is None:
        return None
    return dataclasses.replace(sc.result, method=f"{sc.result.method} ({sc.name})")
