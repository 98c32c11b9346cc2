"""Regression checks of the replication: a handful of cells per published table, rerun
through the ``replicate`` study's own path (config → tasks → run_task) with R = 2 of its
seeded replications and compared with the full run's mean (docs/studies/replicate,
R = 10; Household R = 20). The tolerance is 4 standard errors of the difference, from the
spread σ measured in the full run: 4·σ·√(1/2 + 1/R_full); deterministic cells must match
exactly."""

import math

import pytest

from linkrisk.experiments import load_config
from linkrisk.experiments.published import value_key
from linkrisk.experiments.runner import expand, run_task

# (dataset label, masking label, value, attack label, full-run mean %, sd, full-run R)
CELLS = [
    ("census", "rbrl-t1 noise", 0.25, "dbrl", 69.5648, 0.8520, 10),
    ("eia", "rbrl-t1 noise", 0.1, "rbrl_max", 8.0828, 0.2614, 10),
    ("census", "rbrl-t2 rank_swap", 10, "rbrl_max", 98.3750, 0.2980, 10),
    ("eia", "rbrl-t2 rank_swap", 5, "dbrl", 13.4873, 0.4248, 10),
    ("census", "rbrl-t3 rank_swap_pdist", 5, "dbrl", 82.8426, 1.1777, 10),
    ("census", "rbrl-t3 rank_swap_pdist", 25, "rbrl_max", 11.1620, 0.7357, 10),
    ("census", "rbrl-t4 multiplicative_noise", 0.25, "rbrl_sum", 81.1991, 1.0330, 10),
    ("eia", "rbrl-t4 multiplicative_noise", 0.5, "dbrl", 3.9101, 0.1720, 10),
    ("census", "rbrl-t5 microaggregation_ir", 54, "dbrl", 96.4815, 0.0000, 1),
    ("eia", "rbrl-t5 microaggregation_ir", 1364, "rbrl_max", 8.6966, 0.0000, 1),
    ("census", "gdbrl noise", 0.2, "gdbrl", 95.6204, 0.8476, 10),
    ("census", "gdbrl noise", 0.15, "gdbrl_l1", 98.1944, 0.4520, 10),
    ("census", "gdbrl noise", 0.25, "dbrl_mahalanobis", 19.3704, 0.9133, 10),
    ("census (blocks 1-6 | 7-13)", "gdbrl data_shuffle", None, "gdbrl", 1.8148, 0.2767, 10),
    ("census (blocks 1-6 | 7-13)", "gdbrl ipso C", None, "dbrl", 2.0093, 0.4278, 10),
    ("census", "gdbrl micdp k=15", 1.0, "dbrl", 0.2302, 0.0857, 10),
    ("census", "gdbrl rank_shuffle", 2, "dbrl", 99.9630, 0.0478, 10),
    ("census", "gdbrl rank_swap_pdist", 5, "gdbrl", 93.5463, 1.1146, 10),
    ("household (493 distinct)", "gdbrl-cat pram", None, "dbrl_hamming", 51.6723, 2.5483, 20),
]


@pytest.fixture(scope="module")
def tasks(data_dir):
    return expand(load_config("replicate"), None if data_dir is None else str(data_dir),
                  replications=2)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: f"{c[0]}|{c[1]}|{c[2]}|{c[3]}")
def test_replicated_cell(tasks, cell):
    ds, mk, value, attack, mean, sd, r_full = cell
    mine = [t for t in tasks if t.dataset.label == ds and t.masking == mk
            and value_key(t.value) == value_key(value)]
    assert mine, "cell not in the replicate study"
    vals = []
    for t in mine:
        t.attacks = [a for a in t.attacks if a.label == attack]   # only the checked attack
        t.measures = []
        (row,) = run_task(t)
        assert row["error"] == ""
        vals.append(row["result"])
    got = sum(vals) / len(vals)
    if r_full == 1:
        assert len(vals) == 1
        assert got == pytest.approx(mean, abs=1e-3)
    else:
        tol = 4 * sd * math.sqrt(1 / len(vals) + 1 / r_full)
        assert abs(got - mean) <= tol, (got, mean, tol)
