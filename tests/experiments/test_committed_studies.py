"""The committed study results (docs/studies) are what the code computes now.

One replication per masking label of every committed study is rerun from its seed and
compared with the committed rows, so that a change of an attack's definition cannot leave
the published tables behind unnoticed (the global study had 110 such rows until
2026-11-27). The cheapest replication of each label is taken; labels whose cheapest
replication took more than ``MAX_SECONDS`` when committed are left out."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linkrisk.experiments import load_config
from linkrisk.experiments.runner import expand, run_task

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted(p.parent.name for p in (ROOT / "docs" / "studies").glob("*/results.csv"))
#: leave out masking labels whose cheapest committed replication took longer (seconds)
MAX_SECONDS = 5.0


@pytest.mark.parametrize("name", STUDIES)
def test_committed_results_are_reproduced(name):
    res = pd.read_csv(ROOT / "docs" / "studies" / name / "results.csv")
    tasks = {(t.seed, t.masking, t.dataset.label): t for t in expand(load_config(name), None)}
    cheapest = res.sort_values(["task_seconds", "seed"]).drop_duplicates("masking")
    checked = 0
    for _, r in cheapest.iterrows():
        if r["task_seconds"] > MAX_SECONDS:
            continue
        task = tasks[(r["seed"], r["masking"], r["dataset"])]
        committed = res[(res["seed"] == r["seed"]) & (res["masking"] == r["masking"])
                        & (res["dataset"] == r["dataset"])]
        now = pd.DataFrame(run_task(task))
        keys = ["name", "qi", "kind"]
        both = committed.merge(now[keys + ["result"]], on=keys, suffixes=("", "_now"))
        assert len(both) == len(committed), (r["masking"], "rows missing from the rerun")
        same = np.isclose(both["result"], both["result_now"], rtol=1e-9, atol=1e-9,
                          equal_nan=True)
        assert same.all(), (
            f"docs/studies/{name}: {r['masking']} on {r['dataset']} (seed {r['seed']}) gives "
            f"other results now for {list(both.loc[~same, 'name'])}: rerun the study "
            f"(linkrisk study {name} -o docs/studies/{name})")
        checked += 1
    assert checked >= 1
