"""anonymeter's three attacks (Giomi et al. 2023, "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PoPETs 2023(2)) on linkrisk's engine.

Each attack is run against the training records (the generator's input), against a
random-guessing baseline, and, when given, against control (holdout) records the generator
never saw. With control the risk is anonymeter's residual risk
(r_train − r_control)/(1 − r_control), each rate a Wilson score estimate; its interval is
the propagated error bound, clipped to [0, 1] (anonymeter's ``stats.confidence``).

Neighbours use anonymeter's distance: numeric attributes divided by their range over the
two files compared, L1; each categorical attribute adds 1 when the values differ. Here the
categorical attributes are one-hot coded with weight ½ and the engine's exact L1 search
gives the nearest records (k = 1: :func:`~linkrisk.engine.nearest.nearest_sets`; k > 1:
the engine's exact k-NN lists) — the same neighbours as anonymeter's brute force, except
among exactly tied records, which anonymeter orders by an unstable argsort and linkrisk by
a seeded draw (k = 1) or the lower index (k > 1). Every record is attacked unless
``n_attacks`` asks for a sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numba as nb
import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from ..engine.matching.knn import knn
from ..engine.nearest import nearest_sets
from ..engine.nearest.kernels import Pairwise
from ..errors import LinkriskError
from .distance import is_numeric, onehot, wilson

# ---------------------------------------------------------------------------------------
# anonymeter's statistics (stats/confidence.py)
# ---------------------------------------------------------------------------------------


def _bind(value: float, err: float) -> tuple[float, tuple[float, float]]:
    c = lambda v: min(max(v, 0.0), 1.0)  # noqa: E731
    return c(value), (c(value - err), c(value + err))


@dataclass
class AttackRisk:
    """One attack's counts, rates and risk. ``risk`` and ``ci``: the residual risk over the
    control records when they were attacked, else the training attack's success rate
    (anonymeter's ``risk()``); ``rate``/``control_rate``/``baseline_rate`` are Wilson
    estimates. ``n_attacks``/``n_control_attacks``: records attacked (anonymeter uses one
    number for both; they differ here when the files differ in size)."""

    attack: str
    n_attacks: int
    n_success: float
    n_baseline: float
    n_control: float | None
    n_control_attacks: int | None
    conf: float
    rate: float = 0.0
    baseline_rate: float = 0.0
    control_rate: float | None = None
    risk: float = 0.0
    ci: tuple[float, float] = (0.0, 0.0)
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        r, e = wilson(self.n_attacks, self.n_success, self.conf)
        self.rate = r
        self.baseline_rate = wilson(self.n_attacks, self.n_baseline, self.conf)[0]
        if self.n_control is None:
            self.risk, self.ci = _bind(r, e)
            return
        c, ec = wilson(self.n_control_attacks or self.n_attacks, self.n_control, self.conf)
        self.control_rate = c
        if c >= 1.0:
            self.notes.append("every control attack succeeded: no residual risk can be measured")
        res = (r - c) / (1.0 - c)
        err = math.sqrt((e / abs(1 - c)) ** 2 + (ec * (r - 1) / (1 - c) ** 2) ** 2)
        self.risk, self.ci = _bind(res, err)

    def to_dict(self) -> dict[str, Any]:
        return {"attack": self.attack, "risk": self.risk, "ci": list(self.ci),
                "rate": self.rate, "baseline_rate": self.baseline_rate,
                "control_rate": self.control_rate, "n_attacks": self.n_attacks,
                "n_success": self.n_success, "n_baseline": self.n_baseline,
                "n_control": self.n_control, "n_control_attacks": self.n_control_attacks,
                "confidence_level": self.conf, **self.params,
                **({"notes": self.notes} if self.notes else {})}


# ---------------------------------------------------------------------------------------
# neighbours under anonymeter's distance, on the engine
# ---------------------------------------------------------------------------------------


def gower_space(cand: pd.DataFrame, queries: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Candidates and queries such that L1 on the result is anonymeter's distance:
    numeric columns (sorted by name) divided by their range over both frames (range 0 → 1),
    then categorical columns (sorted) one-hot with weight ½."""
    cols = sorted(cand.columns)
    num = [c for c in cols if is_numeric(cand[c]) and is_numeric(queries[c])]
    cat = [c for c in cols if c not in num]
    xs = []
    if num:
        a, b = cand[num].to_numpy(float), queries[num].to_numpy(float)
        if np.isnan(a).any() or np.isnan(b).any():
            raise LinkriskError("anonymeter's attacks here need numeric columns without "
                                "missing values")
        rng = np.maximum(a.max(0), b.max(0)) - np.minimum(a.min(0), b.min(0))
        rng = np.where(rng == 0, 1.0, rng)
        xs.append((a / rng, b / rng))
    if cat:
        xs.append(tuple(onehot([cand, queries], cat, 0.5)))
    return (np.hstack([x[0] for x in xs]), np.hstack([x[1] for x in xs]))


def neighbours(cand: pd.DataFrame, queries: pd.DataFrame, k: int = 1, seed: int = 0
               ) -> np.ndarray:
    """Row numbers (n_queries × k) of the k nearest candidates of every query under
    anonymeter's distance, nearest first."""
    c, q = gower_space(cand, queries)
    k = min(int(k), len(cand))
    if k < 1:
        raise LinkriskError(f"n_neighbors must be positive, not {k}")
    if k == 1:
        return nearest_sets(q, c, metric="l1", seed=seed).link[:, None]
    return knn(Pairwise.build(q, c, "l1"), k, kb=0).fwd_idx


def _targets(df: pd.DataFrame, n_attacks: int | None, rng: np.random.Generator
             ) -> pd.DataFrame:
    if n_attacks is None or n_attacks >= len(df):
        return df
    return df.iloc[np.sort(rng.choice(len(df), n_attacks, replace=False))]


def _common(ori: pd.DataFrame, syn: pd.DataFrame, control: pd.DataFrame | None,
            cols: Sequence[str]) -> None:
    for name, f in (("original", ori), ("synthetic", syn), ("control", control)):
        if f is not None:
            miss = [c for c in cols if c not in f.columns]
            if miss:
                raise LinkriskError(f"the {name} file has no column {', '.join(map(repr, miss))}")


# ---------------------------------------------------------------------------------------
# linkability
# ---------------------------------------------------------------------------------------


def _linked(i0: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """Whether the two neighbour lists of each target share a synthetic record."""
    return (i0[:, :, None] == i1[:, None, :]).any(axis=(1, 2))


def _random_lists(n_syn: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    k = min(k, n_syn)
    out = rng.integers(0, n_syn, size=(n, k))
    if k > 1:
        for i in np.flatnonzero([len(set(r)) < k for r in out]):
            out[i] = rng.choice(n_syn, k, replace=False)
    return out


def linkability(ori: pd.DataFrame, syn: pd.DataFrame, aux_cols: tuple[Sequence[str],
                Sequence[str]], *, control: pd.DataFrame | None = None, n_neighbors: int = 1,
                n_attacks: int | None = None, seed: int = 0, conf: float = 0.95
                ) -> AttackRisk:
    """anonymeter's linkability attack: each target's two column sets ``aux_cols`` are
    matched separately to their ``n_neighbors`` nearest synthetic records; the target is
    linked when the two lists share a record. Baseline: random lists.

    Parameters
    ----------
    ori, syn : pandas.DataFrame
        Training records and the synthetic release.
    aux_cols : (list of str, list of str)
        The attacker's two auxiliary column sets.
    control : pandas.DataFrame, optional
        Holdout records: the same attack on them gives the residual risk.
    n_neighbors : int
        Neighbours considered per side (anonymeter's ``n_neighbors``).
    n_attacks : int, optional
        Attack a seeded sample of this many records per file (default: every record).
    seed : int
        Seeds the sample, the baseline and the engine's tie breaking.
    conf : float
        Confidence level.
    """
    a0, a1 = list(aux_cols[0]), list(aux_cols[1])
    if not a0 or not a1:
        raise LinkriskError("linkability needs two non-empty auxiliary column sets")
    _common(ori, syn, control, a0 + a1)
    rng = np.random.default_rng(seed)

    def attack(df: pd.DataFrame) -> tuple[int, int]:
        t = _targets(df, n_attacks, rng)
        i0 = neighbours(syn[a0], t[a0], n_neighbors, seed)
        i1 = neighbours(syn[a1], t[a1], n_neighbors, seed)
        return int(_linked(i0, i1).sum()), len(t)

    n_s, n_t = attack(ori)
    base = int(_linked(_random_lists(len(syn), n_t, n_neighbors, rng),
                       _random_lists(len(syn), n_t, n_neighbors, rng)).sum())
    n_c, n_ct = attack(control) if control is not None else (None, None)
    return AttackRisk("linkability", n_t, n_s, base, n_c, n_ct, conf,
                      params={"aux_cols": [a0, a1], "n_neighbors": n_neighbors})


# ---------------------------------------------------------------------------------------
# inference
# ---------------------------------------------------------------------------------------


def inference_hits(guesses: np.ndarray, secrets: np.ndarray, regression: bool,
                   tolerance: float = 0.05) -> np.ndarray:
    """anonymeter's success rule: regression: |g − s|/(|g| + 10⁻¹²) ≤ tolerance (anonymeter
    divides by g, not |g|: the same for non-negative guesses); otherwise equality; two
    missing values match."""
    g = np.asarray(guesses)
    s = np.asarray(secrets)
    if regression:
        gf, sf = g.astype(float), s.astype(float)
        with np.errstate(invalid="ignore"):
            hit = np.abs(gf - sf) / (np.abs(gf) + 1e-12) <= tolerance
    else:
        hit = g == s
    return np.logical_or(hit, pd.isnull(g) & pd.isnull(s))


def inference(ori: pd.DataFrame, syn: pd.DataFrame, secret: str, *,
              aux_cols: Sequence[str] | None = None, control: pd.DataFrame | None = None,
              regression: bool | None = None, tolerance: float = 0.05,
              n_attacks: int | None = None, seed: int = 0, conf: float = 0.95) -> AttackRisk:
    """anonymeter's inference attack: the attacker guesses ``secret`` of each target as the
    value of its nearest synthetic record on ``aux_cols`` (default: every other common
    column). Baseline: the secret of a random synthetic record.

    ``regression`` (default: the secret is numeric) selects the relative-tolerance rule
    of :func:`inference_hits`."""
    if secret not in syn.columns or secret not in ori.columns:
        raise LinkriskError(f"the secret column {secret!r} is not in both files")
    aux = (list(aux_cols) if aux_cols is not None
           else [c for c in ori.columns if c != secret and c in syn.columns
                 and (control is None or c in control.columns)])
    if not aux or secret in aux:
        raise LinkriskError("inference needs auxiliary columns other than the secret")
    _common(ori, syn, control, aux + [secret])
    reg = is_numeric(ori[secret]) if regression is None else bool(regression)
    rng = np.random.default_rng(seed)
    sv = syn[secret].to_numpy()

    def hits(t: pd.DataFrame) -> int:
        idx = neighbours(syn[aux], t[aux], 1, seed)[:, 0]
        return int(inference_hits(sv[idx], t[secret].to_numpy(), reg, tolerance).sum())

    t_ori = _targets(ori, n_attacks, rng)
    n_s, n_t = hits(t_ori), len(t_ori)
    pick = rng.choice(len(syn), n_t, replace=n_t > len(syn))
    base = int(inference_hits(sv[pick], t_ori[secret].to_numpy(), reg, tolerance).sum())
    n_c = n_ct = None
    if control is not None:
        t_c = _targets(control, n_attacks, rng)
        n_c, n_ct = hits(t_c), len(t_c)
    return AttackRisk("inference", n_t, n_s, base, n_c, n_ct, conf,
                      params={"secret": secret, "aux_cols": aux, "regression": reg})


# ---------------------------------------------------------------------------------------
# singling out
# ---------------------------------------------------------------------------------------
#: predicate operators on one attribute (categorical values are compared as codes)
EQ, NE, GT, LT, GE, LE, ISNA, NOTNA = range(8)
_NUM_OPS = np.array([EQ, NE, GT, LT, GE, LE])


@nb.njit(parallel=True, cache=True)
def _count_matches(x, cols, ops, vals, stop, out):
    """out[q] = number of rows of x satisfying every predicate of query q (counting stops
    at ``stop``)."""
    n = x.shape[0]
    nq, c = cols.shape
    for q in nb.prange(nq):
        cnt = 0
        for i in range(n):
            ok = True
            for j in range(c):
                col = cols[q, j]
                if col < 0:
                    continue
                v = x[i, col]
                o = ops[q, j]
                w = vals[q, j]
                if o == 0:
                    ok = v == w
                elif o == 1:
                    ok = v != w
                elif o == 2:
                    ok = v > w
                elif o == 3:
                    ok = v < w
                elif o == 4:
                    ok = v >= w
                elif o == 5:
                    ok = v <= w
                elif o == 6:
                    ok = np.isnan(v)
                else:
                    ok = not np.isnan(v)
                if not ok:
                    break
            if ok:
                cnt += 1
                if cnt >= stop:
                    break
        out[q] = cnt


@dataclass
class _Encoded:
    cols: list[str]
    numeric: np.ndarray          # bool per column
    mats: list[np.ndarray]       # one float matrix per frame, categories as shared codes


def _encode(frames: Sequence[pd.DataFrame]) -> _Encoded:
    cols = sorted(frames[0].columns)
    num = np.array([all(is_numeric(f[c]) for f in frames) for c in cols])
    mats = [np.empty((len(f), len(cols))) for f in frames]
    for j, c in enumerate(cols):
        if num[j]:
            for m, f in zip(mats, frames, strict=True):
                m[:, j] = f[c].to_numpy(float)
        else:
            allv = pd.concat([f[c].astype(object) for f in frames], ignore_index=True)
            codes = pd.factorize(allv, use_na_sentinel=True)[0].astype(float)
            codes[codes < 0] = np.nan
            pos = 0
            for m, f in zip(mats, frames, strict=True):
                m[:, j] = codes[pos:pos + len(f)]
                pos += len(f)
    return _Encoded(cols, num, mats)


def _counts(x: np.ndarray, q: tuple[np.ndarray, np.ndarray, np.ndarray], stop: int
            ) -> np.ndarray:
    out = np.zeros(q[0].shape[0], np.int64)
    if out.size:
        _count_matches(x, q[0], q[1], q[2], stop, out)
    return out


def _univariate(x: np.ndarray, enc: _Encoded, rng: np.random.Generator
                ) -> list[tuple[int, int, float]]:
    """anonymeter's univariate queries on the synthetic file: a column's only missing
    value, ``<= min`` and ``>= max`` of numeric columns, and each value seen once."""
    qs: list[tuple[int, int, float]] = []
    for j in range(len(enc.cols)):
        v = x[:, j]
        na = np.isnan(v)
        if na.sum() == 1:
            qs.append((j, ISNA, np.nan))
        if enc.numeric[j] and (~na).any():
            qs += [(j, LE, float(np.nanmin(v))), (j, GE, float(np.nanmax(v)))]
        vals, cnt = np.unique(v[~na], return_counts=True)
        qs += [(j, EQ, float(u)) for u in vals[cnt == 1]]
    order = rng.permutation(len(qs))
    return [qs[i] for i in order]


def _as_arrays(qs: list[tuple], width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(qs)
    cols = np.full((n, width), -1, np.int64)
    ops = np.zeros((n, width), np.int64)
    vals = np.zeros((n, width))
    for i, q in enumerate(qs):
        for j, (c, o, v) in enumerate(q):
            cols[i, j], ops[i, j], vals[i, j] = c, o, v
    return cols, ops, vals


def _from_records(x: np.ndarray, enc: _Encoded, rows: np.ndarray, n_cols: int,
                  medians: np.ndarray, rng: np.random.Generator) -> list[tuple]:
    """anonymeter's multivariate queries: a random record, ``n_cols`` random columns; a
    numeric value v gives ``>= v`` when v > the column median, else ``<= v``; other values
    ``== v``; missing values ``isna``."""
    m = len(enc.cols)
    out = []
    for r in rows:
        cs = np.sort(rng.choice(m, n_cols, replace=False))
        q = []
        for j in cs:
            v = x[r, j]
            if np.isnan(v):
                q.append((int(j), ISNA, np.nan))
            elif enc.numeric[j]:
                q.append((int(j), GE if v > medians[j] else LE, float(v)))
            else:
                q.append((int(j), EQ, float(v)))
        out.append(tuple(q))
    return out


def _random_query(x: np.ndarray, enc: _Encoded, n_cols: int, uniq: list[np.ndarray],
                  rng: np.random.Generator) -> tuple:
    """anonymeter's baseline query: random columns, for each a random value of the
    synthetic column and a random operator of its type."""
    cs = np.sort(rng.choice(len(enc.cols), n_cols, replace=False))
    q = []
    for j in cs:
        v = float(uniq[j][rng.integers(len(uniq[j]))])
        if np.isnan(v):
            q.append((int(j), ISNA if rng.integers(2) else NOTNA, np.nan))
        elif enc.numeric[j]:
            q.append((int(j), int(rng.choice(_NUM_OPS)), v))
        else:
            q.append((int(j), EQ if rng.integers(2) else NE, v))
    return tuple(q)


def _size_correction(x_control: np.ndarray, qarr: tuple, n_ori: int,
                     rng: np.random.Generator) -> float:
    """anonymeter's correction of the control successes for a control file of another size
    than the training file: the count of singling-out queries on subsamples fitted by
    norm·∫₀^w n·v(1−v)^(n−1) dv, evaluated at both sizes."""
    n = x_control.shape[0]

    def integral(nn, w):
        return (1.0 - (nn * w + 1) * (1 - w) ** nn) / (nn + 1)

    sizes, succ = [], []
    for nr in np.linspace(min(1000, n), n, 10).astype(int):
        for _ in range(5):
            sub = x_control[rng.choice(n, nr, replace=False)]
            succ.append(int((_counts(sub, qarr, 2) == 1).sum()))
            sizes.append(nr)
    sz, sc = np.array(sizes, float), np.array(succ, float)

    def model(xx, w, nrm):
        return nrm * integral(xx, w)

    w0 = 1 / sz.max()
    p0 = (w0, 1 / integral(sz.max(), w0))
    popt, _ = curve_fit(model, sz, sc, bounds=(0, (1, np.inf)), p0=p0)
    return float(model(n_ori, *popt) / model(n, *popt))


def singling_out(ori: pd.DataFrame, syn: pd.DataFrame, *, control: pd.DataFrame | None = None,
                 mode: str = "multivariate", n_attacks: int = 500, n_cols: int = 3,
                 max_attempts: int | None = 10_000_000, seed: int = 0, conf: float = 0.95,
                 batch: int = 4096) -> AttackRisk:
    """anonymeter's singling-out attack: predicates that single out one record of the
    (de-duplicated) synthetic file are tried on the training records; each that matches
    exactly one is a success. Baseline: random predicates. ``mode``: ``univariate`` (one
    attribute: extremes and rare values) or ``multivariate`` (``n_cols`` attributes of a
    random synthetic record). Random (seeded), as anonymeter's: compare within intervals.
    Predicates are evaluated by a compiled scan (no query strings)."""
    if mode not in ("univariate", "multivariate"):
        raise LinkriskError(f"mode must be univariate or multivariate, not {mode!r}")
    cols = list(syn.columns)
    _common(ori, syn, control, cols)
    ori_d = ori[cols].drop_duplicates()
    syn_d = syn[cols].drop_duplicates()
    ctl_d = None if control is None else control[cols].drop_duplicates()
    enc = _encode([syn_d, ori_d] + ([ctl_d] if ctl_d is not None else []))
    xs, xo = enc.mats[0], enc.mats[1]
    xc = enc.mats[2] if ctl_d is not None else None
    rng = np.random.default_rng(seed)
    k = 1 if mode == "univariate" else int(n_cols)
    if k > len(cols):
        raise LinkriskError(f"n_cols = {k} but the files have {len(cols)} columns")
    uniq = [pd.unique(xs[:, j]) for j in range(len(cols))]
    baseline = [_random_query(xs, enc, k, uniq, rng) for _ in range(n_attacks)]
    n_base = int((_counts(xo, _as_arrays(baseline, k), 2) == 1).sum())
    notes = []
    if mode == "univariate":
        cand = [(q,) for q in _univariate(xs, enc, rng)]
        ok = _counts(xs, _as_arrays(cand, 1), 2) == 1
        queries = list(dict.fromkeys(q for q, g in zip(cand, ok, strict=True) if g))[:n_attacks]
    else:
        medians = np.zeros(len(cols))
        if enc.numeric.any():
            medians[enc.numeric] = np.nanmedian(xs[:, enc.numeric], axis=0)
        seen: dict[tuple, None] = {}
        tried = 0
        while len(seen) < n_attacks and (max_attempts is None or tried < max_attempts):
            nb_ = batch if max_attempts is None else min(batch, max_attempts - tried)
            cand = _from_records(xs, enc, rng.integers(0, len(xs), nb_), k, medians, rng)
            tried += nb_
            fresh = [q for q in dict.fromkeys(cand) if q not in seen]
            if fresh:
                cnt = _counts(xs, _as_arrays(fresh, k), 2)
                for q, c in zip(fresh, cnt, strict=True):
                    if c == 1 and len(seen) < n_attacks:
                        seen[q] = None
        queries = list(seen)
    if len(queries) < n_attacks:
        notes.append(f"only {len(queries)} singling-out queries of the {n_attacks} "
                     "requested could be made: the risk may be underestimated")
    qarr = _as_arrays(queries, k)
    n_s = int((_counts(xo, qarr, 2) == 1).sum())
    n_c: float | None = None
    if xc is not None:
        n_c = float((_counts(xc, qarr, 2) == 1).sum())
        if len(xc) != len(xo) and queries:
            n_c *= _size_correction(xc, qarr, len(xo), rng)
    r = AttackRisk(f"singling_out_{mode}", n_attacks, n_s, n_base, n_c,
                   None if n_c is None else n_attacks, conf,
                   params={"mode": mode, "n_cols": k, "n_queries": len(queries)})
    r.notes += notes
    return r
