"""The paths a data owner takes (issue "a verdict a data owner can trust"): a shuffled
release is refused, not scored; codes are not read as quantities; identifiers, weights and
unchanged columns are not silently used as QIs; the report does not leak records;
``--max-risk`` gates a pipeline; ``all`` means every attack that applies."""

from __future__ import annotations

import json
import re
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk import cli
from linkrisk.attacks import make_context, why_not
from linkrisk.data import attribute_kinds, coded, id_like, select_qi, weight_like
from linkrisk.errors import LinkriskError, LinkriskWarning
from linkrisk.truth import row_order_check


def run(argv, capsys):
    try:
        cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture(scope="module")
def pair():
    orig = linkrisk.datasets.synthetic(500, 5, seed=11)
    return orig, linkrisk.mask(orig, "rank_swap", p=5, seed=12)


# ------------------------------------------------------------------ truth
def test_shuffled_release_refused_and_ids_give_the_same_answer(pair):
    orig, rel = pair
    right = linkrisk.attack(orig, rel, "rbrl_max")
    assert right.rate > 0.9
    perm = np.random.default_rng(0).permutation(len(rel))
    shuffled = rel.iloc[perm].reset_index(drop=True)
    with pytest.raises(LinkriskError, match="the release looks reordered.*--ids"):
        linkrisk.attack(orig, shuffled, "rbrl_max")
    with pytest.raises(LinkriskError, match="reordered"):
        linkrisk.assess(orig, shuffled)
    # the override scores the (wrong) row order, as asked: near 1/n
    forced = linkrisk.attack(orig, shuffled, "rbrl_max", assume_row_order=True)
    assert forced.rate < 0.05
    # with an id column the shuffled release gives exactly the aligned answer
    o = orig.assign(rid=np.arange(len(orig)))
    s = rel.assign(rid=np.arange(len(rel))).iloc[perm]
    by_id = linkrisk.attack(o, s, "rbrl_max", ids="rid", qi=list(orig.columns))
    assert by_id.correct_links == right.correct_links
    a = linkrisk.assess(o, s, ids="rid", qi=list(orig.columns), attacks="dbrl,prl")
    b = linkrisk.assess(orig, rel, attacks="dbrl,prl")
    assert a.measures["IL"] == pytest.approx(b.measures["IL"])
    assert a.measures["ID"] == pytest.approx(b.measures["ID"])
    assert a.settings["truth"].startswith("id column rid (500 records paired, 100 % of the "
                                          "smaller file; checked")
    assert b.settings["truth"].startswith("row order (checked")


@pytest.mark.parametrize("noise", [0.1, 1.0, 4.0])
def test_row_order_check_accepts_genuine_releases(noise):
    orig = linkrisk.datasets.synthetic(800, 6, seed=3)
    rel = linkrisk.mask(orig, "noise", a=noise, seed=4)
    chk = row_order_check(orig, rel, list(orig.columns), dict.fromkeys(orig.columns, "numeric"))
    assert chk.checked and chk.mean_rank < chk.threshold


def test_row_order_check_on_categories_and_small_files():
    rng = np.random.default_rng(1)
    a = pd.DataFrame({c: rng.choice(list("abcd"), 400) for c in "xyz"})
    b = a.copy()
    flip = rng.random(400) < 0.3
    b.loc[flip, "x"] = rng.choice(list("abcd"), int(flip.sum()))
    kinds = dict.fromkeys("xyz", "nominal")
    assert row_order_check(a, b, list("xyz"), kinds).checked
    with pytest.raises(LinkriskError, match="reordered"):
        row_order_check(a, b.sample(frac=1, random_state=2).reset_index(drop=True),
                        list("xyz"), kinds)
    assert not row_order_check(a.head(5), b.head(5), list("xyz"), kinds).checked


def test_row_order_refusal_rate_under_shuffling_is_one():
    # under a permutation the statistic is ~N(0.5, 1/(12·s)): 4 sd below never happens
    orig = linkrisk.datasets.synthetic(300, 4, seed=8)
    rel = linkrisk.mask(orig, "noise", a=0.2, seed=9)
    kinds = dict.fromkeys(orig.columns, "numeric")
    for seed in range(5):
        sh = rel.sample(frac=1, random_state=seed).reset_index(drop=True)
        with pytest.raises(LinkriskError):
            row_order_check(orig, sh, list(orig.columns), kinds, seed=seed)


# ------------------------------------------------------------------ QI screening, codes
def test_coded_integers_read_as_categories_with_a_warning():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"region": rng.integers(1, 6, 300), "income": rng.normal(5e4, 1e4, 300),
                       "age": rng.integers(18, 90, 300)})
    assert coded(df["region"]) and not coded(df["income"]) and not coded(df["age"])
    notes: list[str] = []
    k = attribute_kinds(df, list(df.columns), notes=notes)
    assert k == {"region": "nominal", "income": "numeric", "age": "numeric"}
    assert "region" in notes[0] and "--kinds region=numeric" in notes[0]
    assert attribute_kinds(df, ["region"], {"region": "numeric"}) == {"region": "numeric"}
    # attack and assess agree on the kinds
    rel = df.assign(income=df["income"] + rng.normal(0, 500, 300), age=df["age"] + 1,
                    region=np.where(rng.random(300) < 0.1, 1, df["region"]))
    with pytest.warns(LinkriskWarning, match="region"):
        ctx, _ = make_context(df, rel)
    with pytest.warns(LinkriskWarning, match="region"):
        a = linkrisk.assess(df, rel)
    assert a.settings["kinds"] == ctx.kinds
    assert "dbrl_mixed" in a.results and "mahalanobis" not in a.results


def test_household_codes_ids_weights_and_unchanged_columns(data_dir, tmp_path, capsys):
    hh = linkrisk.datasets.load("household", data_dir, raw=True).head(800)
    rel = hh.copy()
    rng = np.random.default_rng(3)
    for c in ("roof", "walls", "water"):
        swap = rng.random(len(rel)) < 0.2
        rel.loc[swap, c] = rng.permutation(rel[c].to_numpy())[swap]
    rel["expend"] = rel["expend"] * rng.lognormal(0, 0.1, len(rel))
    hh.to_csv(tmp_path / "hh.csv", index=False)
    rel.to_csv(tmp_path / "rel.csv", index=False)
    code, out, err = run(["assess", tmp_path / "hh.csv", tmp_path / "rel.csv",
                          "-o", tmp_path / "r.html", "--json"], capsys)
    assert code == 0, err
    warn = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    text = " ".join(warn)
    assert re.search(r"id-like column.*ori_hid", text)
    assert re.search(r"weight-like columns sampling_weight, household_weights", text)
    assert "unchanged columns" not in text  # unchanged QIs stay: the most dangerous ones
    assert re.search(r"integer columns .*roof.* read as coded categories", text)
    d = json.loads(out)
    qi = d["settings"]["qi"]
    assert {"roof", "walls", "water", "expend", "income", "savings"} <= set(qi)
    assert "ori_hid" not in qi and "sampling_weight" not in qi
    assert d["unchanged"]["income"]["share_identical"] == 1.0
    assert d["unchanged"]["income"]["unique_records"] > 0
    assert "expend" not in d["unchanged"]
    assert d["settings"]["kinds"]["roof"] == "nominal"
    assert d["settings"]["kinds"]["expend"] == "numeric"
    assert len(d["warnings"]) == len(warn)
    html = (tmp_path / "r.html").read_text()
    assert "quasi-identifiers used" in html and "roof, walls, water" in html
    assert "ori_hid" in html  # named in the warnings section


def test_id_and_weight_heuristics():
    n = 50
    assert id_like(pd.Series(np.arange(n)), "x")            # counts records
    assert id_like(pd.Series([f"p{i}" for i in range(n)]), "name")
    assert id_like(pd.Series(np.zeros(n)), "person_id")     # by name
    assert id_like(pd.Series(np.zeros(n)), "UTILITYID")
    assert not id_like(pd.Series(np.random.default_rng(0).normal(size=n)), "income")
    assert not id_like(pd.Series(np.random.default_rng(0).permutation(n) * 7 + 3), "AGI")
    assert not id_like(pd.Series(np.zeros(n)), "paid")
    assert weight_like("AFNLWGT") and weight_like("household_weights") and weight_like("wt")
    assert not weight_like("hours_per_week") and not weight_like("FEDTAX")


def test_explicit_qi_is_used_as_given_and_identity_release_kept():
    df = pd.DataFrame({"id": range(30), "x": np.linspace(0, 1, 30) ** 2})
    notes: list[str] = []
    assert select_qi(df, df, "id,x", notes=notes, screen=True) == ["id", "x"] and notes == []
    # the research API keeps every common column unless asked to screen
    assert select_qi(df, df) == ["id", "x"]
    # columns released unchanged stay in the default QIs
    same = select_qi(df[["x"]], df[["x"]], truth=np.arange(30), notes=notes, screen=True)
    assert same == ["x"] and notes == []


# ------------------------------------------------------------------ API argument types
def test_api_argument_types(pair):
    orig, rel = pair
    r = linkrisk.attack(orig, rel, method=["dbrl"], memory_budget="64MiB")
    assert r.method == "dbrl"
    with pytest.raises(LinkriskError, match="qi must be"):
        linkrisk.attack(orig, rel, qi=5)
    both = linkrisk.attack(orig, rel, method=["dbrl", "prl"])  # several: a mapping
    assert list(both) == ["dbrl", "prl"] and both["dbrl"].rate == r.rate
    with pytest.raises(LinkriskError, match="method must be"):
        linkrisk.attack(orig, rel, method=5)
    with pytest.raises(LinkriskError, match="two columns named 'v1'"):
        linkrisk.attack(orig.rename(columns={"v2": "v1"}), rel)
    with pytest.raises(LinkriskError, match="cannot read memory size"):
        linkrisk.attack(orig, rel, memory_budget="1.2.3MiB")
    with pytest.raises(LinkriskError, match="non-negative"):
        linkrisk.attack(orig, rel, seed=-5)
    with pytest.raises(LinkriskError, match="must be an integer"):
        linkrisk.attack(orig, rel, "kernel", d=2.5)
    with pytest.raises(LinkriskError, match="integer from 1 to 50"):
        linkrisk.attack(orig, rel, "kernel", d=200)


# ------------------------------------------------------------------ all / applicability
def test_all_means_every_applicable_attack_and_gdbrl_skip_is_listed(pair, capsys):
    orig, rel = pair
    a = linkrisk.assess(orig, rel, global_max_n=100)
    assert "gdbrl" in a.skipped and "100 records" in a.skipped["gdbrl"]
    assert "dbrl" in a.results and "dbrl_hamming" not in a.results
    ctx, _ = make_context(orig, rel)
    assert "--kinds" in why_not(ctx, "dbrl_hamming")
    assert why_not(ctx, "dbrl") is None


def test_attack_all_on_numeric_files_runs_and_lists_skips(pair, tmp_path, capsys):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    code, out, err = run(["attack", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "all",
                          "--json"], capsys)
    assert code == 0, err
    names = {r["method"] for r in json.loads(out)}
    applicable = {n for n in linkrisk.ATTACKS if n != "dbrl_hamming"}
    assert names == applicable
    assert "not run dbrl_hamming: hamming compares categories" in err
    assert "--kinds" in err and "kinds={" not in err


# ------------------------------------------------------------------ report and gating
def test_report_has_no_record_values_by_default(pair, tmp_path, capsys):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "dbrl,rbrl_max",
                        "-o", tmp_path / "r.html"], capsys)
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    exposed = html.split('id="exposed"')[1].split('id="inputs"')[0]
    from linkrisk.report import fmt

    # values ≥ 1000 cannot be confused with record numbers (< 500), risks or shares
    values = {fmt(v) for v in orig.to_numpy().ravel() if abs(v) >= 1000}
    cells = set(re.findall(r"<td[^>]*>([^<]*)</td>", exposed))
    assert not (cells & values) and 'class="banner"' not in html
    import hashlib

    digest = hashlib.sha256((tmp_path / "o.csv").read_bytes()).hexdigest()
    assert digest in html and "linkrisk assess" in html and "-m dbrl,rbrl_max" in html
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "dbrl",
                        "-o", tmp_path / "r2.html", "--include-records"], capsys)
    assert code == 0 and "confidential" in err
    html = (tmp_path / "r2.html").read_text()
    exposed = html.split('id="exposed"')[1].split('id="inputs"')[0]
    assert 'class="banner"' in html and set(re.findall(r"<td[^>]*>([^<]*)</td>", exposed)) & values


def test_max_risk_exit_codes(pair, tmp_path, capsys):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    args = ["assess", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "dbrl"]
    code, out, err = run(args + ["--max-risk", "5%"], capsys)
    assert code == 3 and "above the limit" in err and "Worst case" in out
    code, out, err = run(args + ["--max-risk", "100"], capsys)
    assert code == 0 and "within the limit" in err
    code, out, err = run(args + ["--max-risk", "5%", "--json"], capsys)
    assert code == 3 and json.loads(out)["exceeds_max_risk"] is True
    code, out, err = run(args, capsys)
    assert code == 0


def test_attacks_alias_and_version(pair, tmp_path, capsys):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    code, out, _ = run(["assess", tmp_path / "o.csv", tmp_path / "m.csv", "--attacks", "dbrl",
                        "--json"], capsys)
    assert code == 0 and [r["method"] for r in json.loads(out)["attacks"]] == ["dbrl"]
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"linkrisk {linkrisk.__version__}"
    code, out, _ = run(["assess", "--help"], capsys)
    assert "--attacks" not in out and "--method" in out and "<bool>" not in out
    code, out, _ = run(["study", "--help"], capsys)
    assert "[quick]" in out


def test_mask_prints_the_seed_it_used(pair, tmp_path, capsys):
    orig, _ = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    code, _, err = run(["mask", tmp_path / "o.csv", "-m", "noise", "-p", "a=0.5", "-o", tmp_path / "a.csv"],
                       capsys)
    assert code == 0
    seed = int(re.search(r"seed (\d+): drawn, pass --seed", err).group(1))
    code, _, _ = run(["mask", tmp_path / "o.csv", "-m", "noise", "-p", "a=0.5", "-o", tmp_path / "b.csv",
                      "--seed", seed], capsys)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


# ------------------------------------------------------------------ dependencies, progress
def test_global_categorical_matching_without_pot(monkeypatch):
    rng = np.random.default_rng(2)
    a = pd.DataFrame({c: pd.Categorical(rng.choice(list("abc"), 300)) for c in "xyz"})
    b = a.copy()
    flip = rng.random(300) < 0.2
    b.loc[flip, "x"] = rng.choice(list("abc"), int(flip.sum()))
    with_pot = linkrisk.attack(a, b, "gdbrl", metric="hamming", solver="auto",
                               dense_max_n=10)
    monkeypatch.setitem(sys.modules, "ot", None)  # import ot → ImportError
    from linkrisk.engine.matching import transport

    assert not transport.available()
    without = linkrisk.attack(a, b, "gdbrl", metric="hamming", solver="auto", dense_max_n=10)
    assert with_pot.extra["solver"] == "patterns" and without.extra["solver"] != "patterns"
    # both are optimal one-to-one matchings: same total cost
    assert without.extra["total_cost"] == pytest.approx(with_pot.extra["total_cost"])
    with pytest.raises(LinkriskError, match=r"linkrisk\[transport\]"):
        linkrisk.attack(a, b, "gdbrl", metric="hamming", solver="patterns")


def test_prl_and_screened_dbrl_report_progress():
    orig = linkrisk.datasets.synthetic(400, 4, seed=1)
    rel = linkrisk.mask(orig, "noise", a=0.5, seed=2)
    calls = []
    linkrisk.attack(orig, rel, "prl", progress=lambda d, t: calls.append((d, t)), tol=0.1)
    assert len(calls) >= 10 and calls[-1] == (400, 400)
    pytest.importorskip("faiss", reason="needs faiss-cpu: pip install -e '.[fast]'")
    import faiss

    from linkrisk.engine import nearest_sets
    from linkrisk.engine.nearest.faiss_screen import query_rows

    # query blocks never go below faiss's BLAS threshold (smaller ones are several times
    # slower), so with its stock threshold a 3,000-row file is searched in one block ...
    blas = faiss.cvar.distance_compute_blas_threshold
    assert query_rows(faiss, 262_144, 10**6) >= blas and query_rows(faiss, 262_144, 3000) >= 3000
    x = np.random.default_rng(0).normal(size=(3000, 3))
    # ... and with a low threshold the blocks follow the ~20 progress reports
    faiss.cvar.distance_compute_blas_threshold = 20
    try:
        calls = []
        nearest_sets(x, x + 0.01, metric="sqeuclidean", screen="faiss",
                     progress=lambda d, t: calls.append((d, t)))
    finally:
        faiss.cvar.distance_compute_blas_threshold = blas
    assert len(calls) >= 3 and calls[-1][0] == calls[-1][1]


def test_progress_lines_without_a_terminal(pair, tmp_path, capsys, monkeypatch):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)
    monkeypatch.setattr(cli.console, "PLAIN_EVERY", 0.0)
    code, _, err = run(["attack", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "prl"], capsys)
    assert code == 0
    assert re.search(r"^prl: [\d,]+/500 records \(\d+ %\), \d+ s$", err, flags=re.M)


def test_install_hint_keeps_its_brackets(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, _, err = run(["attack", "a[report].csv", "b.csv"], capsys)
    assert code == 2 and "a[report].csv" in err


# ------------------------------------------------------------------ issue 38: no verdict on an unchecked assumption
def _census_part(tmp_path):
    census = linkrisk.datasets.load("census")
    part = linkrisk.mask(census, "noise", a=1, columns=["AGI", "FEDTAX"], seed=1)
    part.to_csv(tmp_path / "part.csv", index=False)
    return census, part


def test_unchanged_columns_stay_in_the_default_qis_and_are_named(tmp_path, capsys):
    census, part = _census_part(tmp_path)
    a = linkrisk.assess(census, part, attacks="rbrl_sum", max_risk=5)
    assert "EMCONTRB" in a.settings["qi"] and len(a.settings["qi"]) == 12
    assert a.exceeds and 100 * a.worst.rate > 90  # was 0.46 % on AGI and FEDTAX alone
    u = a.unchanged
    assert "AGI" not in u and u["EMCONTRB"]["share_identical"] == 1.0
    assert u["EMCONTRB"]["unique_records"] > 1000
    assert a.to_dict()["unchanged"]["EMCONTRB"] == u["EMCONTRB"]
    assert "EMCONTRB" in a.verdict_notes[0]
    code, out, err = run(["assess", "census", tmp_path / "part.csv", "-m", "rbrl_sum",
                          "--max-risk", "5%"], capsys)
    assert code == 3, err
    verdict = [ln for ln in err.splitlines() if "above the limit" in ln]
    assert verdict and "EMCONTRB" in verdict[0] and "unchanged" in verdict[0]


def _pid_files(tmp_path, capsys):
    census = linkrisk.datasets.load("census")
    census.insert(0, "pid", np.arange(1, len(census) + 1))
    census.to_csv(tmp_path / "o.csv", index=False)
    code, _, err = run(["mask", tmp_path / "o.csv", "-m", "noise", "-p", "a=0.5", "--seed", 1,
                        "-o", tmp_path / "r.csv"], capsys)
    assert code == 0 and "warning: id-like column pid" in err
    rel = pd.read_csv(tmp_path / "r.csv")
    assert (rel["pid"] == census["pid"]).all() and (rel["AGI"] != census["AGI"]).any()
    return census, rel


def test_mask_leaves_ids_alone_and_assess_checks_that_ids_pair_records(tmp_path, capsys):
    census, rel = _pid_files(tmp_path, capsys)
    # named in --columns, the id is masked as asked
    masked_id = linkrisk.mask(census, "noise", a=0.5, seed=1, columns=["pid", "AGI"])
    assert (masked_id["pid"] != census["pid"]).all()
    rel.assign(pid=masked_id["pid"]).to_csv(tmp_path / "noised.csv", index=False)
    shuffled = rel.assign(pid=np.random.default_rng(0).permutation(rel["pid"].to_numpy()))
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    for name, phrase in (("noised.csv", "pairs only 0 of the 1,080 records"),
                         ("shuffled.csv", "the ids do not pair masked records")):
        for cmd in (["assess", "--max-risk", "5%"], ["attack"]):
            code, _, err = run([cmd[0], tmp_path / "o.csv", tmp_path / name, "--ids", "pid",
                                *cmd[1:]], capsys)
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert code == 2 and len(lines) == 1 and phrase in lines[0], err
    # the genuine ids, shuffled with their records: accepted, and the share is reported
    res = linkrisk.attack(census, rel.sample(frac=1, random_state=2), ["dbrl"], ids="pid",
                          errors="collect")
    assert "1,080 records paired, 100 %" in res.truth and "checked" in res.truth


def test_overflowing_values_are_refused_without_numpy_warnings(capsys):
    o = linkrisk.datasets.load("census")
    m = linkrisk.mask(o, "noise", a=1, seed=1)
    for big in (1e300, 1e100):
        o2, m2 = o.copy(), m.copy()
        o2.loc[5, "AGI"] = m2.loc[5, "AGI"] = big
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for meth in ("mahalanobis", "dbrl"):
                with pytest.raises(LinkriskError, match=r"column 'AGI'.*row 5"):
                    linkrisk.attack(o2, m2, meth)


def test_renamed_column_and_case_only_categories(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 400
    o = pd.DataFrame({"sex": rng.choice(["Female", "Male"], n),
                      "job": rng.choice(["clerk", "farmer", "teacher", "nurse", "driver"], n),
                      "region": rng.choice(list("abcdefgh"), n)})
    m = linkrisk.mask(o, "pram", columns=["region"], seed=1)
    right = linkrisk.attack(o, m, "dbrl_hamming").rate
    lower = m.assign(sex=m["sex"].str.lower() + " ")
    with pytest.warns(LinkriskWarning, match="'sex' are written differently in the two files"):
        got = linkrisk.attack(o, lower, "dbrl_hamming").rate
    assert got == right
    # codes written 2 in one file and 2.0 in the other are one category too
    coded = o.assign(job=o["job"].map({"clerk": 1, "farmer": 2, "teacher": 3, "nurse": 4,
                                       "driver": 5}))
    mc = m.assign(job=coded["job"].astype(float).map(lambda v: f"{v:.1f}"))
    with pytest.warns(LinkriskWarning, match="'job' are written differently"):
        got = linkrisk.attack(coded.astype({"job": str}), mc, "dbrl_hamming").rate
    assert got == right
    # a renamed numeric column: assess refuses to leave it out (it would lower the
    # verdict), names the rename, and runs once the QIs are named
    o = linkrisk.datasets.synthetic(300, 4, seed=1)
    m = linkrisk.mask(o, "noise", a=0.3, seed=2).rename(columns={"v2": "income"})
    o.to_csv(tmp_path / "o.csv", index=False)
    m.to_csv(tmp_path / "m.csv", index=False)
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "dbrl",
                        "--max-risk", "100%"], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert re.search(r"error: the release has column 'income' that the original lacks "
                     r"\('income' looks like 'v2' renamed\)", lines[0])
    # the attack command (no verdict) still runs on the common columns, with the warning
    code, _, err = run(["attack", tmp_path / "o.csv", tmp_path / "m.csv", "-m", "dbrl"],
                       capsys)
    assert code == 0, err
    assert re.search(r"warning: columns v2 only in the original; income only in the release.*"
                     r"'income' looks like 'v2' renamed", err)
    # a column renamed by case only is named as a rename even when its values were
    # masked beyond the profile test; with every column so renamed the one error names
    # the pairs instead of only "no column in common"
    m3 = linkrisk.mask(o, "noise", a=5.0, seed=2).rename(columns={"v2": "V2"})
    m3.to_csv(tmp_path / "m3.csv", index=False)
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m3.csv", "-m", "dbrl"],
                       capsys)
    assert code == 2 and re.search(r"'V2' looks like 'v2' renamed", err), err
    m4 = linkrisk.mask(o, "noise", a=0.3, seed=2).rename(columns=str.upper)
    m4.to_csv(tmp_path / "m4.csv", index=False)
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m4.csv", "-m", "dbrl"],
                       capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert re.search(r"no column in common \(they differ only by case or blanks: "
                     r"'v1' / 'V1', 'v2' / 'V2'", lines[0]), err
    # columns only in the original (the release leaves them out) are named, not refused
    m2 = linkrisk.mask(o, "noise", a=0.3, seed=2).drop(columns=["v2"])
    m2.to_csv(tmp_path / "m2.csv", index=False)
    code, _, err = run(["assess", tmp_path / "o.csv", tmp_path / "m2.csv", "-m", "dbrl",
                        "--max-risk", "100%"], capsys)
    assert code == 0, err
    assert re.search(r"within the limit.*not assessed \(in one file only\): v2", err)


def test_no_attack_runs_is_an_error(pair, tmp_path, capsys, monkeypatch):
    orig, rel = pair
    orig.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "m.csv", index=False)

    def none_run(ctx, names, params=None, **kw):
        return {}, {n: "cannot run here" for n in names}

    monkeypatch.setattr(linkrisk.attacks, "run_attacks", none_run)
    monkeypatch.setattr(linkrisk.assessment, "run_attacks", none_run)
    for argv in (["attack", "-m", "all"], ["attack", "-m", "all", "--json"], ["assess"]):
        code, out, err = run([argv[0], tmp_path / "o.csv", tmp_path / "m.csv", *argv[1:]],
                             capsys)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2 and out == "" and len(lines) == 1, err
        assert lines[0].startswith("error: no attack could run")


def test_api_and_cli_attack_use_the_same_default_qis(tmp_path, capsys):
    census = linkrisk.datasets.load("census")
    rel = linkrisk.mask(census, "noise", a=1, seed=3)
    rel.to_csv(tmp_path / "r.csv", index=False)
    code, out, err = run(["attack", "census", tmp_path / "r.csv", "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)[0]
    api = linkrisk.attack(census, rel)
    assert res["qi"] == api.qi == list(census.columns)  # AFNLWGT included in both
    assert res["rate"] == api.rate


def test_results_as_frames_and_html(pair):
    orig, rel = pair
    res = linkrisk.attack(orig, rel, ["dbrl", "rbrl_max"])
    f = res.to_frame()
    assert list(f.index) == ["dbrl", "rbrl_max"] and f.loc["dbrl", "rate_%"] == 100 * res["dbrl"].rate
    assert "<table" in res._repr_html_()
    a = linkrisk.assess(orig, rel, attacks="dbrl,rbrl_max")
    assert list(a.to_frame().index)[0] == a.worst.method
    assert "Worst case" in a._repr_html_() and "<table" in a._repr_html_()
    one = linkrisk.attack(orig, rel, "dbrl")
    assert one.to_frame().loc["dbrl", "correct_links"] == one.correct_links
    assert "dbrl" in one._repr_html_() and "<table" in one._repr_html_()
