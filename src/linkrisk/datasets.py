"""Reference microdata files of the disclosure-control literature, and a synthetic generator.

``load(name)`` reads one of the five reference files that ship with linkrisk (compressed
package data, read through :mod:`importlib.resources`): the CASC files Census, EIA and
Tarragona, the IHSN household test file and UCI Adult. Their sources, licences and the
attributes the literature uses are in ``docs/datasets.md`` and ``linkrisk datasets``. A
folder given as ``data_dir`` (or the ``LINKRISK_DATA`` environment variable) overrides the
packaged copies: it must hold ``NAME.csv`` or ``NAME.csv.gz``.

``synthetic(n, m, seed)`` makes realistic numeric microdata with no file at all: correlated,
right-skewed, partly zero-inflated and rounded attributes, like income/tax/revenue items of
the Census and EIA files. The demo and the benchmarks use it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import LinkriskError

#: package folder (inside ``linkrisk``) holding the compressed reference files
PACKAGE_FOLDER = "reference"

HOUSEHOLD_QI = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
ADULT_QI = ["workclass", "education", "marital_status", "occupation", "relationship",
            "race", "sex", "native_country"]
EIA_NUMERIC = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES",
               "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES"]

_SDCMICRO = "GPL-2, the licence of the R package sdcMicro that distributes it (no data licence of its own)"
_CASC = "CASC project reference file (Brand, Domingo-Ferrer and Mateo-Sanz)"


@dataclass(frozen=True)
class Reference:
    """Provenance of one packaged reference file (``linkrisk datasets``, docs/datasets.md)."""

    name: str
    file: str           #: packaged file name (gzip-compressed CSV)
    title: str
    rows: int           #: records in the file
    columns: int        #: columns in the file (``load(name, raw=True)``)
    distinct: int       #: distinct records of the returned attributes (``distinct=True``)
    attributes: str     #: what ``load(name)`` returns: the attributes the literature uses
    source: str
    licence: str
    sha256: str         #: SHA-256 of the uncompressed CSV as taken from its source

    @property
    def description(self) -> str:
        return f"{self.title}, {self.rows:,} records × {self.columns} columns"


def _casc(name: str, title: str, size: tuple[int, int, int], attributes: str, origin: str,
          dataset: str, sha256: str) -> Reference:
    """A CASC reference file (as sdcMicro distributes it): ``size`` is (rows, columns,
    distinct records), ``origin`` where the data come from, ``dataset`` sdcMicro's name."""
    return Reference(name, f"{name}.csv.gz", f"CASC {title}", *size, attributes=attributes,
                     source=f"{_CASC}; {origin}; R sdcMicro data set {dataset}",
                     licence=_SDCMICRO, sha256=sha256)


#: name -> provenance of the reference files that ship with linkrisk
REFERENCE: dict[str, Reference] = {r.name: r for r in [
    _casc("census", "Census", (1080, 13, 1080),
          "13 numeric: AFNLWGT, AGI, EMCONTRB, FEDTAX, PTOTVAL, STATETAX, TAXINC, "
          "POTHVAL, INTVAL, PEARNVAL, FICA, WSALVAL, ERNVAL (float64)",
          "US Census Bureau Data Extraction System, 1995 (CPS)", "CASCrefmicrodata",
          "40fb91564d4379274610e941161fd38729adb471bddb9c71d7c01ef142fd0f5b"),
    _casc("eia", "EIA", (4092, 15, 4074),
          "10 numeric: RESREVENUE … TOTSALES renamed v1..v10 (float64); the 5 "
          "identifier columns are dropped",
          "US Energy Information Administration, electric utilities", "EIA",
          "4df54e21b3451e3c0b6081fa1c9ef5dbd8f09d484925ed2ade759b78b4869d1b"),
    _casc("tarragona", "Tarragona", (834, 13, 832),
          "13 numeric: FIXED.ASSETS … NET.PROFIT (float64)",
          "1995 accounts of 834 companies of the Tarragona area", "Tarragona",
          "d5f719a134a3476b2157d9675d1a2b211dbc06ad6109685ad1e4b7847cfa45a4"),
    Reference(
        "household", "household.csv.gz", "IHSN household test data", 4580, 15, 493,
        attributes="8 categorical QIs: " + ", ".join(HOUSEHOLD_QI) + " (nominal codes)",
        source="International Household Survey Network (IHSN) household income and "
               "expenditure test file; R sdcMicro data set testdata",
        licence=_SDCMICRO,
        sha256="2d28251253250606412b0669b80bcd6e0038081e2d3c4de9611a744333f9fe3d"),
    Reference(
        "adult", "adult.csv.gz", "UCI Adult", 32561, 15, 8688,
        attributes="8 categorical QIs: " + ", ".join(ADULT_QI) + " (nominal; '?' is a "
                   "category)",
        source="UCI Machine Learning Repository, Adult (Becker and Kohavi 1996, "
               "doi:10.24432/C5XW20), file adult.data with a snake_case header",
        licence="CC BY 4.0 (Creative Commons Attribution 4.0 International), the UCI "
                "repository's licence",
        sha256="3b8a6abd697a6623ef2ccbffc3e2802e167e7fdaa853003d3bd557b0ce7f5d2a"),
]}


def resolve_data_dir(path: str | os.PathLike | None = None) -> Path | None:
    """The folder that overrides the packaged reference files.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The folder; default ``$LINKRISK_DATA``.

    Returns
    -------
    pathlib.Path or None
        The folder, or ``None`` (use the packaged files). A folder that is named but does not
        exist raises :class:`~linkrisk.errors.LinkriskError`.
    """
    p = path if path is not None else os.environ.get("LINKRISK_DATA") or None
    if p is None:
        return None
    d = Path(p)
    if not d.is_dir():
        src = "LINKRISK_DATA" if path is None else "data directory"
        raise LinkriskError(f"{src} {d} is not a folder; name a folder holding census.csv, … "
                            "or leave it out to use the packaged reference files")
    return d


def _reference(name: str) -> Reference:
    key = str(name).lower()
    if key not in REFERENCE:
        raise LinkriskError(f"unknown dataset {name!r}; choose one of {', '.join(REFERENCE)}")
    return REFERENCE[key]


def locate(name: str, data_dir: str | os.PathLike | None = None) -> str:
    """Where ``load(name, data_dir)`` reads from.

    Parameters
    ----------
    name : str
        A reference file name (:data:`REFERENCE`).
    data_dir : str or os.PathLike, optional
        The override folder (:func:`resolve_data_dir`).

    Returns
    -------
    str
        A file of the override folder, or ``package:linkrisk/reference/NAME.csv.gz``.
    """
    ref = _reference(name)
    d = resolve_data_dir(data_dir)
    if d is None:
        return f"package:linkrisk/{PACKAGE_FOLDER}/{ref.file}"
    stem = ref.file.removesuffix(".gz")
    for f in (d / stem, d / ref.file):
        if f.is_file():
            return str(f)
    raise LinkriskError(f"{d} holds neither {stem} nor {ref.file} (the folder overrides the "
                        "packaged reference files; leave it out to use those)")


@lru_cache(maxsize=8)
def _read_packaged(file: str) -> pd.DataFrame:
    res = resources.files("linkrisk").joinpath(PACKAGE_FOLDER, file)
    try:
        with res.open("rb") as fh:
            return pd.read_csv(fh, compression="gzip")
    except FileNotFoundError:
        raise LinkriskError(f"the packaged reference file {PACKAGE_FOLDER}/{file} is missing "
                            "from this linkrisk installation; reinstall linkrisk") from None


def load(name: str, data_dir: str | os.PathLike | None = None, *, raw: bool = False,
         distinct: bool = False) -> pd.DataFrame:
    """Load a reference file by name: census, eia, tarragona, household, adult.

    By default only the attributes the literature uses are returned, typed for linkage:
    Census and Tarragona as float64; EIA's 10 numeric attributes renamed ``v1..v10``;
    Household's and Adult's 8 categorical QIs as (nominal) pandas Categoricals. The files
    ship with linkrisk. Sources and licences: ``docs/datasets.md``.

    Parameters
    ----------
    name : str
        The reference file (case does not matter).
    data_dir : str or os.PathLike, optional
        A folder whose ``NAME.csv`` (or ``NAME.csv.gz``) overrides the packaged file; default
        ``$LINKRISK_DATA``, else the packaged files (:func:`resolve_data_dir`).
    raw : bool
        Return the whole file as read.
    distinct : bool
        Keep the distinct records of the returned attributes in order of their first
        occurrence, indexed 0..d-1: the deduplicated files of the global-linkage literature
        (Household: 493 records on its 8 QIs, Adult: 8,688). Not with ``raw``.

    Returns
    -------
    pandas.DataFrame
        The file, indexed 0..n-1.

    References
    ----------
    Brand, R., Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Reference data sets to test
    and compare SDC methods for protection of numerical microdata. CASC project report
    (Census, EIA, Tarragona); docs/datasets.md gives every file's source.
    """
    ref = _reference(name)
    if raw and distinct:
        raise LinkriskError("distinct=True applies to the returned attributes; it cannot be "
                            "combined with raw=True")
    where = locate(ref.name, data_dir)
    if where.startswith("package:"):
        df = _read_packaged(ref.file).copy()
    else:
        try:
            df = pd.read_csv(where)
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            raise LinkriskError(f"cannot read {where}: {exc}") from None
    if raw:
        return df
    key = ref.name
    need = {"eia": EIA_NUMERIC, "household": HOUSEHOLD_QI, "adult": ADULT_QI}.get(key, [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise LinkriskError(f"{where} lacks the column(s) {', '.join(missing)}")
    try:
        if key == "eia":
            df = df[EIA_NUMERIC].astype(np.float64)
            df.columns = [f"v{i}" for i in range(1, 11)]
        elif key == "household":
            df = df[HOUSEHOLD_QI].astype("category")
        elif key == "adult":
            df = df[ADULT_QI].astype(str).apply(lambda s: s.str.strip()).astype("category")
        else:
            df = df.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise LinkriskError(f"{where}: {exc}") from None
    if distinct:
        df = df.drop_duplicates(keep="first")
    return df.reset_index(drop=True)


def checksum(name: str, data_dir: str | os.PathLike | None = None) -> str:
    """SHA-256 of the uncompressed CSV that :func:`load` reads.

    Parameters
    ----------
    name : str
        A reference file name.
    data_dir : str or os.PathLike, optional
        The override folder (:func:`resolve_data_dir`).

    Returns
    -------
    str
        The hex digest; compare ``REFERENCE[name].sha256``.
    """
    ref = _reference(name)
    where = locate(ref.name, data_dir)
    if where.startswith("package:"):
        data = resources.files("linkrisk").joinpath(PACKAGE_FOLDER, ref.file).read_bytes()
    else:
        data = Path(where).read_bytes()
    if data[:2] == b"\x1f\x8b":
        import gzip

        data = gzip.decompress(data)
    return hashlib.sha256(data).hexdigest()


def synthetic(n: int = 2000, m: int = 8, seed: int | None = 0) -> pd.DataFrame:
    """Synthetic numeric microdata: ``n`` records, ``m`` correlated skewed attributes.

    A Gaussian copula with a random factor-model correlation (two latent factors) drives
    log-normal marginals of different skewness; about a third of the attributes are
    zero-inflated (many exact zeros, as with capital income or tax items) and all are rounded
    to whole units, so files contain ties like real ones.

    Parameters
    ----------
    n : int
        Number of records (at least 2).
    m : int
        Number of attributes (at least 1).
    seed : int, optional
        Seed of ``numpy.random.default_rng``; same seed, same file.

    Returns
    -------
    pandas.DataFrame
        float64 columns ``v1..vm``.
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
