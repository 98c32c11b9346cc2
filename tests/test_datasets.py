import numpy as np
import pandas as pd
import pytest

from linkrisk import datasets
from linkrisk.errors import LinkriskError

SHAPES = {"census": (1080, 13), "eia": (4092, 10), "tarragona": (834, 13),
          "household": (4580, 8), "adult": (32561, 8)}


@pytest.mark.parametrize("name", list(SHAPES))
def test_reference_files_load_typed(name, data_dir):
    df = datasets.load(name, data_dir)
    assert df.shape == SHAPES[name]
    if name in ("household", "adult"):
        assert all(isinstance(df[c].dtype, pd.CategoricalDtype) for c in df)
    else:
        assert all(df[c].dtype == np.float64 for c in df)
    if name == "eia":
        assert list(df.columns) == [f"v{i}" for i in range(1, 11)]


def test_distinct_categorical_records_match_spec(data_dir):
    assert len(datasets.load("household", data_dir).drop_duplicates()) == 493
    assert len(datasets.load("adult", data_dir).drop_duplicates()) == 8688


def test_env_variable_and_errors(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("LINKRISK_DATA", str(data_dir))
    assert datasets.load("census").shape == (1080, 13)
    with pytest.raises(LinkriskError, match="unknown dataset"):
        datasets.load("cencus")
    with pytest.raises(LinkriskError, match="not found"):
        datasets.load("census", tmp_path)
    monkeypatch.delenv("LINKRISK_DATA")
    with pytest.raises(LinkriskError, match="LINKRISK_DATA"):
        datasets.load("census")


def test_synthetic_is_realistic_and_reproducible():
    a = datasets.synthetic(5000, 9, seed=3)
    assert a.equals(datasets.synthetic(5000, 9, seed=3))
    assert not a.equals(datasets.synthetic(5000, 9, seed=4))
    assert a.shape == (5000, 9) and (a.to_numpy() >= 0).all()
    assert (a.skew() > 0.5).all(), "monetary-like attributes are right-skewed"
    corr = a.corr().to_numpy()[np.triu_indices(9, 1)]
    assert corr.min() > 0.1, "attributes are correlated"
    assert (a == 0).mean().max() > 0.15, "some attributes are zero-inflated"
    assert (a.to_numpy() == np.round(a.to_numpy())).all()
    with pytest.raises(LinkriskError):
        datasets.synthetic(1, 3)
