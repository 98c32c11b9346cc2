import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# reference data lives beside the project (../shared/data), never inside it
DATA_DIR = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()
if DATA_DIR.is_dir():
    os.environ.setdefault("LINKRISK_DATA", str(DATA_DIR))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.is_dir():
        pytest.skip("reference data folder ../shared/data not present")
    return DATA_DIR


@pytest.fixture(scope="session")
def census(data_dir) -> pd.DataFrame:
    from linkrisk.datasets import load

    return load("census", data_dir)


def noisy(df: pd.DataFrame, a: float, seed: int) -> pd.DataFrame:
    """Additive noise N(0, (a·σ_j)²), written here so attack tests don't depend on masking."""
    rng = np.random.default_rng(seed)
    return df + rng.standard_normal(df.shape) * (a * df.std(ddof=1).to_numpy())
