"""Files and brute-force references shared by the prl tests."""

import numpy as np
import pandas as pd

from linkrisk.attacks import probabilistic as P

RTOL = 1e-9


def pram_files(n, cards, keep, seed, n_b=None):
    """Independent categorical attributes; B = A with each value kept with probability
    keep_j, else replaced by a uniformly chosen other category (PRAM-like)."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for j, (L, k) in enumerate(zip(cards, keep, strict=True)):
        x = rng.choice(L, n, p=rng.dirichlet(np.full(L, 2.0)))
        y = x.copy()
        ch = rng.random(n) > k
        y[ch] = (x[ch] + rng.integers(1, L, ch.sum())) % L
        a[f"x{j}"] = pd.Categorical(x, categories=range(L))
        b[f"x{j}"] = pd.Categorical(y, categories=range(L))
    return pd.DataFrame(a), pd.DataFrame(b)


def brute_agree(cmp):
    """(n_a, n_b, m) agreement array of all pairs."""
    tol = np.where(cmp.tol > 0, cmp.tol, 0.0)
    return np.abs(cmp.a[:, None, :] - cmp.b[None, :, :]) <= tol


def brute_patterns(cmp):
    g = brute_agree(cmp)
    return (g.astype(np.int64) << np.arange(cmp.a.shape[1])).sum(-1)


def brute_scores(cmp, wa, wd):
    """−w for every pair, summed in attribute order (the engine's arithmetic)."""
    g = brute_agree(cmp)
    acc = np.zeros(g.shape[:2])
    for j in range(g.shape[2]):
        acc = acc + np.where(g[:, :, j], -wa[j], -wd[j])
    return acc


def mixed_files(seed, n=90):
    rng = np.random.default_rng(seed)
    a = pd.DataFrame({
        "c": pd.Categorical(rng.choice(list("abcd"), n)),
        "o": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"],
                            ordered=True),
        "x": rng.normal(50, 10, n).round(),
        "y": rng.exponential(3, n),
    })
    b = a.copy()
    b["x"] = a["x"] + rng.normal(0, 3, n).round()
    b["y"] = a["y"] * rng.uniform(0.7, 1.3, n)
    flip = rng.random(n) < 0.2
    b.loc[flip, "c"] = rng.choice(list("abcd"), flip.sum())
    return a, b


def _brute_sets(d, truth):
    mn = d.min(1)
    c = d <= (mn + RTOL * np.abs(mn))[:, None]
    cnt = c.sum(1)
    tin = np.array([t >= 0 and c[i, t] for i, t in enumerate(truth)])
    return mn, c, cnt, tin


def _numeric_files(n, m, seed):
    """Correlated numeric attributes rounded to few values (many exact ties between records)
    and released with noise, so that the quantile bins give deep shared groups."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 1))
    x = np.round(z + rng.standard_normal((n, m)), 1)
    y = x + rng.standard_normal((n, m)) * 0.2
    a = pd.DataFrame(x, columns=[f"v{j}" for j in range(m)])
    return a, pd.DataFrame(y, columns=a.columns)


def _numpy_walk_counts(cmp):
    """The pattern counts by the plain numpy subset walk (the computation the compiled,
    pruned walk replaced)."""
    from linkrisk.grouping import subset_walk

    m, n_a = cmp.a.shape[1], cmp.a.shape[0]
    at_least = np.zeros(1 << m, np.int64)

    def visit(s, ids, g):
        at_least[s] = int(np.bincount(ids[:n_a], minlength=g) @ np.bincount(ids[n_a:],
                                                                               minlength=g))
    subset_walk(P.stack_columns(cmp), cmp.size, visit)
    return P.superset_mobius(at_least, m)


def _walk_cases():
    yield "categorical", *pram_files(400, [3, 4, 6, 8, 4, 5, 2, 3],
                                     [0.85, 0.8, 0.9, 0.7, 0.75, 0.8, 0.9, 0.9], 4), 10
    a, b = pram_files(350, [3, 5, 4, 7, 3, 6], [0.9, 0.8, 0.7, 0.85, 0.8, 0.75], 6)
    a["id"] = b["id"] = range(350)
    yield "unequal", a, b.sample(230, random_state=2), 10
    yield "numeric_q3", *_numeric_files(500, 9, 4), 3


def _holes(df, rng, frac):
    out = df.copy()
    for c in out.columns:
        out.loc[rng.random(len(out)) < frac, c] = np.nan
    return out


def _ref_pairs(cmp):
    """(observed, agree) boolean (n_a, n_b, m) arrays, pair by pair in plain loops."""
    n_a, n_b, m = cmp.a.shape[0], cmp.b.shape[0], cmp.a.shape[1]
    obs = np.zeros((n_a, n_b, m), bool)
    agr = np.zeros((n_a, n_b, m), bool)
    for i in range(n_a):
        for k in range(n_b):
            for j in range(m):
                x, y = cmp.a[i, j], cmp.b[k, j]
                if np.isnan(x) or np.isnan(y):
                    continue
                obs[i, k, j] = True
                agr[i, k, j] = abs(x - y) <= (cmp.tol[j] if cmp.tol[j] > 0 else 0.0)
    return obs, agr


def _ref_em(obs, agr, p, iters=20000):
    """Plain EM over all pairs: a missing comparison is left out of the likelihood and of
    m_j, u_j; p fixed, m_j >= u_j, probabilities in [1e-9, 1 - 1e-9]."""
    o = obs.reshape(-1, obs.shape[-1]).astype(float)
    g = agr.reshape(-1, agr.shape[-1]).astype(float)
    u = np.clip((g.sum(0)) / o.sum(0), P.EPS, 1 - P.EPS)
    m = np.clip(np.maximum(0.9, (1 + u) / 2), P.EPS, 1 - P.EPS)
    for _ in range(iters):
        lm = np.log(p) + (g * np.log(m) + (o - g) * np.log1p(-m)).sum(1)
        lu = np.log1p(-p) + (g * np.log(u) + (o - g) * np.log1p(-u)).sum(1)
        post = 1 / (1 + np.exp(lu - lm))
        m2 = np.clip((post[:, None] * g).sum(0) / (post[:, None] * o).sum(0), P.EPS, 1 - P.EPS)
        u2 = np.clip(((1 - post)[:, None] * g).sum(0) / ((1 - post)[:, None] * o).sum(0),
                     P.EPS, 1 - P.EPS)
        m2 = np.maximum(m2, u2)
        done = max(np.abs(m2 - m).max(), np.abs(u2 - u).max()) < 1e-13
        m, u = m2, u2
        if done:
            break
    return m, u
