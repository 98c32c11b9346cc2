import csv
import gzip
import os
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from linkrisk import datasets
from linkrisk.errors import LinkriskError

SHAPES = {"census": (1080, 13), "eia": (4092, 10), "tarragona": (834, 13),
          "household": (4580, 8), "adult": (32561, 8)}


@pytest.mark.parametrize("name", list(SHAPES))
def test_reference_files_load_typed(name):
    df = datasets.load(name)
    assert df.shape == SHAPES[name]
    if name in ("household", "adult"):
        assert all(isinstance(df[c].dtype, pd.CategoricalDtype) for c in df)
    else:
        assert all(df[c].dtype == np.float64 for c in df)
    if name == "eia":
        assert list(df.columns) == [f"v{i}" for i in range(1, 11)]


@pytest.mark.parametrize("name", list(SHAPES))
def test_packaged_files_are_the_documented_ones(name):
    ref = datasets.REFERENCE[name]
    # byte-identical to the source CSV (SHA-256 of the uncompressed file), shape as listed
    assert datasets.checksum(name) == ref.sha256
    assert datasets.load(name, raw=True).shape == (ref.rows, ref.columns)
    assert len(datasets.load(name, distinct=True)) == ref.distinct


def test_packaged_data_is_small():
    folder = resources.files("linkrisk").joinpath(datasets.PACKAGE_FOLDER)
    sizes = {r.file: len(folder.joinpath(r.file).read_bytes()) for r in datasets.REFERENCE.values()}
    assert sum(sizes.values()) < 2 * 2**20, sizes


def _distinct_by_hand(name, cols):
    """Distinct QI tuples in order of first occurrence, read with the csv module."""
    folder = resources.files("linkrisk").joinpath(datasets.PACKAGE_FOLDER)
    with gzip.open(folder.joinpath(f"{name}.csv.gz").open("rb"), "rt", newline="") as fh:
        rows = list(csv.DictReader(fh))
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(tuple(r[c].strip() for c in cols), i)
    return list(first)


@pytest.mark.parametrize("name,qi,count", [("household", datasets.HOUSEHOLD_QI, 493),
                                           ("adult", datasets.ADULT_QI, 8688)])
def test_distinct_files_of_the_global_linkage_literature(name, qi, count):
    d = datasets.load(name, distinct=True)
    assert len(d) == count
    assert list(d.columns) == qi and list(d.index) == list(range(count))
    assert all(isinstance(d[c].dtype, pd.CategoricalDtype) for c in d)
    # same records, same order (first occurrence) as an independent pass over the CSV
    got = [tuple(str(v) for v in row) for row in d.itertuples(index=False)]
    assert got == _distinct_by_hand(name, qi)
    # categories are those of the full file, so distinct and full files link directly
    full = datasets.load(name)
    assert all(list(d[c].cat.categories) == list(full[c].cat.categories) for c in qi)


def test_override_folder_and_errors(monkeypatch, tmp_path):
    # the packaged files need no argument and no environment variable
    assert "LINKRISK_DATA" not in os.environ
    assert datasets.locate("census").startswith("package:")
    census = datasets.load("census")
    # a folder (argument or LINKRISK_DATA) overrides them, plain or gzip CSV
    raw = datasets.load("census", raw=True)
    (raw.iloc[:10] * 2).to_csv(tmp_path / "census.csv", index=False)
    raw.iloc[:20].to_csv(tmp_path / "tarragona.csv.gz", index=False)
    assert datasets.load("census", tmp_path).equals(census.iloc[:10] * 2)
    monkeypatch.setenv("LINKRISK_DATA", str(tmp_path))
    assert datasets.load("census").equals(census.iloc[:10] * 2)
    assert len(datasets.load("tarragona", raw=True)) == 20
    with pytest.raises(LinkriskError, match="holds neither eia.csv nor eia.csv.gz"):
        datasets.load("eia")
    monkeypatch.setenv("LINKRISK_DATA", str(tmp_path / "nope"))
    with pytest.raises(LinkriskError, match="LINKRISK_DATA .*nope is not a folder"):
        datasets.load("census")
    monkeypatch.delenv("LINKRISK_DATA")
    with pytest.raises(LinkriskError, match="data directory .*nope is not a folder"):
        datasets.load("census", tmp_path / "nope")
    with pytest.raises(LinkriskError, match="unknown dataset"):
        datasets.load("cencus")
    with pytest.raises(LinkriskError, match="raw=True"):
        datasets.load("adult", raw=True, distinct=True)
    (tmp_path / "household.csv").write_text("a,b\n1,2\n")
    with pytest.raises(LinkriskError, match="lacks the column"):
        datasets.load("household", tmp_path)
    # the packaged copy is not changed by a caller editing what load() returned
    census.iloc[0, 0] = -1.0
    assert datasets.load("census").iloc[0, 0] != -1.0


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
