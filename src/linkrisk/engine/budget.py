"""The engine's working memory: the default budget and the one cost model its planners use.

**Default.** ``DEFAULT_MEMORY_BUDGET`` is chosen once per process from the machine:
``FRACTION`` (1/8) of the memory available when linkrisk is imported, rounded down to a
whole MiB and clamped to [``FLOOR``, ``CAP``] = [256 MiB, 4 GiB]; 512 MiB when the
available memory cannot be read. The environment variable ``LINKRISK_MEMORY`` (e.g.
``2GiB``) replaces the whole rule. Available memory: ``psutil`` when installed, else
``MemAvailable`` of ``/proc/meminfo``, else the free physical pages of ``os.sysconf``.

**Cost model.** Every planner that sizes something by the budget asks this module for
the bytes one item of it costs (one block row, one list entry, one graph edge, one
matrix cell) and takes ``budget // bytes`` items. What the budget bounds, and what it
does not (the inputs, gdbrl's candidate graph, the per-record outputs), is in
docs/methods.md, "Working memory". Results never depend on the budget, only time does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

MiB = 2**20
GiB = 2**30
#: the default is 1/FRACTION of the available memory …
FRACTION = 8
#: … but at least FLOOR and at most CAP bytes
FLOOR = 256 * MiB
CAP = 4 * GiB
#: the default when the available memory cannot be read
FALLBACK = 512 * MiB
#: environment variable that sets the default budget (any size ``--memory`` reads)
ENV = "LINKRISK_MEMORY"


def available_memory() -> int | None:
    """Bytes of memory available to a new process now (None when unknown): psutil's
    ``virtual_memory().available``, else ``MemAvailable`` of /proc/meminfo, else free
    physical pages × page size (``os.sysconf``)."""
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:  # not installed, or no such figure on this system
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def budget_from(available: int | None) -> int:
    """The default rule: available / FRACTION rounded down to a whole MiB, clamped to
    [FLOOR, CAP]; FALLBACK when ``available`` is None."""
    if available is None or available <= 0:
        return FALLBACK
    return int(min(CAP, max(FLOOR, available // FRACTION // MiB * MiB)))


def resolve_default(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(budget in bytes, where it comes from): ``LINKRISK_MEMORY`` in ``environ`` (default
    ``os.environ``) when set, else :func:`budget_from` of :func:`available_memory`."""
    env = (os.environ if environ is None else environ).get(ENV, "").strip()
    if env:
        from ..options import parse_size  # a leaf module (it imports linkrisk.errors only)
        return int(parse_size(env)), f"{ENV}={env}"
    available = available_memory()
    if available is None:
        return FALLBACK, "available memory unknown"
    return (budget_from(available),
            f"1/{FRACTION} of available memory within {FLOOR // MiB} MiB–{CAP // GiB} GiB")


def format_size(nbytes: int) -> str:
    """``nbytes`` as ``--memory`` reads it back exactly: ``"2GiB"``, ``"2731MiB"`` or a
    number of bytes."""
    for unit, size in (("GiB", GiB), ("MiB", MiB)):
        if nbytes % size == 0 and nbytes >= size:
            return f"{nbytes // size}{unit}"
    return str(int(nbytes))


#: the default budget of this process, bytes (resolved once, at import)
DEFAULT_MEMORY_BUDGET, _SOURCE = resolve_default()


def default_memory_budget() -> int:
    """The process's default budget in bytes (``DEFAULT_MEMORY_BUDGET``)."""
    return DEFAULT_MEMORY_BUDGET


def describe_default() -> str:
    """Where the default budget comes from and its value, for ``--help``: e.g.
    ``"1/8 of available memory within 256 MiB–4 GiB, here 2.6 GiB"``."""
    b = DEFAULT_MEMORY_BUDGET
    here = f"{b / GiB:.1f} GiB" if b >= GiB else f"{b // MiB} MiB"
    return f"{_SOURCE}, here {here}"


# ---------------------------------------------------------------------------------------
# the cost model: bytes per item of everything the budget sizes
# ---------------------------------------------------------------------------------------
def block_row_bytes(m: int, cap: int) -> int:
    """Exact nearest-set kernel, one attacker row of a block: its outputs (5 words) and
    tie buffers (2·cap words) and its m attribute values."""
    return 8 * (5 + 2 * cap) + 8 * m


def screen_row_bytes(m: int) -> int:
    """faiss-screened nearest sets, one query row: a float32 copy (4·m) and the
    best/second minima, labels and parts (64)."""
    return 4 * m + 64


def dense_matrix_bytes(n_a: int, n_b: int) -> int:
    """gdbrl's dense solver: the float64 n_a × n_b cost matrix and scipy's working copy,
    16 bytes a cell."""
    return 16 * n_a * n_b


def dense_assignment_bytes(n_a: int, n_b: int) -> int:
    """prl's one-to-one assignment: the cost matrix and the solver's column indices,
    16 bytes a cell, 24 when n_a > n_b (a transposed copy)."""
    return (24 if n_a > n_b else 16) * n_a * n_b


def transport_bytes(n_src: int, n_snk: int) -> int:
    """The pattern transport's dense cost matrix, 8 bytes a (source, sink) pair."""
    return 8 * n_src * n_snk


#: gdbrl's explicit restricted graph: bytes per edge while it is built (the pair lists,
#: their costs and the CSR copies)
GRAPH_EDGE_BYTES = 48


def knn_entry_bytes(n_r: int, n_c: int, screened: bool, threads: int,
                    list_mean: float) -> int:
    """gdbrl's k-NN lists, one unit of list length K over all rows. Exact lists: 16 bytes
    per entry for the forward lists, one backward copy per thread and the merged one;
    screened lists: 12 per entry in both directions and the backward log (``list_mean``
    × the width, 8 bytes an entry and 4 more while it is grouped)."""
    if screened:
        return 12 * (n_r + n_c) + int(12 * list_mean * n_c)
    return 16 * (n_r + (threads + 1) * n_c)
