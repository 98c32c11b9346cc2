"""Every attack's links, candidate counts and correct links equal the recorded snapshot
bit for bit (``tests/fixtures/snapshot.npz``, made by ``tests/fixtures/make_snapshot.py``).

An engine refactor must pass this unchanged. A definition changed on purpose regenerates
only its own entries (``python tests/fixtures/make_snapshot.py --attack NAME``) and says
so in its commit message.

The snapshot must hold on any x86-64 CPU (AVX2 or AVX-512, Intel or AMD), whose numpy
gives other last bits of log, exp and matrix products: prl's entries must also hold with
its EM weights moved by one ulp (``test_snapshot_prl_weights_moved_by_one_ulp``; every
attack's inputs moved by one ulp: ``tests/attacks/test_cpu_independence.py``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.attacks.test_cpu_independence import nudged_weights

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_snapshot", FIXTURES / "make_snapshot.py")
snap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(snap)

STORED = dict(np.load(snap.SNAPSHOT))
PLAN = snap.plan()


def test_plan_matches_stored_entries():
    """The plan and the fixture name the same entries (no attack added or dropped
    silently: a new attack must be recorded)."""
    planned = {f"{case}/{label}/{f}" for case, _, runs in PLAN for label, _, _ in runs
               for f in ("link", "candidates", "correct", "total")}
    assert planned == set(STORED)


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=[pytest.mark.slow] if c == "synthetic20k" else [])
    for c, _, _ in PLAN])
def test_snapshot(case):
    (build, runs), = [(b, r) for c, b, r in PLAN if c == case]
    x, y = build()
    diffs = []
    for label, method, params in runs:
        got = snap._entry(snap._run(x, y, method, params))
        for f, v in got.items():
            want = STORED[f"{case}/{label}/{f}"]
            if not np.array_equal(v, want):
                bad = np.flatnonzero(np.atleast_1d(v != want))
                diffs.append(f"{label}/{f}: {bad.size} records differ (first {bad[:5]})")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("case", [c for c, _, _ in PLAN if c != "synthetic20k"])
def test_snapshot_prl_weights_moved_by_one_ulp(case, monkeypatch):
    """prl's entries (every path, tolerances, one-to-one) with the EM weights each moved
    one ulp up or down at random: the recorded snapshot still holds (another CPU's EM
    gives other last bits; the result must not pin them)."""
    (build, runs), = [(b, r) for c, b, r in PLAN if c == case]
    x, y = build()
    nudged_weights(monkeypatch, "mixed")
    diffs = []
    for label, method, params in runs:
        if method != "prl":
            continue
        got = snap._entry(snap._run(x, y, method, params))
        diffs += [f"{label}/{f}" for f, v in got.items()
                  if not np.array_equal(v, STORED[f"{case}/{label}/{f}"])]
    assert not diffs, "\n".join(diffs)
