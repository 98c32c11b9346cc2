"""Categorical / mixed distances against dense brute force written from docs/methods.md."""

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.attacks import make_context
from linkrisk.attacks.categorical import pair_scores
from linkrisk.attacks.distance import space
from linkrisk.errors import LinkriskError

RTOL = 1e-9


# ------------------------------------------------------------------ brute force
def _std(x):
    x = np.asarray(x, float)
    return (x - x.mean()) / x.std(ddof=1)


def dense(a_df, b_df, spec, weights=None, possible=None):
    """Σ_j w_j d_j over all pairs, straight from the documented formulas on category values.

    ``spec[col]`` = "nominal" | "numeric" | list (ordinal order); ``possible[col](x, y)``:
    original category x can be released as y."""
    d = np.zeros((len(a_df), len(b_df)))
    for c, kind in spec.items():
        w = 1.0 if weights is None else weights.get(c, 1.0)
        va = np.asarray(a_df[c].astype(object))
        vb = np.asarray(b_df[c].astype(object))
        if kind == "numeric":
            dj = (_std(va)[:, None] - _std(vb)[None]) ** 2
        elif kind == "nominal":
            dj = (va[:, None] != vb[None]).astype(float)
        else:
            pos = {v: i for i, v in enumerate(kind)}
            pa = np.array([pos.get(v, -1) for v in va])
            pb = np.array([pos.get(v, -1) for v in vb])
            dj = np.empty((len(va), len(vb)))
            for i in range(len(va)):
                for k in range(len(vb)):
                    if pa[i] < 0 or pb[k] < 0:  # a recoding label outside the order
                        aware = possible is not None and c in possible
                        if va[i] == vb[k] or (aware and possible[c](va[i], vb[k])):
                            dj[i, k] = 1 / len(kind)  # exact-match distance
                        else:
                            dj[i, k] = 1.0
                    else:  # #{c'': min <= c'' <= max} / |D(V)|
                        lo, hi = sorted((pa[i], pb[k]))
                        dj[i, k] = sum(1 for r in range(len(kind)) if lo <= r <= hi) / len(kind)
        dj = w * dj
        if possible is not None and c in possible:
            ok = np.array([[possible[c](x, y) for y in vb] for x in va])
            dj = np.where(ok, dj, np.inf)
        d += dj
    return d


def check(res, d, truth=None, atol=0.0):
    """The attack's per-record result equals the dense score matrix's (candidate counts,
    truth in the set, minimum within ``atol``, links inside the sets); returns the counts."""
    truth = np.arange(d.shape[0]) if truth is None else truth
    mn = d.min(axis=1)
    c = d <= (mn + RTOL * np.abs(mn))[:, None]
    cnt = c.sum(1)
    tin = np.array([t >= 0 and c[i, t] for i, t in enumerate(truth)])
    pr = res.per_record
    np.testing.assert_array_equal(pr["candidates"].to_numpy(), cnt)
    np.testing.assert_array_equal(pr["true_in_set"].to_numpy(), tin)
    np.testing.assert_allclose(pr["score"].to_numpy(), mn, rtol=1e-12, atol=atol)
    assert res.correct_links == pytest.approx(np.where(tin, 1 / cnt, 0).sum())
    links = pr["link"].to_numpy()
    assert c[np.arange(len(links)), links].all()
    return cnt


def cat_files(seed, n=120, n_b=None):
    """Small categorical files with ties and categories occurring in only one file."""
    rng = np.random.default_rng(seed)
    n_b = n if n_b is None else n_b
    colors = ["red", "green", "blue", "grey", "pink"]
    a = pd.DataFrame({
        "color": pd.Categorical(rng.choice(colors[:4], n)),          # pink only in B
        "size": pd.Categorical(rng.choice(["S", "M", "L", "XL"], n),
                               categories=["S", "M", "L", "XL"], ordered=True),
        "grade": rng.choice(["c", "a", "b"], n),                         # object dtype
        "k": pd.Categorical(rng.integers(1, 6, n)),                       # codes 1..5
    })
    b = a.iloc[:n_b].copy()
    for c in b:
        flip = rng.random(n_b) < 0.3
        src = a[c].iloc[rng.integers(0, n, n_b)].to_numpy()
        vals = np.where(flip, src, b[c].to_numpy())
        b[c] = pd.Categorical(vals, categories=a[c].cat.categories,
                              ordered=a[c].cat.ordered) if hasattr(a[c], "cat") else vals
    b["color"] = b["color"].cat.add_categories(["pink", "black"])
    b.loc[b.index[:5], "color"] = "pink"
    a["k"] = a["k"].cat.add_categories([7])                              # unused category
    return a, b


ORD = ["S", "M", "L", "XL"]


def test_default_dbrl_mixes_nominal_and_ordinal():
    a, b = cat_files(1)
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal"}
    for method in ("dbrl", "dbrl_mixed"):
        check(linkrisk.attack(a, b, method=method), dense(a, b, spec))


def test_hamming_is_count_of_differences():
    a, b = cat_files(2)
    spec = dict.fromkeys(a.columns, "nominal")
    res = linkrisk.attack(a, b, method="dbrl_hamming")
    d = dense(a, b, spec)
    check(res, d)
    assert set(np.unique(d)) <= {0.0, 1.0, 2.0, 3.0, 4.0}


def test_ordinal_order_from_user_and_from_kinds():
    a, b = cat_files(3)
    order = ["c", "a", "b"]  # not alphabetical
    res = linkrisk.attack(a, b, method="dbrl_mixed", categories={"grade": order})
    check(res, dense(a, b, {"color": "nominal", "size": ORD, "grade": order, "k": "nominal"}))
    # kinds=ordinal on unordered columns: the sorted categories of both files (7 is unused
    # in the data but is a category of A's dtype, so |D(V)| = 6)
    res = linkrisk.attack(a, b, method="dbrl", kinds={"k": "ordinal", "grade": "ordinal"})
    spec = {"color": "nominal", "size": ORD, "grade": ["a", "b", "c"], "k": [1, 2, 3, 4, 5, 7]}
    check(res, dense(a, b, spec))


def test_weights_mapping_and_sequence():
    a, b = cat_files(4)
    w = {"color": 2.0, "size": 0.5, "grade": 0.0, "k": 3.0}
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal"}
    d = dense(a, b, spec, weights=w)
    check(linkrisk.attack(a, b, method="dbrl_mixed", weights=w), d)
    check(linkrisk.attack(a, b, method="dbrl_mixed", weights=list(w.values())), d)
    d = dense(a, b, dict.fromkeys(spec, "nominal"), weights=w)
    check(linkrisk.attack(a, b, method="dbrl_hamming", weights=w), d)


def test_mixed_numeric_and_categorical():
    a, b = cat_files(5)
    rng = np.random.default_rng(5)
    a["income"] = rng.lognormal(10, 1, len(a)).round(-2)
    b["income"] = a["income"] * rng.uniform(0.8, 1.2, len(a))
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal",
            "income": "numeric"}
    check(linkrisk.attack(a, b, method="dbrl"), dense(a, b, spec))
    w = {"income": 4.0, "color": 0.5}
    check(linkrisk.attack(a, b, method="dbrl_mixed", weights=w), dense(a, b, spec, weights=w))


def test_masking_aware_top_coding_and_recoding():
    """Top coding of the ordinal 'size' at L (XL -> L), nominal recoding of rare colours
    into a new label 'other', ordinal recoding of k into new group labels."""
    a, b = cat_files(6)
    b = a.copy()
    b["size"] = a["size"].replace({"XL": "L"})
    b["color"] = a["color"].astype(str).replace({"grey": "other", "blue": "other"})
    kmap = {1: "1-2", 2: "1-2", 3: "3-5", 4: "3-5", 5: "3-5"}
    b["k"] = a["k"].astype(int).map(kmap)
    rng = np.random.default_rng(6)  # plus some unrelated changes to 'grade'
    b["grade"] = np.where(rng.random(len(a)) < 0.5, rng.choice(["a", "b", "c"], len(a)),
                          a["grade"])
    mm = {"size": {"XL": "L"}, "color": {"grey": "other", "blue": "other"}, "k": kmap}
    poss = {"size": lambda x, y: y == ("L" if x == "XL" else x),
            "color": lambda x, y: y == {"grey": "other", "blue": "other"}.get(x, x),
            "k": lambda x, y: y == kmap.get(x, x)}
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": [1, 2, 3, 4, 5, 7]}
    d = dense(a, b, spec, possible=poss)
    assert np.isinf(d).any() and np.isfinite(d.min(axis=1)).all()
    res = linkrisk.attack(a, b, method="dbrl_mixed", masking_map=mm,
                          kinds={"k": "ordinal"})
    check(res, d)
    plain = linkrisk.attack(a, b, method="dbrl_mixed", masking_aware=False,
                            kinds={"k": "ordinal"}, categories={"k": [1, 2, 3, 4, 5, 7,
                                                                      "1-2", "3-5"]})
    assert res.rate >= plain.rate
    # the other direction: the released file is the attacker's; the map is read the other way
    back = linkrisk.attack(a, b, method="dbrl_mixed", masking_map=mm, kinds={"k": "ordinal"},
                           direction="masked->original")
    def flipped(f):
        return lambda x, y: f(y, x)

    check(back, dense(b, a, spec, possible={c: flipped(f) for c, f in poss.items()}))
    # Hamming with the same map
    d = dense(a, b, dict.fromkeys(spec, "nominal"), possible=poss)
    check(linkrisk.attack(a, b, method="dbrl_hamming", masking_map=mm), d)


def test_recoding_labels_without_map_are_uninformative():
    a, b = cat_files(12)
    b = a.copy()
    b["size"] = pd.Categorical(a["size"].map({"S": "S..M", "M": "S..M", "L": "L", "XL": "XL"}),
                               categories=["S..M", "L", "XL"], ordered=True)
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal"}
    check(linkrisk.attack(a, b, method="dbrl"), dense(a, b, spec))
    check(linkrisk.attack(b, a, method="dbrl"), dense(b, a, spec))
    with pytest.raises(LinkriskError, match="not in the order given"):
        linkrisk.attack(a, b, method="dbrl_mixed", categories={"size": ORD})


def test_masking_map_with_sets_of_possible_categories():
    a, b = cat_files(7)
    mm = {"grade": {"a": ["a", "b"], "b": {"b", "c"}, "c": ("c", "a")}}
    ok = {"a": {"a", "b"}, "b": {"b", "c"}, "c": {"c", "a"}}
    rng = np.random.default_rng(7)
    b = a.copy()
    b["grade"] = [rng.choice(sorted(ok[x])) for x in a["grade"]]
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal"}
    d = dense(a, b, spec, possible={"grade": lambda x, y: y in ok[x]})
    check(linkrisk.attack(a, b, method="dbrl_mixed", masking_map=mm), d)


def test_identity_masking_rate_is_distinct_records_over_n():
    # by hand: combos (a,x)x2, (a,y)x1, (b,y)x3 -> correct = 2*(1/2) + 1 + 3*(1/3) = 3
    df = pd.DataFrame({"p": list("aaabbb"), "q": list("xxyyyy")}).astype("category")
    res = linkrisk.attack(df, df, method="dbrl")
    assert res.correct_links == pytest.approx(3.0)
    assert res.per_record["candidates"].tolist() == [2, 2, 1, 3, 3, 3]
    a, _ = cat_files(8, n=300)
    mult = a.astype(str).value_counts()
    res = linkrisk.attack(a, a, method="dbrl")
    assert res.correct_links == pytest.approx(len(mult))   # Σ_r 1/mult(r) = #combos
    assert res.rate == pytest.approx(len(mult) / len(a))


def test_household_identity(data_dir):
    h = linkrisk.datasets.load("household", data_dir=data_dir)
    res = linkrisk.attack(h, h, method="dbrl")
    assert res.correct_links == pytest.approx(493)


def test_space_for_global_matching_and_pair_scores():
    a, b = cat_files(9, n=40)
    ctx, _ = make_context(a, b)
    spec = {"color": "nominal", "size": ORD, "grade": "nominal", "k": "nominal"}
    d = dense(a, b, spec)
    for metric, root in (("euclidean", True), ("sqeuclidean", False), ("mixed", False),
                         ("l1", False)):
        sp = space(ctx, metric)
        assert sp.metric == "mixed" and sp.root is root and "tables" in sp.kw
        ia, ib = np.meshgrid(np.arange(len(a)), np.arange(len(b)), indexing="ij")
        got = pair_scores(sp, ia.ravel(), ib.ravel()).reshape(d.shape)
        np.testing.assert_allclose(got, np.sqrt(d) if root else d, rtol=1e-12)
    sp = space(ctx, "hamming")
    assert sp.root is False


@pytest.mark.parametrize("kwargs,match", [
    ({"method": "dbrl_mixed", "masking_aware": True}, "needs the known masking"),
    ({"method": "dbrl_mixed", "masking_map": {"grade": {"a": "b"}}}, "cannot produce"),
    ({"method": "dbrl_mixed", "masking_map": {"nope": {}}}, "not a QI"),
    ({"method": "dbrl_mixed", "masking_map": {"grade": {}}, "masking_aware": False},
     "masking_aware=False"),
    ({"method": "dbrl_mixed", "weights": [1, 2]}, "one weight per QI"),
    ({"method": "dbrl_mixed", "weights": {"color": -1}}, "non-negative"),
    ({"method": "dbrl_mixed", "categories": {"grade": ["a", "b"]}}, "not in the order given"),
    ({"method": "dbrl_mixed", "categories": {"zzz": ["a"]}}, "not a QI"),
    ({"method": "dbrl2"}, "categorical"),
    ({"method": "mahalanobis"}, "categorical"),
    ({"method": "kernel"}, "categorical"),
    ({"method": "rbrl_sum"}, "categorical"),
])
def test_errors(kwargs, match):
    a, b = cat_files(10, n=30)
    b["grade"] = "c"  # inconsistent with a masking map a -> b
    with pytest.raises(LinkriskError, match=match):
        linkrisk.attack(a, b, **kwargs)


def test_errors_numeric_and_coding():
    a, b = cat_files(11, n=30)
    a["x"], b["x"] = np.arange(30.0), np.arange(30.0)
    with pytest.raises(LinkriskError, match="hamming compares categories"):
        linkrisk.attack(a, b, method="dbrl_hamming")
    with pytest.raises(LinkriskError, match="dbrl_l1 is not available"):
        linkrisk.attack(a, b, method="dbrl_l1")
    with pytest.raises(LinkriskError, match="masking_map applies to categorical"):
        linkrisk.attack(a, b, method="dbrl_mixed", masking_map={"x": {1: 2}})
    c = b.copy()
    c["k"] = c["k"].astype(str)  # '1' vs 1: one value written two ways, matched (issue 38)
    with pytest.warns(linkrisk.LinkriskWarning, match="'k' are written differently"):
        assert linkrisk.attack(a, c, method="dbrl").rate == linkrisk.attack(a, b, "dbrl").rate
    c["k"] = "code " + c["k"]  # other labels: nothing in common, refused
    with pytest.raises(LinkriskError, match="no category occurs in both files"):
        linkrisk.attack(a, c, method="dbrl")
    c = b.copy()
    c["color"] = c["color"].astype(object)
    c.loc[3, "color"] = None  # a missing category matches any (tests/attacks/test_missing.py)
    assert linkrisk.attack(a, c, method="dbrl").extra["missing_values"] is True
