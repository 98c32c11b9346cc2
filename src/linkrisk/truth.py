"""Is "row i of the release is the masked version of row i of the original" plausible?

Without id columns every attack scores its links against row order. If the agency
shuffled or sorted the release, row order pairs each record with a random released record:
every attack then "fails", and the verdict is a false "low risk". :func:`row_order_check`
tests the assumption before anything is scored (docs/methods.md, "Truth check and
default QIs").

The test: for a random sample I of original records (at most ``SAMPLE``) and a random
sample J of released records, the rank of the supposed partner among J,

    r_i = ( #{j ∈ J, j ≠ i : d(a_i, b_j) < d(a_i, b_i)} + ½ #{… = …} ) / |J \\ {i}|,

with d the squared Euclidean distance on per-file standardized numeric QIs plus the number
of differing categorical QIs (the DBRL / Hamming scores of the attacks). Values are compared
as values, not as the text a file happens to use: dates are days (:mod:`linkrisk.dates`),
and a category written ``2`` in one file and ``2.0`` or ``"2"`` in the other is one
category; so are labels that differ only in case or blanks (``Male``, ``male ``), as the
attacks match them (:func:`linkrisk.data.normalise_categories`). If row order is
the truth and the masking leaves any information, the partner is closer than a random
record and the mean rank r̄ is well below ½. If the rows were permuted, b_i is a random
record and r̄ has mean ½ and standard deviation at most 1/√(12·|I|). The check refuses
when r̄ > ½ − 4/√(12·|I|), i.e. when the data give no evidence at all that row order
links records to their masked versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import category_key
from .dates import date_days
from .errors import LinkriskError

#: records sampled from each file
SAMPLE = 1000
#: fewer records than this: too few to tell; the check is skipped (and says so)
MIN_RECORDS = 10


@dataclass
class RowOrderCheck:
    """Outcome of :func:`row_order_check`: ``mean_rank`` r̄ (0 = partner always nearest,
    ½ = no better than a random record), ``threshold`` (refused above), ``sample`` |I|,
    ``checked`` False when the files were too small or degenerate to tell."""

    mean_rank: float
    threshold: float
    sample: int
    checked: bool = True

    def describe(self) -> str:
        if not self.checked:
            return "row order (not checkable: too few or identical records)"
        return (f"row order (checked: a record's released partner is on average closer than "
                f"{100 * (1 - self.mean_rank):.0f} % of other released records)")


def _encode(frames: Sequence[tuple[pd.DataFrame, np.ndarray]], qi: Sequence[str],
            kinds: Mapping[str, str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each (file, rows): numeric QIs standardized by the whole file's mean and sd
    (NaN → 0, infinities dropped) and categorical QIs as integer codes shared by all the
    pieces. Only the sampled rows are copied (the files may hold 10⁶ records)."""
    num = [c for c in qi if kinds.get(c) == "numeric"]
    cat = [c for c in qi if kinds.get(c) != "numeric"]
    out = []
    for df, rows in frames:
        x = np.zeros((rows.size, len(num)))
        for j, c in enumerate(num):
            v = _numbers(df[c])
            ok = np.isfinite(v)
            mu = float(v[ok].mean()) if ok.any() else 0.0
            sd = float(v[ok].std()) if ok.sum() > 1 else 0.0
            z = (v[rows] - mu) / (sd if sd > 0 else 1.0)
            x[:, j] = np.where(np.isfinite(z), z, 0.0)
        out.append((x, np.empty((rows.size, len(cat)), np.int64)))
    for j, c in enumerate(cat):
        codes, _ = pd.factorize(pd.concat([_category_keys(df[c].iloc[rows])
                                           for df, rows in frames], ignore_index=True))
        o = 0
        for (_, rows), (_, cc) in zip(frames, out, strict=True):
            cc[:, j] = codes[o:o + rows.size]
            o += rows.size
    return out


def _numbers(s: pd.Series) -> np.ndarray:
    """A numeric QI as float64: dates as days since 1970-01-01, anything else by value."""
    days = None if pd.api.types.is_numeric_dtype(s) else date_days(s)
    if days is not None:
        return days[0]
    return pd.to_numeric(s, errors="coerce").to_numpy(np.float64, na_value=np.nan)


def _category_keys(s: pd.Series) -> pd.Series:
    """The categories as values (:func:`linkrisk.data.category_key`)."""
    return pd.Series([category_key(v) for v in s.astype(object)], dtype=object)


def row_order_check(a: pd.DataFrame, b: pd.DataFrame, qi: Sequence[str],
                    kinds: Mapping[str, str], seed: int = 0) -> RowOrderCheck:
    """Test that row i of ``b`` is plausibly the masked row i of ``a`` (equal sizes; see
    the module). Raises :class:`LinkriskError` ("the release looks reordered") when not."""
    n = len(a)
    if n != len(b) or n < MIN_RECORDS:
        return RowOrderCheck(0.5, 0.0, 0, checked=False)
    rng = np.random.default_rng(seed)
    ii = np.sort(rng.choice(n, min(n, SAMPLE), replace=False))
    jj = np.sort(rng.choice(n, min(n, SAMPLE), replace=False))
    (xa, ca), (xbi, cbi), (xbj, cbj) = _encode([(a, ii), (b, ii), (b, jj)], qi, kinds)
    ranks = np.empty(ii.size)
    ties = 0.0
    for r0 in range(0, ii.size, 64):
        sl = slice(r0, r0 + 64)
        d = ((xa[sl, None, :] - xbj[None, :, :]) ** 2).sum(-1)
        d += (ca[sl, None, :] != cbj[None, :, :]).sum(-1)
        rows = ii[sl]
        dt = ((xa[sl] - xbi[sl]) ** 2).sum(-1) + (ca[sl] != cbi[sl]).sum(-1)
        other = jj[None, :] != rows[:, None]
        less = ((d < dt[:, None]) & other).sum(1)
        eq = ((d == dt[:, None]) & other).sum(1)
        cnt = other.sum(1)
        ranks[sl] = (less + 0.5 * eq) / np.maximum(cnt, 1)
        ties += float((eq / np.maximum(cnt, 1)).sum())
    if ties / ii.size > 0.9:  # (nearly) every record alike: nothing to tell
        return RowOrderCheck(0.5, 0.0, int(ii.size), checked=False)
    mean = float(ranks.mean())
    thr = 0.5 - 4.0 / np.sqrt(12.0 * ii.size)
    res = RowOrderCheck(mean, float(thr), int(ii.size))
    if mean > thr:
        raise LinkriskError(
            "the release looks reordered: under row order a record's supposed released "
            f"partner is no closer than a random released record (mean rank {mean:.2f}, "
            f"expected well below 0.5); pass --ids COLUMN if both files carry an id, or "
            "--assume-row-order (in Python assume_row_order=True) if row i really is the "
            "masked record i")
    return res
