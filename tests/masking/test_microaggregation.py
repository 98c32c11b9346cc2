"""Individual-ranking microaggregation, MDAV and MicDP."""

import numpy as np
import pandas as pd
import pytest

from linkrisk.masking import mask, mdav_groups
from linkrisk.masking.microaggregation import standardize
from tests.conftest import continuous


@pytest.mark.parametrize("n,k", [(300, 3), (301, 4), (50, 50), (20, 1)])
def test_ir_groups_and_means(n, k):
    df = continuous(n, 3, seed=n)
    out = mask(df, "microaggregation_ir", k=k)
    for c in df.columns:
        y = out[c].to_numpy()
        values, counts = np.unique(y, return_counts=True)
        assert len(values) == n // k
        assert (counts[:-1] == k).all() or k == 1
        # the remainder goes to the last group (of the largest values)
        assert counts[np.argmax(values)] == k + n % k
        assert abs(y.mean() - df[c].mean()) <= 1e-9 * abs(df[c]).mean()
        # groups are runs of consecutive ranks
        order = np.argsort(df[c].to_numpy(), kind="stable")
        assert np.all(np.diff(y[order]) >= 0)


def _naive_mdav(x, k):
    """Straightforward O(n²) MDAV, as in Domingo-Ferrer & Mateo-Sanz (2002)."""
    z = standardize(x)
    rest = list(range(len(z)))
    groups = []

    def take(center):
        d = ((z[rest] - z[center]) ** 2).sum(1)
        g = [rest[i] for i in np.argsort(d, kind="stable")[:k]]
        for i in g:
            rest.remove(i)
        groups.append(set(g))

    while len(rest) >= 3 * k:
        c = z[rest].mean(0)
        r = rest[int(np.argmax(((z[rest] - c) ** 2).sum(1)))]
        s = rest[int(np.argmax(((z[rest] - z[r]) ** 2).sum(1)))]
        take(r)
        take(s)
    if len(rest) >= 2 * k:
        c = z[rest].mean(0)
        take(rest[int(np.argmax(((z[rest] - c) ** 2).sum(1)))])
    groups.append(set(rest))
    return groups


@pytest.mark.parametrize("n,k", [(90, 3), (97, 4), (61, 10), (40, 34), (120, 40)])
def test_mdav_matches_reference_algorithm(n, k):
    x = continuous(n, 3, seed=k).to_numpy()
    labels = mdav_groups(x, k)
    got = sorted(sorted(np.flatnonzero(labels == g)) for g in np.unique(labels))
    want = sorted(sorted(g) for g in _naive_mdav(x, k))
    assert got == want


def test_mdav_hand_example():
    df = pd.DataFrame({"x": np.arange(9.0)})
    out = mask(df, "mdav", k=3)
    # centroid 4: farthest 0 → {0,1,2}; farthest from 0 is 8 → {6,7,8}; rest {3,4,5}
    assert out["x"].tolist() == [1, 1, 1, 4, 4, 4, 7, 7, 7]


def test_mdav_group_sizes_centroids_and_means(census_csv):
    df = census_csv.iloc[:500]
    k = 4
    out = mask(df, "mdav", k=k)
    x = df.to_numpy(dtype=float)
    labels = mdav_groups(x, k)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert (sizes > k).sum() <= 1
    for g in np.unique(labels):
        rows = labels == g
        np.testing.assert_allclose(out.to_numpy()[rows], np.broadcast_to(
            x[rows].mean(0), (rows.sum(), x.shape[1])), rtol=1e-12)
    np.testing.assert_allclose(out.mean().to_numpy(), df.mean().to_numpy(), rtol=1e-9)


def test_mdav_duplicates_and_constant_column():
    df = pd.DataFrame({"a": [1.0] * 10 + [2.0] * 10, "b": [5.0] * 20})
    out = mask(df, "mdav", k=3)
    sizes = out.groupby(list(out.columns)).size()
    assert out["b"].eq(5.0).all() and sizes.min() >= 3


def test_micdp_huge_epsilon_is_mdav(cont):
    a = mask(cont, "micdp", k=3, epsilon=1e12, seed=0)
    b = mask(cont, "mdav", k=3)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-6)


def test_micdp_laplace_scale():
    df = continuous(3000, 2, seed=9)
    k, eps = 3, 2.0
    out = mask(df, "micdp", k=k, epsilon=eps, seed=4)
    base = mask(df, "mdav", k=k)
    labels = mdav_groups(df.to_numpy(), k)
    m = df.shape[1]
    for c in df.columns:
        noise = (out[c] - base[c]).to_numpy()
        per_group = pd.Series(noise).groupby(labels)
        assert (per_group.nunique() == 1).all()         # one draw per centroid
        e = per_group.first().to_numpy()
        scale = m * (df[c].max() - df[c].min()) / (k * eps)
        # Laplace(0, b): E|e| = b, sd of the mean |e| is b/sqrt(G)
        assert abs(np.abs(e).mean() / scale - 1) < 5 / np.sqrt(len(e))
        assert abs(e.mean()) < 5 * scale * np.sqrt(2 / len(e))
