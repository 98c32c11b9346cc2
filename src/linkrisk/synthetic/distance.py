"""Distance-based measures of a synthetic release (docs/methods.md, "Synthetic data").

All distances are Euclidean in one standardized QI space: numeric QIs centred and divided by
the *training* file's mean and standard deviation (ddof = 1; the dbrl scaling, with one
reference so that distances to training and to holdout compare), each other QI one-hot
coded with weight 1/√2 so that two different categories are at squared distance 1 (the
nominal 0/1 distance). Nearest records come from linkrisk's engine
(:func:`~linkrisk.engine.nearest.nearest_sets`); no n × n matrix is formed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata

from ..engine.matching.knn import knn
from ..engine.nearest import nearest_sets
from ..engine.nearest.kernels import Pairwise
from ..errors import LinkriskError


def is_numeric(s: pd.Series) -> bool:
    """Numeric as anonymeter's type detection (``select_dtypes("number")``): number dtypes,
    not booleans, not Categoricals."""
    return bool(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))


def onehot(frames: Sequence[pd.DataFrame], cols: Sequence[str], weight: float
           ) -> list[np.ndarray]:
    """Each frame's ``cols`` one-hot coded over the categories of all frames (a missing
    value is a category), times ``weight``."""
    out: list[list[np.ndarray]] = [[] for _ in frames]
    for c in cols:
        allv = pd.concat([f[c].astype(object) for f in frames], ignore_index=True)
        codes, uniq = pd.factorize(allv, use_na_sentinel=False)
        pos = 0
        for i, f in enumerate(frames):
            cc = codes[pos:pos + len(f)]
            pos += len(f)
            m = np.zeros((len(f), len(uniq)))
            m[np.arange(len(f)), cc] = weight
            out[i].append(m)
    return [np.hstack(o) if o else np.zeros((len(f), 0)) for o, f in zip(out, frames, strict=True)]


def standardized_space(frames: Sequence[pd.DataFrame], qi: Sequence[str],
                       reference: pd.DataFrame) -> list[np.ndarray]:
    """The frames in the DCR space (module docstring): squared Euclidean distance on the
    result is Σ numeric ((a−b)/σ)² + number of differing categorical QIs."""
    num = [c for c in qi if all(is_numeric(f[c]) for f in frames)]
    cat = [c for c in qi if c not in num]
    mats = []
    mu = reference[num].to_numpy(float).mean(axis=0) if num else np.zeros(0)
    sd = reference[num].to_numpy(float).std(axis=0, ddof=1) if num else np.zeros(0)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    hot = onehot(frames, cat, 1.0 / np.sqrt(2.0))
    for f, h in zip(frames, hot, strict=True):
        x = f[num].to_numpy(float)
        if np.isnan(x).any():
            raise LinkriskError("the synthetic-data measures need numeric QIs without missing "
                                "values; drop or impute them first")
        mats.append(np.hstack([(x - mu) / sd, h]))
    return mats


def min_distance(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean distance of every row of ``a`` to its nearest row of ``b`` and that row (the
    engine's seeded choice among ties)."""
    s = nearest_sets(a, b, metric="sqeuclidean", seed=seed)
    return np.sqrt(np.maximum(s.min_score, 0.0)), s.link


def nndr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Nearest-neighbour distance ratio d₁/d₂ of every row of ``a`` (distances to its nearest
    and second-nearest rows of ``b``; 0/0 := 1: two identical nearest records single no one
    out)."""
    k = knn(Pairwise.build(a, b, "sqeuclidean"), 2, kb=0)
    d = np.sqrt(np.maximum(k.fwd_score, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = d[:, 0] / d[:, 1]
    return np.where(d[:, 1] > 0, r, 1.0)


def auc_lower_is_member(d_member: np.ndarray, d_non: np.ndarray) -> float:
    """AUC of the attacker who calls a record a member when its distance is small:
    P(d_member < d_non) + ½·P(=) (Mann–Whitney)."""
    n1, n0 = d_member.size, d_non.size
    r = rankdata(np.concatenate([d_member, d_non]))
    u_non = r[n1:].sum() - n0 * (n0 + 1) / 2.0      # pairs with d_non > d_member, ties ½
    return float(u_non / (n1 * n0))


def roc_points(d_member: np.ndarray, d_non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of the rules "member when d ≤ v" for every observed v, plus (0, 0)."""
    v = np.unique(np.concatenate([d_member, d_non]))
    fpr = np.searchsorted(np.sort(d_non), v, side="right") / d_non.size
    tpr = np.searchsorted(np.sort(d_member), v, side="right") / d_member.size
    return np.concatenate([[0.0], fpr]), np.concatenate([[0.0], tpr])


def tpr_at(fpr: np.ndarray, tpr: np.ndarray, alpha: float) -> float:
    """The largest TPR among the rules with FPR ≤ alpha."""
    ok = fpr <= alpha + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


@dataclass
class DistanceRisk:
    """DCR, NNDR, copies and membership inference of one synthetic release (see
    :func:`distance_risk`). ``summary`` holds the figures; ``dcr_train``/``dcr_holdout``
    the per-synthetic-record distances."""

    summary: dict[str, Any]
    dcr_train: np.ndarray
    dcr_holdout: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def _mia(d_t: np.ndarray, d_h: np.ndarray, *, alphas: Sequence[float], n_boot: int,
         rng: np.random.Generator, conf: float) -> dict[str, Any]:
    def stats(a: np.ndarray, b: np.ndarray) -> list[float]:
        fpr, tpr = roc_points(a, b)
        return ([auc_lower_is_member(a, b), float((tpr - fpr).max())]
                + [tpr_at(fpr, tpr, al) for al in alphas])

    point = stats(d_t, d_h)
    boot = np.array([stats(d_t[rng.integers(0, d_t.size, d_t.size)],
                           d_h[rng.integers(0, d_h.size, d_h.size)]) for _ in range(n_boot)])
    lo, hi = (1 - conf) / 2 * 100, (1 + conf) / 2 * 100
    names = ["auc", "advantage"] + [f"tpr_at_fpr_{al:g}" for al in alphas]
    out: dict[str, Any] = {"n_bootstrap": n_boot}
    for j, nm in enumerate(names):
        out[nm] = point[j]
        out[nm + "_ci"] = ([float(np.percentile(boot[:, j], lo)),
                            float(np.percentile(boot[:, j], hi))] if n_boot else None)
    return out


def distance_risk(synthetic: pd.DataFrame, train: pd.DataFrame,
                  holdout: pd.DataFrame | None = None, *, qi: Sequence[str] | None = None,
                  seed: int = 0, nndr_sample: int = 10_000, n_boot: int = 200,
                  alphas: Sequence[float] = (0.01, 0.1), conf: float = 0.95) -> DistanceRisk:
    """Distance to closest record, NNDR, exact copies and membership inference.

    Parameters
    ----------
    synthetic, train : pandas.DataFrame
        The synthetic release and the records its generator was trained on.
    holdout : pandas.DataFrame, optional
        Original records the generator never saw; without it the figures that compare
        with it (closer-to-training share, membership inference) are skipped with a note.
    qi : sequence of str, optional
        The columns compared (default: the columns common to the files).
    seed : int
        Seeds the balancing subsample, the NNDR sample and the bootstrap.
    nndr_sample : int
        NNDR is computed on at most this many synthetic records (a seeded sample; it
        needs the two nearest records, a slower exact pass).
    n_boot : int
        Bootstrap resamples of the membership-inference figures.
    alphas : sequence of float
        The false-positive rates at which the membership attack's TPR is reported.
    conf : float
        The level of the intervals.

    Returns
    -------
    DistanceRisk
    """
    cols = list(qi) if qi is not None else [c for c in train.columns if c in synthetic.columns
                                            and (holdout is None or c in holdout.columns)]
    if not cols:
        raise LinkriskError("the synthetic release and the original share no column")
    rng = np.random.default_rng(seed)
    frames = [synthetic, train] + ([holdout] if holdout is not None else [])
    mats = standardized_space(frames, cols, train)
    S, T = mats[0], mats[1]
    H = mats[2] if holdout is not None else None
    notes: list[str] = []
    d_t, _ = min_distance(S, T, seed)
    summ: dict[str, Any] = {
        "qi": cols, "n_synthetic": len(S), "n_train": len(T),
        "n_holdout": None if H is None else len(H),
        "dcr_train_median": float(np.median(d_t)),
        "dcr_train_p05": float(np.percentile(d_t, 5)),
        "exact_copies_train": int((d_t == 0).sum()),
        "exact_copies_train_share": float((d_t == 0).mean()),
    }
    rows = (np.sort(rng.choice(len(S), nndr_sample, replace=False)) if len(S) > nndr_sample
            else np.arange(len(S)))
    if len(T) >= 2:
        r = nndr(S[rows], T)
        summ["nndr_train_median"] = float(np.median(r))
        summ["nndr_train_p05"] = float(np.percentile(r, 5))
        summ["nndr_records"] = int(rows.size)
    d_h = None
    if H is None:
        notes.append("no holdout: the DCR comparison with holdout records, the "
                     "closer-to-training share and membership inference are skipped")
    else:
        d_h, _ = min_distance(S, H, seed)
        summ.update({"dcr_holdout_median": float(np.median(d_h)),
                     "dcr_holdout_p05": float(np.percentile(d_h, 5)),
                     "exact_copies_holdout": int((d_h == 0).sum())})
        if len(H) >= 2:
            r = nndr(S[rows], H)
            summ["nndr_holdout_median"] = float(np.median(r))
        summ.update(_closer_to_train(S, T, H, d_t, d_h, rng, seed, conf, notes))
        # membership inference: each original record's distance to the synthetic records
        m_t, _ = min_distance(T, S, seed)
        m_h, _ = min_distance(H, S, seed)
        summ["membership"] = _mia(m_t, m_h, alphas=alphas, n_boot=n_boot, rng=rng, conf=conf)
    return DistanceRisk(summ, d_t, d_h, notes)


def _closer_to_train(S: np.ndarray, T: np.ndarray, H: np.ndarray, d_t: np.ndarray,
                     d_h: np.ndarray, rng: np.random.Generator, seed: int, conf: float,
                     notes: list[str]) -> dict[str, Any]:
    """The share of synthetic records closer to training than to holdout records (ties
    count half) and its Wilson interval, on balanced sizes: the larger of training and
    holdout is subsampled to the smaller (said in ``notes``)."""
    dt_b, dh_b = d_t, d_h
    if len(T) > len(H):
        dt_b, _ = min_distance(S, T[np.sort(rng.choice(len(T), len(H), replace=False))], seed)
        notes.append(f"closer-to-training share: training subsampled to the holdout's "
                     f"{len(H)} records")
    elif len(H) > len(T):
        dh_b, _ = min_distance(S, H[np.sort(rng.choice(len(H), len(T), replace=False))], seed)
        notes.append(f"closer-to-training share: holdout subsampled to the training's "
                     f"{len(T)} records")
    closer = (dt_b < dh_b) + 0.5 * (dt_b == dh_b)
    share = float(closer.mean())
    _, err = wilson(len(closer), float(closer.sum()), conf)
    return {"closer_to_train_share": share,
            "closer_to_train_ci": [max(share - err, 0.0), min(share + err, 1.0)]}


def wilson(n_total: int, n_success: float, conf: float) -> tuple[float, float]:
    """Wilson score estimate of a success rate and its error bound at level ``conf``."""
    z = float(norm.ppf(0.5 * (1.0 + conf)))
    z2 = z * z
    var = n_success * (n_total - n_success) / n_total
    den = n_total + z2
    return (n_success + 0.5 * z2) / den, (z / den) * math.sqrt(var + 0.25 * z2)
