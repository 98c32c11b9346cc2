"""Small fixtures for the masking tests (kept small: the whole suite must run fast)."""

import numpy as np
import pandas as pd
import pytest


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
