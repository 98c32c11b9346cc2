"""Reading and writing microdata files (the README's "File formats" lists them).

``read_input(spec)`` is what every command uses: ``-`` is CSV on stdin, an existing path is
read by its format, and otherwise a built-in reference dataset name (``census``, ``eia``,
``tarragona``, ``household``, ``adult``) loads that file. ``read_table(path)`` reads:

* CSV (also ``.tsv``/``.txt``): the delimiter is sniffed among ``,`` ``;`` tab ``|``;
  gzip, bz2, xz and zip compression are recognized by their magic bytes (whatever the
  suffix); UTF-8 (with or without BOM) and UTF-16 with BOM. Numbers written with thousands
  separators (``"45,554"``, ``45 554``, ``45'554``) or decimal commas (``12,5``) are parsed,
  and a warning says how. A column whose values are mostly numbers but that holds text
  (``n/a``, ``.``) is refused, naming the column and the value: read as text it would be a
  categorical QI and give a false low risk. An index saved with the file (unnamed first
  column holding 0..n−1 or 1..n) is dropped with a warning; duplicate column names and other
  unnamed columns are refused.
* Parquet (``.parquet``/``.pq``, needs pyarrow).
* Stata ``.dta``, SPSS ``.sav``/``.zsav``, SAS ``.sas7bdat`` (with the value labels of a
  sibling ``NAME.sas7bcat`` catalog when present) and SAS transport ``.xpt``, through
  pyreadstat. Value labels become pandas Categoricals so that kind inference sees them:

  ====================================  =============================================
  variable                              read as
  ====================================  =============================================
  SPSS measure *ordinal*                ordered Categorical (categories in code order)
  SPSS measure *nominal*                unordered Categorical
  SPSS *scale*, every value labelled    ordered Categorical (the codes are quantities)
  Stata / SAS / unknown measure,        unordered Categorical (a label set says
  every value labelled                  nothing about order: use ``--kinds c=ordinal``)
  labels on some values only (*scale*   numeric: the labels name special values of a
  or unknown)                           quantity; they are kept for writing back
  ====================================  =============================================

  Category names are the labels (``"label (code)"`` when two codes share a label); values
  without a label keep their code as name; when no label says more than its code
  (``1 -> "1"``), the categories are the numeric codes themselves, as in a file of coded
  categories, so that a file written from coded Categoricals reads back the same. SPSS user-missing values are read as missing
  (and written back as system-missing).
  The file's metadata (value labels, variable labels, measure levels, file label) is kept
  in ``df.attrs["linkrisk_meta"]``.

``write_table(df, path)`` writes by the output suffix: CSV (``.csv``, ``.tsv``, ``.txt``,
optionally ``.gz``/``.bz2``/``.xz``/``.zip``), Parquet, Stata ``.dta``, SPSS ``.sav``/
``.zsav`` and SAS transport ``.xpt``. ``-`` writes CSV to stdout. Categoricals are written
back as their original codes with their value labels (``like=`` gives the frame whose
metadata to use, e.g. the unmasked input), new categories (from recoding) get new codes.
XPT has no value labels: Categoricals are written as their labels (character variables).
SAS7BDAT cannot be written (no open writer exists): write ``.xpt``. Every write is atomic
(temporary file ``.NAME.tmp-PID`` renamed into place, removed on any error or interruption)
and refuses to overwrite an existing file unless ``force``.
"""

from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import json
import lzma
import os
import re
import sys
import threading
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .data import is_number
from .dates import date_days, days_to_datetimes, is_dates
from .errors import LinkriskError

zlib_error = zlib.error

META_KEY = "linkrisk_meta"
DELIMITERS = (",", ";", "\t", "|")
_COMPRESSION_SUFFIXES = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
_CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".dat", "")
_READ_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".dta": "stata", ".sav": "spss",
                 ".zsav": "spss", ".sas7bdat": "sas7bdat", ".xpt": "xport"}
_WRITE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".dta": "stata", ".sav": "spss",
                  ".zsav": "spss", ".xpt": "xport"}
_SNIFF_BYTES = 1 << 16


class FileFormatWarning(UserWarning):
    """How a file was interpreted (separators parsed, an index column dropped)."""


def _warn(msg: str) -> None:
    warnings.warn(msg, FileFormatWarning, stacklevel=3)


# --------------------------------------------------------------------------------- input

def input_label(spec: str | os.PathLike) -> str:
    """Short name of an input for titles: ``stdin``, a built-in name or the file name."""
    s = str(spec)
    return "stdin" if s == "-" else Path(s).name


def read_input(spec: str | os.PathLike, data_dir: str | os.PathLike | None = None, *,
               text_columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read one input given on the command line.

    Parameters
    ----------
    spec : str or os.PathLike
        ``-`` reads CSV from stdin; an existing path is read by :func:`read_table` (CSV and
        its compressed forms, Parquet, Stata, SPSS, SAS); otherwise a reference
        dataset name (``linkrisk.datasets.REFERENCE``) returns
        ``linkrisk.datasets.load(spec, data_dir)``. Anything else is "file not found".
    data_dir : str or os.PathLike, optional
        The folder that overrides the packaged reference files
        (:func:`linkrisk.datasets.resolve_data_dir`).
    text_columns : sequence of str, optional
        Columns that are labels, read as text exactly as written (the ``--ids`` columns:
        ``001`` and ``0001`` are two ids, not the number 1 twice).

    Returns
    -------
    pandas.DataFrame
        The file as read.
    """
    from . import datasets

    s = str(spec)
    if s == "-":
        return read_stdin(text_columns=text_columns)
    p = Path(s)
    if p.exists():
        return read_table(p, text_columns=text_columns)
    if s.lower() in datasets.REFERENCE:
        return datasets.load(s.lower(), data_dir)
    raise LinkriskError(f"file not found: {s} (the built-in datasets are "
                        f"{', '.join(datasets.REFERENCE)})")


def read_inputs(*specs: str | os.PathLike, data_dir: str | os.PathLike | None = None,
                text_columns: Sequence[str] | str | None = None) -> list[pd.DataFrame]:
    """:func:`read_input` for each spec; at most one of them may be ``-`` (stdin).
    ``text_columns`` (a list or ``"a,b"``, e.g. the ``--ids``): read as text."""
    if sum(str(s) == "-" for s in specs) > 1:
        raise LinkriskError("only one input can be read from stdin ('-')")
    cols = _text_columns(text_columns)
    return [read_input(s, data_dir, text_columns=cols) for s in specs]


def _text_columns(spec: Sequence[str] | str | None) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, str):
        return [c.strip() for c in spec.split(",") if c.strip()]
    return [str(c) for c in spec]


def read_stdin(*, text_columns: Sequence[str] | None = None) -> pd.DataFrame:
    """CSV (any supported delimiter, optionally compressed) from standard input."""
    try:
        data = sys.stdin.buffer.read()
        return _read_csv(data, "stdin", _text_columns(text_columns))
    except MemoryError:
        raise LinkriskError(_too_large("the data on stdin", None)) from None


def _too_large(name: str, size: int | None, compressed: bool = False) -> str:
    what = "" if size is None else (f" ({size / 2**30:.1f} GiB{' compressed' if compressed else ''})"
                                    if size >= 2**30 else f" ({size / 2**20:.0f} MiB"
                                    f"{' compressed' if compressed else ''})")
    return (f"{name}{what} is too large for this machine's memory; read it on a machine "
            "with more memory, convert it to Parquet (typed columns take less memory than "
            "CSV text), or work on a sample of its records")


def read_table(path: str | os.PathLike, *, text_columns: Sequence[str] | None = None
               ) -> pd.DataFrame:
    """Read a microdata file by its suffix: Parquet, Stata, SPSS, SAS (``.sas7bdat``,
    ``.xpt``); anything else is read as CSV. ``text_columns``: labels read as text
    (CSV only; other formats keep their types). See the module docstring for what is
    parsed, refused and kept."""
    p = Path(path)
    if not p.exists():
        raise LinkriskError(f"file not found: {p}")
    if p.is_dir():
        raise LinkriskError(f"{p} is a directory; give a data file")
    fmt = _READ_FORMATS.get(p.suffix.lower(), "csv")
    try:
        if p.stat().st_size == 0:
            raise LinkriskError(f"{p} is empty: it has no header and no rows")
        if fmt == "csv":
            df = _read_csv(p, str(p), _text_columns(text_columns))
        elif fmt == "parquet":
            df = _read_parquet(p)
        else:
            df = _read_readstat(p, fmt)
        if fmt != "csv":
            _dates_to_days(df, str(p))
    except LinkriskError:
        raise
    except KeyboardInterrupt:
        raise
    except MemoryError:
        size = p.stat().st_size
        with open(p, "rb") as f:
            compressed = fmt == "csv" and _compression_of(f.read(16)) is not None
        raise LinkriskError(_too_large(str(p), size, compressed)) from None
    except UnicodeDecodeError as exc:
        raise LinkriskError(_encoding_message(str(p), exc)) from exc
    except Exception as exc:  # parser errors: say which file, in one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if _truncation(exc, first):
            raise LinkriskError(f"cannot read {p} as {_FORMAT_NAMES[fmt]}: the file is "
                                f"truncated or corrupt ({first}); copy or export it again"
                                ) from exc
        raise LinkriskError(f"cannot read {p} as {_FORMAT_NAMES[fmt]}: {first}") from exc
    if df.shape[1] == 0:
        raise LinkriskError(f"{p} has no columns")
    if len(df) == 0:
        raise LinkriskError(f"{p} has a header but no rows")
    return df


#: what readers say about a file that ends early or whose bytes are damaged
_TRUNCATED = re.compile(r"ended before|end-of-stream|unexpected end|unable to read from file|"
                        r"expected number of rows|magic bytes|not a zip file|bad crc|"
                        r"invalid (data|block|header|stored block)|corrupt|truncated|"
                        r"eof inside string|unexpected eof", re.IGNORECASE)


def _truncation(exc: BaseException, first: str) -> bool:
    return isinstance(exc, (EOFError, zipfile.BadZipFile, zlib_error, lzma.LZMAError)) or \
        _TRUNCATED.search(first) is not None


def _truncated(name: str, fmt: str, why: str) -> LinkriskError:
    return LinkriskError(f"{name} is truncated or corrupt: {why}; the {_FORMAT_NAMES[fmt]} "
                         "file ends before its data do (copy or export it again)")


_FORMAT_NAMES = {"csv": "CSV", "parquet": "Parquet", "stata": "Stata", "spss": "SPSS",
                 "sas7bdat": "SAS7BDAT", "xport": "SAS transport (XPT)"}


def _read_parquet(p: Path) -> pd.DataFrame:
    try:
        import pyarrow.parquet as pq

        df = pd.read_parquet(p)
        schema_meta = pq.read_schema(p).metadata or {}
    except ImportError as exc:  # pyarrow is an extra
        raise LinkriskError("reading Parquet needs pyarrow: pip install pyarrow") from exc
    # pyarrow stores Categoricals of numbers as plain numbers; pandas' metadata says which
    pandas_meta = json.loads(schema_meta.get(b"pandas", b"{}") or b"{}")
    for col in pandas_meta.get("columns", []):
        c = col.get("name")
        if (col.get("pandas_type") == "categorical" and c in df.columns
                and not isinstance(df[c].dtype, pd.CategoricalDtype)):
            ordered = bool((col.get("metadata") or {}).get("ordered"))
            df[c] = pd.Categorical(df[c], ordered=ordered)
    return df


# ----------------------------------------------------------------------------------- CSV

_MAGIC = [(b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"),
          (b"PK\x03\x04", "zip")]
_BINARY_MAGIC = [(b"PAR1", "a Parquet file (name it .parquet)"),
                 (b"$FL2", "an SPSS file (name it .sav)"),
                 (b"$FL3", "an SPSS file (name it .zsav)"),
                 (b"<stata_dta>", "a Stata file (name it .dta)"),
                 (b"\xd0\xcf\x11\xe0", "an old Excel/Office file (save it as CSV)"),
                 (b"%PDF", "a PDF file")]


def _compression_of(head: bytes) -> str | None:
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def _open_decompressed(src: Path | bytes, comp: str | None, name: str) -> io.BufferedIOBase:
    raw: Any = io.BytesIO(src) if isinstance(src, bytes) else open(src, "rb")
    if comp is None:
        return raw
    if comp == "gzip":
        return gzip.GzipFile(fileobj=raw)
    if comp == "bz2":
        return bz2.BZ2File(raw)
    if comp == "xz":
        return lzma.LZMAFile(raw)
    zf = zipfile.ZipFile(raw)
    members = [i for i in zf.infolist() if not i.is_dir()]
    if any(m.filename == "[Content_Types].xml" for m in members):
        raise LinkriskError(f"{name} is an Excel workbook, not CSV: save the sheet as CSV")
    if len(members) != 1:
        raise LinkriskError(f"{name} is a zip archive with {len(members)} files; "
                            "it must hold exactly one CSV file")
    return zf.open(members[0])


def _encoding_message(name: str, exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start:exc.start + 1].hex() if exc.object else "?"
    return (f"{name} is not UTF-8 text (byte 0x{bad} cannot be decoded); save it as UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)")


def _sniff(text: str, truncated: bool) -> str:
    """The delimiter among DELIMITERS that splits the header and every sampled line into
    the same number (> 1) of fields, the largest such number winning; else the one that
    splits the header most (rows that do not match are then reported by the parser); a
    single column when no delimiter splits the header."""
    lines = text.splitlines()
    if truncated and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut by the sample
    lines = [ln for ln in lines[:200] if ln.strip()]
    if not lines:
        return ","
    best, best_n = None, 0
    header_n = {}
    for d in DELIMITERS:
        try:
            rows = list(csv.reader(lines, delimiter=d))
        except csv.Error:
            continue
        header_n[d] = len(rows[0])
        if all(len(r) == len(rows[0]) for r in rows) and len(rows[0]) > best_n:
            best, best_n = d, len(rows[0])
    widest = max(DELIMITERS, key=lambda d: (header_n.get(d, 0), d == ","))
    if best is not None and (best_n > 1 or header_n.get(widest, 0) == 1):
        return best
    return widest  # ragged rows: pandas names the first bad line


def _read_csv(src: Path | bytes, name: str, text_cols: Sequence[str] = ()) -> pd.DataFrame:
    if isinstance(src, bytes):
        head0 = src[:16]
    else:
        with open(src, "rb") as f:
            head0 = f.read(16)
    comp = _compression_of(head0)
    if isinstance(src, bytes) and comp is not None:  # stdin: decompress here
        with _open_decompressed(src, comp, name) as f:
            src, comp = f.read(), None
    with _open_decompressed(src, comp, name) as f:
        head = f.read(_SNIFF_BYTES)
        truncated = len(f.read(1)) == 1
    if not head.strip():
        raise LinkriskError(f"{name} is empty: it has no header and no rows")
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig" if head.startswith(codecs.BOM_UTF8) else "utf-8"
        if b"\x00" in head:
            what = next((w for m, w in _BINARY_MAGIC if head.startswith(m)), None)
            raise LinkriskError(f"{name} is {what or 'a binary file'}, not CSV text")
    for m, what in _BINARY_MAGIC:
        if head.startswith(m):
            raise LinkriskError(f"{name} is {what}, not CSV text")
    try:
        text = codecs.getincrementaldecoder(encoding)().decode(head, final=not truncated)
    except UnicodeDecodeError as exc:
        raise LinkriskError(_encoding_message(name, exc)) from exc
    if not text.strip():
        raise LinkriskError(f"{name} is empty: it has no header and no rows")
    if sum(not (c.isprintable() or c.isspace()) for c in text[:4096]) > 0.05 * min(len(text), 4096):
        raise LinkriskError(f"{name} is a binary file, not CSV text")
    delim = _sniff(text, truncated)
    header = next(csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=delim), [])
    header = [h.strip() for h in header]  # "a, b": the column is "b"
    _check_header(header, name)

    labels = [h for h in header if h in set(text_cols)]

    def read(**kw: Any) -> pd.DataFrame:
        source: Any = io.BytesIO(src) if isinstance(src, bytes) else src
        if labels and "dtype" not in kw:  # ids are labels: '001' is not the number 1
            kw["dtype"] = {h: str for h in labels}
        return pd.read_csv(source, sep=delim, encoding=encoding, compression=comp, **kw)

    try:
        df = read()
    except pd.errors.EmptyDataError as exc:
        raise LinkriskError(f"{name} is empty: it has no header and no rows") from exc
    except UnicodeDecodeError as exc:
        raise LinkriskError(_encoding_message(name, exc)) from exc
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0].replace("Error tokenizing data. C error: ", "")
        raise LinkriskError(f"cannot read {name} as CSV with delimiter {delim!r}: {first}"
                            ) from exc
    if not df.index.equals(pd.RangeIndex(len(df))):
        raise LinkriskError(f"the rows of {name} have one field more than its header: "
                            "give the first column a name")
    if len(df) == 0:
        raise LinkriskError(f"{name} has a header but no rows")
    if len(header) == df.shape[1]:  # pandas renames duplicates / blanks: keep the header
        df.columns = header
    else:
        header = [str(c) for c in df.columns]
    if comp is None and not isinstance(src, bytes) and encoding != "utf-16":
        _check_csv_end(src, df, header, name, delim)
    for h in labels:
        j = header.index(h)
        df.isetitem(j, df.iloc[:, j].str.strip())
    df = _convert_numbers(df, header, name, delim,
                          lambda cols: read(dtype=str, usecols=cols), skip=set(labels))
    df = _drop_index_columns(df, header, name)
    _dates_to_days(df, name, skip=set(labels))
    return df


def _check_csv_end(p: Path, df: pd.DataFrame, header: list[str], name: str, delim: str
                   ) -> None:
    """Refuse a CSV file cut inside its last record: no line break at the end and fewer
    fields on the last line than in the header (pandas would fill them with NaN)."""
    size = p.stat().st_size
    with open(p, "rb") as f:
        f.seek(max(0, size - 65536))
        tail = f.read()
    if tail.endswith((b"\n", b"\r")) or df.shape[1] < 2:
        return
    line = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    fields = next(csv.reader([line], delimiter=delim), [])
    trailing = int(df.iloc[-1].isna().to_numpy()[::-1].argmin())
    if df.iloc[-1].isna().all():
        trailing = df.shape[1]
    n_missing = len(header) - len(fields)
    if n_missing > 0 and trailing >= n_missing:
        raise LinkriskError(
            f"{name} looks truncated: its last line (record {len(df):,}) ends without a line "
            f"break, {n_missing} field(s) short of the header's {len(header)}; copy or export "
            "the file again (or, if the file is complete, end it with a line break)")


def _dates_to_days(df: pd.DataFrame, name: str, skip: set = frozenset()) -> None:
    """Columns of dates (datetime dtypes, date objects, text dates: :mod:`linkrisk.dates`)
    become days since 1970-01-01 (float; time of day as a fraction), in place, with a
    warning; ``df.attrs[META_KEY]["dates"]`` records them so that :func:`write_table`
    writes dates back."""
    found: dict[str, str] = {}
    for j, c in enumerate(df.columns):
        if c in skip or is_number(df.iloc[:, j]):
            continue
        r = date_days(df.iloc[:, j], str(c), strict=True)
        if r is not None:
            df.isetitem(j, pd.Series(r[0], index=df.index, name=c))
            found[str(c)] = r[1]
    if found:
        meta = df.attrs.setdefault(META_KEY, {"format": "csv", "columns": {}})
        meta.setdefault("dates", {}).update(found)
        cols = list(found)
        _warn(f"read column{'s' if len(cols) > 1 else ''} "
              f"{', '.join(map(repr, cols[:6]))}{' …' if len(cols) > 6 else ''} of {name} as "
              "dates, compared as numbers: days since 1970-01-01 (time of day as a fraction)")


def _unnamed(h: str) -> bool:
    return h.strip() == "" or re.fullmatch(r"Unnamed: \d+", h.strip()) is not None


def _check_header(header: list[str], name: str) -> None:
    seen: dict[str, int] = {}
    for j, h in enumerate(header):
        if _unnamed(h):
            continue
        if h in seen:
            raise LinkriskError(f"column name {h!r} appears twice in the header of {name} "
                                f"(columns {seen[h] + 1} and {j + 1}); column names must be "
                                "unique")
        seen[h] = j


def _drop_index_columns(df: pd.DataFrame, header: list[str], name: str) -> pd.DataFrame:
    """Drop an index saved with the file (unnamed first column 0..n−1 or 1..n) and empty
    unnamed columns (trailing delimiters), with a warning; refuse other unnamed columns."""
    n = len(df)
    drop = []
    for j, h in enumerate(header):
        if not _unnamed(h):
            continue
        s = df.iloc[:, j]
        label = f"column {j + 1} of {name}"
        if s.isna().all():
            drop.append(j)
            _warn(f"dropped {label}: it has no name and no values (trailing delimiter?)")
            continue
        v = s.to_numpy(dtype=np.float64, na_value=np.nan) if pd.api.types.is_numeric_dtype(s) \
            else None
        if j == 0 and v is not None and not np.isnan(v).any():
            for start in (0, 1):
                rng = np.arange(start, start + n)
                if np.array_equal(v, rng):
                    drop.append(j)
                    _warn(f"dropped the first column of {name}: it has no name and holds the "
                          f"row numbers {start}..{start + n - 1} (an index saved with the file)")
                    break
                if np.array_equal(np.sort(v), rng):
                    raise LinkriskError(
                        f"the unnamed first column of {name} holds the row numbers in another "
                        "order (an index saved after the rows were reordered): name it (e.g. "
                        "'id') to use it with --ids, or remove it")
            if drop and drop[-1] == j:
                continue
        raise LinkriskError(f"{label} has no name in the header; name it or remove it, so "
                            "that it cannot become a QI unnoticed")
    if drop:
        df = df.drop(columns=df.columns[drop])
    return df


# numbers: plain, with group separators, with a decimal comma
_GROUP = "[ '\u00a0\u202f]"  # separators that are never decimal marks
_TH_FULL = rf"^\s*[+-]?([1-9]\d{{0,2}}(,\d{{3}}|{_GROUP}\d{{3}})+|\d+)(\.\d+)?\s*$"
_DC_FULL = rf"^\s*[+-]?([1-9]\d{{0,2}}(\.\d{{3}}|{_GROUP}\d{{3}})+|\d+)(,\d+)?\s*$"
_TH_UNAMB = (r"^\s*[+-]?(\d{1,3}(,\d{3}){2,}(\.\d+)?|\d{1,3}(,\d{3})+\.\d+)\s*$")
_DC_UNAMB = (r"^\s*[+-]?(\d*,\d{1,2}|\d*,\d{4,}|\d{4,},\d+|0,\d+|"
             r"\d{1,3}(\.\d{3})+,\d+|\d{1,3}(\.\d{3}){2,})\s*$")
_UNIT = r"^\s*[$€£¥]?\s*[+-]?[\d.,' \u00a0\u202f]*\d[\d.,' \u00a0\u202f]*\s*%?\s*$"
_AMBIG = r"^\s*[+-]?[1-9]\d{0,2},\d{3}\s*$"


def _col_name(header: list[str], j: int) -> str:
    return repr(header[j]) if header[j].strip() else f"number {j + 1}"


def _convert_numbers(df: pd.DataFrame, header: list[str], name: str, delim: str,
                     raw: Callable[[list[int]], pd.DataFrame], skip: set = frozenset()
                     ) -> pd.DataFrame:
    """Text columns become numbers where every value is a number with thousands separators
    or decimal commas (one convention per file). A column of mostly numbers that holds some
    text is refused, unless its numbers are written with leading zeros (``00001``): those
    are codes or ids (labels), kept as text. ``raw(positions)``: those columns as the
    strings in the file; ``skip``: columns read as text (labels)."""
    plain: dict[int, pd.Series] = {}
    pending: dict[int, pd.Series] = {}
    for j in range(df.shape[1]):
        s = df.iloc[:, j]
        if header[j] in skip or pd.api.types.is_numeric_dtype(s) or s.isna().all():
            continue  # labels, numbers pandas could read (or no values at all)
        nn = s.dropna().astype(str)
        isnum = (pd.to_numeric(nn, errors="coerce").notna() | nn.str.match(_TH_FULL)
                 | nn.str.match(_DC_FULL))
        unit = ~isnum & nn.str.match(_UNIT) & nn.str.contains("[$€£¥%]")
        if (isnum | unit).mean() < 0.5:
            continue  # a text column
        if nn[isnum].str.match(r"^\s*[+-]?0\d").any():
            continue  # '00001' among 'S0000': labels written with leading zeros
        if unit.any():
            i = unit.to_numpy().nonzero()[0][0]
            raise LinkriskError(
                f"column {_col_name(header, j)} of {name} holds numbers with a unit or "
                f"currency sign (row {nn.index[i] + 1}: {nn.iloc[i]!r}): read as text it "
                "would be a categorical QI; remove the signs so that it is read as numbers")
        bad = ~isnum
        if bad.any():
            i = bad.to_numpy().nonzero()[0][0]
            raise LinkriskError(
                f"column {_col_name(header, j)} of {name} looks numeric but row "
                f"{nn.index[i] + 1} holds {nn.iloc[i]!r} ({int(bad.sum()):,} such values): read "
                "as text it would be a categorical QI; blank out missing values, or if the "
                "column is categorical write its codes as text")
        pending[j] = nn
    if pending:
        _parse_separators(df, header, name, delim, plain, pending, raw)
    for j, v in plain.items():
        df.isetitem(j, v)
    return df


def _parse_separators(df: pd.DataFrame, header: list[str], name: str, delim: str,
                      plain: dict[int, pd.Series], pending: dict[int, pd.Series],
                      raw: Callable[[list[int]], pd.DataFrame]) -> None:
    """Parse the ``pending`` columns (numbers with separators) into ``plain``, choosing one
    decimal convention for the whole file: thousands separators when some value can only
    be read so ('1,234,567', '1,234.5'), decimal commas when some value can only be read so
    ('12,5', '1.234,5'), refused when both occur; when every value is ambiguous ('45,554'),
    decimal commas in ';'-separated files and thousands separators otherwise."""
    allv = pd.concat(list(pending.values()), ignore_index=True)
    th = allv[allv.str.match(_TH_UNAMB)]
    dc = allv[allv.str.match(_DC_UNAMB)]
    if len(th) and len(dc):
        raise LinkriskError(f"{name} mixes thousands separators ({th.iloc[0].strip()!r}) and "
                            f"decimal commas ({dc.iloc[0].strip()!r}); write numbers one way")
    if len(th) or len(dc):
        conv = "thousands" if len(th) else "decimal"
        why = f"e.g. {(th if len(th) else dc).iloc[0].strip()!r}"
    else:
        amb = allv[allv.str.match(_AMBIG)]
        example = (amb.iloc[0] if len(amb) else allv.iloc[0]).strip()
        conv = "decimal" if delim == ";" else "thousands"
        why = (f"{example!r} is ambiguous; read as "
               + ("a decimal comma, as usual in ';'-separated files" if conv == "decimal"
                  else "a thousands separator, as usual in ','-separated files"))
    what = "thousands separators" if conv == "thousands" else "decimal commas"
    if conv == "decimal":  # a '.' in a column read as plain numbers is a thousands separator
        floats = [j for j in range(df.shape[1]) if j not in pending
                  and pd.api.types.is_float_dtype(df.iloc[:, j])]
        if floats:
            text = raw(floats)
            for k, j in enumerate(floats):
                s = text.iloc[:, k].dropna().astype(str)
                if s.str.contains(".", regex=False).any():
                    pending[j] = s
    full = _TH_FULL if conv == "thousands" else _DC_FULL
    for j, nn in pending.items():
        ok = nn.str.match(full)
        if not ok.all():
            i = (~ok).to_numpy().nonzero()[0][0]
            raise LinkriskError(
                f"column {_col_name(header, j)} of {name} looks numeric but row "
                f"{nn.index[i] + 1} holds {nn.iloc[i]!r}, which is not a number written with "
                f"{what} like the rest of the file ({why})")
        t = nn.str.strip().str.replace(_GROUP, "", regex=True)
        t = (t.str.replace(",", "", regex=False) if conv == "thousands"
             else t.str.replace(".", "", regex=False).str.replace(",", ".", regex=False))
        v = pd.to_numeric(t).reindex(df.index)
        if not v.isna().any() and (v % 1 == 0).all():
            v = v.astype(np.int64)
        plain[j] = v
    cols = [header[j] or f"number {j + 1}" for j in pending]
    _warn(f"read column(s) {', '.join(map(repr, cols[:6]))}{' …' if len(cols) > 6 else ''} "
          f"of {name} as numbers written with {what} ({why})")


# -------------------------------------------------------------- Stata, SPSS, SAS (readstat)

def _pyreadstat():
    try:
        import pyreadstat
    except ImportError as exc:
        raise LinkriskError("reading/writing Stata, SPSS and SAS files needs pyreadstat: "
                            "pip install pyreadstat") from exc
    return pyreadstat


def _code_name(code: Any) -> str:
    f = float(code)
    return str(int(f)) if f.is_integer() else repr(f)


def _read_readstat(p: Path, fmt: str) -> pd.DataFrame:
    prs = _pyreadstat()
    if fmt == "stata":
        df, meta = prs.read_dta(p, apply_value_formats=False)
    elif fmt == "spss":
        df, meta = prs.read_sav(p, apply_value_formats=False, user_missing=False)
    elif fmt == "sas7bdat":
        cat = p.with_suffix(".sas7bcat")
        kw = {"catalog_file": str(cat)} if cat.exists() else {}
        df, meta = prs.read_sas7bdat(p, **kw)
    else:
        df, meta = prs.read_xport(p)
    rows = getattr(meta, "number_rows", None)
    if isinstance(rows, int) and rows >= 0 and rows != len(df):
        raise _truncated(str(p), fmt, f"its header announces {rows:,} records but "
                                      f"{len(df):,} could be read")
    if fmt == "xport":
        _check_xport(p, len(df), dict(getattr(meta, "variable_storage_width", None) or {}))
    value_labels = dict(getattr(meta, "variable_value_labels", None) or {})
    measures = dict(getattr(meta, "variable_measure", None) or {}) if fmt == "spss" else {}
    var_labels = dict(getattr(meta, "column_names_to_labels", None) or {})
    cols: dict[str, dict[str, Any]] = {}
    for c in df.columns:
        labels = value_labels.get(c) or {}
        measure = measures.get(c, "unknown")
        info: dict[str, Any] = {"measure": measure}
        if var_labels.get(c):
            info["label"] = var_labels[c]
        if labels:
            info["labels"] = [[k, v] for k, v in labels.items()]
        s = df[c]
        if is_number(s):
            cat = _labelled_categorical(s, labels, measure)
            if cat is not None:
                df[c] = cat[0]
                info["codes"] = [[name, code] for name, code in cat[1].items()]
        cols[c] = info
    df.attrs[META_KEY] = {"format": fmt, "file_label": getattr(meta, "file_label", None) or "",
                          "columns": cols}
    return df


def _check_xport(p: Path, n: int, widths: dict[str, int]) -> None:
    """Refuse a SAS transport file that ends early. The format is 80-byte records; the
    observations follow the ``OBS`` header, each ``sum(widths)`` bytes, and the last record
    is padded with blanks. Version 8 headers also give the number of observations;
    version 5 ones do not, so a file is truncated when its size is not a multiple of 80
    or when what follows the rows read is not blank padding (a partial observation)."""
    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(min(size, 1 << 22))
    k = head.find(b"HEADER RECORD*******OBS")
    if k < 0 or k % 80:
        return
    obs = head[k:k + 80]
    if obs.startswith(b"HEADER RECORD*******OBSV8"):
        count = obs[48:].strip()
        if count.isdigit() and int(count) != n:
            raise _truncated(str(p), "xport", f"its header announces {int(count):,} records "
                                              f"but {n:,} could be read")
    if size % 80:
        raise _truncated(str(p), "xport", f"its size, {size:,} bytes, is not a whole number "
                                          "of the format's 80-byte records")
    width = sum(int(w) for w in widths.values())
    end = k + 80 + n * width
    if not width or end > size:
        return
    with open(p, "rb") as f:
        f.seek(end)
        rest = f.read(min(size - end, 1 << 20))
    if b"HEADER RECORD*******MEMBER" in rest:
        return  # another member follows (only the first is read)
    if len(rest) >= 80 or rest.strip(b" "):
        raise _truncated(str(p), "xport", f"{n:,} whole records are followed by "
                                          f"{size - end:,} bytes of a partial one")


def _labelled_categorical(s: pd.Series, labels: dict, measure: str
                          ) -> tuple[pd.Series, dict[str, Any]] | None:
    """The Categorical a labelled (or nominal/ordinal) numeric variable becomes, with the
    category -> code map; None when the variable stays numeric (see the module table)."""
    values = s.dropna()
    if measure in ("nominal", "ordinal"):
        ordered = measure == "ordinal"
    elif labels and values.isin(list(labels)).all():
        ordered = measure == "scale"
    else:
        return None
    codes = sorted(set(values.unique()) | set(labels))
    names: dict[Any, str] = {}
    taken: dict[str, int] = {}
    for code in codes:
        nm = str(labels[code]) if code in labels else _code_name(code)
        taken[nm] = taken.get(nm, 0) + 1
        names[code] = nm
    for code in codes:  # two codes with one label: keep them apart
        if taken[names[code]] > 1:
            names[code] = f"{names[code]} ({_code_name(code)})"
    number = {c: int(c) if float(c).is_integer() else float(c) for c in codes}
    if all(names[c] == _code_name(c) for c in codes):
        # no label says more than its code: the categories are the codes themselves, as in
        # a file of coded categories (and linkrisk.datasets.load("household"))
        names = number  # type: ignore[assignment]
    cats = [names[c] for c in codes]
    out = pd.Series(pd.Categorical(s.map(names), categories=cats, ordered=ordered),
                    index=s.index, name=s.name)
    return out, {names[c]: number[c] for c in codes}


# -------------------------------------------------------------------------------- output

def output_format(path: str | os.PathLike) -> tuple[str, str | None]:
    """(format, compression) that :func:`write_table` uses for ``path``; refuses formats
    it cannot write with a clear message."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    last = suffixes[-1] if suffixes else ""
    comp = _COMPRESSION_SUFFIXES.get(last)
    inner = (suffixes[-2] if len(suffixes) > 1 else "") if comp else last
    if last == ".sas7bdat":
        raise LinkriskError(f"cannot write {p.name}: no open writer for SAS7BDAT exists; "
                            "write SAS transport instead (.xpt), which SAS reads with "
                            "LIBNAME XPORT / PROC COPY")
    if not comp and last in _WRITE_FORMATS:
        return _WRITE_FORMATS[last], None
    if inner in _CSV_SUFFIXES or (comp and inner not in _READ_FORMATS):
        return "csv", comp
    raise LinkriskError(f"cannot write {p.name}: unknown output format {last!r}; use .csv "
                        "(optionally .gz/.bz2/.xz/.zip), .tsv, .parquet, .dta, .sav, .zsav "
                        "or .xpt")


def check_output(path: str | os.PathLike | None, force: bool = False, *, table: bool = False,
                 what: str = "output") -> None:
    """Refuse, before any work, an output that cannot be written: it exists (without
    ``force``), is a directory, or its folder is missing or not writable; with ``table``,
    also a data format :func:`write_table` cannot write. ``what`` names the output in the
    message (``report``, ``release`` …). ``None`` and ``-`` (stdout) pass."""
    if path is None or str(path) == "-":
        return
    if table:
        output_format(path)
    p = Path(path)
    if p.is_dir():
        raise LinkriskError(f"{what} {p} is a directory; give a file name")
    if p.exists() and not force:
        raise LinkriskError(f"{p} exists; pass --force (force=True) to overwrite it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise LinkriskError(f"cannot write {what} {p}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise LinkriskError(f"cannot write {what} {p}: directory {parent} is not writable")


def writable_dir(path: str | os.PathLike) -> bool:
    """Whether files can be created in folder ``path`` (or, when it does not exist yet, in
    its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p.is_dir() and os.access(p, os.W_OK | os.X_OK)


def _tmp_name(p: Path) -> Path:
    # one name per process and thread: two writers of one output never share a temp file
    return p.with_name(f".{p.name}.tmp-{os.getpid()}-{threading.get_ident():x}")


def _remove_stale_temps(p: Path) -> None:
    """Temporary files of ``p`` left by a killed process (SIGKILL cannot be cleaned up)."""
    for t in p.parent.glob(f".{glob_escape(p.name)}.tmp-*"):
        pid = t.name.rsplit(".tmp-", 1)[-1].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            t.unlink(missing_ok=True)
        except OSError:  # alive under another user
            pass


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


@contextmanager
def atomic_path(path: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``, on any error
    or interruption (KeyboardInterrupt, SystemExit from SIGTERM) it is removed.

    Without ``force`` the temporary file is hard-linked to ``path``, which fails when
    ``path`` exists: of two writers racing for one name (two ``mask -o same.csv`` at once)
    one wins and the other gets "exists; pass --force", never a silent replacement. With
    ``force`` it is renamed over ``path`` (atomic replacement)."""
    p = Path(path)
    check_output(p, force)
    _remove_stale_temps(p)
    tmp = _tmp_name(p)
    try:
        yield tmp
        if force:
            os.replace(tmp, p)
        else:
            _link_new(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def _link_new(tmp: Path, p: Path) -> None:
    """Give ``tmp``'s content the name ``p`` only if ``p`` does not exist, atomically."""
    exists = LinkriskError(f"{p} exists; pass --force (force=True) to overwrite it (another "
                           "process wrote it while this one was working)")
    try:
        os.link(tmp, p)
        return
    except FileExistsError:
        raise exists from None
    except OSError:  # no hard links on this file system: claim the name, then rename
        pass
    try:
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except FileExistsError:
        raise exists from None
    os.close(fd)
    os.replace(tmp, p)


def atomic_write_text(path: str | os.PathLike, text: str, *, force: bool = False) -> Path:
    """Write text atomically, refusing to overwrite unless ``force``."""
    with atomic_path(path, force=force) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_table(df: pd.DataFrame, path: str | os.PathLike, *, force: bool = False,
                like: pd.DataFrame | None = None) -> Path:
    """Write ``df`` in the format of ``path``'s suffix (see the module docstring),
    atomically; ``-`` writes CSV to stdout. ``like``: take value labels, variable labels and
    measure levels from this frame's metadata (default: ``df``'s own)."""
    if str(path) == "-":
        df.to_csv(sys.stdout, index=False)
        sys.stdout.flush()
        return Path("-")
    fmt, comp = output_format(path)
    meta = (like if like is not None else df).attrs.get(META_KEY) or {}
    df = _days_to_dates(df, meta)
    writer = _WRITERS[fmt]
    try:
        with atomic_path(path, force=force) as tmp:
            writer(df, tmp, comp=comp, meta=meta, name=Path(path).name)
    except (LinkriskError, MemoryError):
        raise
    except (OSError, ValueError, TypeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise LinkriskError(f"cannot write {path} as {_FORMAT_NAMES[fmt]}: {first}") from exc
    return Path(path)


def _days_to_dates(df: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """The columns read as dates (``meta["dates"]``) written as dates again when they are
    still numbers (days since 1970-01-01): whole days for dates, seconds for datetimes."""
    dates = {c: u for c, u in (meta.get("dates") or {}).items()
             if c in df.columns and is_number(df[c])}
    if not dates:
        return df
    out = df.copy(deep=False)
    for c, unit in dates.items():
        t = days_to_datetimes(df[c], unit)
        out[c] = t.dt.date.where(t.notna(), None) if unit == "date" else t
    return out


def _write_csv(df, tmp, *, comp, meta, name):
    sep = "\t" if ".tsv" in [s.lower() for s in Path(name).suffixes] else ","
    inner = Path(name).stem  # the name inside the archive, not the temporary file's
    if comp == "zip":
        df.to_csv(tmp, index=False, sep=sep,
                  compression={"method": "zip", "archive_name": inner})
        return
    with open(tmp, "wb") as raw:
        if comp == "gzip":  # no time stamp: the same data give the same bytes
            f: Any = gzip.GzipFile(filename=inner, mode="wb", fileobj=raw, mtime=0)
        elif comp == "bz2":
            f = bz2.BZ2File(raw, "wb")
        elif comp == "xz":
            f = lzma.LZMAFile(raw, "wb")
        else:
            f = raw
        try:
            with io.TextIOWrapper(f, encoding="utf-8", newline="") as text:
                df.to_csv(text, index=False, sep=sep)
        finally:
            if f is not raw:
                f.close()


def _write_parquet(df, tmp, *, comp, meta, name):
    try:
        df.to_parquet(tmp, index=False)
    except ImportError as exc:
        raise LinkriskError("writing Parquet needs pyarrow: pip install pyarrow") from exc


def _readstat_frame(df: pd.DataFrame, meta: dict, fmt: str
                    ) -> tuple[pd.DataFrame, dict, dict, dict]:
    """Codes, value labels, variable labels and measures for a readstat writer."""
    cols_meta = meta.get("columns", {})
    out = {}
    value_labels: dict[str, dict] = {}
    var_labels: dict[str, str] = {}
    measures: dict[str, str] = {}
    for c in df.columns:
        s = df[c]
        m = cols_meta.get(c, {})
        if m.get("label"):
            var_labels[str(c)] = m["label"]
        old_labels = {k: v for k, v in m.get("labels", [])}
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = list(s.cat.categories)
            if fmt == "xport":  # no value labels in transport files: write the labels
                out[c] = s.astype(object).where(s.notna(), "").astype(str)
                continue
            out[c], labels = _category_codes(s, cats, m, old_labels)
            if labels:
                value_labels[str(c)] = labels
            measures[str(c)] = "ordinal" if s.cat.ordered else "nominal"
        elif pd.api.types.is_bool_dtype(s):
            out[c] = s.astype(np.int64) if not s.isna().any() else s.astype(float)
            measures[str(c)] = "nominal"
        elif pd.api.types.is_numeric_dtype(s):
            out[c] = s
            if old_labels and fmt != "xport":
                value_labels[str(c)] = old_labels
            measures[str(c)] = m.get("measure") if m.get("measure") in (
                "nominal", "ordinal", "scale") else "scale"
        elif pd.api.types.is_datetime64_any_dtype(s) or is_dates(s):
            out[c] = s
        else:
            out[c] = s.astype(object).where(s.notna(), "").astype(str)
            measures[str(c)] = "nominal"
    frame = pd.DataFrame(out, index=df.index).reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    return frame, value_labels, var_labels, measures


def _category_codes(s: pd.Series, cats: list, m: dict, old_labels: dict
                    ) -> tuple[pd.Series, dict]:
    """A categorical column as numeric codes for a readstat writer, with the value labels
    of every category (read back as the same categories): the codes the file was read
    with (``m["codes"]``), numeric categories as themselves when there are none, new
    codes above the largest one otherwise."""
    codes = {name: code for name, code in m.get("codes", [])}
    numeric_cats = pd.api.types.is_numeric_dtype(s.cat.categories.dtype)
    mapping: dict[Any, Any] = {}
    next_code = int(max([0, *[v for v in codes.values()]])) + 1
    for name in cats:
        if name in codes:
            mapping[name] = codes[name]
        elif numeric_cats and not codes:
            mapping[name] = name
        else:
            mapping[name] = next_code
            next_code += 1
    positions = s.cat.codes.to_numpy()
    values = np.array([mapping[name] for name in cats] + [np.nan], dtype=np.float64)
    col = pd.Series(values[np.where(positions < 0, len(cats), positions)], index=s.index)
    if not col.isna().any() and (col % 1 == 0).all():
        col = col.astype(np.int64)
    labels = {}
    for name, code in mapping.items():  # every category labelled: read back as one
        label = old_labels.get(code, _code_name(name) if numeric_cats else str(name))
        labels[int(code) if float(code).is_integer() else float(code)] = label
    return col, labels


def _check_names(df: pd.DataFrame, fmt: str, name: str) -> None:
    rule = {"stata": (r"[A-Za-z_][A-Za-z0-9_]{0,31}", "Stata names: letters, digits and _, "
                      "at most 32 characters, not starting with a digit"),
            "spss": (r"[A-Za-z@#$\u00c0-\uffff][\w.@#$\u00c0-\uffff]{0,63}",
                     "SPSS names: at most 64 characters, starting with a letter, no spaces"),
            "xport": (r"[A-Za-z_][A-Za-z0-9_]{0,31}", "SAS names: letters, digits and _, "
                      "at most 32 characters")}[fmt]
    for c in df.columns:
        if not re.fullmatch(rule[0], str(c)):
            raise LinkriskError(f"cannot write {name}: column name {str(c)!r} is not allowed "
                                f"({rule[1]}); rename it or write CSV/Parquet")


def _write_readstat(fmt: str) -> Callable[..., None]:
    def write(df, tmp, *, comp, meta, name):
        prs = _pyreadstat()
        _check_names(df, fmt, name)
        frame, labels, var_labels, measures = _readstat_frame(df, meta, fmt)
        file_label = meta.get("file_label") or ""
        try:
            if fmt == "stata":
                for c in labels:  # Stata labels only integer variables
                    v = frame[c].dropna()
                    if not (v % 1 == 0).all():
                        raise LinkriskError(f"cannot write {name}: Stata value labels need "
                                            f"integer codes, and column {c!r} is not integer")
                prs.write_dta(frame, tmp, file_label=file_label,
                              column_labels=var_labels or None,
                              variable_value_labels=labels or None)
            elif fmt == "spss":
                prs.write_sav(frame, tmp, file_label=file_label,
                              column_labels=var_labels or None,
                              compress=name.lower().endswith(".zsav"),
                              variable_value_labels=labels or None,
                              variable_measure=measures or None)
            else:
                long = any(len(c) > 8 for c in frame.columns)
                prs.write_xport(frame, tmp, file_label=file_label[:40],
                                column_labels=var_labels or None,
                                table_name=re.sub(r"\W", "_", Path(name).stem)[:8] or "DATA",
                                file_format_version=8 if long else 5)
        except prs.PyreadstatError as exc:
            raise LinkriskError(f"cannot write {name}: {str(exc).splitlines()[0]}") from exc
    return write


_WRITERS: dict[str, Callable[..., None]] = {
    "csv": _write_csv, "parquet": _write_parquet, "stata": _write_readstat("stata"),
    "spss": _write_readstat("spss"), "xport": _write_readstat("xport")}
