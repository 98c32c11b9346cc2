import os

import numpy as np
import pandas as pd
import pytest

# The reference files ship with linkrisk (src/linkrisk/reference): the tests need no folder
# beside the repository. An exported LINKRISK_DATA would silently replace them, so it is
# ignored here; tests of the override set it themselves.
os.environ.pop("LINKRISK_DATA", None)


@pytest.fixture(scope="session")
def data_dir() -> None:
    """``None``: ``linkrisk.datasets.load(name, data_dir)`` reads the packaged files."""
    return None


@pytest.fixture(scope="session")
def census() -> pd.DataFrame:
    from linkrisk.datasets import load

    return load("census")


def noisy(df: pd.DataFrame, a: float, seed: int) -> pd.DataFrame:
    """Additive noise N(0, (a·σ_j)²), written here so attack tests don't depend on masking."""
    rng = np.random.default_rng(seed)
    return df + rng.standard_normal(df.shape) * (a * df.std(ddof=1).to_numpy())
