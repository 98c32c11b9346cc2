import numpy as np
import pandas as pd
import pytest

from linkrisk.data import (
    attribute_kinds,
    infer_kind,
    is_number,
    numeric_matrix,
    parse_kinds,
    select_qi,
    truth_from_ids,
)
from linkrisk.errors import LinkriskError
from linkrisk.fileio import read_table, write_table


def test_csv_and_parquet_roundtrip(tmp_path):
    df = pd.DataFrame({"a": [1.5, 2.0], "b": ["x", "y"]})
    for name in ("f.csv", "f.parquet"):
        p = write_table(df, tmp_path / name)
        back = read_table(p)
        assert back.equals(df)
        with pytest.raises(LinkriskError, match="--force"):
            write_table(df, p)
        write_table(df.iloc[:1], p, force=True)
        assert len(read_table(p)) == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.csv", "f.parquet"]  # no temp files


def test_unreadable_files(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("a,b\n")
    with pytest.raises(LinkriskError, match="empty"):
        read_table(tmp_path / "empty.csv")
    with pytest.raises(LinkriskError, match="no rows"):
        read_table(tmp_path / "header.csv")
    with pytest.raises(LinkriskError, match="not found"):
        read_table(tmp_path / "nope.csv")


def test_qi_selection_and_kinds():
    a = pd.DataFrame({"id": [1, 2], "x": [1.0, 2], "c": pd.Categorical(["u", "v"], ordered=True),
                      "s": ["p", "q"], "only_a": [0, 0]})
    b = a.drop(columns="only_a")
    assert select_qi(a, b, None, ids="id") == ["x", "c", "s"]
    assert select_qi(a, b, "x,s") == ["x", "s"]
    with pytest.raises(LinkriskError, match="only_a"):
        select_qi(a, b, ["x", "only_a"])
    assert attribute_kinds(a, ["x", "c", "s"]) == {"x": "numeric", "c": "ordinal", "s": "nominal"}
    assert attribute_kinds(a, ["x"], parse_kinds("x=ordinal"))["x"] == "ordinal"
    with pytest.raises(LinkriskError, match="unknown attribute kind"):
        attribute_kinds(a, ["x"], {"x": "interval"})


def test_numeric_matrix_errors():
    df = pd.DataFrame({"x": [1.0, np.inf]})
    with pytest.raises(LinkriskError, match="infinite"):
        numeric_matrix(df, ["x"])
    # numbers stored as text are accepted
    assert numeric_matrix(pd.DataFrame({"x": ["1", "2.5"]}), ["x"]).tolist() == [[1.0], [2.5]]


def test_numeric_matrix_masking_wording():
    """The masking methods' path of the one numeric-matrix helper: numeric dtypes only
    (text of numbers is refused, not read), every offending column named at once."""
    df = pd.DataFrame({"x": [1, 2, 3], "y": [1.5, np.nan, 2.0], "t": ["1", "2", "3"],
                       "z": [1.0, np.inf, -np.inf], "b": [True, False, True]})
    x = numeric_matrix(df, ["x"], method="noise")
    assert x.dtype == np.float64 and x.flags.c_contiguous and x.tolist() == [[1.0], [2.0], [3.0]]
    with pytest.raises(LinkriskError, match=r"noise masks numeric attributes only, but 't', 'b' are"):
        numeric_matrix(df, ["x", "t", "b"], method="noise")
    with pytest.raises(LinkriskError, match=r"mdav: column\(s\) 'y' contain missing values"):
        numeric_matrix(df, ["x", "y"], method="mdav")
    with pytest.raises(LinkriskError, match=r"micdp: column\(s\) \['z'\] contain infinite"):
        numeric_matrix(df, ["x", "z"], method="micdp")
    # the linking path names the first offending row instead
    with pytest.raises(LinkriskError, match="'y' of the file has missing values .first at row 1"):
        numeric_matrix(df, ["x", "y"])


def test_one_kind_rule():
    """infer_kind and is_number agree on every dtype (masking, attacks and measures use them)."""
    cols = {"i": pd.Series([1, 2]), "f": pd.Series([1.5, 2.0]), "b": pd.Series([True, False]),
            "n": pd.Series([1, None], dtype="Int64"), "s": pd.Series(["a", "b"]),
            "o": pd.Series(["a", "b"], dtype=pd.CategoricalDtype(["a", "b"], ordered=True)),
            "c": pd.Series([1, 2], dtype="category"), "B": pd.Series([True, None], dtype="boolean")}
    kinds = {k: infer_kind(s) for k, s in cols.items()}
    assert kinds == {"i": "numeric", "f": "numeric", "b": "nominal", "n": "numeric",
                     "s": "nominal", "o": "ordinal", "c": "nominal", "B": "nominal"}
    assert all(is_number(s) == (kinds[k] == "numeric") for k, s in cols.items())


def test_truth_from_ids():
    a = pd.DataFrame({"k": [3, 1, 2]})
    b = pd.DataFrame({"k": [1, 2, 3, 4]})
    assert truth_from_ids(a, b, "k").tolist() == [2, 0, 1]
    assert truth_from_ids(b, a, "k").tolist() == [1, 2, 0, -1]
    with pytest.raises(LinkriskError, match="repeat"):
        truth_from_ids(pd.DataFrame({"k": [1, 1]}), b, "k")
    with pytest.raises(LinkriskError, match="--ids"):
        truth_from_ids(a, b, None)
