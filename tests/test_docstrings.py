"""Public functions carry numpydoc sections and point to docs/methods.md, never to a
specification outside the repository."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import linkrisk
from linkrisk import datasets, fileio, masking, measures
from linkrisk.masking import registry

ROOT = Path(linkrisk.__file__).resolve().parent

#: public functions that take no parameter document why they have no Parameters section
NO_PARAMETERS: dict[str, str] = {
    "linkrisk.require_matplotlib": "a check of the installation: it reads nothing",
}


def _public_functions() -> list[tuple[str, object]]:
    out = [(f"linkrisk.{n}", getattr(linkrisk, n)) for n in linkrisk.__all__]
    out += [(f"linkrisk.measures.{n}", getattr(measures, n)) for n in measures.__all__]
    out += [(f"linkrisk.masking.{n}", getattr(masking, n)) for n in masking.__all__]
    out += [(f"linkrisk.datasets.{n}", getattr(datasets, n)) for n in
            ("load", "synthetic", "locate", "checksum", "resolve_data_dir")]
    out += [("linkrisk.masking.mask", registry.mask), ("linkrisk.fileio.read_input",
                                                        fileio.read_input)]
    return [(n, f) for n, f in out if inspect.isfunction(f)]


@pytest.mark.parametrize("name,fn", _public_functions(), ids=lambda v: v if isinstance(v, str) else "")
def test_public_functions_have_numpydoc_sections(name, fn):
    doc = inspect.getdoc(fn) or ""
    lines = [ln.strip() for ln in doc.splitlines()]

    def has(section: str) -> bool:
        return any(a == section and b and set(b) == {"-"}
                   for a, b in zip(lines, lines[1:], strict=False))

    if inspect.signature(fn).parameters:
        assert has("Parameters"), f"{name}: no Parameters section"
    else:
        assert name in NO_PARAMETERS, f"{name}: takes no parameter; say why in NO_PARAMETERS"
    assert has("Returns"), f"{name}: no Returns section"


def test_the_list_is_not_empty():
    names = {n for n, _ in _public_functions()}
    assert {"linkrisk.attack", "linkrisk.assess", "linkrisk.mask", "linkrisk.study",
            "linkrisk.choose", "linkrisk.measures.information_loss",
            "linkrisk.fileio.read_input"} <= names


def test_no_docstring_points_to_spec():
    """Users do not have SPEC.md: docstrings and comments cite docs/methods.md."""
    bad = []
    for p in sorted(ROOT.rglob("*.py")):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if "SPEC" in line and ("SPEC.md" in line or "SPEC §" in line or "SPEC " in line):
                bad.append(f"{p.relative_to(ROOT)}:{i}")
    assert bad == []
