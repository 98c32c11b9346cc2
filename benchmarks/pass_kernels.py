"""Float32 scoring kernels of gdbrl's threshold pass: pairs per second of the loop kernel
(``tiles32.scores32x2``, partial sums in memory) and of the register-blocked kernels of
``engine/matching/vec32.py`` (a 32-column block of the release in registers), on the same
data, in one run.

Each kernel scores every pair of an n × n problem (m attributes, standard normal, two
threads) against uniform thresholds and counts the rows with a hit; nothing is logged.
The register kernels run with the file padded to their attribute count M (8, 13 or 16).

    python benchmarks/pass_kernels.py [--n 100000] [--m 13] [--reps 2]
"""

from __future__ import annotations

import argparse
import time

import numba as nb
import numpy as np

from linkrisk.engine.matching import vec32
from linkrisk.engine.matching.tiles32 import FMA, scores32x2


@nb.njit(parallel=True, fastmath=FMA)
def _loop_kernel(xm2, nx, yt, ny, tau, T):
    n = xm2.shape[0]
    n_y = yt.shape[1]
    tile = 512
    hits = np.zeros(T, np.int64)
    for t in nb.prange(T):
        r0 = (n * t) // T
        r1 = (n * (t + 1)) // T
        a = np.empty(tile, np.float32)
        b = np.empty(tile, np.float32)
        h = 0
        for c0 in range(r0, r1, 128):
            nr = min(128, r1 - c0)
            for t0 in range(0, n_y, tile):
                w = min(tile, n_y - t0)
                for r in range(0, nr, 2):
                    i = c0 + r
                    r2 = min(r + 1, nr - 1)
                    hi, hj = scores32x2(a[:w], b[:w], xm2[i], xm2[c0 + r2], nx[i],
                                        nx[c0 + r2], ny[t0:t0 + w], yt, t0, w, tau[i],
                                        tau[c0 + r2], tau[t0:t0 + w])
                    h += hi + hj
        hits[t] = h
    return hits.sum()


@nb.njit(parallel=True)
def _register_kernel(M, xm2, nx, yt, ny, tau, taub, n_y, T):
    n = xm2.shape[0]
    hits = np.zeros(T, np.int64)
    for t in nb.prange(T):
        r0 = (n * t) // T
        r1 = (n * (t + 1)) // T
        rows = np.empty(128, np.int32)
        fm = np.empty(128, np.uint32)
        bm = np.empty(128, np.uint32)
        h = 0
        for c0 in range(r0, r1, 128):
            c1 = min(c0 + 128, r1)
            for j0 in range(0, n_y, vec32.BLOCK):
                h += vec32.block_hits(M, xm2, nx, tau, c0, c1, yt, ny, taub, j0, rows, fm,
                                      bm)
        hits[t] = h
    return hits.sum()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--m", type=int, default=13)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    n, m = a.n, a.m
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m)).astype(np.float32)
    y = rng.standard_normal((n, m)).astype(np.float32)
    xm2 = np.ascontiguousarray(-2 * x)
    yt = np.ascontiguousarray(y.T)
    nx = np.einsum("ij,ij->i", x, x).astype(np.float32)
    ny = np.einsum("ij,ij->i", y, y).astype(np.float32)
    # about 0.5 % of the pairs below a threshold (sample of the score distribution)
    tau = np.full(n, np.quantile(((x[:200, None] - y[None, :2000]) ** 2).sum(2), 0.005),
                  np.float32)
    T = nb.get_num_threads()
    cases = [("loop kernel (tiles32)", m, None)]
    for M in vec32.WIDTHS:
        if M >= m:
            cases.append((f"register block, M = {M}", M, M))
    print(f"{n:,} × {n:,} pairs, m = {m}, {T} threads; best of {a.reps}")
    print(f"{'kernel':<26} {'s':>7} {'G pairs/s':>10} {'× loop':>7}  hit flags (not comparable across kernels)")
    base = None
    for name, M, reg in cases:
        if reg is None:
            def run():
                return _loop_kernel(xm2, nx, yt, ny, tau, T)
            _loop_kernel(xm2[:300], nx[:300], yt[:, :600].copy(), ny[:600], tau[:600], T)
        else:
            xp = vec32.pad_rows(xm2, M)
            ytp, nyp, tbp = vec32.pad_columns(yt, ny, tau, M)

            def run(xp=xp, ytp=ytp, nyp=nyp, tbp=tbp, M=M):
                return _register_kernel(M, xp, nx, ytp, nyp, tau, tbp, n, T)
            _register_kernel(M, xp[:300], nx[:300], ytp, nyp, tau[:300], tbp, 600, T)
        best, h = np.inf, 0
        for _ in range(a.reps):
            t0 = time.perf_counter()
            h = run()
            best = min(best, time.perf_counter() - t0)
        rate = n * n / best / 1e9
        base = base or rate
        print(f"{name:<26} {best:7.3f} {rate:10.2f} {rate / base:7.2f}  {h:,}", flush=True)


if __name__ == "__main__":
    main()
