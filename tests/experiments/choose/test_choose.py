"""linkrisk choose end to end (the grid, the recommendation and the run have their own
files beside this one): the recommendation against a brute-force pass over the
cached table, one point against a direct mask + assess, categorical IL by hand, no
feasible point, reproducibility, the CLI's outputs and its checks before the sweep."""

import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import linkrisk
from linkrisk.assessment import CATEGORICAL_ATTACKS, NUMERIC_ATTACKS
from linkrisk.errors import LinkriskError
from linkrisk.experiments.choose import parse_method
from linkrisk.measures import categorical_information_loss

CENSUS_METHODS = ["rank_swap:p=5,20", "noise:a=0.5..1.5:0.5", "mdav:k=5,20",
                  "microaggregation_ir:k=5"]
HH_METHODS = ["pram:pd=0.8,0.4", "global_recoding:width=2,4", "top_coding:quantile=0.8,0.5"]




# ------------------------------------------------------------------- brute force recommender

def _ci(x):
    x = np.asarray(x, float)
    if len(x) == 1 or np.all(x == x[0]):  # no spread: the interval is the value
        return x[0], x[0], x[0]
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    return x.mean(), max(lo, 0.0), hi


def _cached_rows(cache: Path) -> pd.DataFrame:
    rows = []
    for f in sorted((cache / "runs").glob("*.json")):
        rows += json.loads(f.read_text())
    return pd.DataFrame(rows)


def _risk_attacks(method, kind):
    # "scenarios": the worst case over attacker scenarios (#39)
    if kind == "categorical":
        return [*CATEGORICAL_ATTACKS, "gdbrl", "scenarios"]
    extra = ["rsrl", "rsrl_union"] if method.startswith("rank_swap") else []
    return [*NUMERIC_ATTACKS, "gdbrl", *extra, "scenarios"]


def brute_force(rows, specs, kind, max_risk):
    """Every point from the cached rows, then the documented rule, written out longhand."""
    deterministic = {"mdav", "microaggregation_ir", "global_recoding", "top_coding",
                     "bottom_coding"}
    pts = []
    order = 0
    for spec in specs:
        g = parse_method(spec)
        (param, values), = g.params.items()
        for v in values:
            mine = rows[(rows["masking"] == g.method) & (rows["value"] == v)]
            att = mine[(mine["kind"] == "attack")
                       & mine["name"].isin(_risk_attacks(g.method, kind))]
            worst = att.groupby("replication")["result"].max().sort_index().to_numpy()
            meas = {n: mine[(mine["kind"] == "measure") & (mine["name"] == n)]
                    .sort_values("replication")["result"].to_numpy() for n in ("IL", "Score")}
            r_m, r_lo, r_hi = _ci(worst)
            il_m, _, il_hi = _ci(meas["IL"])
            label = f"{v:g}" if isinstance(v, float) else v
            pts.append({"point": f"{g.method} {param}={label}", "risk": r_m,
                        "risk_hi": min(r_hi, 100.0), "IL": il_m, "IL_hi": il_hi,
                        "Score": meas["Score"].mean(), "Score_hi": _ci(meas["Score"])[2],
                        "det": g.method in deterministic, "order": order, "n": len(worst)})
            order += 1
    goal, other = ("IL", "Score") if max_risk is not None else ("Score", "IL")
    ok = [p for p in pts if max_risk is None or p["risk_hi"] <= max_risk]
    if not ok:
        return None, min(pts, key=lambda p: (p["risk_hi"], p["risk"], p["IL"], p["order"])), pts
    best = min(ok, key=lambda p: (p[goal], p["order"]))
    ties = [p for p in ok if p[goal] <= best[f"{goal}_hi"]]
    rec = min(ties, key=lambda p: (p["risk"], p[other], not p["det"], p["order"]))
    return rec, None, pts


@pytest.fixture(scope="module")
def census_small(census):
    return census.iloc[:240].reset_index(drop=True)


@pytest.fixture(scope="module")
def census_choice(census_small, tmp_path_factory):
    cache = tmp_path_factory.mktemp("choose-census")
    c = linkrisk.choose(census_small, CENSUS_METHODS, max_risk="25%", replications=3,
                        seed=11, processes=1, cache_dir=cache)
    return c, cache


def test_census_recommendation_matches_brute_force(census_choice):
    c, cache = census_choice
    rows = _cached_rows(cache)
    assert len(rows) == len(c.rows)
    rec, closest, pts = brute_force(rows, CENSUS_METHODS, "numeric", 25.0)
    # every point's figures agree with the longhand computation
    for p in pts:
        row = c.points[c.points["point"] == p["point"]].iloc[0]
        assert row["n"] == p["n"]
        assert row["risk_mean"] == pytest.approx(p["risk"])
        assert row["risk_hi"] == pytest.approx(p["risk_hi"])
        assert row["IL_mean"] == pytest.approx(p["IL"])
        assert row["IL_hi"] == pytest.approx(p["IL_hi"])
    assert rec is not None, "the census test grid must have a feasible point"
    assert c.points["feasible"].sum() >= 2 and not c.points["feasible"].all()
    assert c.points.loc[c.points["IL_mean"].idxmin(), "feasible"] == False  # noqa: E712
    assert c.best["point"] == rec["point"]
    assert c.points["recommended"].sum() == 1
    # the points the limit excludes are exactly those with upper bound above it
    assert set(c.points.loc[~c.points["feasible"], "point"]) == \
        {p["point"] for p in pts if p["risk_hi"] > 25.0}
    assert c.reasons and all(isinstance(r, str) for r in c.reasons)
    assert "Recommended" in c.headline()


def test_without_limit_least_score_matches_brute_force(census_choice, census_small):
    c, cache = census_choice
    # rerun without a limit: every replication comes from the cache
    c2 = linkrisk.choose(census_small, CENSUS_METHODS, replications=3, seed=11, processes=1,
                         cache_dir=cache)
    assert c2.cached == c2.tasks
    rec, _, _ = brute_force(_cached_rows(cache), CENSUS_METHODS, "numeric", None)
    assert c2.best["point"] == rec["point"]
    assert c2.points["feasible"].all()


def test_one_point_equals_direct_mask_and_assess(census_choice, census_small):
    # the sweep's rows for rank_swap p=5, replication 0, against an independent
    # mask + assess with the same seed
    c, _ = census_choice
    row = c.points[c.points["point"] == "rank_swap p=5"].iloc[0]
    assert "AFNLWGT" not in c.settings["qi"]  # a survey weight: not a QI by default
    rel = linkrisk.mask(census_small, "rank_swap", p=5, columns=c.settings["qi"],
                        seed=int(row["seed"]))
    a = linkrisk.assess(census_small, rel, qi=c.settings["qi"], attacks="all", rank_swap_p=5,
                        seed=int(row["seed"]))
    mine = c.rows[(c.rows["masking"] == "rank_swap") & (c.rows["seed"] == row["seed"])]
    rates = mine[mine["kind"] == "attack"].set_index("name")["result"]
    for name, res in a.results.items():
        assert rates[name] == pytest.approx(100 * res.rate), name
    il = mine[(mine["kind"] == "measure") & (mine["name"] == "IL")]["result"].iloc[0]
    assert il == pytest.approx(a.measures["IL"])
    assert max(rates[n] for n in row["attacks"].split(",")) == \
        pytest.approx(100 * a.worst.rate)
    assert set(row["attacks"].split(",")) >= {"rsrl", "rsrl_union", "gdbrl", "dbrl"}


def test_no_point_meets_the_limit(census_choice, census_small):
    _, cache = census_choice
    c = linkrisk.choose(census_small, ["rank_swap:p=5,20", "microaggregation_ir:k=5"],
                        max_risk=0.5, replications=3, seed=11, processes=1, cache_dir=cache)
    rec, closest, _ = brute_force(_cached_rows(cache), ["rank_swap:p=5,20",
                                                        "microaggregation_ir:k=5"],
                                  "numeric", 0.5)
    assert rec is None and c.best is None and c.recommended is None
    assert c.points.loc[c.closest, "point"] == closest["point"]
    assert not c.points["feasible"].any()
    h = c.headline()
    assert h.startswith("No point meets the risk limit 0.5 %") and closest["point"] in h
    assert "rank_swap beyond p=20" in c.suggestion
    with pytest.raises(LinkriskError, match="no point meets"):
        c.release()


def test_reproducible_same_seed_same_table(census_small, tmp_path):
    spec = ["noise:a=0.5,1", "mdav:k=10"]
    a = linkrisk.choose(census_small, spec, max_risk=20, replications=2, seed=3,
                        processes=1, cache_dir=tmp_path / "a")
    b = linkrisk.choose(census_small, spec, max_risk=20, replications=2, seed=3,
                        processes=1, cache_dir=tmp_path / "b")
    assert b.cached == 0  # computed again, not read from a's cache
    pd.testing.assert_frame_equal(a.table(), b.table())
    assert a.best["point"] == b.best["point"]
    assert a.release().equals(b.release())
    # the command in the report names the same cells: a rerun is all cache
    argv = shlex.split(a.settings["command"])
    again = [argv[i + 1] for i, x in enumerate(argv) if x == "--method"]
    d = linkrisk.choose(census_small, again, max_risk=20, replications=2, seed=3,
                        processes=1, cache_dir=tmp_path / "a")
    assert d.cached == d.tasks and "--seed 3" in a.settings["command"]
    c = linkrisk.choose(census_small, spec, max_risk=20, replications=2, seed=4,
                        processes=1, cache_dir=tmp_path / "a")
    assert not np.allclose(a.points["IL_mean"].iloc[:2], c.points["IL_mean"].iloc[:2])


# ------------------------------------------------------------------------------ categorical

def test_categorical_information_loss_by_hand():
    x = pd.DataFrame({"a": list("aabbcc"), "b": list("xxxxxy")})
    assert categorical_information_loss(x, x) == 0.0
    # a relabelling loses nothing: each released value tells the original
    assert categorical_information_loss(x, x.replace({"a": {"a": "z", "b": "a"}})) == 0.0
    # one released value for a: H(a | y) = H(a), all lost; b unchanged
    y = x.assign(a="*")
    assert categorical_information_loss(x, y) == pytest.approx(50.0)
    # merge b and c of attribute a: H(a | y) = (4/6)·log 2, H(a) = log 3
    y = x.assign(a=["a", "a", "bc", "bc", "bc", "bc"])
    assert categorical_information_loss(x, y, ["a"]) == \
        pytest.approx(100 * (4 / 6) * np.log(2) / np.log(3))


def test_household_recommendation_matches_brute_force(data_dir, tmp_path):
    hh = linkrisk.datasets.load("household", data_dir).iloc[:300].reset_index(drop=True)
    c = linkrisk.choose(hh, HH_METHODS, max_risk="12%", ordered=True, replications=2,
                        seed=5, processes=1, cache_dir=tmp_path)
    assert c.settings["kind"] == "categorical"
    rec, closest, pts = brute_force(_cached_rows(tmp_path), HH_METHODS, "categorical", 12.0)
    # the limit must bite: some points over it, and the least-IL point among them
    assert rec is not None and 0 < c.points["feasible"].sum() < len(c.points)
    assert c.points.loc[c.points["IL_mean"].idxmin(), "feasible"] == False  # noqa: E712
    for p in pts:
        row = c.points[c.points["point"] == p["point"]].iloc[0]
        assert row["risk_mean"] == pytest.approx(p["risk"])
        assert row["IL_mean"] == pytest.approx(p["IL"])
    assert (None if c.best is None else c.best["point"]) == (None if rec is None
                                                              else rec["point"])
    assert c.points["IL_mean"].between(0, 100).all()
    # DR = (DLD + PLD)/2 with DLD the Hamming linkage rate
    r = c.rows
    one = r[r["seed"] == r["seed"].iloc[0]].set_index("name")["result"]
    assert one["DR"] == pytest.approx((one["dbrl_hamming"] + one["prl"]) / 2)




def test_bad_input_is_one_clear_error(census_small, tmp_path):
    for kw, msg in (({"qi": "NOPE"}, "not in"), ({"replications": 0}, "at least 1"),
                    ({"max_risk": "x"}, "not a number")):
        with pytest.raises(LinkriskError, match=msg):
            linkrisk.choose(census_small, ["noise:a=1"], cache_dir=tmp_path, **kw)
    with pytest.raises(LinkriskError, match="masks categorical"):
        linkrisk.choose(census_small, ["pram:pd=0.5"], cache_dir=tmp_path)
    with pytest.raises(LinkriskError, match="not found"):
        linkrisk.choose("no-such-file.csv", cache_dir=tmp_path)


# ---------------------------------------------------------------------------------- the CLI

def test_cli_outputs_release_and_checks(census_small, tmp_path, monkeypatch):
    from linkrisk.cli import app

    monkeypatch.chdir(tmp_path)
    census_small.to_csv("orig.csv", index=False)
    args = ["choose", "orig.csv", "-m", "mdav:k=5,10", "-m", "noise:a=1", "--max-risk", "25%",
            "--replications", "2", "--processes", "1", "--seed", "2", "-o", "c.html",
            "--png", "c.png", "--csv", "c.csv", "--json-file", "c.json", "--parquet", "c.parquet",
            "--write-release", "rel.csv"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "choose: 0/" in res.output and "replications" in res.output  # plain progress
    for f in ("c.html", "c.png", "c.csv", "c.json", "rel.csv", "rel.csv.json"):
        assert Path(f).stat().st_size > 0, f
    html = Path("c.html").read_text()
    assert "data:image/png;base64," in html and "linkrisk choose orig.csv" in html
    table = pd.read_csv("c.csv")
    assert len(pd.read_parquet("c.parquet")) == len(table)
    js = json.loads(Path("c.json").read_text())
    assert len(table) == len(js["points"]) == 3
    side = json.loads(Path("rel.csv.json").read_text())
    assert side["point"]["point"] == js["recommended"]["point"]
    assert side["chosen_under"]["max_risk_%"] == 25
    # the release is the seeded masking of the recommended point, bit for bit
    rel = linkrisk.mask(census_small, side["method"], columns=side["qi"], seed=side["seed"],
                        **side["params"])
    pd.testing.assert_frame_equal(pd.read_csv("rel.csv"), rel, check_dtype=False)
    assert side["this_release"]["worst_case_%"] <= 25
    # existing outputs are refused before any work; --force overwrites
    before = Path("c.csv").stat().st_mtime_ns
    res = CliRunner().invoke(app, args)
    assert res.exit_code != 0 and "exists" in str(res.exception or res.output)
    assert Path("c.csv").stat().st_mtime_ns == before
    res = CliRunner().invoke(app, [*args, "--force"])
    assert res.exit_code == 0, res.output
    assert "from the cache" in res.output
    # a bad grid or a missing folder fails at once
    for extra in (["-m", "noise:a=2..1"], ["--csv", "nofolder/x.csv"]):
        res = CliRunner().invoke(app, ["choose", "orig.csv", *extra])
        assert res.exit_code != 0
        assert isinstance(res.exception, LinkriskError) or "error" in res.output


def test_cli_coded_categories_json_flag_and_warnings_once(tmp_path, monkeypatch, capsys):
    """Integer codes are masked as the categories the attacks read them as (not with noise,
    which would fail only after the sweep), worker warnings come once as ``warning:``
    lines, and ``--json`` prints JSON on stdout as attack and assess do (issue 38)."""
    from linkrisk import cli

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    pd.DataFrame({c: rng.integers(1, 6, 150) for c in "abc"}).to_csv("codes.csv", index=False)
    try:
        cli.main(["choose", "codes.csv", "-m", "pram:pd=0.8", "--replications", "2",
                  "--processes", "1", "--json"])
        code = 0
    except SystemExit as exc:
        code = exc.code
    cap = capsys.readouterr()
    assert code in (0, None), cap.err
    js = json.loads(cap.out)
    assert [p["point"] for p in js["points"]] == ["pram pd=0.8"]
    assert js["settings"]["kind"] == "categorical"
    warned = [ln for ln in cap.err.splitlines() if "coded categories" in ln]
    assert len(warned) == 1 and warned[0].startswith("warning: "), cap.err
    assert "LinkriskWarning" not in cap.err and "Traceback" not in cap.err
    # the default grid of coded columns is the categorical one (no noise, no rank swap)
    from linkrisk.experiments.choose import coded_as_categories, data_kind

    df = pd.read_csv("codes.csv")
    with pytest.warns(linkrisk.LinkriskWarning, match="coded categories"):
        assert data_kind(coded_as_categories(df, list(df.columns)), list(df.columns)) \
            == "categorical"


def test_cli_checks_matplotlib_before_the_sweep(tmp_path, monkeypatch):
    from linkrisk.cli import app
    from linkrisk.experiments import choose_report

    def missing():
        raise LinkriskError("the risk–utility map needs matplotlib: pip install "
                            "'linkrisk[report]'")

    monkeypatch.setattr(choose_report, "require_matplotlib", missing)
    # the public name too: linkrisk resolves it lazily and keeps it once an earlier test
    # used it
    monkeypatch.setattr(linkrisk, "require_matplotlib", missing)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["choose", "census", "-m", "noise:a=1", "-o", "c.html"])
    assert res.exit_code != 0 and "linkrisk[report]" in str(res.exception)
    assert not Path(".linkrisk-cache").exists()  # nothing was run




