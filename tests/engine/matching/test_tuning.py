"""The run-time kernel parameters of engine/tuning.py (issue #44): how they are derived
from the processor, the LINKRISK_TUNING override, and gdbrl's candidate-list kernels run
under every choice of every parameter, compared bit for bit with the host's choice."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from linkrisk.engine import tuning
from linkrisk.engine.nearest import Pairwise
from linkrisk.errors import LinkriskError

K = importlib.import_module("linkrisk.engine.matching.knn")  # the module, not knn()
S = importlib.import_module("linkrisk.engine.matching.screened_knn")

FIELDS = ("fwd_idx", "fwd_score", "bwd_idx", "bwd_score", "fwd_bound", "bwd_bound")


# ---------------------------------------------------------------------------------------
# the parameters
# ---------------------------------------------------------------------------------------
def test_host_derivation_fits_the_caches():
    # a 48 KiB L1 and 2 MiB L2 with 13 attributes: the figures the kernels were tuned to
    t = tuning._matching_for_host(13, 48 * 1024, 2048 * 1024, 16)
    assert (t.tile, t.chunk, t.gate_block, t.scan_rows, t.hit_sub, t.ahead) == (
        512, 128, 256, 64, 32, 16)
    # a 32 KiB L1: half the tile and gate block, so that they stay in it
    s = tuning._matching_for_host(13, 32 * 1024, 512 * 1024, 8)
    assert (s.tile, s.gate_block, s.hit_sub) == (256, 256 // 2, 16)
    for m in (1, 5, 13, 16, 40, 200):
        for l1 in (16 << 10, 32 << 10, 48 << 10, 1 << 20):
            t = tuning._matching_for_host(m, l1, 1 << 20, 8)
            assert t.tile & (t.tile - 1) == 0 and 64 <= t.tile <= 4096
            assert t.tile * (4 * m + 8) <= 3 * l1 // 4 or t.tile == 64
            assert t.gate_block >= 64 and t.gate_block % 32 == 0


def test_processor_is_read(tmp_path):
    assert tuning.vector_lanes() in (4, 8, 16)
    l1, l2 = tuning.cache_sizes()
    assert 4096 <= l1 <= l2
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "2048K"), (3, "Unified", "32M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert tuning._sysfs_caches(tmp_path) == {(1, "Data"): 48 << 10,
                                              (1, "Instruction"): 32 << 10,
                                              (2, "Unified"): 2 << 20, (3, "Unified"): 32 << 20}
    assert tuning._sysfs_caches(tmp_path / "absent") == {}


def test_override(monkeypatch):
    monkeypatch.setenv(tuning.ENV, "tile=96, ahead=0")
    t = tuning.matching(13)
    assert t.tile == 96 and t.ahead == 0
    monkeypatch.delenv(tuning.ENV)
    assert tuning.matching(13).tile != 96 or tuning.cache_sizes()[0] < 8192
    for bad in ("tile", "tile=x", "width=3", "chunk=0", "tile=-2"):
        monkeypatch.setenv(tuning.ENV, bad)
        with pytest.raises(LinkriskError, match=tuning.ENV):
            tuning.matching(13)


# ---------------------------------------------------------------------------------------
# the kernels under every choice
# ---------------------------------------------------------------------------------------
def _files(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A masked file pair with ties (integer values, repeated records)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, (700, m)).astype(float)
    y = np.concatenate([x[:500] + rng.integers(-1, 2, (500, m)),
                        rng.integers(0, 5, (237, m)).astype(float)])
    return x, y


def _scan_case(pw: Pairwise, seed: int) -> tuple:
    """Arguments of scan_gated with rows that scan prefixes of different lengths."""
    rng = np.random.default_rng(seed)
    n_y = pw.y.shape[0]
    med = float(np.median(K.pair_costs(pw, rng.integers(0, pw.x.shape[0], 2000),
                                       rng.integers(0, n_y, 2000))))
    off = rng.integers(0, 4, n_y) * med / 3   # tied offsets
    key = rng.standard_normal(n_y)
    rows = rng.choice(pw.x.shape[0], 150)
    theta = rng.uniform(-0.45, 0.0, rows.size) * med
    gate = np.quantile(off, rng.uniform(0.0, 0.6, rows.size))
    gate[::7] = -1.0
    return pw, rows, off, key, theta, gate


def _outputs(m: int) -> dict[str, np.ndarray]:
    """Every candidate-list kernel's output on one file pair, flattened by name."""
    x, y = _files(m, m)
    pw = Pairwise.build(x, y, "sqeuclidean", root=True)
    out: dict[str, np.ndarray] = {}
    runs = {"knn": lambda: K.knn(pw, 9),
            "knn_l1": lambda: K.knn(Pairwise.build(x, y, "l1"), 7, 0),
            "screened": lambda: S.knn_screened(pw, 9),
            "thresholds": lambda: S.knn_thresholds(pw, 12)}
    for name, run in runs.items():
        nn = run()
        out.update({f"{name}.{f}": getattr(nn, f) for f in FIELDS if getattr(nn, f) is not None})
    for screened in (False, True):
        scan, nxt = K.scan_gated(*_scan_case(pw, m), cap=4, screened=screened)
        out.update({f"scan{int(screened)}.{f}": getattr(scan, f)
                    for f in ("min", "count", "idx", "val")}, **{f"scan{int(screened)}.nxt": nxt})
    rng = np.random.default_rng(m)
    ia, ib = rng.integers(-1, x.shape[0], 3000), rng.integers(-1, y.shape[0], 3000)
    out["pairs"] = K.pair_costs(pw, ia, ib)
    return out


def _choices() -> list[str]:
    """One LINKRISK_TUNING setting per value of each parameter, and two with all of them
    at their smallest and largest."""
    one = [f"{k}={v}" for k, vals in tuning.CHOICES.items() for v in vals]
    low = ",".join(f"{k}={min(v)}" for k, v in tuning.CHOICES.items())
    high = ",".join(f"{k}={max(v)}" for k, v in tuning.CHOICES.items())
    return one + [low, high]


@pytest.mark.parametrize("m,register", [(13, True), (13, False), (5, True), (20, True)])
def test_kernels_give_the_same_bits_under_every_choice(monkeypatch, m, register):
    """knn (float64 lists), knn_screened, knn_thresholds, scan_gated (float64 and float32
    pre-tests) and pair_costs under each parameter choice: every output array equal, bit
    for bit, to the host's choice. ``register``: the float32 passes on the register
    kernels of vec32 (m ≤ 16) or the loop kernel; m = 20 takes the loop kernel anyway."""
    monkeypatch.setattr(S, "REGISTER_KERNEL", register)
    monkeypatch.setattr(K, "SCAN_REGISTER", register)
    monkeypatch.delenv(tuning.ENV, raising=False)
    want = _outputs(m)
    assert want["scan1.count"].sum() > 0 and (want["scan1.count"] > 4).any()
    for setting in _choices():
        monkeypatch.setenv(tuning.ENV, setting)
        got = _outputs(m)
        assert got.keys() == want.keys()
        for name, w in want.items():
            np.testing.assert_array_equal(got[name], w, err_msg=f"{setting}: {name}")
