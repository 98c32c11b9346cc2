"""The Dask backend gives exactly the single-process results (local cluster, 2 workers)."""

import numpy as np
import pandas as pd
import pytest

import linkrisk
from linkrisk.engine import nearest_sets
from linkrisk.engine.nearest.distributed import dask_nearest_sets

distributed = pytest.importorskip("distributed", reason="needs dask: pip install -e '.[dask]'")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def files():
    orig = linkrisk.datasets.synthetic(3000, 6, seed=4)  # rounded values: ties
    return orig, linkrisk.mask(orig, "noise", a=0.5, seed=5)


@pytest.mark.parametrize("method", ["dbrl", "dbrl_l1", "mahalanobis", "kernel", "rbrl_sum",
                                    "rbrl_max", "rsrl"])
def test_attacks_identical_to_local(client, files, method):
    orig, rel = files
    local = linkrisk.attack(orig, rel, method, seed=9)
    dist = linkrisk.attack(orig, rel, method, seed=9, backend="dask", scheduler=client)
    assert dist.correct_links == local.correct_links
    pd.testing.assert_frame_equal(dist.per_record, local.per_record)


def test_categorical_identical_to_local(client, data_dir):
    hh = linkrisk.datasets.load("household", data_dir).head(1500)
    rel = linkrisk.mask(hh, "pram", pd=0.8, alpha=0.5, seed=2)
    local = linkrisk.attack(hh, rel, "dbrl_hamming")
    dist = linkrisk.attack(hh, rel, "dbrl_hamming", backend="dask", scheduler=client)
    pd.testing.assert_frame_equal(dist.per_record, local.per_record)


def test_engine_blocks_and_ties(client):
    rng = np.random.default_rng(0)
    b = np.round(rng.normal(size=(2500, 3)), 1)
    a = b[rng.permutation(2500)] + rng.choice([0, 0.1], size=b.shape)
    truth = rng.integers(-1, 2500, size=2500)
    local = nearest_sets(a, b, truth=truth, seed=3)
    seen = []
    dist = dask_nearest_sets(a, b, truth=truth, seed=3, scheduler=client, block_rows=333,
                             progress=lambda d, t: seen.append(d))
    for f in ("min_score", "count", "true_in_set", "true_score", "link"):
        np.testing.assert_array_equal(getattr(dist, f), getattr(local, f))
    assert seen[-1] == 2500 and (local.count > 1).any()
    # rows given their own ids (a subset of a larger file): the same links as locally
    rid = np.arange(2500, dtype=np.int64) * 7 + 11
    local = nearest_sets(a, b, truth=truth, seed=3, row_ids=rid)
    dist = dask_nearest_sets(a, b, truth=truth, seed=3, scheduler=client, block_rows=333,
                             row_ids=rid)
    np.testing.assert_array_equal(dist.link, local.link)


def test_bad_backend_and_unreachable_scheduler(files, monkeypatch):
    from linkrisk.engine.nearest import distributed as dd

    monkeypatch.setattr(dd, "CONNECT_TIMEOUT", "2s")
    orig, rel = files
    with pytest.raises(linkrisk.LinkriskError, match="backend"):
        linkrisk.attack(orig, rel, "dbrl", backend="spark")
    with pytest.raises(linkrisk.LinkriskError, match="scheduler"):
        linkrisk.attack(orig.head(50), rel.head(50), "dbrl", backend="dask",
                        scheduler="tcp://127.0.0.1:1")
