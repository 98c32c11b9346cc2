"""Dates and datetimes as numbers (docs/methods.md, "Attribute kinds").

A date is an interval quantity: a date of birth shifted by a few days is close to the
original, which a text category cannot express. :func:`date_days` recognises a column of
dates — a datetime64 dtype (Parquet, Stata, SPSS, SAS), ``datetime.date``/``datetime``
objects, or text written ``YYYY-MM-DD`` (optionally with a time ``HH:MM[:SS]``),
``YYYY/MM/DD``, or ``DD/MM/YYYY`` / ``MM/DD/YYYY`` (``/``, ``.`` or ``-``) when some value
shows which field is the day — and gives the days since 1970-01-01 as float (the time of
day as the fraction of a day). Files read by :mod:`linkrisk.fileio` carry such columns as
these numbers, and the attacks and the row-order check convert them the same way.
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np
import pandas as pd

from .errors import LinkriskError

_TIME = r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
_ISO = re.compile(rf"^\d{{4}}([-/])\d{{1,2}}\1\d{{1,2}}{_TIME}(?:Z|[+-]\d{{2}}:?\d{{2}})?$")
_DMY = re.compile(rf"^(\d{{1,2}})([/.-])(\d{{1,2}})\2(\d{{4}}){_TIME}$")
_DAY_NS = 86_400 * 10**9


def _days(t: pd.Series) -> tuple[np.ndarray, str]:
    """Days since 1970-01-01 (NaN for NaT) of a datetime64 Series, and "date" when every
    value is at midnight, else "datetime"."""
    if getattr(t.dt, "tz", None) is not None:
        t = t.dt.tz_convert("UTC").dt.tz_localize(None)
    t = t.astype("datetime64[ns]")
    ns = t.to_numpy().astype(np.int64).astype(np.float64)
    ok = t.notna().to_numpy()
    days = np.where(ok, ns / _DAY_NS, np.nan)
    unit = "date" if np.all(np.mod(days[ok], 1.0) == 0) else "datetime"
    return days, unit


def is_dates(s: pd.Series) -> bool:
    """Whether ``s`` has a datetime dtype or holds only date/datetime objects (cheap: no
    text is parsed)."""
    if pd.api.types.is_datetime64_any_dtype(s):
        return True
    if s.dtype != object:
        return False
    nn = s.dropna()
    return len(nn) > 0 and all(isinstance(v, (_dt.date, pd.Timestamp))
                               for v in nn.iloc[:50]) and \
        bool(nn.map(lambda v: isinstance(v, (_dt.date, pd.Timestamp))).all())


def date_days(s: pd.Series, name: str = "", *, strict: bool = False
              ) -> tuple[np.ndarray, str] | None:
    """(days since 1970-01-01 as float64, "date" or "datetime") when ``s`` is a column of
    dates (see the module), else None.

    With ``strict`` (reading a file) a column of text that is mostly dates is refused
    when some value is not one, when day and month cannot be told apart (no value with a
    day above 12), or when a value is not a valid date; ``name`` names the column in the
    message. Without it such columns are simply not dates."""
    if pd.api.types.is_datetime64_any_dtype(s):
        return _days(s)
    if isinstance(s.dtype, pd.CategoricalDtype) or not (
            s.dtype == object or pd.api.types.is_string_dtype(s)):
        return None
    nn = s.dropna()
    if len(nn) == 0:
        return None
    if is_dates(s):
        return _days(pd.Series(pd.to_datetime(s.astype(object), errors="coerce", utc=any(
            getattr(v, "tzinfo", None) is not None for v in nn.iloc[:50])), index=s.index))
    first = nn.iloc[:20]
    if not all(isinstance(v, str) for v in first):
        return None
    first = first.str.strip()
    if not (first.str.match(_ISO) | first.str.match(_DMY)).any():
        return None  # the usual case: a text column, decided on 20 values
    text = nn.astype(str).str.strip()
    iso, dmy = text.str.match(_ISO), text.str.match(_DMY)
    ok = iso | dmy
    if ok.mean() < 0.5:
        return None
    where = f"column {name!r}" if name else "a column"
    if not ok.all() or (iso.any() and dmy.any()):
        if not strict:
            return None
        bad = ~ok if not ok.all() else dmy
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise LinkriskError(
            f"{where} holds dates but row {nn.index[i] + 1} holds {text.iloc[i]!r}, "
            "written otherwise: blank out missing dates and write every date as YYYY-MM-DD")
    if iso.all():
        t = text.str.replace("/", "-", regex=False).str.replace(r"[T ]", " ", regex=True)
        parsed = pd.to_datetime(t, format="ISO8601", errors="coerce", utc=t.str.contains(
            r"(?:Z|[+-]\d{2}:?\d{2})$").any())
    else:
        parsed = _parse_day_month(text, where, strict)
        if parsed is None:
            return None
    bad = parsed.isna()
    if bad.any():
        if not strict:
            return None
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise LinkriskError(f"{where} holds dates but row {nn.index[i] + 1} holds "
                            f"{text.iloc[i]!r}, which is not a valid date")
    days, unit = _days(pd.Series(parsed.to_numpy(), index=nn.index))
    out = np.full(len(s), np.nan)
    out[s.notna().to_numpy()] = days
    return out, unit


def _parse_day_month(text: pd.Series, where: str, strict: bool) -> pd.Series | None:
    """Dates written d/m/Y or m/d/Y (any one separator), parsed (NaT where invalid); the
    order is the one under which some first or second field is above 12. None when that
    cannot tell (none above 12, or both), or an error naming ``where`` with ``strict``."""
    parts = text.str.extract(_DMY)
    f1, f2 = parts[0].astype(int), parts[2].astype(int)
    day_first, month_first = bool((f1 > 12).any()), bool((f2 > 12).any())
    if day_first == month_first:
        if not strict:
            return None
        why = ("some values have a day above 12 in the first field and others in the "
               "second" if day_first else "no value has a day above 12")
        raise LinkriskError(
            f"{where} holds dates written like {text.iloc[0]!r} and it cannot be told "
            f"whether they are day/month or month/day ({why}); write them as YYYY-MM-DD")
    sep = parts[1].iloc[0]
    fmt = ("%d" + sep + "%m" if day_first else "%m" + sep + "%d") + sep + "%Y"
    t = text.str.replace("T", " ", regex=False)
    return pd.to_datetime(t, format="mixed" if t.str.contains(":").any() else fmt,
                          dayfirst=day_first, errors="coerce")


def days_to_datetimes(v: pd.Series, unit: str) -> pd.Series:
    """Float days since 1970-01-01 back to datetime64 (rounded to whole days for
    ``unit == "date"``, to the second otherwise)."""
    x = pd.to_numeric(v, errors="coerce").to_numpy(np.float64)
    x = np.round(x) if unit == "date" else np.round(x * 86_400) / 86_400
    ns = np.where(np.isfinite(x), x * _DAY_NS, np.nan)
    out = pd.to_datetime(pd.Series(ns, index=v.index), unit="ns")
    return out.rename(v.name)
