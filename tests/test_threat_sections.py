"""Issue 41's report: one section per threat model (identity, attribute, synthetic) with its
own verdict, the overall verdict the worst of them (exit 3 naming the section above
--max-risk), the attribute results in JSON (counts only), anonymeter's linkability beside
true re-identification, and choose --risk identity|attribute|both."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import linkrisk
from linkrisk.cli import app
from linkrisk.errors import LinkriskError
from linkrisk.synthetic import synthetic_risk

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def household_pram():
    """Household with PRAM on every column but the sensitive relat, which is renamed to a
    string that must be escaped."""
    h = linkrisk.datasets.load("household")
    rel = linkrisk.mask(h, "pram", pd=0.8, seed=1, columns=[c for c in h.columns if c != "relat"])
    return h.rename(columns={"relat": EVIL}), rel.rename(columns={"relat": EVIL})


def test_attribute_section_verdict_json_and_escaping(household_pram):
    h, rel = household_pram
    a = linkrisk.assess(h, rel, sensitive=EVIL, max_risk=50, scenarios="none")
    assert EVIL not in a.settings["qi"]  # the attacker does not know the sensitive value
    ident, attr = a.sections
    assert ident["threat"] == "identity" and attr["threat"] == "attribute"
    assert ident["risk"] == pytest.approx(a.worst.rate) and not ident["exceeds"]
    # the attribute figure: the largest share inferred through an attack's links
    rates = {k: v[EVIL]["rate"] for k, v in a.attribute["linked"].items()}
    assert attr["risk"] == pytest.approx(max(rates.values())) and attr["risk"] > 0.5
    assert attr["exceeds"] and a.exceeds and a.verdict_section["threat"] == "attribute"
    d = json.loads(json.dumps(a.to_dict()))
    assert d["verdict"] == {"section": "attribute", "risk": attr["risk"],
                            "exceeding": ["attribute"]}
    assert d["exceeds_max_risk"] is True
    assert [s["threat"] for s in d["sections"]] == ["identity", "attribute"]
    att = d["attribute"]
    assert att["sensitive"] == [EVIL] and set(att["linked"]) == set(a.attribute["linked"])
    for per in att["linked"].values():  # counts and shares only, never a value
        assert set(per[EVIL]) == {"kind", "inferred", "rate", "tolerance_percent",
                                  "inferred_reidentified", "inferred_without_identity"}
    assert set(att["l_diversity"][EVIL]) >= {"min_distinct", "homogeneous_records"}
    page = a.to_html(f"report {EVIL}")
    assert EVIL not in page and "&lt;script&gt;" in page
    for anchor in ('id="overall"', 'id="sections"', 'id="attribute"', 'id="verdict"'):
        assert anchor in page
    assert "Overall risk level: above the limit of 50 %" in page
    assert f"{100 * attr['risk']:.2f} %" in page and "homogeneous patterns" in page
    assert 'src="http' not in page and 'href="http' not in page and "<script" not in page
    # without sensitive columns: one section, no overall block
    b = linkrisk.assess(h, rel, attacks=["dbrl_hamming"], scenarios="none")
    assert [s["threat"] for s in b.sections] == ["identity"]
    assert 'id="overall"' not in b.to_html() and "attribute" not in b.to_dict()


def test_sensitive_qi_refused(household_pram):
    h, rel = household_pram
    with pytest.raises(LinkriskError, match="both a QI and a sensitive"):
        linkrisk.assess(h, rel, qi=["sex", EVIL], sensitive=EVIL)


def test_cli_exit_3_names_the_section(tmp_path, household_pram):
    h, rel = household_pram
    o, m = tmp_path / "o.csv", tmp_path / "m.csv"
    h.rename(columns={EVIL: "relat"}).to_csv(o, index=False)
    rel.rename(columns={EVIL: "relat"}).to_csv(m, index=False)
    args = ["assess", str(o), str(m), "--sensitive", "relat", "--scenarios", "none",
            "-m", "dbrl_hamming"]
    run = CliRunner().invoke(app, args + ["--max-risk", "50%"])
    assert run.exit_code == 3, run.output
    assert "above the limit: attribute disclosure (relat through dbrl_hamming)" in run.stderr
    assert "within the limit: worst case" in run.stderr
    ok = CliRunner().invoke(app, args + ["--max-risk", "99%", "--json"])
    assert ok.exit_code == 0, ok.output
    d = json.loads(ok.stdout)
    assert d["verdict"]["exceeding"] == [] and "dbrl_hamming" in d["attribute"]["linked"]


def test_linkability_beside_reidentification(census, tmp_path):
    """Census, noise a = 0.5: dbrl re-identifies 23.7 %, anonymeter's linkability 1.4 %."""
    rel = linkrisk.mask(census, "noise", a=0.5, seed=1)
    qi = list(census.columns)  # all 13 (AFNLWGT is left out of the default QIs)
    a = linkrisk.assess(census, rel, qi=qi, attacks=["dbrl"], scenarios="none",
                        linkability=True)
    assert a.results["dbrl"].rate == pytest.approx(0.237, abs=0.001)
    lk = a.linkability
    assert lk["risk"] == pytest.approx(0.0138, abs=0.001) and lk["n_attacks"] == len(census)
    assert lk["control_rate"] is None and len(lk["aux_cols"][0]) == 6
    assert a.to_dict()["linkability"]["n_success"] == lk["n_success"]
    assert [s["threat"] for s in a.sections] == ["identity"]  # not a verdict of its own
    page = a.to_html()
    assert 'id="linkability"' in page and "23.70 %" in page and "1.38 %" in page
    assert "linked to their own released record" in page and "right or wrong" in page
    o, m = tmp_path / "o.csv", tmp_path / "m.csv"
    census.to_csv(o, index=False)
    rel.to_csv(m, index=False)
    run = CliRunner().invoke(app, ["assess", str(o), str(m), "-m", "dbrl", "--scenarios",
                                   "none", "--linkability", "--qi", ",".join(qi)])
    assert run.exit_code == 0, run.output
    assert "anonymeter linkability: 1.38 %" in run.stdout
    assert "True re-identification (worst case, dbrl): 23.70 %" in run.stdout


def _split(census):
    rng = np.random.default_rng(3)
    perm = rng.permutation(len(census))
    cols = ["AFNLWGT", "AGI", "FEDTAX", "PTOTVAL"]
    tr = census.iloc[perm[:400]][cols].reset_index(drop=True)
    ho = census.iloc[perm[400:800]][cols].reset_index(drop=True)
    syn = tr.iloc[rng.choice(400, 400)].reset_index(drop=True)
    syn = syn + rng.standard_normal(syn.shape) * (0.05 * tr.std().to_numpy())
    return tr, ho, syn


def test_synthetic_html_report(census, tmp_path):
    tr, ho, syn = _split(census)
    evil = {"PTOTVAL": EVIL}
    r = synthetic_risk(tr.rename(columns=evil), syn.rename(columns=evil), ho.rename(columns=evil),
                       sensitive=[EVIL], n_boot=10, singling_out_attacks=50, max_risk=5)
    page = r.to_html(f"syn {EVIL}", inputs=[{"role": "original", "name": EVIL, "sha256": "ab"}],
                     command=f"linkrisk assess {EVIL}")
    assert page.startswith("<!DOCTYPE html>") and EVIL not in page and "<script" not in page
    assert 'src="http' not in page and 'href="http' not in page
    assert 'id="synthetic"' in page and "Threat model" in page
    for k in r.attacks:
        assert k.replace(EVIL, "&lt;script&gt;alert(1)&lt;/script&gt;") in page
    w, risk = r.worst
    assert f"{100 * risk:.2f} %" in page and "above</b> it" in page  # risk > 5 %
    assert "membership inference AUC" in page
    # the CLI writes it with -o and names the section above --max-risk
    paths = []
    for name, df in (("o", tr), ("s", syn), ("h", ho)):
        df.to_csv(tmp_path / f"{name}.csv", index=False)
        paths.append(str(tmp_path / f"{name}.csv"))
    rep = tmp_path / "syn.html"
    run = CliRunner().invoke(app, ["assess", paths[0], paths[1], "--synthetic", "--holdout",
                                   paths[2], "-o", str(rep), "--max-risk", "5%"])
    assert run.exit_code == 3, run.output
    assert "above the limit: synthetic data" in run.stderr
    assert 'id="synthetic"' in rep.read_text()


def test_choose_risk_axes(tmp_path):
    """Household, PRAM pd = 0.8, 2 replications: the attribute axis is the largest share of
    records whose relat is inferred through a risk attack's links; both is the larger."""
    kw = dict(replications=2, processes=1, cache_dir=tmp_path / "c", seed=0)
    res = linkrisk.choose("household", ["pram:pd=0.8"], risk="both", sensitive="relat", **kw)
    assert "relat" not in res.settings["qi"] and res.settings["risk"] == "both"
    assert "--risk both --sensitive relat" in res.settings["command"]
    att = res.rows[res.rows["kind"] == "attack"]
    names = res.points.iloc[0]["attacks"].split(",")
    attr = [n for n in names if n.endswith("(attribute)")]
    ident = [n for n in names if not n.endswith("(attribute)")]
    assert attr and ident and "scenarios" in ident
    per_rep = att.groupby("replication").apply(
        lambda g: (g[g["name"].isin(ident)]["result"].max(),
                   g[g["name"].isin(attr)]["result"].max()))
    both = np.array([max(i, a) for i, a in per_rep])
    assert res.points.iloc[0]["risk_mean"] == pytest.approx(both.mean())
    assert min(a for _, a in per_rep) > max(i for i, _ in per_rep)  # attribute decides here
    # attribute alone: the same replications (cached), the attribute rows only
    only = linkrisk.choose("household", ["pram:pd=0.8"], risk="attribute", sensitive="relat",
                           **kw)
    assert only.points.iloc[0]["risk_mean"] == pytest.approx(
        np.mean([a for _, a in per_rep]))
    assert only.points.iloc[0]["deciding_attack"].endswith("(attribute)")
    with pytest.raises(LinkriskError, match="needs the sensitive columns"):
        linkrisk.choose("household", ["pram:pd=0.8"], risk="attribute", **kw)
    with pytest.raises(LinkriskError, match="identity, attribute or both"):
        linkrisk.choose("household", ["pram:pd=0.8"], risk="values", **kw)
    run = CliRunner().invoke(app, ["choose", "household", "-m", "pram:pd=0.8", "--risk",
                                   "attribute", "--processes", "1"])
    assert run.exit_code != 0 and "--sensitive" in str(run.exception or run.output)
