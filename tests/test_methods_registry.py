"""One registry contract for attacks and masking methods: typed parameter declarations,
one validation place, correct attribute kinds, and docs/methods.md generated from them."""

import importlib.util
import inspect
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from linkrisk import catalog
from linkrisk.attacks import ATTACKS, attack, attack_params
from linkrisk.attacks.base import attacks_for
from linkrisk.cli import app
from linkrisk.errors import LinkriskError
from linkrisk.masking import METHODS, mask
from linkrisk.params import Param, coerce_params

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "methods.md"


# ------------------------------------------------------------------ the document
def test_committed_doc_is_up_to_date():
    text = DOC.read_text(encoding="utf-8")
    assert catalog.render(text) == text, \
        "docs/methods.md is out of date: run python scripts/gen_methods_doc.py"


def _block(text: str, registry: str, name: str) -> str:
    m = re.search(rf"<!-- BEGIN params {registry} {name} -->\n(.*?)<!-- END params -->",
                  text, re.S)
    assert m, f"no parameter block for {registry} {name}"
    return m.group(1)


def test_every_method_and_parameter_is_documented():
    text = DOC.read_text(encoding="utf-8")
    for registry, reg in catalog.REGISTRIES.items():
        for name, spec in reg.items():
            block = _block(text, registry, name)
            assert f'<a id="{registry}-{name.replace("_", "-")}"></a>' in text
            for p in spec.params.values():
                assert f"| `{p.name}` | {p.shown_type.replace('|', chr(92) + '|')} | " \
                       f"{p.shown_default} |" in block, (name, p.name)
            if not spec.params:
                assert "No parameters." in block


def test_render_refuses_missing_and_unknown_blocks():
    text = DOC.read_text(encoding="utf-8")
    cut = re.sub(r"<!-- BEGIN params attack prl -->.*?<!-- END params -->", "", text,
                 flags=re.S)
    with pytest.raises(ValueError, match="attack prl"):
        catalog.render(cut)
    with pytest.raises(ValueError, match="unknown attack 'nope'"):
        catalog.render(text + "\n<!-- BEGIN params attack nope -->\n<!-- END params -->\n")


def test_stale_block_is_regenerated_and_script_checks(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    stale = re.sub(r"(<!-- BEGIN params attack kernel -->\n).*?(<!-- END params -->)",
                   r"\1| `d` | integer | 3 | old |\n\2", text, flags=re.S)
    assert stale != text and catalog.render(stale) == text
    f = tmp_path / "methods.md"
    f.write_text(stale, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("gen_methods_doc",
                                                  ROOT / "scripts" / "gen_methods_doc.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--check", str(f)]) == 1
    assert f.read_text(encoding="utf-8") == stale
    assert script.main([str(f)]) == 0
    assert f.read_text(encoding="utf-8") == text
    assert script.main(["--check", str(f)]) == 0


def test_cli_methods_table_and_markdown():
    r = CliRunner().invoke(app, ["methods", "--markdown"])
    assert r.exit_code == 0
    for reg in catalog.REGISTRIES.values():
        for name, spec in reg.items():
            assert f"### `{name}`" in r.output
            for p in spec.params:
                assert f"| `{p}` |" in r.output
    r = CliRunner().invoke(app, ["methods"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    # rich markup must not swallow the bracketed type names
    assert "{column: [categories]}" in r.output and "match_proportion" in r.output
    assert "rank_swap_pbuckets" in r.output


# ------------------------------------------------------------------ declarations = code
@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_declaration_matches_function(name):
    spec = ATTACKS[name]
    sig = {k: v for k, v in inspect.signature(spec.run).parameters.items() if k != "ctx"}
    assert list(sig) == list(spec.params) == attack_params(name)
    for k, p in spec.params.items():
        assert sig[k].default == p.default, (name, k)
        assert isinstance(p, Param) and p.help, (name, k)


@pytest.mark.parametrize("name", list(METHODS))
def test_masking_declaration_matches_function(name):
    spec = METHODS[name]
    sig = inspect.signature(spec.apply).parameters
    if any(v.kind is inspect.Parameter.VAR_KEYWORD for v in sig.values()):
        return  # the method reads **params; its declaration is checked by mask() tests
    own = {k: v for k, v in list(sig.items())[3:]}  # after df, columns, rng
    # a function shared by several methods may take more (e.g. rank swapping's variant);
    # mask() refuses every undeclared parameter, so an undeclared one is unreachable
    assert set(spec.params) <= set(own), name
    for k, p in spec.params.items():
        assert own[k].default is None or own[k].default == p.default, (name, k)


@pytest.mark.parametrize("name,p", [(n, p) for n, s in METHODS.items()
                                    for p in s.params.values() if p.required])
def test_required_masking_parameters_are_required(name, p):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"v1": rng.normal(size=30), "v2": rng.normal(size=30),
                       "v3": rng.normal(size=30)})
    full = {"k": 3, "epsilon": 1.0, "variant": "A", "confidential": ["v3"], "p": 5,
            "q": 3, "a": 0.1, "b": 0.1}
    given = {k: v for k, v in full.items() if k in METHODS[name].params and k != p.name}
    with pytest.raises(LinkriskError, match=p.name):
        mask(df, name, seed=0, **given)


# ------------------------------------------------------------------ kinds are real
def _files(n=40):
    rng = np.random.default_rng(0)
    cats = list("abcde")
    x = rng.normal(size=n)
    o = pd.Categorical(rng.choice(cats, n), categories=cats, ordered=True)
    o2 = pd.Categorical(rng.choice(cats, n), categories=cats, ordered=True)
    m = pd.Categorical(rng.choice(["p", "q", "r"], n))
    m2 = pd.Categorical(rng.choice(["s", "t"], n))
    return {
        ("numeric",): pd.DataFrame({"x": x, "y": rng.normal(size=n)}),
        ("ordinal",): pd.DataFrame({"o": o, "o2": o2}),
        ("nominal",): pd.DataFrame({"m": m, "m2": m2}),
        ("numeric", "nominal"): pd.DataFrame({"x": x, "m": m}),
        ("numeric", "ordinal"): pd.DataFrame({"x": x, "o": o}),
        ("ordinal", "nominal"): pd.DataFrame({"o": o, "m": m}),
    }


@pytest.mark.parametrize("name", list(ATTACKS))
def test_declared_kinds_are_the_kinds_the_attack_runs_on(name):
    spec = ATTACKS[name]
    rng = np.random.default_rng(1)
    for kinds, df in _files().items():
        masked = df.copy()
        for c in df:
            if df[c].dtype.kind == "f":
                masked[c] = df[c] + rng.normal(scale=0.1, size=len(df))
        try:
            attack(df, masked, name)
            ran = True
        except LinkriskError:
            ran = False
        assert ran == spec.accepts(kinds), (name, kinds)
    assert spec.accepts({"a": "numeric"}) == ("numeric" in spec.kinds)


def test_attacks_for_kinds():
    assert attacks_for({"x": "numeric"}) == [n for n, s in ATTACKS.items()
                                             if "numeric" in s.kinds]
    cat = attacks_for(["ordinal", "nominal"])
    assert {"dbrl", "dbrl_l1", "dbrl_hamming", "dbrl_mixed", "prl", "gdbrl"} == set(cat)
    mixed = attacks_for({"x": "numeric", "m": "nominal"})
    assert "dbrl_l1" not in mixed and "dbrl_hamming" not in mixed and "dbrl" in mixed


# ------------------------------------------------------------------ one validation place
def test_coerce_params_contract():
    decl = {"k": Param("k", int, 3), "how": Param("how", str, "a", choices=("a", "b")),
            "cols": Param("cols", list)}
    assert coerce_params("m", decl, {"k": "5", "cols": "x, y"}) == \
        {"k": 5, "cols": ["x", "y"], "how": "a"}
    assert coerce_params("m", decl, {}, fill_defaults=False) == {}
    with pytest.raises(LinkriskError, match="m: unknown parameter 'kk'; m accepts k, how"):
        coerce_params("m", decl, {"kk": 1})
    with pytest.raises(LinkriskError, match="parameter k must be an integer, got 2.5"):
        coerce_params("m", decl, {"k": 2.5})
    with pytest.raises(LinkriskError, match="parameter how must be one of a, b, got 'c'"):
        coerce_params("m", decl, {"how": "c"})
    with pytest.raises(TypeError):
        Param("x", dict)


def test_attack_parameters_are_coerced_and_checked():
    rng = np.random.default_rng(2)
    a = pd.DataFrame(rng.normal(size=(50, 3)), columns=list("xyz"))
    b = a + rng.normal(scale=0.3, size=a.shape)
    r1 = attack(a, b, "kernel", d="3")  # as the CLI may pass it
    r2 = attack(a, b, "kernel", d=3)
    assert r1.correct_links == r2.correct_links and r1.params == {"d": 3}
    with pytest.raises(LinkriskError, match="kernel: parameter d must be an integer"):
        attack(a, b, "kernel", d="two")
    with pytest.raises(LinkriskError, match="gdbrl: parameter approx must be one of"):
        attack(a, b, "gdbrl", approx="agdbrl3")
    with pytest.raises(LinkriskError, match="has no parameter 'zz'"):
        attack(a, b, "dbrl", zz=1)
    r = attack(a, b, "rsrl", p=5)
    assert r.params == {"p": 5.0} and isinstance(r.params["p"], float)
