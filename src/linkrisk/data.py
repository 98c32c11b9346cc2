"""Preparing quasi-identifier (QI) matrices (files are read by :mod:`linkrisk.fileio`).

Conventions (notation of docs/methods.md): the attacker's file A holds original records, the released
file B masked ones. Unless id columns are given, row i of A is the true source of row i of
B. Attribute kinds are ``numeric``, ``ordinal`` (ordered categories) and ``nominal``.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from .dates import date_days
from .errors import LinkriskError

KINDS = ("numeric", "ordinal", "nominal")


def parse_columns(spec: str | Sequence[str] | None) -> list[str] | None:
    """Column names given as ``"a,b,c"`` or as a list.

    Parameters
    ----------
    spec : str or sequence of str, optional
        The names.

    Returns
    -------
    list of str or None
        The names; ``None`` when ``spec`` is None or empty ("not given").
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        cols = [c.strip() for c in spec.split(",") if c.strip()]
    else:
        cols = [str(c) for c in spec]
    return cols or None


#: names that mark an identifier (household id, record key …) or a survey weight; the
#: default QI set of assess and the CLI leaves such columns out (heuristics: docs/methods.md,
#: "Truth check and default QIs")
_ID_NAME = re.compile(r"(^|[_\-. ])(id|hid|pid|uid|key|serial|recno)$|^(id|key)([_\-. ]|$)",
                      re.IGNORECASE)
_ID_SUFFIX = re.compile(r"(^|[a-z0-9])ID$|^[A-Z0-9_.]+ID$")  # personID, UTILITYID
_WEIGHT_NAME = re.compile(r"weight|wgt|wght|(^|[_\-. ])(wt|pw|fw)($|[_\-. ])", re.IGNORECASE)
#: an integer-valued column with at most this many distinct values (and at most half as
#: many as records) is read as coded categories, not as a number
CODED_MAX_LEVELS = 20


def _qi_arg(spec: object, what: str) -> list[str] | None:
    if spec is None or isinstance(spec, str):
        return parse_columns(spec)
    if isinstance(spec, Sequence) and all(isinstance(c, str) for c in spec):
        return parse_columns(spec)
    raise LinkriskError(f"{what} must be a column name, 'a,b,c' or a list of column names, "
                        f"got {spec!r}")


def id_like(s: pd.Series, name: str) -> bool:
    """Whether column ``name`` looks like a record identifier: its name ends in id/key/…
    (``ori_hid``, ``UTILITYID``, ``person_id``), or its values are unique per record and are
    text, or integers that count records (strictly increasing, or n consecutive values)."""
    if _ID_NAME.search(str(name)) or _ID_SUFFIX.search(str(name)):
        return True
    n = len(s)
    if n < 10 or s.isna().any() or s.nunique() != n:
        return False
    if not is_number(s):
        return True
    v = s.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(v)) or not np.all(v == np.round(v)):
        return False
    return bool(np.all(np.diff(v) > 0) or v.max() - v.min() == n - 1)


def weight_like(name: str) -> bool:
    """Whether column ``name`` is named like a survey weight (weight, wgt, AFNLWGT, …)."""
    return bool(_WEIGHT_NAME.search(str(name)))


def unchanged_in_release(a: pd.Series, b: pd.Series, truth: np.ndarray | None) -> bool:
    """Whether the release carries the column unchanged: every record's released value
    equals its original value under ``truth`` (row of B for each row of A, −1 = none)."""
    share = share_identical(a, b, truth)
    return share is not None and share == 1.0


def _paired_identical(a: pd.Series, b: pd.Series, truth: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(rows of A in a true pair, their original values, whether each released value
    equals it — missing = missing counts as equal), or None when no record is paired or
    the values cannot be compared."""
    if truth is None:
        return None
    ok = np.flatnonzero(truth >= 0)
    if not ok.size:
        return None
    va = a.to_numpy()[ok]
    vb = b.to_numpy()[truth[ok]]
    try:
        same = np.asarray((va == vb) | (pd.isna(va) & pd.isna(vb)), dtype=bool)
    except (TypeError, ValueError):
        return None
    return ok, va, same


def share_identical(a: pd.Series, b: pd.Series, truth: np.ndarray | None) -> float | None:
    """The share of true pairs (``truth``: row of B for each row of A, −1 = none) whose
    released value equals the original value (missing = missing counts as equal); None
    when no record is paired or the values cannot be compared."""
    paired = _paired_identical(a, b, truth)
    return None if paired is None else float(paired[2].mean())


#: a QI whose released values equal the original ones for at least this share of the true
#: pairs is reported as released unchanged (:func:`unchanged_qis`)
UNCHANGED_SHARE = 0.5


def unchanged_qis(original: pd.DataFrame, masked: pd.DataFrame, qi: Sequence[str],
                  truth: np.ndarray | None) -> dict[str, dict[str, float | int]]:
    """The QIs the release carries unchanged, for all or most records: ``{column:
    {"share_identical", "unique_records"}}`` for each QI whose released value equals the
    original one for at least :data:`UNCHANGED_SHARE` of the true pairs. ``unique_records``
    counts the records this column alone re-identifies: original value unique in the
    original file, released unchanged, and unique in the release too (an exact match on
    that one value finds the record). Such a QI is the most dangerous one, not one to
    leave out (docs/methods.md, "Truth check and default QIs")."""
    out: dict[str, dict[str, float | int]] = {}
    for c in qi:
        a, b = original[c], masked[c]
        paired = _paired_identical(a, b, truth)
        if paired is None or paired[2].mean() < UNCHANGED_SHARE:
            continue
        ok, va, same = paired
        try:
            ca = a.map(a.value_counts(dropna=True)).to_numpy()
            cb = b.map(b.value_counts(dropna=True)).to_numpy()
        except (TypeError, ValueError):  # values that cannot be counted
            continue
        # an exact match on a present value, unique in both files
        uniq = same & ~np.asarray(pd.isna(va), dtype=bool) & (ca[ok] == 1) & (
            cb[truth[ok]] == 1)
        out[c] = {"share_identical": round(float(same.mean()), 6),
                  "unique_records": int(uniq.sum())}
    return out


def _profile_match(a: pd.Series, b: pd.Series, truth: np.ndarray | None) -> bool:
    """Whether released column ``b`` looks like original column ``a`` under another name:
    both numeric and correlated (rank correlation ≥ 0.5) over the true pairs, or both
    categorical with at least half of the paired values equal (as text); without pairs,
    the same set of values."""
    num_a, num_b = is_number(a), is_number(b)
    if num_a != num_b:
        return False
    if truth is not None and (truth >= 0).sum() >= 10:
        ok = truth >= 0
        va = a.reset_index(drop=True)[ok]
        vb = b.reset_index(drop=True).iloc[truth[ok]].reset_index(drop=True)
        va = va.reset_index(drop=True)
        if num_a:
            with np.errstate(all="ignore"):
                r = va.rank().corr(vb.rank())
            return bool(np.isfinite(r) and r >= 0.5)
        return bool((va.astype(str).to_numpy() == vb.astype(str).to_numpy()).mean() >= 0.5)
    if num_a:
        return False
    return set(a.dropna().astype(str)) == set(b.dropna().astype(str))


def unmatched_columns(original: pd.DataFrame, masked: pd.DataFrame,
                      ids: Sequence[str] = (), truth: np.ndarray | None = None
                      ) -> tuple[list[str], list[str], dict[str, str]]:
    """Columns of one file only (ids left aside): (only in the original, only in the
    release, {original column: release column} where a release column has the same
    values-profile as an original one, :func:`_profile_match`: probably renamed)."""
    in_b, in_a = set(masked.columns), set(original.columns)
    only_a = [c for c in original.columns if c not in in_b and c not in ids]
    only_b = [c for c in masked.columns if c not in in_a and c not in ids]
    # a name that differs only by case or blanks is a rename whatever the values
    renamed: dict[str, str] = dict(folded_names(only_a, only_b))
    for c in only_a:
        for d in only_b:
            if (c not in renamed and d not in renamed.values()
                    and _profile_match(original[c], masked[d], truth)):
                renamed[c] = d
                break
    return only_a, only_b, renamed


def folded_names(names_a: Sequence[Hashable], names_b: Sequence[Hashable]
                 ) -> dict[Hashable, Hashable]:
    """{a: b} for the names of ``names_a`` and ``names_b`` that differ but are equal once
    case and surrounding blanks are folded (``AGI`` and `` agi ``), each name used once."""
    by_key: dict[str, Hashable] = {}
    for b in names_b:
        by_key.setdefault(str(b).strip().casefold(), b)
    out: dict[Hashable, Hashable] = {}
    for a in names_a:
        b = by_key.get(str(a).strip().casefold())
        if b is not None and b != a and b not in out.values():
            out[a] = b
    return out


def _one_file_note(only_a: Sequence[str], only_b: Sequence[str],
                   renamed: Mapping[str, str]) -> str:
    parts = []
    for what, names in (("the original", only_a), ("the release", only_b)):
        if names:
            parts.append(f"{', '.join(map(str, names))} only in {what}")
    msg = ("column" + ("s " if len(only_a) + len(only_b) > 1 else " ") + "; ".join(parts)
           + ": not assessed (the default QIs are the columns both files share)")
    if renamed:
        msg += ("; " + ", ".join(f"the release's {d!r} looks like {c!r} renamed"
                                 for c, d in renamed.items())
                + ": give it the same name in both files to assess it")
    return msg


#: a numeric QI is refused when its spread is this many times the typical distance of its
#: values from their median: standardizing it would overflow or squash the other records
#: onto one value (:func:`check_scale`)
SCALE_RATIO = 1e12
#: values beyond this magnitude overflow in the squares and covariances of the attacks
MAX_MAGNITUDE = 1e150


def check_scale(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """Refuse, with one line naming the column and the rows, a numeric column whose values
    cannot be standardized: a value beyond :data:`MAX_MAGNITUDE` (its square and the
    column's variance overflow), or a few values so far out (the column's standard
    deviation :data:`SCALE_RATIO` times the typical distance from the median) that every
    other record standardizes to the same number. Either would make the attacks tie or
    compare infinities, and report a lower risk than the data carry. Missing and infinite
    values are left to the attacks' own checks."""
    for c in cols:
        s = df[c]
        if not is_number(s):
            continue
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        fin = np.isfinite(v)
        if fin.sum() < 2:
            continue
        x = v[fin]
        with np.errstate(all="ignore"):
            med = float(np.median(x))
            d = np.abs(x - med)
            big = bool((np.abs(x) > MAX_MAGNITUDE).any()) or not np.isfinite(d).all()
            sd = float(np.std(x, ddof=1)) if not big else np.inf
            nz = d[d > 0]
            typical = float(np.median(nz)) if nz.size else 0.0
            squashed = typical > 0 and (not np.isfinite(sd) or sd > SCALE_RATIO * typical)
        if not (big or squashed):
            continue
        rows = np.flatnonzero(fin)
        with np.errstate(all="ignore"):
            far = (np.abs(x) > MAX_MAGNITUDE) | ~np.isfinite(d) | (
                d > SCALE_RATIO ** 0.5 * max(typical, np.finfo(float).tiny))
        bad = rows[far][:5]
        vals = ", ".join(f"{v[i]:.3g}" for i in bad)
        more = int(far.sum()) - len(bad)
        raise LinkriskError(
            f"column {c!r} of the {what} has values too large to compare with the others "
            f"(row{'s' if far.sum() > 1 else ''} {', '.join(map(str, bad))}"
            f"{f' and {more} more' if more > 0 else ''}: {vals}); standardizing it would "
            f"{'overflow' if big else 'make every other record alike'}; correct or drop "
            f"those records, or rescale the column")


def _number_text(f: float) -> str:
    return str(int(f)) if f.is_integer() and abs(f) < 2**63 else repr(f)


def category_key(v: object) -> str:
    """A category as a value, the one rule by which categories of the two files are
    compared (the row-order check and the attacks alike): numbers, also written as text
    (``2``, ``2.0``, ``"2"``), one way; text stripped, inner blanks folded to one space and
    case folded; missing is its own key."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
        return "\x00missing"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).casefold()
    if isinstance(v, (int, float, np.integer, np.floating)):
        return _number_text(float(v))
    t = str(v).strip()
    try:
        return _number_text(float(t))
    except ValueError:
        return re.sub(r"\s+", " ", t).casefold()


def _values_by_key(keys: Mapping[object, str]) -> dict[str, list]:
    """key → the values that have it (the inverse of ``{value: category_key(value)}``)."""
    out: dict[str, list] = {}
    for v, k in keys.items():
        out.setdefault(k, []).append(v)
    return out


def normalise_categories(a: pd.DataFrame, b: pd.DataFrame, cols: Sequence[str],
                         kinds: Mapping[str, str], notes: list[str] | None = None
                         ) -> list[str]:
    """Categories that differ between the files only in how they are written: by case or
    blanks (``Female`` / ``female ``) or as numbers (``2`` / ``2.0`` / ``"2"``): a category
    of one file absent from the other but with the same :func:`category_key` as one of it.
    The column is rewritten, in place in both frames, to the keys (an attacker would match
    them: the conservative reading, it raises linkability) and named in ``notes``. Ordered
    Categoricals are left alone. Returns the columns rewritten."""
    done = []
    for c in cols:
        if kinds.get(c) != "nominal":
            continue
        sa, sb = a[c], b[c]
        if any(isinstance(s.dtype, pd.CategoricalDtype) and s.dtype.ordered for s in (sa, sb)):
            continue
        va, vb = set(sa.dropna().unique()), set(sb.dropna().unique())
        if not va or not vb:
            continue
        ka = {x: category_key(x) for x in va}
        kb = {y: category_key(y) for y in vb}
        by_a, by_b = _values_by_key(ka), _values_by_key(kb)
        pairs = sorted({(str(x), str(y)) for x in va - vb for y in by_b.get(ka[x], ())}
                       | {(str(x), str(y)) for y in vb - va for x in by_a.get(kb[y], ())})
        if not pairs:
            continue
        for df, keys in ((a, ka), (b, kb)):
            df[c] = df[c].astype(object).map(lambda v, k=keys: k.get(v, v)).astype(object)
        done.append(c)
        if notes is not None:
            ex = ", ".join(f"{x!r}/{y!r}" for x, y in pairs[:3])
            notes.append(f"categories of {c!r} are written differently in the two files "
                         f"({ex}{' …' if len(pairs) > 3 else ''}): matched by value, ignoring "
                         "case and blanks (an attacker would)")
    return done


def select_qi(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    qi: str | Sequence[str] | None = None,
    ids: str | Sequence[str] | None = None,
    *,
    truth: np.ndarray | None = None,
    notes: list[str] | None = None,
    screen: bool = False,
    dropped: list[str] | None = None,
) -> list[str]:
    """The QI columns: those named, or (default) every column common to both files except
    the id columns. With ``screen`` (the data owner's path: ``assess``) the default also
    leaves out id-like columns (:func:`id_like`) and weight-like columns
    (:func:`weight_like`), each named in ``notes`` (the caller shows them as warnings).
    Columns the release carries unchanged stay: an unchanged QI is the most dangerous one
    (:func:`unchanged_qis` reports them). Without ``qi``, a column of one file only is
    named in ``notes`` (with the release column that looks like it renamed, if any; under
    ``truth``) and appended to ``dropped``. Raises when a named column is missing from
    either file."""
    id_cols = _qi_arg(ids, "ids") or []
    cols = _qi_arg(qi, "qi")
    if cols is not None:
        _check_named_qi(original, masked, cols)
        return cols
    cols = [c for c in original.columns if c in set(masked.columns) and c not in id_cols]
    if not cols:
        folded = folded_names([c for c in original.columns if c not in id_cols],
                              list(masked.columns))
        hint = (" (they differ only by case or blanks: "
                + ", ".join(f"{a!r} / {b!r}" for a, b in list(folded.items())[:4])
                + (" …" if len(folded) > 4 else "") + ")") if folded else ""
        raise LinkriskError(
            f"the two files have no column in common{hint}; give the columns the same "
            "names in both files, or name the QI columns with --qi"
        )
    only_a, only_b, renamed = unmatched_columns(original, masked, id_cols, truth)
    if screen:
        _refuse_release_only(masked, only_b, renamed)
    if (only_a or only_b) and notes is not None:
        notes.append(_one_file_note(only_a, only_b, renamed))
    if dropped is not None:
        dropped.extend(only_a + only_b)
    return _screen_qi(original, cols, notes) if screen else cols


def _check_named_qi(original: pd.DataFrame, masked: pd.DataFrame, cols: list[str]) -> None:
    """QIs named by the caller: each in both files, none twice."""
    for name, df in (("original", original), ("masked", masked)):
        absent = _absent_columns(df, cols)
        if absent:
            shown = ", ".join(map(str, df.columns[:12])) + (" …" if df.shape[1] > 12 else "")
            raise LinkriskError(f"QI column(s) {absent} not in the {name} file (it has: {shown})")
    if len(set(cols)) != len(cols):
        raise LinkriskError("a QI column is named twice")


def _absent_columns(df: pd.DataFrame, cols: Sequence[str]) -> str:
    """The names of ``cols`` that ``df`` lacks, quoted and comma-separated ("" if none)."""
    return ", ".join(repr(c) for c in cols if c not in df.columns)


def _refuse_release_only(masked: pd.DataFrame, only_b: list[str], renamed: dict[str, str]
                         ) -> None:
    """Refuse default QIs when the release has a column the original lacks (not a weight or
    an id): it is information the attacker may hold (a renamed QI), and leaving it out
    could only lower the verdict, so the default QIs are not taken on that assumption."""
    extra = [c for c in only_b if not (weight_like(c) or id_like(masked[c], c))]
    if not extra:
        return
    hint = "; ".join(f"{d!r} looks like {c!r} renamed" for c, d in renamed.items()
                     if d in extra)
    raise LinkriskError(
        f"the release has column{'s' if len(extra) > 1 else ''} "
        f"{', '.join(map(repr, extra))} that the original lacks"
        f"{' (' + hint + ')' if hint else ''}: the assessment would leave "
        f"{'them' if len(extra) > 1 else 'it'} out; give each column the same name "
        "in both files, or name the quasi-identifiers with --qi")


def _screen_qi(original: pd.DataFrame, cols: list[str], notes: list[str] | None
               ) -> list[str]:
    """The default QIs without id-like and weight-like columns, each kind named in
    ``notes``; refused when nothing is left."""
    idl = [c for c in cols if id_like(original[c], c)]
    wts = [c for c in cols if c not in idl and weight_like(c)]
    kept = [c for c in cols if c not in idl and c not in wts]
    if not kept:
        raise LinkriskError(
            "every common column looks like an identifier or a weight "
            f"({', '.join(map(str, idl + wts))}); name the quasi-identifiers with --qi")
    if notes is not None:
        for what, names, why in (
                ("id-like", idl, "unique per record or named like an identifier"),
                ("weight-like", wts, "named like a survey weight")):
            if names:
                notes.append(f"{what} column{'s' if len(names) > 1 else ''} "
                             f"{', '.join(map(str, names))} ({why}) left out of the "
                             "default QIs; name the QIs with --qi to include "
                             f"{'them' if len(names) > 1 else 'it'}")
    return kept


def is_number(s: pd.Series) -> bool:
    """Whether ``s`` holds numbers: a numeric dtype other than boolean (Categoricals, also
    with numeric categories, are not numbers).

    Parameters
    ----------
    s : pandas.Series
        The column.

    Returns
    -------
    bool
        True when :func:`infer_kind` returns ``"numeric"``, except for dates (which it
        also reads as numeric: :func:`numeric_matrix` converts them to days).
    """
    return bool(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))


def infer_kind(s: pd.Series) -> str:
    """The attribute kind of a column, read from its dtype (the one rule of linkrisk: the
    attacks, the measures and the masking methods all use it; docs/methods.md).

    Parameters
    ----------
    s : pandas.Series
        The column.

    Returns
    -------
    str
        ``ordinal`` for ordered Categoricals, ``nominal`` for other non-numeric columns,
        ``numeric`` for numbers and for dates and datetimes (:func:`linkrisk.dates.date_days`:
        a datetime dtype, date objects or ISO/unambiguous text dates, compared as days since
        1970-01-01); booleans count as nominal.
    """
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "ordinal" if s.dtype.ordered else "nominal"
    if is_number(s):
        return "numeric"
    return "numeric" if date_days(s) is not None else "nominal"


def coded(s: pd.Series) -> bool:
    """Whether a column looks like integer-coded categories: an integer dtype (as read
    from a CSV of codes; floats are taken for measurements), at most
    :data:`CODED_MAX_LEVELS` distinct values and at most one per two records."""
    if not pd.api.types.is_integer_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    if isinstance(s.dtype, pd.CategoricalDtype):
        return False
    v = s.dropna().to_numpy(dtype=np.float64)
    if v.size < 4:
        return False
    k = np.unique(v).size
    return k <= CODED_MAX_LEVELS and 2 * k <= len(s)


def attribute_kinds(
    df: pd.DataFrame, cols: Sequence[str], kinds: Mapping[str, str] | None = None,
    *, notes: list[str] | None = None,
) -> dict[str, str]:
    """Kind of each column: ``kinds`` (``{"col": "ordinal"}``) where given, else inferred
    by :func:`infer_kind`, except that an integer column with few distinct values
    (:func:`coded`) is read as nominal categories and named in ``notes``: codes are not
    quantities, and distances, ranks and interval disclosure on them mean nothing. Pass
    ``kinds={"col": "numeric"}`` (CLI ``--kinds col=numeric``) when they are counts."""
    kinds = dict(kinds or {})
    for c, k in kinds.items():
        if k not in KINDS:
            raise LinkriskError(f"unknown attribute kind {k!r} for {c!r}; use one of {', '.join(KINDS)}")
        if c not in cols:
            raise LinkriskError(f"kind given for {c!r}, which is not a QI column")
    out = {}
    flagged = []
    for c in cols:
        if c in kinds:
            out[c] = kinds[c]
            continue
        out[c] = infer_kind(df[c])
        if out[c] == "numeric" and coded(df[c]):
            out[c] = "nominal"
            flagged.append(c)
    if flagged and notes is not None:
        ex = flagged[0]
        notes.append(f"integer column{'s' if len(flagged) > 1 else ''} "
                     f"{', '.join(map(str, flagged))} with few distinct values read as coded "
                     f"categories (nominal); if they are quantities say so with --kinds "
                     f"{ex}=numeric")
    return out


def parse_kinds(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse attribute kinds: ``"a=ordinal,b=nominal"`` (CLI form) or a mapping.

    Parameters
    ----------
    spec : str or mapping of str to str, optional
        The kinds per column.

    Returns
    -------
    dict of str to str
        Column → kind (checked later by :func:`attribute_kinds`); empty when ``spec`` is None.
    """
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return dict(spec)
    out = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise LinkriskError(f"--kinds expects col=kind pairs, got {part!r}")
        c, k = part.split("=", 1)
        out[c.strip()] = k.strip()
    return out


def check_frame(df: object, caller: str, action: str) -> None:
    """Refuse what is not a DataFrame with rows and unique column names, in one line.

    Parameters
    ----------
    df : object
        What the caller was given.
    caller : str
        Who needs it, for the message (``mask()`` …).
    action : str
        What there would be nothing to do on an empty file (``mask`` …).

    Returns
    -------
    None
        Raises :class:`~linkrisk.errors.LinkriskError` when the input is refused.
    """
    if not isinstance(df, pd.DataFrame):
        raise LinkriskError(f"{caller} needs a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise LinkriskError(f"the file has no rows; nothing to {action}")
    if df.columns.has_duplicates:
        dup = df.columns[df.columns.duplicated()].unique().tolist()
        raise LinkriskError(f"duplicate column names {dup}; rename them first")


def check_columns(df: pd.DataFrame, columns: Sequence[str] | str,
                  what: str = "columns") -> list[str]:
    """Validate a list of column names of ``df``: not empty, present, no repeats.

    Parameters
    ----------
    df : pandas.DataFrame
        The file the columns belong to.
    columns : sequence of str or str
        The names (one name may be given as a string).
    what : str
        How the caller's argument is named in the message (``columns``, ``strata`` …).

    Returns
    -------
    list of str
        The names, as a list.
    """
    if isinstance(columns, str):
        columns = [columns]
    cols = list(columns)
    if not cols:
        raise LinkriskError(f"{what} is empty; name at least one column")
    absent = _absent_columns(df, cols)
    if absent:
        raise LinkriskError(f"{what}: no column named {absent}; "
                            f"the file has {', '.join(map(str, df.columns))}")
    if len(set(cols)) != len(cols):
        raise LinkriskError(f"{what} names a column twice")
    return cols


def check_no_missing(df: pd.DataFrame, columns: Sequence[str], method: str) -> None:
    """Refuse missing values (NaN/None/NA) in ``columns`` before masking them with
    ``method``, naming every column that has one."""
    bad = [c for c in columns if df[c].isna().any()]
    if bad:
        raise LinkriskError(
            f"{method}: column(s) {', '.join(map(repr, bad))} contain missing values (NaN); "
            "impute or drop those records before masking"
        )


def numeric_matrix(df: pd.DataFrame, cols: Sequence[str], *, what: str = "file",
                   method: str | None = None) -> np.ndarray:
    """The columns as a C-contiguous n×m float64 matrix, refusing values that are not
    finite numbers with one line naming the column.

    Parameters
    ----------
    df : pandas.DataFrame
        The file.
    cols : sequence of str
        The columns, in the order of the matrix columns.
    what : str
        How the file is named in the messages of the linking path (``attacker's file`` …).
    method : str, optional
        The masking method asking (``noise`` …). Without it (the attacks and the measures)
        a text column whose values all parse as numbers is read as numbers, and a
        non-numeric value, a missing or an infinite value is refused naming its first row;
        an empty file is refused. With it (the masking methods, which release what they
        read) only numeric columns (:func:`is_number`) are accepted, and the message names
        every offending column and points to the categorical methods.

    Returns
    -------
    numpy.ndarray
        float64, shape (len(df), len(cols)).
    """
    if method is not None:
        bad = [c for c in cols if not is_number(df[c])]
        if bad:
            raise LinkriskError(
                f"{method} masks numeric attributes only, but {', '.join(map(repr, bad))} "
                f"{'is' if len(bad) == 1 else 'are'} not numeric; pass columns= with numeric "
                "columns (or use a categorical method: pram, top_coding, bottom_coding, "
                "global_recoding)"
            )
        check_no_missing(df, cols, method)
    elif len(df) == 0:
        raise LinkriskError(f"the {what} has no rows")
    out = np.empty((len(df), len(cols)), dtype=np.float64)
    for j, c in enumerate(cols):
        s = df[c]
        days = None if is_number(s) else date_days(s)
        if days is not None:  # dates: days since 1970-01-01, as in files read by fileio
            s = pd.Series(days[0], index=s.index)
        elif not is_number(s):  # only on the linking path: masking refused it above
            conv = pd.to_numeric(s, errors="coerce")
            bad_rows = conv.isna() & s.notna()
            if bad_rows.any():
                i = int(np.flatnonzero(bad_rows.to_numpy())[0])
                raise LinkriskError(
                    f"column {c!r} of the {what} is not numeric (row {i}: {s.iloc[i]!r}); "
                    "this attack needs numeric QIs: choose numeric columns with --qi"
                )
            s = conv
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(v).any():  # only on the linking path: masking refused it above
            i = int(np.flatnonzero(np.isnan(v))[0])
            raise LinkriskError(
                f"column {c!r} of the {what} has missing values (first at row {i}); "
                "impute or drop them before linking"
            )
        if method is None and not np.isfinite(v).all():
            i = int(np.flatnonzero(~np.isfinite(v))[0])
            raise LinkriskError(f"column {c!r} of the {what} has an infinite value at row {i}")
        out[:, j] = v
    if method is not None and not np.isfinite(out).all():
        bad = [c for j, c in enumerate(cols) if not np.isfinite(out[:, j]).all()]
        raise LinkriskError(f"{method}: column(s) {bad} contain infinite values; remove them first")
    return out


def truth_from_ids(
    a: pd.DataFrame, b: pd.DataFrame, ids: str | Sequence[str] | None
) -> np.ndarray:
    """For each row of A, the row of B that is its true image (−1 when it has none).

    Without id columns truth is row order, which needs equal sizes."""
    id_cols = parse_columns(ids)
    if id_cols is None:
        if len(a) != len(b):
            raise LinkriskError(
                f"the files have {len(a)} and {len(b)} rows: without id columns truth is row "
                "order, which needs equal sizes; give the id column(s) with --ids"
            )
        return np.arange(len(a), dtype=np.int64)
    for name, df in (("original", a), ("masked", b)):
        missing = [c for c in id_cols if c not in df.columns]
        if missing:
            raise LinkriskError(f"id column(s) {missing} not in the {name} file")
    la = [id_labels(a[c]) for c in id_cols]
    lb = [id_labels(b[c]) for c in id_cols]
    ka, kb = _id_index(la), _id_index(lb)
    for name, k in (("original", ka), ("masked", kb)):
        if k.has_duplicates:
            ex = k[k.duplicated()][0]
            raise LinkriskError(f"id values repeat in the {name} file ({ex!r} occurs more than "
                                "once); ids must identify records")
    truth = kb.get_indexer(ka).astype(np.int64)
    _check_id_spelling(id_cols, la, lb, float(np.mean(truth >= 0)))
    return truth


def _id_label(v: object) -> object:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(v).strip()


def id_labels(s: pd.Series) -> pd.Series:
    """An id column as labels (text): ids are names, not quantities, so ``001`` and
    ``0001`` are two ids; text is stripped of surrounding blanks, numbers (from a numeric
    dtype) are written without a trailing ``.0`` (``1`` and ``1.0`` are one value);
    missing stays missing (None)."""
    if pd.api.types.is_integer_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype) \
            and not s.isna().any():
        return s.astype(np.int64).astype(str).astype(object)
    return pd.Series([_id_label(v) for v in s.astype(object)], index=s.index, dtype=object)


def _id_index(labels: list[pd.Series]) -> pd.Index:
    if len(labels) == 1:
        return pd.Index(labels[0].to_numpy(), dtype=object)
    return pd.MultiIndex.from_arrays([v.to_numpy() for v in labels])


def _check_id_spelling(id_cols: list[str], la: list[pd.Series], lb: list[pd.Series],
                       rate: float) -> None:
    """Refuse ids written differently in the two files (``1`` and ``1.0``, ``001`` and
    ``1``): few ids match as text but most match as numbers."""
    if rate >= 0.5:
        return
    na = [pd.to_numeric(v, errors="coerce") for v in la]
    nb = [pd.to_numeric(v, errors="coerce") for v in lb]
    if any((n.isna() & v.notna()).any() for n, v in zip(na + nb, la + lb, strict=True)):
        return  # some id is not a number: text is the only reading
    ka, kb = _id_index(na), _id_index(nb)
    hit = ka.isin(kb)
    num_rate = float(np.mean(hit))
    if num_rate < 0.5 or num_rate < rate + 0.25:
        return
    i = int(np.flatnonzero(hit & ~_id_index(la).isin(_id_index(lb)))[0])
    j = int(kb.get_indexer(ka[i:i + 1])[0]) if not kb.has_duplicates else \
        int(np.flatnonzero(kb == ka[i])[0])
    ex_a = tuple(v.iloc[i] for v in la) if len(la) > 1 else la[0].iloc[i]
    ex_b = tuple(v.iloc[j] for v in lb) if len(lb) > 1 else lb[0].iloc[j]
    raise LinkriskError(
        f"id column{'s' if len(id_cols) > 1 else ''} {', '.join(map(repr, id_cols))} "
        f"{'are' if len(id_cols) > 1 else 'is'} written differently in the two files "
        f"({ex_a!r} in the original, {ex_b!r} in the masked file): {100 * rate:.0f} % of the "
        f"original ids occur in the masked file as written, {100 * num_rate:.0f} % as "
        "numbers; ids are compared as text, so write them the same way in both files")
