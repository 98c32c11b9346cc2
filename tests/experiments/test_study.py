"""Studies: built-in configs end to end (quick), seeds, resume, intervals, errors."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import linkrisk
from linkrisk.errors import LinkriskError
from linkrisk.experiments import builtin_names, load_config, replication_seeds, summarize
from linkrisk.experiments.runner import expand, resolve_param

BUILTIN = ["categorical", "global", "rank-swap", "rank-vs-distance", "synthetic"]


def test_builtin_configs_are_shipped_and_valid():
    assert builtin_names() == BUILTIN
    for name in BUILTIN:
        full, quick = load_config(name), load_config(name, quick=True)
        assert len(expand(quick, None)) < len(expand(full, None))


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_full_grids_mask_without_error(name, data_dir):
    # the full grids run only outside CI: every (dataset, masking, value) of them must at
    # least be accepted by the masking method (on at most 5000 records)
    from linkrisk.experiments.runner import _load
    from linkrisk.masking import mask

    seen = set()
    for t in expand(load_config(name), data_dir):
        key = (t.dataset.label, t.method, repr(sorted(t.params.items())))
        if key in seen:
            continue
        seen.add(key)
        df = _load(t.dataset.name, data_dir, t.dataset.ordered, t.dataset.sample).iloc[:5000]
        mask(df, t.method, columns=t.dataset.columns, seed=1, **t.params)


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_study_runs_quick(name, data_dir, tmp_path):
    res = linkrisk.study(name, data_dir=data_dir, out_dir=tmp_path / name, quick=True,
                         processes=1)
    att = res.rows[res.rows["kind"] == "attack"]
    assert len(att) and (att["error"] == "").all(), att.loc[att["error"] != "", "error"].tolist()
    assert att["result"].between(0, 100).all()
    for f in ("results.csv", "summary.csv", "summary.md", "index.html", "rates.png"):
        assert (tmp_path / name / f).stat().st_size > 0
    assert set(res.summary.columns) >= {"mean", "std", "ci_low", "ci_high", "n"}


def _tiny(**over):
    cfg = {"name": "tiny", "seed": 7, "replications": 3,
           "datasets": [{"name": "census", "sample": 120}],
           "masking": [{"method": "noise", "param": "a", "values": [0.5, 1.0]},
                       {"method": "microaggregation_ir", "param": "k", "values": [5]}],
           "attacks": ["dbrl", "rbrl_max"]}
    cfg.update(over)
    return cfg


def test_seeds_independent_reproducible_and_deterministic_methods_once(data_dir):
    tasks = expand(load_config(_tiny()), data_dir)
    noise = [t for t in tasks if t.method == "noise"]
    micro = [t for t in tasks if t.method == "microaggregation_ir"]
    assert len(noise) == 6 and len(micro) == 1
    seeds = [t.seed for t in noise]
    assert len(set(seeds)) == len(seeds)
    assert seeds == [t.seed for t in expand(load_config(_tiny()), data_dir)
                     if t.method == "noise"]
    assert replication_seeds(7, "cell", 3) == replication_seeds(7, "cell", 5)[:3]
    assert replication_seeds(7, "cell", 3) != replication_seeds(8, "cell", 3)


def test_resume_skips_cached_cells_and_same_results(data_dir, tmp_path):
    first = linkrisk.study(_tiny(), data_dir=data_dir, out_dir=tmp_path, processes=1)
    assert first.cached == 0 and first.tasks == 7
    # remove one replication from the cache: only that one is recomputed
    victim = sorted((tmp_path / "cache").glob("*.json"))[0]
    victim.unlink()
    again = linkrisk.study(_tiny(), data_dir=data_dir, out_dir=tmp_path, processes=1)
    assert again.cached == 6
    pd.testing.assert_frame_equal(first.summary, again.summary)
    with pytest.raises(LinkriskError, match="another output folder"):
        linkrisk.study(_tiny(name="other"), data_dir=data_dir, out_dir=tmp_path, processes=1)


def test_a_failed_run_resumes(data_dir, tmp_path):
    bad = _tiny(masking=[{"method": "noise", "param": "a", "values": [0.5, -1.0]}])
    with pytest.raises(LinkriskError, match="a=-1.0"):
        linkrisk.study(bad, data_dir=data_dir, out_dir=tmp_path, processes=1)
    good = linkrisk.study(_tiny(masking=[{"method": "noise", "param": "a", "values": [0.5]}]),
                          data_dir=data_dir, out_dir=tmp_path, processes=1)
    assert good.tasks == 3 and good.cached == 3


def test_parallel_equals_serial(data_dir, tmp_path):
    a = linkrisk.study(_tiny(), data_dir=data_dir, out_dir=tmp_path / "a", processes=1)
    b = linkrisk.study(_tiny(), data_dir=data_dir, out_dir=tmp_path / "b", processes=2)
    cols = ["dataset", "masking", "value", "name", "mean", "std", "n"]
    pd.testing.assert_frame_equal(a.summary[cols], b.summary[cols])


def test_interval_is_the_t_interval():
    rows = pd.DataFrame({"dataset": "d", "masking": "m", "param": "a", "value": 1.0, "qi": "all",
                         "kind": "attack", "name": "dbrl", "result": [10.0, 12.0, 17.0, 11.0]})
    s = summarize(rows).iloc[0]
    lo, hi = stats.t.interval(0.95, 3, loc=np.mean(rows["result"]), scale=stats.sem(rows["result"]))
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((lo, hi))
    assert s["std"] == pytest.approx(np.std(rows["result"], ddof=1)) and s["n"] == 4


def test_swept_value_in_attack_parameters():
    assert resolve_param("$value", 5) == 5
    assert resolve_param("$200/value", 40) == 5.0
    assert resolve_param("owner", 3) == "owner"


@pytest.mark.parametrize("over, msg", [
    ({"masking": [{"method": "nosuch"}]}, "unknown masking method"),
    ({"attacks": ["nosuch"]}, "unknown attack"),
    ({"datasets": [{"name": "nowhere"}]}, "unknown dataset"),
    ({"masking": [{"method": "noise", "param": "zz", "values": [1]}]}, "no parameter 'zz'"),
    ({"attacks": [{"method": "prl", "params": {"zz": 1}}]}, "no parameter 'zz'"),
    ({"colour": "red"}, "unknown setting"),
    ({"measures": ["XX"]}, "unknown measure"),
])
def test_bad_config(over, msg):
    with pytest.raises(LinkriskError, match=msg):
        load_config(_tiny(**over))


def test_unknown_study_name():
    with pytest.raises(LinkriskError, match="built-in"):
        load_config("no-such-study")


def test_yaml_config(tmp_path, data_dir):
    y = tmp_path / "s.yaml"
    y.write_text("name: y\nreplications: 2\ndatasets: [{name: census, sample: 100}]\n"
                 "masking: [{method: noise, param: a, values: [0.5]}]\nattacks: [dbrl]\n")
    res = linkrisk.study(y, data_dir=data_dir, out_dir=tmp_path / "out", processes=1)
    assert res.tasks == 2


def test_bad_data_folder_is_refused_before_any_work(tmp_path, monkeypatch):
    with pytest.raises(LinkriskError, match="is not a folder"):
        linkrisk.study(_tiny(), data_dir=tmp_path / "nope", out_dir=tmp_path / "out")
    monkeypatch.setenv("LINKRISK_DATA", str(tmp_path / "nope"))
    with pytest.raises(LinkriskError, match="LINKRISK_DATA"):
        linkrisk.study(_tiny(), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
