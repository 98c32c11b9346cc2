"""Results do not depend on the CPU: a score moved by one ulp gives the same links, candidate
sets and rates (issue #38, item 12).

numpy dispatches log, exp and BLAS products to other SIMD code on AVX2 and AVX-512, so the
last bits of computed scores differ between machines (prl's EM weights by up to ~10⁵ ulps
on Household after PRAM). Every attack must absorb such noise: the nearest-set attacks by
the 10⁻⁹ tie window, prl's one-to-one assignment by its weight grid
(:func:`linkrisk.attacks.probabilistic.grid_scores`). Here prl's EM weights are nudged by
one ulp (the hook: ``agreement_weights``), and every numeric attack's inputs are nudged by
one ulp (x → the next float up or down: order and ties within a file are kept, every
standardized value and distance moves by a few ulps); the snapshot releases of
``tests/fixtures/make_snapshot.py`` must give identical results.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linkrisk.attacks import probabilistic as P

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_spec = importlib.util.spec_from_file_location("make_snapshot", FIXTURES / "make_snapshot.py")
snap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(snap)
CASES = snap.cases()


def nudge(x: np.ndarray, direction: str, seed: int = 0) -> np.ndarray:
    """x moved by one ulp: ``up``, ``down`` or ``mixed`` (each value its own random way).
    Exact zeros stay zero (log2(1) = 0 and a − a = 0 on every CPU)."""
    x = np.asarray(x, dtype=np.float64)
    if direction == "mixed":
        to = np.where(np.random.default_rng(seed).random(x.shape) < 0.5, -np.inf, np.inf)
    else:
        to = np.full(x.shape, np.inf if direction == "up" else -np.inf)
    return np.where(x == 0, x, np.nextafter(x, to))


def nudged_weights(monkeypatch, direction: str) -> None:
    """prl's EM weights (agree and disagree, per attribute) nudged by one ulp."""
    real = P.agreement_weights

    def fake(m, u):
        wa, wd = real(m, u)
        return nudge(wa, direction, 1), nudge(wd, direction, 2)

    monkeypatch.setattr(P.linkage, "agreement_weights", fake)  # run_prl looks it up there


def same(got: dict, want: dict) -> list[str]:
    return [f"{f}: {np.flatnonzero(np.atleast_1d(got[f] != want[f])).size} differ"
            for f in want if not np.array_equal(got[f], want[f])]


_BASE: dict[tuple[str, str], dict] = {}


@pytest.fixture(scope="module")
def releases() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    return {case: CASES[case][0]() for case in ("census/noise", "household/pram")}


# Household's one-to-one assignment (4580 x 4580) is the slow one: one direction there
@pytest.mark.parametrize("case,label,params,direction", [
    (c, lab, p, d)
    for c in ("census/noise", "household/pram")
    for lab, p in (("prl", {}), ("prl[one_to_one]", {"one_to_one": True}))
    for d in ("up", "down", "mixed")
    if d == "mixed" or c == "census/noise" or lab == "prl"])
def test_prl_weights_moved_by_one_ulp(releases, monkeypatch, case, label, params, direction):
    x, y = releases[case]
    if (case, label) not in _BASE:
        _BASE[case, label] = snap._entry(snap._run(x, y, "prl", params))
    want = _BASE[case, label]
    nudged_weights(monkeypatch, direction)
    got = snap._entry(snap._run(x, y, "prl", params))
    assert not same(got, want), f"{case}/{label} ({direction}): {same(got, want)}"


@pytest.mark.parametrize("case", ["census/noise", "census/rank_swap"])
def test_numeric_attacks_inputs_moved_by_one_ulp(case):
    """Every attack on numeric QIs, both files nudged one ulp up (and down): same links,
    candidate counts, χ/|C| per record and correct links."""
    x, y = CASES[case][0]()
    runs = [(m, m, {}) for m in snap.attacks_for("numeric")]
    runs += [(lab, m, p) for lab, (m, p) in {**snap.VARIANTS, **snap.NUMERIC_VARIANTS}.items()
             if "path" not in p]
    bad = []
    for label, method, params in runs:
        want = snap._entry(snap._run(x, y, method, params))
        for direction in ("up", "down"):
            xs, ys = (df.apply(lambda c, d=direction: nudge(c.to_numpy(), d)) for df in (x, y))
            got = snap._entry(snap._run(xs, ys, method, params))
            bad += [f"{label} ({direction}) {d}" for d in same(got, want)]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- the one-to-one grid
def test_grid_is_exact_and_absorbs_ulps():
    rng = np.random.default_rng(5)
    for _ in range(200):
        k = int(rng.integers(1, 9))
        wa = rng.uniform(0, 12, k)
        wd = -rng.uniform(0, 12, k)
        g = P.grid_scores(wa, wd)
        r = np.maximum(np.abs(wa), np.abs(wd)).sum()
        h = 2.0 ** (np.frexp(r)[1] - P.GRID_BITS)
        steps = g / h
        np.testing.assert_array_equal(steps, np.round(steps))     # on the grid
        assert np.abs(steps).max() <= 2 ** P.GRID_BITS
        # within half a step per attribute of the exact scores
        assert np.abs(g - P.pattern_table(-wa, -wd)).max() <= k * h / 2 * (1 + 1e-9)
        for direction in ("up", "down", "mixed"):
            np.testing.assert_array_equal(
                P.grid_scores(nudge(wa, direction, 3), nudge(wd, direction, 4)), g)


def test_grid_ties_equal_weights_exactly():
    """Patterns whose weights are equal in exact arithmetic (two attributes with the same
    m and u; the sums then differ only in rounding) get exactly equal costs, whatever the
    order of the terms."""
    wa = np.array([0.1, 0.7, 0.1, 0.2])
    wd = np.array([-0.3, -0.6, -0.3, -0.2])
    g = P.grid_scores(wa, wd)
    assert g[0b0001] == g[0b0100]
    assert g[0b1011] == g[0b1110]
    perm = [3, 2, 1, 0]
    gp = P.grid_scores(wa[perm], wd[perm])
    idx = np.arange(16)
    rev = sum(((idx >> j) & 1) << (3 - j) for j in range(4))  # pattern in reversed order
    np.testing.assert_array_equal(gp[rev], g)


def test_grid_of_zero_weights():
    np.testing.assert_array_equal(P.grid_scores(np.zeros(3), np.zeros(3)), np.zeros(8))
