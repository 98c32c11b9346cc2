"""The k-NN pass of gdbrl: the sorted k-best lists of ``screened_knn.knn_screened`` (every
float32 score offered to a row's and a column's sorted list) against the threshold lists
of ``screened_knn.knn_thresholds`` (thresholds from a sample, hits appended to a log), with
faiss's flat k = 1 search of the same data as the yardstick, in the same process. Data as
in ``global_matching.py``: ``linkrisk.datasets.synthetic(n, 13, 0)`` released with
additive noise a = 0.25, both files standardized.

Per case: seconds (best of ``--repeats``), the ratio to faiss k = 1, and for the threshold
lists the mean list length and the share of lists cut at the width.

    python benchmarks/knn_lists.py --sizes 100000 --width 64
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(n: int, width: int, repeats: int, old: bool) -> list[str]:
    import faiss

    from linkrisk.datasets import synthetic
    from linkrisk.engine import standardize
    from linkrisk.engine.matching.screened_knn import knn_screened, knn_thresholds
    from linkrisk.engine.nearest import Pairwise

    orig = synthetic(n, 13, 0)
    sd = orig.std(ddof=1).to_numpy()
    rel = orig + np.random.default_rng(1).standard_normal(orig.shape) * (0.25 * sd)
    x, y = standardize(orig.to_numpy()), standardize(rel.to_numpy())
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    small = Pairwise.build(x[:2000], y[:2000], "sqeuclidean", root=True)
    knn_screened(small, 4)  # compile outside the timings
    knn_thresholds(small, 8)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)

    def flat():
        ix = faiss.IndexFlatL2(13)
        ix.add(y32)
        return ix.search(x32, 1)

    t_f, _ = _best(flat, repeats)
    t_t, nn = _best(lambda: knn_thresholds(pw, width), repeats)
    lens = (nn.fwd_idx >= 0).sum(1)
    rows = [f"{n:>9,} | faiss k = 1 {'':>24} | {t_f:8.2f} | {1:6.2f}",
            f"{n:>9,} | threshold lists, width {width:<3} {'':>9}| {t_t:8.2f} | "
            f"{t_t / t_f:6.2f} | mean length {lens.mean():.1f}, cut {np.mean(lens == width):.1%}"]
    if old:
        t_o, _ = _best(lambda: knn_screened(pw, width, width), repeats)
        rows.append(f"{n:>9,} | sorted k-best lists, k = {width:<3} {'':>7}| {t_o:8.2f} | "
                    f"{t_o / t_f:6.2f} | threshold lists {t_o / t_t:.1f}x faster")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100000")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--no-old", action="store_true", help="skip the sorted k-best lists")
    a = p.parse_args()
    print(f"{'n':>9} | {'pass':<36} | {'s':>8} | {'x faiss':>6} |")
    for n in (int(float(s)) for s in a.sizes.split(",")):
        for row in run(n, a.width, a.repeats, not a.no_old):
            print(row, flush=True)


if __name__ == "__main__":
    main()
