"""Running linkrisk choose (experiments/choose/run.py): the digest that names the cached
working copy of the data."""

import pandas as pd

from linkrisk.experiments.choose import frame_hash


def test_working_copy_depends_on_category_order():
    df = pd.DataFrame({"a": pd.Categorical(["x", "y", "x"])})
    ordered = df.apply(lambda s: s.cat.as_ordered())
    reordered = df.apply(lambda s: s.cat.reorder_categories(["y", "x"]))
    assert len({frame_hash(df), frame_hash(ordered), frame_hash(reordered)}) == 3
