"""The grid of linkrisk choose (experiments/choose/grid.py): the grid syntax, the method
grids and the default sweep of each data kind."""

import pytest

from linkrisk.errors import LinkriskError
from linkrisk.experiments.choose import default_methods, parse_grid, parse_method, parse_percent


def test_grid_syntax():
    assert parse_grid("3,5,10", int) == [3, 5, 10]
    # a..b: 6 evenly spaced values, rounded to integers when both ends are integers
    assert parse_grid("2..20", float) == [2, 6, 9, 13, 16, 20]
    assert parse_grid("0.05..1", float) == [0.05, 0.24, 0.43, 0.62, 0.81, 1.0]
    assert parse_grid("2..20:4", float) == [2, 6, 10, 14, 18]
    assert parse_grid("0.1..0.3:0.1", float) == [0.1, 0.2, 0.3]
    assert parse_grid("1..2", int) == [1, 2]  # rounded, duplicates dropped
    assert parse_grid("3,3,5..5", int) == [3, 5]
    assert parse_grid("A,B", str) == ["A", "B"]
    for bad in ("5..2", "x..3", "2..20:0", "1,,2", "1.5"):
        with pytest.raises(LinkriskError):
            parse_grid(bad, int)
    g = parse_method("micdp:k=3,5/epsilon=1,10")
    assert g.params == {"k": [3, 5], "epsilon": [1, 10]}
    assert parse_method("rank_swap").params == {"p": [2, 5, 10, 15, 20]}
    for bad in ("nosuch:p=1", "noise:b=1", "noise:a", "noise:a=1/a=2", "pram:pd=0..1:-1"):
        with pytest.raises(LinkriskError):
            parse_method(bad)
    assert parse_percent("5%") == 5 and parse_percent("2.5") == 2.5
    with pytest.raises(LinkriskError):
        parse_percent("120%")


def test_defaults_per_data_kind():
    num, notes = default_methods("numeric", ordered=False, confidential=None)
    assert [g.method for g in num] == ["noise", "rank_swap", "microaggregation_ir", "mdav"]
    assert "IPSO left out" in notes[0]
    num, _ = default_methods("numeric", ordered=False, confidential=["x"])
    assert num[-1].method == "ipso" and num[-1].params["confidential"] == [["x"]]
    cat, notes = default_methods("categorical", ordered=False, confidential=None)
    assert [g.method for g in cat] == ["pram", "global_recoding", "local_suppression"]
    assert "n_groups" in cat[1].params and len(notes) == 2
    cat, notes = default_methods("categorical", ordered=True, confidential=None)
    assert [g.method for g in cat] == ["pram", "global_recoding", "top_coding",
                                       "bottom_coding", "local_suppression"] and not notes
