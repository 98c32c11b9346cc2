"""The default working-memory budget (a fraction of the machine's available memory, with
a floor and a cap, or LINKRISK_MEMORY) and the one cost model the planners ask."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import linkrisk
from linkrisk.engine import budget
from linkrisk.engine.matching import min_cost_matching
from linkrisk.engine.matching.solver import LIST_MEAN, MIN_K, _list_length
from linkrisk.engine.nearest.sets import plan_blocks
from linkrisk.options import parse_size

MiB, GiB = 2**20, 2**30


@pytest.mark.parametrize("available,expected", [
    (None, 512 * MiB),               # unknown: the old fixed default
    (0, 512 * MiB),
    (1 * GiB, 256 * MiB),            # 1/8 is 128 MiB: the floor
    (16 * GiB, 2 * GiB),             # 1/8
    (16 * GiB + 12345, 2 * GiB),     # rounded down to a whole MiB
    (20 * GiB + 7 * MiB, 2560 * MiB),
    (256 * GiB, 4 * GiB),            # the cap
])
def test_rule(available, expected):
    assert budget.budget_from(available) == expected
    assert expected % MiB == 0


def test_available_memory_without_psutil(monkeypatch):
    with_psutil = budget.available_memory()
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now fails
    without = budget.available_memory()
    if sys.platform.startswith("linux"):
        assert with_psutil and without and with_psutil > 0 and without > 0
        # two reads of a moving figure: same order of magnitude
        assert 0.5 < without / with_psutil < 2


def test_default_is_resolved_everywhere():
    d = budget.DEFAULT_MEMORY_BUDGET
    assert d == budget.default_memory_budget()
    assert linkrisk.engine.DEFAULT_MEMORY_BUDGET == d
    if not os.environ.get(budget.ENV):
        assert budget.FLOOR <= d <= budget.CAP
    s = linkrisk.LinkSettings()
    assert s.memory_budget == d and s.to_dict()["memory_budget"] == d
    from linkrisk import cli
    assert parse_size(cli.MEMORY_DEFAULT) == d
    assert "available memory" in cli.MEMORY_HELP and f"{d / GiB:.1f} GiB" in cli.MEMORY_HELP


def test_env_override():
    assert budget.resolve_default({budget.ENV: "300MiB"}) == (300 * MiB, "LINKRISK_MEMORY=300MiB")
    with pytest.raises(linkrisk.LinkriskError):
        budget.resolve_default({budget.ENV: "lots"})
    value, source = budget.resolve_default({budget.ENV: " "})  # blank: the machine rule
    assert budget.FLOOR <= value <= budget.CAP and "available memory" in source


def test_env_override_in_a_new_process():
    env = dict(os.environ, LINKRISK_MEMORY="1.5GiB")
    out = subprocess.run([sys.executable, "-c",
                          "import linkrisk; print(linkrisk.LinkSettings().memory_budget)"],
                         env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout) == int(1.5 * GiB)


@pytest.mark.parametrize("n", [MiB, 3 * MiB, 2 * GiB, 2731 * MiB, 12345])
def test_format_size_reads_back(n):
    assert parse_size(budget.format_size(n)) == n


def test_cost_model_is_the_planners():
    """The planners size what they allocate with the cost model's bytes per item."""
    for m, cap, b in [(13, 64, 512 * MiB), (4, 8, MiB), (40, 256, 3 * GiB)]:
        rows, _ = plan_blocks(10**7, 10**7, m, b, cap)
        assert rows == max(256, min(10**7, b // budget.block_row_bytes(m, cap), 1 << 16))
    for screened in (False, True):
        K, _ = _list_length(10**6, 10**6, 8, 64, GiB, screened)
        import numba as nb
        per_k = budget.knn_entry_bytes(10**6, 10**6, screened, nb.get_num_threads(), LIST_MEAN)
        assert K == max(MIN_K, min(64, GiB // per_k))
    assert budget.dense_matrix_bytes(3, 5) == 16 * 15
    assert budget.transport_bytes(3, 5) == 8 * 15
    assert budget.dense_assignment_bytes(5, 3) == 24 * 15
    assert budget.dense_assignment_bytes(3, 5) == 16 * 15


def test_matching_does_not_depend_on_budget():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3000, 4))
    b = a + 0.3 * rng.standard_normal(a.shape)
    r = [min_cost_matching(a, b, root=True, solver="sparse", memory_budget=mb, seed=1)
         for mb in (MiB, GiB)]
    assert r[0].info["k_list"] < r[1].info["k_list"]  # the budget changed the lists …
    assert np.array_equal(r[0].link, r[1].link)       # … not the result
    assert r[0].certified and r[1].certified
