"""Reference microdata files and a synthetic generator.

``load(name)`` reads one of the reference files of the SDC literature (see docs/datasets.md) from a
data directory: the ``data_dir`` argument, else the ``LINKRISK_DATA`` environment
variable. The files are not shipped with linkrisk.

``synthetic(n, m, seed)`` makes realistic numeric microdata with no file at all: correlated,
right-skewed, partly zero-inflated and rounded attributes, like income/tax/revenue items of
the Census and EIA files. The demo and the benchmarks use it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import LinkriskError

#: name -> (file, description)
REFERENCE = {
    "census": ("census.csv", "CASC Census, 1080 x 13 numeric"),
    "eia": ("eia.csv", "CASC EIA, 4092 records, 10 numeric attributes v1..v10"),
    "tarragona": ("tarragona.csv", "CASC Tarragona, 834 x 13 numeric"),
    "household": ("household.csv", "IHSN household test data, 4580 records, 8 categorical QIs"),
    "adult": ("adult.csv", "UCI Adult, 32561 records, 8 categorical QIs"),
}

HOUSEHOLD_QI = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
ADULT_QI = ["workclass", "education", "marital_status", "occupation", "relationship",
            "race", "sex", "native_country"]
EIA_NUMERIC = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES",
               "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES"]


def resolve_data_dir(path: str | os.PathLike | None = None) -> Path:
    """Resolve the reference-data directory (argument, else ``$LINKRISK_DATA``)."""
    p = path if path is not None else os.environ.get("LINKRISK_DATA")
    if not p:
        raise LinkriskError(
            "no data directory: pass --data-dir (data_dir=) or set LINKRISK_DATA to the folder "
            "holding census.csv, eia.csv, …"
        )
    p = Path(p)
    if not p.is_dir():
        raise LinkriskError(f"data directory {p} does not exist")
    return p


def load(name: str, data_dir: str | os.PathLike | None = None, *, raw: bool = False
         ) -> pd.DataFrame:
    """Load a reference file by name: census, eia, tarragona, household, adult.

    By default only the attributes the literature uses are returned, typed for linkage:
    EIA's 10 numeric attributes renamed ``v1..v10``; Household's and Adult's 8 categorical
    QIs as (nominal) pandas Categoricals. ``raw=True`` returns the whole file as read.
    """
    key = name.lower()
    if key not in REFERENCE:
        raise LinkriskError(f"unknown dataset {name!r}; choose one of {', '.join(REFERENCE)}")
    d = resolve_data_dir(data_dir)
    path = d / REFERENCE[key][0]
    if not path.exists():
        raise LinkriskError(f"{path} not found in the data directory")
    df = pd.read_csv(path)
    if raw:
        return df
    if key == "eia":
        df = df[EIA_NUMERIC].astype(np.float64)
        df.columns = [f"v{i}" for i in range(1, 11)]
    elif key == "household":
        df = df[HOUSEHOLD_QI].astype("category")
    elif key == "adult":
        df = df[ADULT_QI].astype(str).apply(lambda s: s.str.strip()).astype("category")
    else:
        df = df.astype(np.float64)
    return df.reset_index(drop=True)


def synthetic(n: int = 2000, m: int = 8, seed: int | None = 0) -> pd.DataFrame:
    """Synthetic numeric microdata: ``n`` records, ``m`` correlated skewed attributes.

    A Gaussian copula with a random factor-model correlation (two latent factors) drives
    log-normal marginals of different skewness; about a third of the attributes are
    zero-inflated (many exact zeros, as with capital income or tax items) and all are rounded
    to whole units, so files contain ties like real ones. Same ``seed``, same file.
    """
    if n < 2 or m < 1:
        raise LinkriskError("synthetic data needs n >= 2 records and m >= 1 attributes")
    rng = np.random.default_rng(seed)
    loadings = rng.uniform(0.3, 0.9, size=(m, 2)) * rng.choice([1.0, 0.6], size=(m, 2))
    cov = loadings @ loadings.T + np.diag(rng.uniform(0.2, 0.6, m))  # factors + uniqueness
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    z = rng.standard_normal((n, m)) @ np.linalg.cholesky(corr).T
    mu = rng.uniform(7.0, 11.0, m)          # log-scale location: values in the 1e3..1e5 range
    sigma = rng.uniform(0.4, 1.1, m)        # skewness varies by attribute
    x = np.exp(mu + sigma * z)
    zero_inflated = rng.permutation(m)[: m // 3]
    for j in zero_inflated:
        # zero below a latent quantile, so zeros are correlated with the other attributes
        x[z[:, j] < np.quantile(z[:, j], rng.uniform(0.2, 0.5)), j] = 0.0
    x = np.round(x)
    return pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(m)])
