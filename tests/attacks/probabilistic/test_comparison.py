"""prl's comparison vectors (attributes/probabilistic/comparison.py)."""

import numpy as np

from linkrisk.attacks import make_context
from linkrisk.attacks import probabilistic as P
from tests.attacks.probabilistic.conftest import (
    mixed_files,
)


def test_quantile_bins_from_original_file():
    a, b = mixed_files(3)
    ctx, _ = make_context(a, b)
    cmp = P.compare(ctx, q=4)
    edges = np.unique(np.quantile(a["x"], [0.25, 0.5, 0.75]))
    np.testing.assert_array_equal(cmp.a[:, 2], np.searchsorted(edges, a["x"], side="right"))
    np.testing.assert_array_equal(cmp.b[:, 2], np.searchsorted(edges, b["x"], side="right"))
    assert cmp.rule[2] == "same of 4 quantile bins"
