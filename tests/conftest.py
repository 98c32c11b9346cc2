import os

import numpy as np
import pandas as pd
import pytest

# The reference files ship with linkrisk (src/linkrisk/reference): the tests need no folder
# beside the repository. An exported LINKRISK_DATA would silently replace them, so it is
# ignored here; tests of the override set it themselves.
os.environ.pop("LINKRISK_DATA", None)
# pytest-xdist's workers export COLUMNS=80, and a rich Console fixes its width from COLUMNS
# when it is created (at the import of linkrisk.cli): tests that pass their own COLUMNS to a
# CliRunner would then get 80 columns or not depending on the worker. Tests set it themselves.
os.environ.pop("COLUMNS", None)
# A cold command line run starts a detached background compilation of the kernels
# (linkrisk.engine.background); the tests' many subprocesses must not. Its own tests set it.
os.environ["LINKRISK_BACKGROUND_COMPILE"] = "0"


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


# ------------------------------------------------ small frames (masking and registry tests)
@pytest.fixture(scope="session")
def census_csv() -> pd.DataFrame:
    """The CASC Census file as read by pandas (13 int64 columns, 1080 rows)."""
    from linkrisk.datasets import load

    return load("census", raw=True)


def continuous(n: int = 300, m: int = 4, seed: int = 0, index_start: int = 100) -> pd.DataFrame:
    """Continuous correlated data without ties, on different scales, non-default index."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, m))
    x = rng.normal(size=(n, m)) @ a * np.arange(1, m + 1) * 10 + np.arange(m) * 100
    return pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(m)],
                        index=pd.RangeIndex(index_start, index_start + n))


@pytest.fixture
def cont() -> pd.DataFrame:
    return continuous()


@pytest.fixture
def mixed() -> pd.DataFrame:
    """Numeric + ordinal + nominal + string columns (for pass-through checks)."""
    rng = np.random.default_rng(1)
    n = 200
    df = continuous(n, 3, seed=2)
    df["edu"] = pd.Categorical(rng.choice(["low", "mid", "high", "top"], n),
                               categories=["low", "mid", "high", "top"], ordered=True)
    df["region"] = pd.Categorical(rng.choice(["n", "s", "e", "w"], n, p=[.4, .3, .2, .1]))
    df["label"] = pd.Series(rng.choice(["x", "y", "z"], n), index=df.index, dtype=str)
    return df
