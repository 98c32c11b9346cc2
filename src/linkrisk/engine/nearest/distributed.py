"""Dask backend of the nearest-set engine: the attacker's file is cut into row blocks,
each block's candidate sets are computed on a Dask worker against the released file
(scattered to every worker once), and the blocks are concatenated in order.

Results are bit-identical to the single-process engine: each row's candidate set depends
only on that row and the released file, and its tie-breaking link is seeded by its global
row id (``row_ids``), not by its position in a block.

With blocking (:func:`linkrisk.engine.blocking.blocked_nearest_sets`), the large blocks
are the tasks (:func:`dask_map_sets`), each one block against its released records.

Only the nearest-set attacks run distributed (dbrl and its variants, Mahalanobis, kernel,
rbrl_*, categorical/mixed distances). The global attack (gdbrl) solves one assignment
problem over all records — its candidate graph and dual certificate live in one process —
so it stays on one machine; prl and rsrl also run locally.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import LinkriskError
from .rules import Progress
from .search import nearest_sets
from .sets import NearestSets

#: how long to wait for a scheduler before giving up
CONNECT_TIMEOUT = "20s"


def _block(a: np.ndarray, b: np.ndarray, truth: np.ndarray, rid: np.ndarray,
           kw: dict[str, Any]) -> NearestSets:
    return nearest_sets(a, b, truth=truth, row_ids=rid, **kw)


def client_for(scheduler: Any = None):
    """(client, owned): an existing ``distributed.Client``, one connected to the scheduler
    address, the current default client, or a new local cluster (owned: close it after)."""
    try:
        from distributed import Client, get_client
    except ImportError as exc:
        raise LinkriskError("backend='dask' needs dask.distributed: "
                            "pip install 'linkrisk[dask]'") from exc
    if isinstance(scheduler, Client):
        return scheduler, False
    if scheduler:
        try:
            return Client(str(scheduler), timeout=CONNECT_TIMEOUT), True
        except OSError as exc:
            raise LinkriskError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    try:
        return get_client(), False
    except ValueError:
        return Client(processes=True, dashboard_address=None), True


def _gather(futs: dict[Any, int], total: int, progress: Progress | None
            ) -> dict[int, NearestSets]:
    """The tasks' results by their key, as they complete (``progress`` counts rows)."""
    from distributed import as_completed

    parts: dict[int, NearestSets] = {}
    done = 0
    for f in as_completed(list(futs)):
        parts[futs[f]] = res = f.result()
        done += res.count.shape[0]
        if progress is not None:
            progress(done, total)
    return parts


def dask_nearest_sets(a: np.ndarray, b: np.ndarray, *, truth: np.ndarray | None = None,
                      scheduler: Any = None, block_rows: int | None = None,
                      progress: Progress | None = None, row_ids: np.ndarray | None = None,
                      **kw: Any) -> NearestSets:
    """:func:`~linkrisk.engine.nearest_sets` computed on a Dask cluster, block by block.
    ``scheduler``: a ``distributed.Client``, a scheduler address (``tcp://host:8786``) or
    None (the current client, else a new local cluster). ``block_rows``: attacker rows per
    task (default: about four tasks per worker thread, at least 1024 rows). ``row_ids``
    (default 0..n_a−1) seed each row's tie breaking, as in the local engine."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    n_a = a.shape[0]
    truth = (np.full(n_a, -1, np.int64) if truth is None
             else np.ascontiguousarray(truth, dtype=np.int64))
    rid = (np.arange(n_a, dtype=np.int64) if row_ids is None
           else np.ascontiguousarray(row_ids, dtype=np.int64))
    client, owned = client_for(scheduler)
    try:
        threads = max(1, sum(client.nthreads().values()))
        rows = int(block_rows or max(1024, math.ceil(n_a / (4 * threads))))
        bf = client.scatter(b, broadcast=True)
        futs = {}
        for r0 in range(0, n_a, rows):
            r1 = min(r0 + rows, n_a)
            f = client.submit(_block, a[r0:r1], bf, truth[r0:r1],
                              rid[r0:r1], kw, pure=False)
            futs[f] = r0
        parts = _gather(futs, n_a, progress)
    finally:
        if owned:
            client.close()
    order = [parts[k] for k in sorted(parts)]
    return NearestSets(*(np.concatenate([getattr(p, f) for p in order])
                         for f in ("min_score", "count", "true_in_set", "true_score", "link")))


def dask_map_sets(problems: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                  *, scheduler: Any = None, progress: Progress | None = None,
                  **kw: Any) -> list[NearestSets]:
    """:func:`~linkrisk.engine.nearest_sets` of independent sub-problems (the blocks of a
    blocked search: ``(a, b, truth, row_ids)`` each, ``kw`` common), one Dask task each;
    results in the order of ``problems``. ``progress(done, total)`` counts attacker rows."""
    client, owned = client_for(scheduler)
    try:
        futs = {}
        total = 0
        for i in range(len(problems)):
            a, b, truth, rid = problems[i]
            total += a.shape[0]
            futs[client.submit(_block, a, b, truth, rid, kw, pure=False)] = i
        parts = _gather(futs, total, progress)
    finally:
        if owned:
            client.close()
    return [parts[i] for i in range(len(problems))]
