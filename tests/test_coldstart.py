"""Start-up (issue 43): ``import linkrisk`` and the CLI module load no heavy dependency, and
numba's cache moves to a user cache directory when the package folder is read-only. Each
case runs in a fresh interpreter (what is imported, and the environment numba reads at
import, are per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numba", "pandas", "scipy", "numpy", "pyarrow", "matplotlib")


def _run(code: str, env: dict[str, str]) -> dict:
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(extra)
    return env


def test_import_and_cli_load_nothing_heavy():
    code = ("import sys, json, linkrisk, linkrisk.cli\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert _run(code, _env()) == []


def test_public_names_still_resolve_lazily():
    code = ("import json, linkrisk\n"
            "ok = all(getattr(linkrisk, n) is not None for n in linkrisk.__all__)\n"
            "print(json.dumps([ok, set(linkrisk.__all__) <= set(dir(linkrisk))]))")
    assert _run(code, _env()) == [True, True]


# the package folder read-only (as a wheel installed system-wide): os.access says so
_READ_ONLY = ("import os, json\n"
              "real = os.access\n"
              "os.access = lambda p, m, **k: False if 'linkrisk' in str(p) else real(p, m, **k)\n"
              "import linkrisk\n"
              "os.access = real\n"
              "import numba\n"
              "from numba.core import config\n"
              "print(json.dumps([os.environ.get('NUMBA_CACHE_DIR'), config.CACHE_DIR]))")


def test_read_only_package_caches_in_the_user_cache_dir(tmp_path):
    where = str(tmp_path / "linkrisk" / "numba")
    assert _run(_READ_ONLY, _env(XDG_CACHE_HOME=str(tmp_path))) == [where, where]


def test_read_only_package_without_xdg_uses_home_cache(tmp_path):
    env = _env(HOME=str(tmp_path))
    env.pop("XDG_CACHE_HOME", None)
    where = str(tmp_path / ".cache" / "linkrisk" / "numba")
    assert _run(_READ_ONLY, env) == [where, where]


def test_numba_imported_first_still_gets_the_user_cache_dir(tmp_path):
    code = "import numba\n" + _READ_ONLY
    where = str(tmp_path / "linkrisk" / "numba")
    assert _run(code, _env(XDG_CACHE_HOME=str(tmp_path))) == [where, where]


def test_writable_package_or_user_setting_is_left_alone(tmp_path):
    code = ("import os, json, linkrisk\n"
            "print(json.dumps(os.environ.get('NUMBA_CACHE_DIR')))")
    assert _run(code, _env(XDG_CACHE_HOME=str(tmp_path))) is None  # editable checkout
    mine = str(tmp_path / "mine")
    assert _run(_READ_ONLY, _env(NUMBA_CACHE_DIR=mine))[0] == mine


def test_warmup_covers_the_faiss_screen(monkeypatch):
    """`linkrisk warmup` compiles the kernels of dbrl's faiss screen too, which only files
    of 5·10⁷ pairs or more reach (masking and assessing are stubbed out here: only the
    steps' list and the screen's step run)."""
    import linkrisk
    from linkrisk.engine.nearest import faiss_screen

    pytest.importorskip("faiss")
    monkeypatch.setattr(linkrisk, "mask", lambda df, *a, **k: df.copy())
    monkeypatch.setattr(linkrisk, "assess", lambda *a, **k: None)
    called = []
    inner = faiss_screen.screened_sets
    monkeypatch.setattr(faiss_screen, "screened_sets",
                        lambda *a, **k: called.append(1) or inner(*a, **k))
    steps = linkrisk.warmup(masking=False)
    assert [s for s, _ in steps][-1] == "dbrl faiss screen" and called == [1]
