"""The registries of attacks and masking methods: the attack order stated in
attacks/registry.py (ATTACK_MODULES, not the order Python imports the modules), one
contract for both (typed parameter declarations, one validation place, correct attribute
kinds, docs/methods.md generated from them), then the mask() contract shared by every masking method (registry, columns,
seeds, pass-through, parameter checking and the common validation errors)."""

import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from linkrisk import catalog
from linkrisk.attacks import ATTACKS, attack, attack_params
from linkrisk.attacks.base import attacks_for, register
from linkrisk.attacks.registry import ATTACK_MODULES, order_attacks
from linkrisk.cli import app
from linkrisk.errors import LinkriskError
from linkrisk.masking import CATEGORICAL_METHODS, METHODS, NUMERIC_METHODS, mask, method_params
from linkrisk.params import Param, coerce_params
from tests.conftest import continuous

#: the order ``linkrisk methods`` and ``-m all`` show (dbrl and its variants first)
ORDER = ["dbrl", "dbrl_l1", "dbrl2", "mahalanobis", "mahalanobis0", "kernel", "dbrl_mixed",
         "dbrl_hamming", "gdbrl", "prl", "rbrl_sum", "rbrl_max", "rsrl", "rsrl_union"]


@pytest.fixture
def saved_registry():
    saved = dict(ATTACKS)
    yield
    ATTACKS.clear()
    ATTACKS.update(saved)


def test_registry_order_is_the_documented_one():
    assert list(ATTACKS) == ORDER


#: the attack modules' short names, in ATTACK_MODULES's order (a new module needs no edit here)
MODULES = [m.__name__.rsplit(".", 1)[1] for m in ATTACK_MODULES]


@pytest.mark.parametrize("first", MODULES[::-1])
def test_order_does_not_depend_on_which_module_is_imported_first(first):
    code = (f"import linkrisk.attacks.{first}\n"
            "from linkrisk.attacks import ATTACKS\nprint(','.join(ATTACKS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.split(",") == ORDER


def test_order_follows_attack_modules(saved_registry):
    order_attacks(ATTACK_MODULES[::-1])
    modules = [spec.run.__module__.split(".")[2] for spec in ATTACKS.values()]
    assert modules == sorted(modules, key=MODULES[::-1].index)
    order_attacks()
    assert list(ATTACKS) == ORDER


def test_an_attack_of_an_unlisted_module_is_refused(saved_registry):
    register("unlisted_attack", "a test attack")(lambda ctx: None)
    with pytest.raises(RuntimeError, match="not in linkrisk.attacks.registry.ATTACK_MODULES"):
        order_attacks()


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


# ================================================================== mask() contract
# small parameterization of every method, applied to the `mixed` fixture
CASES = {
    "noise": dict(a=0.2),
    "correlated_noise": dict(a=0.2),
    "multiplicative_noise": dict(b=0.2),
    "rank_swap": dict(p=10),
    "rank_swap_pdist": dict(p=10),
    "rank_swap_pbuckets": dict(p=5),
    "rank_shuffle": dict(q=5),
    "microaggregation_ir": dict(k=3),
    "mdav": dict(k=3),
    "micdp": dict(k=3, epsilon=1.0),
    "ipso": dict(variant="B", confidential=["v3"]),
    "data_shuffle": dict(confidential=["v3"]),
    "pram": dict(pd=0.6),
    "top_coding": dict(quantile=0.6),
    "bottom_coding": dict(quantile=0.3),
    "global_recoding": dict(width=2, n_groups=2),
    "local_suppression": dict(k=8),
}


def test_registry_lists_every_method():
    assert set(METHODS) == set(CASES)
    assert set(NUMERIC_METHODS) | set(CATEGORICAL_METHODS) == set(METHODS)
    for name, spec in METHODS.items():
        assert spec.name == name and spec.summary and callable(spec)
        assert name in spec.doc and re.search(r"\b(19|20)\d\d\b", spec.doc)  # cites a paper


def test_method_params_contract():
    assert method_params("noise") == {"a": float, "percent": float, "scale": str}
    assert method_params("rank_shuffle") == {"q": int, "s": int}
    assert method_params("ipso") == {"variant": str, "confidential": list, "mutual": bool}
    assert method_params("micdp") == {"k": int, "epsilon": float}
    assert set(method_params("pram")) == {"pd", "alpha", "matrix", "strata", "variant"}
    assert {"width", "n_groups", "min_frequency"} <= set(method_params("global_recoding"))
    with pytest.raises(LinkriskError, match="known: .*mdav"):
        method_params("nope")


@pytest.mark.parametrize("method", sorted(CASES))
def test_contract_every_method(method, mixed):
    before = mixed.copy(deep=True)
    out1 = mask(mixed, method, seed=7, **CASES[method])
    out2 = mask(mixed, method, seed=7, **CASES[method])
    pd.testing.assert_frame_equal(mixed, before)                # input untouched
    pd.testing.assert_frame_equal(out1, out2)                   # same seed, same output
    assert list(out1.columns) == list(mixed.columns)
    assert out1.index.equals(mixed.index)
    spec = METHODS[method]
    masked = [c for c in mixed.columns if not out1[c].equals(mixed[c])]
    assert masked, "something must change"
    if spec.kind == "numeric":
        # non-numeric columns and the confidential one pass through unchanged
        assert set(masked) <= {"v1", "v2", "v3"} - set(CASES[method].get("confidential", []))
    if not spec.deterministic:
        other = mask(mixed, method, seed=8, **CASES[method])
        assert not other.equals(out1)
    else:
        pd.testing.assert_frame_equal(mask(mixed, method, seed=8, **CASES[method]), out1)


def test_generator_seed_is_used_and_advanced(cont):
    g = np.random.default_rng(3)
    a = mask(cont, "noise", a=0.1, seed=g)
    b = mask(cont, "noise", a=0.1, seed=g)
    assert not a.equals(b)
    pd.testing.assert_frame_equal(a, mask(cont, "noise", a=0.1, seed=3))


def test_deterministic_ipso_a_ignores_seed(cont):
    a = mask(cont, "ipso", variant="A", confidential=["v4"], seed=1)
    pd.testing.assert_frame_equal(a, mask(cont, "ipso", variant="A", confidential=["v4"]))


def test_columns_subset_and_passthrough(cont):
    out = mask(cont, "noise", columns=["v2"], a=0.5, seed=0)
    assert not out["v2"].equals(cont["v2"])
    for c in ("v1", "v3", "v4"):
        pd.testing.assert_series_equal(out[c], cont[c])


def test_default_columns(mixed):
    out = mask(mixed, "pram", pd=0.0, alpha=1.0, seed=0)  # categorical columns only
    for c in ("v1", "v2", "v3"):
        pd.testing.assert_series_equal(out[c], mixed[c])
    out = mask(mixed, "top_coding", quantile=0.5)           # ordered categoricals first
    assert not out["edu"].equals(mixed["edu"])
    pd.testing.assert_series_equal(out["region"], mixed["region"])
    out = mask(mixed.drop(columns=["edu"]), "top_coding", quantile=0.5)  # else numeric
    assert not out["v1"].equals(mixed["v1"])


def test_int_columns_and_cli_strings(census_csv):
    df = census_csv.iloc[:120, :5]
    out = mask(df, "mdav", k="3")                           # CLI passes strings
    pd.testing.assert_frame_equal(out, mask(df, "mdav", k=3))
    assert (out.dtypes == np.float64).all()                 # means are not integers
    swapped = mask(df, "rank_swap", p="10", seed=1)
    assert (swapped.dtypes == df.dtypes).all()              # swapped values keep int64
    out = mask(df, "ipso", variant="a", confidential="FEDTAX,PTOTVAL")
    pd.testing.assert_series_equal(out["FEDTAX"], df["FEDTAX"])


# ------------------------------------------------------------------ validation


def test_unknown_method_lists_names(cont):
    with pytest.raises(LinkriskError, match="unknown masking method 'swap'.*rank_swap.*pram"):
        mask(cont, "swap")


def test_unknown_parameter_lists_accepted(cont):
    with pytest.raises(LinkriskError, match="unknown parameter 'kk'.*accepts k"):
        mask(cont, "mdav", kk=3)


@pytest.mark.parametrize("method,params,msg", [
    ("mdav", dict(k=0), "k=0"),
    ("mdav", dict(k=301), "k=301"),
    ("microaggregation_ir", dict(k=-1), "1 <= k <= n"),
    ("micdp", dict(k=1000, epsilon=1), "k=1000"),
    ("mdav", dict(k=2.5), "integer"),
    ("mdav", dict(k="abc"), "integer"),
    ("mdav", dict(), "needs k"),
    ("rank_swap", dict(p=0), r"\(0, 100\]"),
    ("rank_swap", dict(p=101), r"\(0, 100\]"),
    ("rank_swap_pdist", dict(p=-5), r"\(0, 100\]"),
    ("rank_swap_pbuckets", dict(p=0), "buckets"),
    ("multiplicative_noise", dict(b=1.5), "negative"),
    ("multiplicative_noise", dict(b=0.0), r"\(0, 1\]"),
    ("micdp", dict(k=3, epsilon=0), "epsilon"),
    ("micdp", dict(k=3, epsilon=-1), "epsilon"),
    ("rank_shuffle", dict(q=1), "q=1"),
    ("rank_shuffle", dict(q=5, s=0), "s=0"),
    ("rank_shuffle", dict(q=5, s=6), "s=6"),
    ("noise", dict(a=-0.1), "positive"),
    ("noise", dict(), "needs a"),
    ("noise", dict(a=0.1, percent=10), "not both"),
    ("ipso", dict(variant="D", confidential=["v4"]), "variant"),
    ("ipso", dict(variant="A"), "confidential"),
    ("ipso", dict(variant="A", confidential=["zz"]), "zz"),
    ("data_shuffle", dict(confidential=["v9"]), "v9"),
])
def test_parameter_errors(cont, method, params, msg):
    with pytest.raises(LinkriskError, match=msg):
        mask(cont, method, seed=0, **params)


def test_confidential_overlapping_columns(cont):
    with pytest.raises(LinkriskError, match="both in columns and in confidential"):
        mask(cont, "ipso", variant="B", confidential=["v1"], columns=["v1", "v2"])


@pytest.mark.parametrize("method", NUMERIC_METHODS)
def test_nan_in_masked_column(method, cont):
    df = cont.copy()
    df.iloc[5, 0] = np.nan
    params = {**CASES[method], "confidential": ["v4"]} if "confidential" in CASES[method] \
        else CASES[method]
    with pytest.raises(LinkriskError, match="missing values"):
        mask(df, method, seed=0, **params)


@pytest.mark.parametrize("method", NUMERIC_METHODS)
def test_non_numeric_column_refused(method, mixed):
    params = CASES[method]
    with pytest.raises(LinkriskError, match="'region' is not numeric"):
        mask(mixed, method, columns=["v1", "region"], seed=0, **params)


def test_nan_in_categorical_column(mixed):
    df = mixed.copy()
    df.loc[df.index[3], "region"] = np.nan
    with pytest.raises(LinkriskError, match="missing values"):
        mask(df, "pram", columns=["region"], seed=0)


def test_bad_columns_and_frames(cont):
    with pytest.raises(LinkriskError, match="no column named 'zz'"):
        mask(cont, "noise", columns=["zz"], a=0.1)
    with pytest.raises(LinkriskError, match="twice"):
        mask(cont, "noise", columns=["v1", "v1"], a=0.1)
    with pytest.raises(LinkriskError, match="empty"):
        mask(cont, "noise", columns=[], a=0.1)
    with pytest.raises(LinkriskError, match="DataFrame"):
        mask(cont.to_numpy(), "noise", a=0.1)
    with pytest.raises(LinkriskError, match="no rows"):
        mask(cont.iloc[:0], "noise", a=0.1)
    with pytest.raises(LinkriskError, match="seed"):
        mask(cont, "noise", a=0.1, seed=-1)
    with pytest.raises(LinkriskError, match="no numeric column"):
        mask(pd.DataFrame({"s": ["a", "b"]}), "noise", a=0.1)
    with pytest.raises(LinkriskError, match="no categorical column"):
        mask(continuous(20, 2), "pram")
