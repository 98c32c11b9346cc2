"""Attacker scenarios (linkrisk.scenarios, issue #39): the worst case over the QI sets an
intruder may know, user scenarios and the drivers of the risk."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.cli import app
from linkrisk.errors import LinkriskError
from linkrisk.scenarios import parse_scenarios

CONF = ["PEARNVAL", "POTHVAL", "WSALVAL", "ERNVAL"]
FAST = ["dbrl", "rbrl_sum", "rbrl_max"]


def best_fast(orig, rel, qi):
    """The best fast attack's rate on ``qi``, run directly."""
    res = linkrisk.attack(orig, rel, method=FAST, qi=list(qi), assume_row_order=True)
    return max(r.rate for r in res.values())


@pytest.fixture(scope="module")
def ipso(census):
    cols = [c for c in census.columns if c not in CONF]
    rel = linkrisk.mask(census, "ipso", columns=cols, confidential=CONF, variant="C",
                        mutual=True, seed=1)
    return census, rel


@pytest.fixture(scope="module")
def graded():
    """Five QIs masked with noise of very different strengths: x0 and x1 lightly, the
    others heavily; on all five the noisy ones drown the good ones."""
    rng = np.random.default_rng(7)
    n = 150
    orig = pd.DataFrame(rng.standard_normal((n, 5)), columns=[f"x{i}" for i in range(5)])
    sd = np.array([0.02, 0.05, 2.0, 2.0, 2.0])
    rel = orig + rng.standard_normal((n, 5)) * sd
    return orig, rel


def test_ipso_c_mutual_release_is_given_away_by_ptotval(ipso):
    orig, rel = ipso
    a = linkrisk.assess(orig, rel, max_risk=5)
    full = max(r.rate for r in a.results.values())
    assert full < 0.05  # the attacks on all QIs: 'low' before #39
    assert a.worst.rate >= 0.99
    assert a.worst.qi == ["PTOTVAL"]
    assert a.worst_scenario is not None and a.worst_scenario.qi == ["PTOTVAL"]
    assert a.worst_attacker == "an attacker who knows PTOTVAL alone"
    assert a.exceeds
    assert a.measures["worst_case_%"] == pytest.approx(100 * a.worst.rate)
    # the per-record risk follows the worst scenario
    assert (a.records["max_risk"] >= 1).mean() >= 0.99
    d = a.to_dict()
    assert d["worst_case"]["scenario"] == "PTOTVAL" and d["worst_case"]["qi"] == ["PTOTVAL"]
    drivers = a.drivers.set_index("qi")
    assert drivers.loc["PTOTVAL", "alone %"] >= 99
    json.dumps(d, allow_nan=False)


def test_column_copied_unchanged_among_noisy_ones():
    rng = np.random.default_rng(3)
    orig = pd.DataFrame(rng.standard_normal((300, 5)), columns=list("abcde"))
    rel = orig + rng.standard_normal((300, 5)) * 1.5
    rel["c"] = orig["c"]
    a = linkrisk.assess(orig, rel, qi=list("abcde"), attacks=["dbrl", "rbrl_sum"],
                        assume_row_order=True)
    assert max(r.rate for r in a.results.values()) < 0.5
    assert a.worst.rate == 1.0 and a.worst.qi == ["c"]
    assert "c alone" in a.worst_attacker
    none = linkrisk.assess(orig, rel, qi=list("abcde"), attacks=["dbrl", "rbrl_sum"],
                           assume_row_order=True, scenarios="none")
    assert none.worst_scenario is None and none.worst.rate < 0.5
    assert none.scenario_search["scenarios_scored"] == 0


def test_subset_beats_full_set_and_search_finds_the_true_worst_pair(graded):
    orig, rel = graded
    cols = list(orig.columns)
    brute = {s: best_fast(orig, rel, s) for k in range(1, 6)
             for s in itertools.combinations(cols, k)}
    pairs = {s: r for s, r in brute.items() if len(s) == 2}
    best_pair = max(pairs, key=pairs.get)
    assert max(brute.values()) > brute[tuple(cols)]  # a subset does better than all QIs
    for strategy in ("all", "greedy"):
        a = linkrisk.assess(orig, rel, attacks=FAST, assume_row_order=True,
                            scenarios=strategy)
        assert a.worst.rate == pytest.approx(max(brute.values()))
        scored = {tuple(sc.qi): sc.rate for sc in a.scenarios}
        found = max((s for s in scored if len(s) == 2), key=scored.get)
        assert set(found) == set(best_pair)
        assert scored[found] == pytest.approx(pairs[best_pair])
        # every scenario's rate is that of the direct attacks on its QIs
        for s, r in scored.items():
            assert r == pytest.approx(brute[tuple(s)])
    assert a.scenario_search["greedy"][1][0] in best_pair


def test_max_scenarios_bounds_the_search(graded):
    orig, rel = graded
    a = linkrisk.assess(orig, rel, attacks=FAST, assume_row_order=True, max_scenarios=3)
    assert a.scenario_search["scenarios_scored"] == 3
    assert a.scenario_search["stopped_at_limit"]
    assert any("max_scenarios" in n for n in a.notes)
    with pytest.raises(LinkriskError, match="scenarios must be"):
        linkrisk.assess(orig, rel, assume_row_order=True, scenarios="some")


def test_user_scenarios(graded):
    orig, rel = graded
    a = linkrisk.assess(orig, rel, assume_row_order=True, scenarios="none",
                        user_scenarios=["tax=x2,x3", "x1,x4"])
    user = {sc.name: sc for sc in a.scenarios if sc.kind == "user"}
    assert set(user) == {"tax", "x1+x4"}
    assert user["tax"].qi == ["x2", "x3"]
    direct = linkrisk.attack(orig, rel, method="all", qi=["x1", "x4"], assume_row_order=True)
    rates = user["x1+x4"].rates
    assert {"dbrl", "rbrl_max", "mahalanobis", "prl", "gdbrl"} <= set(rates)  # every attack
    for name, r in rates.items():
        assert r == pytest.approx(direct[name].rate)
    assert a.worst.rate >= user["x1+x4"].rate
    assert parse_scenarios({"s": "a, b"}) == {"s": ["a", "b"]}
    for bad in (["s="], ["s=a,a"], ["s=a", "s=b"]):
        with pytest.raises(LinkriskError):
            parse_scenarios(bad)
    with pytest.raises(LinkriskError, match="not among the QIs"):
        linkrisk.assess(orig, rel, assume_row_order=True, user_scenarios={"s": ["zz"]})


def test_leave_one_out_table_against_direct_runs(graded):
    orig, rel = graded
    a = linkrisk.assess(orig, rel, attacks=FAST, assume_row_order=True)
    cols = list(orig.columns)
    d = a.drivers.set_index("qi")
    for c in cols:
        assert d.loc[c, "alone %"] == pytest.approx(100 * best_fast(orig, rel, [c]))
        rest = [x for x in cols if x != c]
        assert d.loc[c, "without it %"] == pytest.approx(100 * best_fast(orig, rel, rest))
    assert d["all QIs %"].tolist() == pytest.approx([100 * best_fast(orig, rel, cols)] * 5)
    # per record: the driver's removal lowers the record's probability by 'drop'
    rd = a.record_drivers
    assert len(rd) == len(orig) and set(rd["driver"]) <= set(cols) | {""}
    full = linkrisk.attack(orig, rel, method=FAST, assume_row_order=True)
    p_full = np.max([r.per_record["correct"].to_numpy() for r in full.values()], axis=0)
    i = int(rd["drop"].to_numpy().argmax())
    c = rd["driver"].iloc[i]
    rest = linkrisk.attack(orig, rel, method=FAST, qi=[x for x in cols if x != c],
                           assume_row_order=True)
    p_rest = np.max([r.per_record["correct"].to_numpy() for r in rest.values()], axis=0)
    assert rd["drop"].iloc[i] == pytest.approx(p_full[i] - p_rest[i])
    assert d["records it drives"].sum() == int((rd["driver"] != "").sum())


def test_cli_assess_names_the_scenario_and_exits_3(ipso, tmp_path):
    orig, rel = ipso
    a, b = tmp_path / "census.csv", tmp_path / "ipso.csv"
    orig.to_csv(a, index=False)
    rel.to_csv(b, index=False)
    r = CliRunner().invoke(app, ["assess", str(a), str(b), "--max-risk", "5%", "--json",
                                 "--scenario", "earnings=PEARNVAL,FICA"])
    assert r.exit_code == 3, r.output
    d = json.loads(r.stdout)
    assert d["worst_case"]["scenario"] == "PTOTVAL" and d["worst_case"]["rate"] >= 0.99
    assert any(s["name"] == "earnings" and s["kind"] == "user" for s in d["scenarios"])
    assert {row["qi"] for row in d["drivers"]} == set(d["settings"]["qi"])
    r = CliRunner().invoke(app, ["assess", str(a), str(b), "--scenarios", "none",
                                 "--max-risk", "5%"])
    assert r.exit_code == 0, r.output


def test_choose_takes_the_worst_case_over_scenarios(tmp_path):
    from linkrisk.experiments.choose import choose

    c = choose("census", ["ipso:variant=C/mutual=True"], max_risk=5, confidential=CONF,
               replications=1, processes=1, cache_dir=tmp_path)
    assert c.best is None  # PTOTVAL alone gives the release away: not within 5 %
    p = c.points.iloc[0]
    assert p["risk_mean"] >= 99 and p["deciding_attack"] == "scenarios"
