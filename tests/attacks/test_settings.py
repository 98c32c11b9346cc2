"""LinkSettings (one frozen, validated object for the linkage options), attack() with
several methods (equal to the separate calls), the frozen linkage context, and the CLI's
use of the public API only."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk import AttackResult, AttackResults, LinkriskError, LinkSettings
from linkrisk.attacks import make_context, run_attack


@pytest.fixture(scope="module")
def files() -> tuple[pd.DataFrame, pd.DataFrame]:
    o = linkrisk.datasets.synthetic(300, 4, seed=1)
    return o, linkrisk.mask(o, "noise", a=0.5, seed=2)


# ------------------------------------------------------------------ LinkSettings
@pytest.mark.parametrize("kw,msg", [
    ({"kinds": {"v1": "color"}}, "unknown attribute kind 'color' for 'v1'"),
    ({"kinds": "v1"}, "--kinds expects col=kind pairs"),
    ({"kinds": 3}, "kinds must be a mapping"),
    ({"direction": "sideways"}, "unknown direction 'sideways'"),
    ({"memory_budget": 0}, "at least 1 MiB"),
    ({"memory_budget": -5}, "positive number of bytes"),
    ({"memory_budget": "lots"}, "cannot read memory size"),
    ({"seed": -1}, "non-negative integer"),
    ({"seed": 1.5}, "non-negative integer"),
    ({"backend": "spark"}, "unknown backend 'spark'"),
    ({"qi": 5}, "qi must be a column name"),
    ({"ids": ["a", 2]}, "ids must be a column name"),
    ({"progress": "yes"}, "progress must be a callable"),
    ({"assume_row_order": "no"}, "assume_row_order must be True or False"),
])
def test_settings_refuse_bad_values_with_one_line(kw, msg):
    with pytest.raises(LinkriskError, match=msg) as e:
        LinkSettings(**kw)
    assert "\n" not in str(e.value)


def test_settings_normalize_what_they_accept():
    s = LinkSettings(qi="v1, v2", ids=["id"], kinds="v1=ordinal", direction="m2o",
                     memory_budget="2MiB", seed=np.int64(3))
    assert s.qi == ("v1", "v2") and s.ids == ("id",)
    assert dict(s.kinds) == {"v1": "ordinal"}
    assert s.direction == "masked->original"
    assert s.memory_budget == 2 * 2**20 and s.seed == 3 and type(s.seed) is int
    assert LinkSettings(qi="").qi is None
    assert s.to_dict()["memory_budget"] == 2 * 2**20


def test_settings_are_frozen_and_variants_are_derived():
    s = LinkSettings(seed=1, kinds={"v1": "nominal"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seed = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="read-only"):
        s.kinds["v1"] = "numeric"  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        s.kinds.update(v2="nominal")  # type: ignore[attr-defined]

    def cb(done: int, total: int) -> None:
        pass

    t = s.with_(progress=cb, seed=7)
    assert (t.progress, t.seed, dict(t.kinds)) == (cb, 7, {"v1": "nominal"})
    assert (s.progress, s.seed) == (None, 1)  # the original is unchanged
    assert dataclasses.replace(s, direction="backward").direction == "masked->original"
    with pytest.raises(LinkriskError, match="non-negative"):
        s.with_(seed=-3)  # a variant is validated again
    assert pickle.loads(pickle.dumps(s)) == s and hash(s) == hash(LinkSettings(
        seed=1, kinds={"v1": "nominal"}))


# ------------------------------------------------------------------ the context
def test_context_is_frozen_and_progress_is_passed_per_call(files):
    o, m = files
    ctx, direction = make_context(o, m, settings=LinkSettings(seed=4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.progress = print  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.truth_check = None  # type: ignore[misc]
    calls: list[tuple[int, int]] = []
    r = run_attack(ctx, "dbrl", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1] == len(o)
    assert ctx.progress is None and ctx.seed == 4 and direction == ctx.direction
    # the copy shares the converted matrices, so a second attack on ctx is the same
    assert run_attack(ctx, "dbrl").per_record.equals(r.per_record)


def test_keywords_override_the_settings(files):
    o, m = files
    s = LinkSettings(seed=1, qi="v1,v2,v3")
    a = linkrisk.attack(o, m, "dbrl", settings=s, seed=9)
    b = linkrisk.attack(o, m, "dbrl", qi="v1,v2,v3", seed=9)
    assert a.qi == ["v1", "v2", "v3"] and a.per_record.equals(b.per_record)
    with pytest.raises(LinkriskError, match="must be a linkrisk.LinkSettings"):
        linkrisk.attack(o, m, "dbrl", settings={"seed": 1})


# ------------------------------------------------------------------ several methods
def test_several_methods_equal_the_separate_calls(files):
    o, m = files
    names = ["dbrl", "dbrl_l1", "mahalanobis", "rbrl_sum", "prl"]
    s = LinkSettings(seed=5)
    many = linkrisk.attack(o, m, names, settings=s)
    assert isinstance(many, AttackResults) and list(many) == names
    assert many.qi == list(o.columns) and many.settings == s and "row order" in many.truth
    for name in names:
        one = linkrisk.attack(o, m, name, seed=5)
        assert isinstance(one, AttackResult)
        assert many[name].correct_links == one.correct_links
        pd.testing.assert_frame_equal(many[name].per_record, one.per_record)
    # a comma string is several methods too; one method in a list is one result, as
    # before, and a mapping of one with errors="collect"
    assert list(linkrisk.attack(o, m, "rbrl_max,dbrl", settings=s)) == ["rbrl_max", "dbrl"]
    assert isinstance(linkrisk.attack(o, m, ["dbrl"], settings=s), AttackResult)
    one = linkrisk.attack(o, m, ["dbrl"], settings=s, errors="collect")
    assert list(one) == ["dbrl"] and one["dbrl"].rate == many["dbrl"].rate


def test_all_runs_what_applies(files):
    o, m = files
    res = linkrisk.attack(o, m, "all")
    assert "dbrl_hamming" in res.skipped and "dbrl" in res and "gdbrl" in res
    assert res["kernel"].rate == linkrisk.attack(o, m, "kernel").rate


def test_parameters_go_to_the_methods_that_declare_them(files):
    o, m = files
    res = linkrisk.attack(o, m, ["dbrl", "rbrl_sum"], standardize=False)
    assert res["dbrl"].params == {"standardize": False} and res["rbrl_sum"].params == {}
    assert res["dbrl"].rate == linkrisk.attack(o, m, "dbrl", standardize=False).rate
    with pytest.raises(LinkriskError, match="no chosen attack takes parameter 'zz'"):
        linkrisk.attack(o, m, ["dbrl", "rbrl_sum"], zz=1)
    with pytest.raises(LinkriskError, match="has no parameter 'zz'"):
        linkrisk.attack(o, m, "dbrl", zz=1)


def test_a_failing_method_raises_or_is_collected(files):
    o, m = files
    with pytest.raises(LinkriskError, match="^kernel: kernel degree d"):
        linkrisk.attack(o, m, ["dbrl", "kernel"], d=-1)
    res = linkrisk.attack(o, m, ["dbrl", "kernel"], d=-1, errors="collect")
    assert list(res) == ["dbrl"] and "kernel degree" in res.failed["kernel"]
    res = linkrisk.attack(o, m, "kernel", d=-1, errors="collect")
    assert list(res) == [] and "kernel degree" in res.failed["kernel"]
    with pytest.raises(LinkriskError, match="errors must be"):
        linkrisk.attack(o, m, ["dbrl"], errors="ignore")


def test_progress_for_gives_each_method_its_callback(files):
    o, m = files
    seen: dict[str, list[int]] = {}

    def make(name: str):
        return lambda done, total: seen.setdefault(name, []).append(done)

    linkrisk.attack(o, m, ["dbrl", "rbrl_max"], progress_for=make)
    assert set(seen) == {"dbrl", "rbrl_max"} and seen["dbrl"][-1] == len(o)


def test_assess_takes_the_settings(files):
    o, m = files
    a = linkrisk.assess(o, m, attacks=["dbrl", "prl"], settings=LinkSettings(seed=2))
    b = linkrisk.assess(o, m, attacks=["dbrl", "prl"], seed=2)
    assert {k: r.correct_links for k, r in a.results.items()} == {
        k: r.correct_links for k, r in b.results.items()}
    with pytest.raises(LinkriskError, match="original->masked"):
        linkrisk.assess(o, m, settings=LinkSettings(direction="masked->original"))


# ------------------------------------------------------------------ the CLI
#: modules the CLI may import besides the package itself: file I/O, the errors, and the web
#: app (``linkrisk serve`` is a thin layer over ``linkrisk.app.serve``)
PUBLIC_MODULES = {"linkrisk.fileio", "linkrisk.errors", "linkrisk.app"}


def private_uses(source: str) -> list[str]:
    """What ``source`` imports or uses from linkrisk beyond the public API: a relative
    import, a name not in ``linkrisk.__all__``, a module other than linkrisk.fileio,
    linkrisk.errors and linkrisk.app, or an attribute ``linkrisk.X`` that is not public."""
    public = set(linkrisk.__all__)
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                bad.append(f"relative import from {'.' * node.level}{mod}")
            elif mod == "linkrisk":
                bad += [f"linkrisk.{a.name}" for a in node.names if a.name not in public]
            elif mod.startswith("linkrisk") and mod not in PUBLIC_MODULES and not _own(mod):
                bad.append(mod)
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("linkrisk")
                    and a.name not in {"linkrisk"} | PUBLIC_MODULES and not _own(a.name)]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "linkrisk" and node.attr not in public):
            bad.append(f"linkrisk.{node.attr}")
    return bad


def _own(mod: str) -> bool:
    """The CLI's own modules (the package ``linkrisk.cli``)."""
    return mod == "linkrisk.cli" or mod.startswith("linkrisk.cli.")


def test_cli_imports_only_public_names():
    for path in sorted(Path(linkrisk.__file__).with_name("cli").rglob("*.py")):
        assert private_uses(path.read_text(encoding="utf-8")) == [], path
    for name in linkrisk.__all__:  # and every public name resolves
        assert getattr(linkrisk, name) is not None


def test_the_import_check_sees_private_uses():
    src = ("from .attacks import make_context\nfrom linkrisk import attack, make_context\n"
           "import linkrisk.data\nfrom linkrisk.attacks import why_not\n"
           "from linkrisk.fileio import read_inputs\nimport linkrisk\nlinkrisk.options\n")
    assert private_uses(src) == ["relative import from .attacks", "linkrisk.make_context",
                                 "linkrisk.data", "linkrisk.attacks", "linkrisk.options"]
