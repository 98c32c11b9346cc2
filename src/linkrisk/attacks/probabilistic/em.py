"""prl's Fellegi–Sunter EM: the m and u agreement probabilities from the pattern counts.

Under conditional independence: latent match class with proportion p; m_j = P(γ_j=1 |
match), u_j = P(γ_j=1 | non-match); started from p = min(n,n')/(n·n'), u_j = the overall
agreement rate, m_j = max(0.9, (1+u_j)/2); SQUAREM-accelerated EM iterated until the
parameters move less than 1e-10 (``max_iter`` cycles at most). Every M-step is projected
onto m_j ≥ u_j (Winkler's constrained EM: agreeing is at least as likely for a match as
for a non-match) and probabilities are clipped into [1e-9, 1−1e-9] so weights stay finite.
The match proportion p is by default fixed at the known min(n,n')/(n·n')
(``match_proportion="known"``: in a release every record of the smaller file has its
source in the other); ``match_proportion=None`` estimates it too, as Jaro does.

Estimating p over all n·n' pairs is fragile on real categorical files with many duplicate
records and dependent attributes: the conditional-independence likelihood is then
maximised by a large "match" class describing population structure. On the 493 distinct
records of Household's 8 QIs, even an *unmasked* copy gets only 38 of 493 records
re-identified, with p known or estimated alike: EM sets m_j = u_j (weight 0) for 5 of the
8 attributes, and an independent EM implementation reaches the same, higher-likelihood,
solution, so this is the model and not a bug. Even with p known, m/u can be far from the
masking's keep probabilities on such files (the independence model does not hold); that is
a property of the method, reported as is (m, u, p in ``Outcome.extra``).

With missing values, EM leaves missing comparisons out of the likelihood and of m_j, u_j
(:func:`em_missing`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

#: probabilities are kept inside [EPS, 1 − EPS]
EPS = 1e-9


def bits(n_attr: int, patterns: np.ndarray) -> np.ndarray:
    """(len(patterns), m) 0/1 matrix of the patterns' agreement bits."""
    return ((patterns[:, None] >> np.arange(n_attr)) & 1).astype(np.float64)


@dataclass
class EMFit:
    m: np.ndarray
    u: np.ndarray
    p: float
    iterations: int
    converged: bool


class _EMModel:
    """The two-class model on the observed patterns; θ = (p, m_1..m_k, u_1..u_k)."""

    def __init__(self, counts: np.ndarray, n_attr: int, fixed_p: float | None,
                 constrain: bool = True):
        self.constrain = constrain
        nz = np.flatnonzero(counts)
        self.c = counts[nz].astype(np.float64)
        self.g = bits(n_attr, nz)
        self.k = n_attr
        self.fixed_p = fixed_p

    def _logs(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, m, u = th[0], th[1:1 + self.k], th[1 + self.k:]
        g = self.g
        lm = np.log(p) + g @ np.log(m) + (1 - g) @ np.log1p(-m)
        lu = np.log1p(-p) + g @ np.log(u) + (1 - g) @ np.log1p(-u)
        return lm, lu

    def loglik(self, th: np.ndarray) -> float:
        lm, lu = self._logs(th)
        return float(self.c @ np.logaddexp(lm, lu))

    def step(self, th: np.ndarray) -> np.ndarray:
        """One EM update: E (posterior match probability per pattern), M (weighted
        agreement rates)."""
        lm, lu = self._logs(th)
        cm = self.c * expit(lm - lu)
        cu = self.c - cm
        sm, su = cm.sum(), cu.sum()
        p = sm / self.c.sum() if self.fixed_p is None else self.fixed_p
        m = np.clip((cm @ self.g) / max(sm, 1e-300), EPS, 1 - EPS)
        u = np.clip((cu @ self.g) / max(su, 1e-300), EPS, 1 - EPS)
        if self.constrain:
            m = np.maximum(m, u)
        return np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])

    def delta(self, a: np.ndarray, b: np.ndarray) -> float:
        return max(float(np.abs(a[1:] - b[1:]).max()), abs(a[0] - b[0]) / max(a[0], 1e-300))


class _EMModelMissing(_EMModel):
    """:class:`_EMModel` with missing comparisons: ``o`` marks the attributes a pattern
    compares; the others are left out of its likelihood and of the M-step's rates."""

    def __init__(self, agree: np.ndarray, observed: np.ndarray, counts: np.ndarray,
                 n_attr: int, fixed_p: float | None, constrain: bool = True):
        self.constrain = constrain
        nz = np.flatnonzero(counts)
        self.c = counts[nz].astype(np.float64)
        self.g = bits(n_attr, agree[nz])
        self.o = bits(n_attr, observed[nz])
        self.k = n_attr
        self.fixed_p = fixed_p

    def _logs(self, th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, m, u = th[0], th[1:1 + self.k], th[1 + self.k:]
        g, d = self.g, self.o - self.g
        lm = np.log(p) + g @ np.log(m) + d @ np.log1p(-m)
        lu = np.log1p(-p) + g @ np.log(u) + d @ np.log1p(-u)
        return lm, lu

    def step(self, th: np.ndarray) -> np.ndarray:
        lm, lu = self._logs(th)
        cm = self.c * expit(lm - lu)
        cu = self.c - cm
        p = cm.sum() / self.c.sum() if self.fixed_p is None else self.fixed_p
        m = np.clip((cm @ self.g) / np.maximum(cm @ self.o, 1e-300), EPS, 1 - EPS)
        u = np.clip((cu @ self.g) / np.maximum(cu @ self.o, 1e-300), EPS, 1 - EPS)
        if self.constrain:
            m = np.maximum(m, u)
        return np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])


def em(counts: np.ndarray, n_attr: int, p0: float, max_iter: int = 1000,
       tol: float = 1e-10, fixed_p: float | None = None, constrain: bool = True) -> EMFit:
    """Fellegi–Sunter two-class EM on pattern counts (conditional independence),
    accelerated by SQUAREM (Varadhan & Roland 2008: an extrapolated step from two EM
    steps, kept only when it does not lower the likelihood, followed by an EM step).
    ``max_iter`` counts SQUAREM cycles (3 EM steps each). ``fixed_p``: hold the match
    proportion fixed instead of estimating it. ``constrain``: project every M-step onto
    m_j ≥ u_j (Winkler's constrained EM: agreement is at least as likely among matches)."""
    model = _EMModel(counts, n_attr, fixed_p, constrain)
    u = np.clip((model.c @ model.g) / model.c.sum(), EPS, 1 - EPS)
    return _run_em(model, u, n_attr, p0, max_iter, tol, fixed_p)


def em_missing(agree: np.ndarray, observed: np.ndarray, counts: np.ndarray, n_attr: int,
               p0: float, max_iter: int = 1000, tol: float = 1e-10,
               fixed_p: float | None = None, constrain: bool = True) -> EMFit:
    """:func:`em` when comparisons can be missing: pattern ``i`` (``counts[i]`` pairs)
    agrees on the attributes of bit mask ``agree[i]`` and compares those of ``observed[i]``
    (⊇ agree); a missing comparison is left out of the pattern's likelihood, and m_j, u_j
    are estimated from the pairs that compare attribute j (Fellegi–Sunter practice, as
    fastLink and RecordLinkage treat NA comparisons). Same start, SQUAREM and constraints
    as :func:`em`, the start's agreement rates over the observed comparisons."""
    model = _EMModelMissing(agree, observed, counts, n_attr, fixed_p, constrain)
    u = np.clip((model.c @ model.g) / np.maximum(model.c @ model.o, 1e-300), EPS, 1 - EPS)
    return _run_em(model, u, n_attr, p0, max_iter, tol, fixed_p)


def _run_em(model: _EMModel, u: np.ndarray, n_attr: int, p0: float, max_iter: int,
            tol: float, fixed_p: float | None) -> EMFit:
    m = np.clip(np.maximum(0.9, (1 + u) / 2), EPS, 1 - EPS)
    p = fixed_p if fixed_p is not None else p0
    th = np.concatenate([[np.clip(p, EPS, 1 - EPS)], m, u])
    ll = model.loglik(th)
    it, converged = 0, False
    while it < max_iter:
        it += 1
        t1 = model.step(th)
        t2 = model.step(t1)
        r, v = t1 - th, t2 - 2 * t1 + th
        nv = float(np.sqrt(v @ v))
        if nv > 0:
            alpha = min(-float(np.sqrt(r @ r)) / nv, -1.0)
            ext = np.clip(th - 2 * alpha * r + alpha * alpha * v, EPS, 1 - EPS)
            cand = model.step(ext)
            ll_c = model.loglik(cand)
            if not np.isfinite(ll_c) or ll_c < ll - 1e-12 * abs(ll):
                cand = t2
        else:
            cand = t2
        ll, done = model.loglik(cand), model.delta(cand, th) < tol
        th = cand
        if done:
            converged = True
            break
    p, m, u = float(th[0]), th[1:1 + n_attr], th[1 + n_attr:]
    if (m - u).sum() < 0:  # label switching: the "match" class is the one agreeing more
        m, u, p = u, m, 1 - p
    return EMFit(m, u, p, it, converged)
