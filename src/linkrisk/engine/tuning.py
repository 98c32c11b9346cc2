"""Kernel parameters chosen at run time from the CPU, in one place.

The compiled kernels block their work for the memory hierarchy and the vector unit: tiles
of columns that stay in the L1 data cache, rows sharing each tile, a prefetch distance.
Constants tuned on one processor lose on another (issue #44: a 48 KiB-L1 tile spills a
32 KiB L1). Here the processor is read once per process — its float32 vector width from
llvmlite's host features, its cache sizes from sysfs (else ``os.sysconf``, else common
defaults) — and each kernel family derives its parameters from it.

``LINKRISK_TUNING`` overrides any parameter, for tests and benchmarks: comma-separated
``name=value`` pairs (``LINKRISK_TUNING="tile=256,ahead=4"``; names are the fields of
:class:`MatchingTuning`). The parameters only move work between loops and caches, never
change the arithmetic: every kernel gives the same results bit for bit under every choice
(``tests/engine/matching/test_tuning.py`` runs them under each value of :data:`CHOICES`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

from ..errors import LinkriskError

#: the environment variable of the overrides
ENV = "LINKRISK_TUNING"
_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
#: what is assumed when the processor does not say (a common x86-64 core)
DEFAULT_L1D = 32 * 1024
DEFAULT_L2 = 1024 * 1024


# ---------------------------------------------------------------------------------------
# the processor
# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def vector_lanes() -> int:
    """float32 lanes of the widest vector register LLVM compiles for on this host: 16
    with AVX-512, 8 with AVX/AVX2, 4 otherwise (SSE, NEON)."""
    try:
        import llvmlite.binding as llvm

        feats = llvm.get_host_cpu_features()
    except (ImportError, RuntimeError):
        return 4
    if feats.get("avx512f"):
        return 16
    if feats.get("avx2") or feats.get("avx"):
        return 8
    return 4


def _parse_size(text: str) -> int | None:
    """A sysfs cache size ("48K", "2048K", "32M") in bytes; None when unreadable."""
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * mult if digits.isdigit() else None


def _sysfs_caches(root: Path = _CACHE_DIR) -> dict[tuple[int, str], int]:
    """{(level, type): bytes} of cpu0's caches from sysfs (empty when absent)."""
    out: dict[tuple[int, str], int] = {}
    for idx in sorted(root.glob("index*")):
        try:
            level = int((idx / "level").read_text())
            kind = (idx / "type").read_text().strip()
            size = _parse_size((idx / "size").read_text())
        except (OSError, ValueError):
            continue
        if size:
            out[(level, kind)] = size
    return out


def _sysconf(name: str) -> int | None:
    try:
        v = os.sysconf(name)
    except (ValueError, OSError, AttributeError):
        return None
    return v if v and v > 0 else None


@functools.lru_cache(maxsize=1)
def cache_sizes() -> tuple[int, int]:
    """(L1 data, L2) cache sizes in bytes of this processor's first core: sysfs, else
    ``os.sysconf``, else :data:`DEFAULT_L1D` / :data:`DEFAULT_L2`."""
    fs = _sysfs_caches()
    l1 = fs.get((1, "Data")) or _sysconf("SC_LEVEL1_DCACHE_SIZE") or DEFAULT_L1D
    l2 = fs.get((2, "Unified")) or _sysconf("SC_LEVEL2_CACHE_SIZE") or DEFAULT_L2
    return int(l1), int(l2)


def overrides() -> dict[str, int]:
    """The parameters set by :data:`ENV` (``name=value,…``), checked against
    :class:`MatchingTuning`'s fields."""
    text = os.environ.get(ENV, "").strip()
    names = {f.name for f in dataclasses.fields(MatchingTuning)}
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in names or not value.strip().isdigit() or int(value) < 0:
            raise LinkriskError(f"{ENV}: expected name=value with a name among "
                                f"{', '.join(sorted(names))} and a whole number ≥ 0, "
                                f"got {part!r}")
        out[name] = int(value)
    return out


def _pow2_fit(budget: int, per_item: int, lo: int, hi: int) -> int:
    """The largest power of two n in [lo, hi] with n·per_item ≤ budget (lo if none)."""
    n = lo
    while n * 2 <= hi and n * 2 * per_item <= budget:
        n *= 2
    return n


# ---------------------------------------------------------------------------------------
# gdbrl's candidate-list kernels (engine/matching: knn.py, screened_knn.py)
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MatchingTuning:
    """Blocking of the global attack's k-NN and certificate kernels.

    ``tile``: release columns per tile of the float32 passes (``screened_knn``), the m
    float32 attribute rows and two accumulators of a tile in 3/4 of L1d; ``chunk``:
    attacker rows scored against one tile before the next (more rows, fewer re-reads of
    the release; bounded by the rows' lists in L2); ``gate_block``: columns per block of
    the certificate's gated scan (``knn.scan_gated``: m float64 rows in 3/4 of L1d, at
    least 64 for the 32-column register blocks); ``scan_rows``: rows sharing each block
    of the gated scan; ``hit_sub``: columns per sub-block searched for hits (counted in
    two float32 vectors); ``ahead``:
    pairs between a scored pair and the partner row prefetched for a later one (a hint:
    memory latency over a pair's work, a few tens of pairs on any current core)."""

    tile: int
    chunk: int
    gate_block: int
    scan_rows: int
    hit_sub: int
    ahead: int


#: the values the test runs every kernel under (besides the host's own choice)
CHOICES: dict[str, tuple[int, ...]] = {
    "tile": (32, 96, 512, 2048),
    "chunk": (1, 3, 128),
    "gate_block": (64, 256, 1024),
    "scan_rows": (1, 5, 64),
    "hit_sub": (8, 32, 256),
    "ahead": (0, 1, 16, 64),
}


def _matching_for_host(m: int, l1: int, l2: int, lanes: int) -> MatchingTuning:
    """The derivation of :func:`matching`, from the attribute count, cache sizes and
    float32 vector lanes."""
    use = 3 * l1 // 4
    tile = _pow2_fit(use, 4 * m + 8, 64, 4096)
    # the chunk's rows (4·m bytes each) and their lists stay in a quarter of L2
    chunk = _pow2_fit(l2 // 4, 4 * m + 1024, 16, 128)
    gate = _pow2_fit(use, 8 * m, 64, 1024)
    # a hit sub-block is counted in two vectors
    return MatchingTuning(tile=tile, chunk=chunk, gate_block=gate, scan_rows=64,
                          hit_sub=max(16, 2 * lanes), ahead=16)


@functools.lru_cache(maxsize=64)
def _matching_cached(m: int, env: str) -> MatchingTuning:
    l1, l2 = cache_sizes()
    base = _matching_for_host(m, l1, l2, vector_lanes())
    over = overrides()
    if any(v < 1 for k, v in over.items() if k != "ahead"):
        raise LinkriskError(f"{ENV}: every parameter but 'ahead' must be ≥ 1")
    return dataclasses.replace(base, **over)


def matching(m: int) -> MatchingTuning:
    """The global attack's kernel parameters for files of ``m`` attributes on this host,
    with :data:`ENV`'s overrides (read at each call, so a test or benchmark may set it)."""
    return _matching_cached(int(m), os.environ.get(ENV, ""))
