"""The small-problem path: nearest sets of small problems with numpy, no compiled kernel.

On a small problem (n_a·n_b ≤ :data:`MAX_PAIRS`) the compiled kernels' first-call
compilation costs far more than the whole search, so the engine scores a dense block of
rows against all of B with numpy instead (:func:`small_sets`), and the first run of a
command is as fast as the tenth (issue 43).

Row blocks of :data:`BLOCK_ELEMENTS` scores run on a thread pool (numpy releases the GIL
in its loops; a forked child makes its own pool). The result is the kernel path's, bit for
bit (``tests/engine/nearest/test_small.py``):

* **Scores.** :func:`block_scores` computes every metric with the arithmetic of
  :func:`~.kernels.tile_scores`: elementwise float64 operations in the same order
  (attributes summed one after another from 0.0, no fused multiply-add: the kernels are
  compiled without ``fastmath``), the kernel metric's integer power by the same repeated
  squaring as numba's ``float ** int``, L∞'s ``if d > acc`` as ``fmax`` (a NaN difference
  is skipped). IEEE operations are correctly rounded, so the same operations in the same
  order give the same bits; the tie rule then sees the same scores.
* **Sets.** C(a) = {b : s(a, b) ≤ t(min)} with the rule's threshold
  (:func:`~.rules.tie_threshold_np`), NaN never tied, minimum ∞ when no score is a number.
* **Links.** The kernel keeps at most ``cap`` tied candidates per row and draws the link
  with :func:`~.rules.pick` among them; a row whose buffer overflowed is recounted and
  draws by reservoir sampling (:func:`~.rules.reservoir_step`). Which rows overflow is
  decided here exactly as the kernel's buffer would: always when |C| > cap, never when the
  first tied record in file order is the first minimum (the buffer then never lost a
  member of C, see :func:`_overflows`), and otherwise by replaying the kernel's buffer on
  that row.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba.core.registry import CPUDispatcher as Dispatcher

from .kernels import KERNEL, L1, LINF, MIXED, SQEUCLIDEAN, Pairwise
from .rules import Progress, pick_np, splitmix_np, tie_threshold_np

#: largest n_a·n_b the small path takes (see benchmarks/README.md, "Start-up")
MAX_PAIRS = 4_000_000

#: work (pairs × (attributes + 4)) the small path does in one process before it leaves the
#: problems to the kernels, compiling them: about 12 s of numpy scans on the development
#: machine (≈ 1 ns a unit), below the ~17 s of compiling the kernels ``assess`` uses, so
#: ``assess`` on a file of ~1,000 records (Census: 4.1·10⁹ units) compiles nothing, and a
#: command with many larger searches pays the compilation once rather than numpy's slower
#: scan every time (benchmarks/README.md, "Start-up")
RENT = 12_000_000_000

#: elements of one dense score block (rows × n_b doubles, plus one temporary), a thread's
#: work item: 2 MiB, large enough that numpy's per-call cost is small against it
BLOCK_ELEMENTS = 1 << 18

#: numba's ``float ** int`` falls back on ``pow`` above this exponent
_MAX_DEGREE = 0x10000

_mode = "auto"
_spent = 0
_deferred = False
_threads: ThreadPoolExecutor | None = None
_ready: set[str] = set()


def is_usable_for(pw: Pairwise, kernel: Callable) -> bool:
    """Whether :func:`small_sets` (or the dense costs of ``engine/matching/dense.py``)
    takes this problem instead of the compiled ``kernel`` (a numba dispatcher, or the
    Python function that calls it): n_a·n_b ≤ :data:`MAX_PAIRS`, the kernel metric's
    degree is one numba raises by repeated squaring, and, unless :func:`mode` says
    ``"always"``, the kernel is not compiled yet (:func:`kernel_ready`) and this process
    has done less than :data:`RENT` work on the small path. A warm run therefore runs the
    kernels as before; a cold one scans small problems with numpy instead of compiling."""
    if _mode == "off" or pw.x.shape[0] * pw.y.shape[0] > MAX_PAIRS:
        return False
    if pw.code == KERNEL and abs(pw.degree) > _MAX_DEGREE:
        return False
    if _mode == "always":
        return True
    take = _spent < RENT and not kernel_ready(kernel)
    if take:
        global _deferred
        _deferred = True
    return take


def deferred() -> bool:
    """Whether this process took the small path because a kernel was not compiled: the
    command line then compiles the kernels in the background for the next run
    (:mod:`linkrisk.engine.background`)."""
    return _deferred


def kernel_ready(kernel: Callable) -> bool:
    """Whether ``kernel`` has a compiled version: compiled or loaded by this process, or
    in numba's cache (its index file, which numba writes when it compiles a ``cache=True``
    kernel). For a Python function, whether one of the dispatchers it calls (by global
    name or from its closure, two levels deep) has one."""
    return any(d.signatures or _cached(d) for d in _dispatchers(kernel, 2))


def _dispatchers(fn: Callable, depth: int) -> list[Dispatcher]:
    if isinstance(fn, Dispatcher):
        return [fn]
    code = getattr(fn, "__code__", None)
    if code is None or depth == 0:
        return []
    refs = [fn.__globals__.get(n) for n in code.co_names]
    refs += [c.cell_contents for c in fn.__closure__ or ()]
    return [d for r in refs if callable(r) and r is not fn for d in _dispatchers(r, depth - 1)]


def _cached(d: Dispatcher) -> bool:
    try:
        path = d._cache._cache_file._index_path
    except AttributeError:  # not a cache=True kernel
        return False
    if path not in _ready:
        if not os.path.exists(path):
            return False
        _ready.add(path)
    return True


@contextlib.contextmanager
def mode(how: str) -> Iterator[None]:
    """Within the block the small path is ``"off"`` (every problem goes to the compiled
    kernels: ``linkrisk warmup`` compiles them on a small file, the tests compare both
    paths), ``"always"`` (every problem up to :data:`MAX_PAIRS`, compiled kernels or not)
    or ``"auto"`` (:func:`is_usable_for`)."""
    global _mode
    if how not in ("off", "always", "auto"):
        raise ValueError(f"small path mode {how!r}: use off, always or auto")
    before, _mode = _mode, how
    try:
        yield
    finally:
        _mode = before


def _int_power(x: np.ndarray, degree: int) -> np.ndarray:
    """x ** degree as numba computes a float to an integer power (repeated squaring)."""
    r = np.ones_like(x)
    a = x.copy()
    e = abs(degree)
    while e:
        if e & 1:
            r *= a
        e >>= 1
        if e:
            a *= a
    return 1.0 / r if degree < 0 else r


def block_scores(pw: Pairwise, r0: int, r1: int) -> np.ndarray:
    """Scores of rows r0…r1−1 of ``pw.x`` against every row of ``pw.y`` (a (r1−r0) × n_b
    array), with the bits of :func:`~.kernels.tile_scores`."""
    with np.errstate(all="ignore"):  # overflow and NaN as in the kernels, silently
        return _scores(pw, pw.x[r0:r1], pw.y, pw.kxx[r0:r1, None], pw.kyy, outer=True)


def pair_scores(pw: Pairwise, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Scores of the pairs (x[ia[p]], y[ib[p]]) (indices ≥ 0), the bits of
    :func:`~.kernels.pair_score`."""
    with np.errstate(all="ignore"):
        return _scores(pw, pw.x[ia], pw.y[ib], pw.kxx[ia], pw.kyy[ib], outer=False)


def _scores(pw: Pairwise, a: np.ndarray, b: np.ndarray, kx: np.ndarray, ky: np.ndarray,
            *, outer: bool) -> np.ndarray:
    """Every row of ``a`` against every row of ``b`` (``outer``), else row p against row
    p; ``kx``/``ky``: their K(x,x)/K(y,y), shaped to broadcast as the scores."""
    m = a.shape[1]
    acc = np.empty((a.shape[0], b.shape[0]) if outer else a.shape[0])
    tmp = np.empty_like(acc)
    code = pw.code
    # the kernels sum from 0.0; 0.0 + t is t for a first term (a−b)² or |a−b| (never
    # −0.0), so that term is written into acc directly: no zero fill, one addition fewer
    direct = m > 0 and (code in (SQEUCLIDEAN, L1)
                        or (code == MIXED and pw.tables.size[0] == 0))
    if not direct:
        acc.fill(0.0)
    for j in range(m):
        aj, bj = (a[:, j:j + 1] if outer else a[:, j]), b[:, j]
        if code == MIXED and pw.tables.size[j] > 0:
            size = pw.tables.size[j]
            base = pw.tables.off[j] + aj.astype(np.int64) * size
            acc += pw.tables.flat[base + bj.astype(np.int64)]
            continue
        if code == KERNEL:
            np.multiply(aj, bj, out=tmp)
            acc += tmp
            continue
        first = direct and j == 0
        d = acc if first else tmp
        np.subtract(aj, bj, out=d)
        if code in (SQEUCLIDEAN, MIXED):
            d *= d
        else:  # L1, LINF
            np.abs(d, out=d)
        if code == LINF:  # acc = d where d > acc (a NaN d is skipped, as in the kernel)
            np.fmax(acc, d, out=acc)
        elif not first:
            acc += d
    if code == KERNEL:
        acc += 1.0
        k = _int_power(acc, pw.degree)
        k *= 2.0
        acc = kx + ky
        acc -= k
    return acc


def small_sets(pw: Pairwise, truth: np.ndarray, rid: np.ndarray, *, rtol: float, seed: int,
               cap: int, progress: Progress | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Minimum score, |C(a)|, the true image's score (∞: none) and the link of every row,
    as :func:`~.sets.exact_sets`'s kernels give them (``truth``/``rid`` per row of
    ``pw.x``; ``cap`` is the kernels' tie buffer, which decides how a link is drawn).
    None when a minimum is −∞ (its tie threshold is NaN, a case left to the kernels)."""
    n_a, n_b = pw.x.shape[0], pw.y.shape[0]
    out_min = np.empty(n_a)
    out_count = np.empty(n_a, np.int64)
    out_ts = np.full(n_a, np.inf)
    out_link = np.empty(n_a, np.int64)
    global _spent
    _spent += n_a * n_b * (pw.x.shape[1] + 4)
    # blocks of at most BLOCK_ELEMENTS scores, as many as a multiple of the threads
    threads = _thread_count()
    blocks = -(-max(1, n_a * n_b // BLOCK_ELEMENTS) // threads) * threads
    rows = max(1, min(n_a, BLOCK_ELEMENTS // n_b, -(-n_a // blocks)))

    def one(r0: int) -> bool:
        r1 = min(r0 + rows, n_a)
        s = block_scores(pw, r0, r1)
        return _settle_block(s, truth[r0:r1], rid[r0:r1], rtol, seed, cap, out_min[r0:r1],
                             out_count[r0:r1], out_ts[r0:r1], out_link[r0:r1])

    # blocks write disjoint rows, and numpy releases the GIL in its loops: the blocks run
    # on the cores the kernels would use (each row's result does not depend on the order)
    starts = range(0, n_a, rows)
    done = map(one, starts) if len(starts) < 2 else _pool().map(one, starts)
    for r0, fine in zip(starts, done, strict=True):
        if not fine:
            return None
        if progress is not None:
            progress(min(r0 + rows, n_a), n_a)
    return out_min, out_count, out_ts, out_link


def _thread_count() -> int:
    """As many threads as numba's kernels would use (``NUMBA_NUM_THREADS``)."""
    from numba import config

    return max(1, int(config.NUMBA_NUM_THREADS))


def _pool() -> ThreadPoolExecutor:
    """The small path's threads (:func:`_thread_count`), made once per process."""
    global _threads
    if _threads is None:
        _threads = ThreadPoolExecutor(_thread_count(), thread_name_prefix="linkrisk-small")
    return _threads


def _forget_pool() -> None:
    """In a forked child: the parent's pool has no thread here (using it would wait
    forever), so the child makes its own."""
    global _threads
    _threads = None


os.register_at_fork(after_in_child=_forget_pool)


def _settle_block(s: np.ndarray, truth: np.ndarray, rid: np.ndarray, rtol: float,
                  seed: int, cap: int, out_min: np.ndarray, out_count: np.ndarray,
                  out_ts: np.ndarray, out_link: np.ndarray) -> bool:
    """The tie rule on a block of score rows, written into the ``out_*`` slices; False
    (nothing written) when a minimum is −∞. Most rows have one record in C(a), their
    first minimum, which a second-smallest score above the threshold proves: two cheap
    row minima instead of a comparison and a count over the block. Only the other rows
    are compared and listed."""
    nr, n_b = s.shape
    rr = np.arange(nr)
    arg = s.argmin(axis=1)  # the first minimum; the first NaN on a row that has one
    best = s[rr, arg]
    nan = np.flatnonzero(np.isnan(best))
    for r in nan:  # NaN is never a minimum; a row of NaN only has minimum ∞ and no set
        row = s[r][~np.isnan(s[r])]
        best[r] = row.min() if row.size else np.inf
    if np.isneginf(best).any():  # a −∞ score is its row's minimum
        return False
    thr = tie_threshold_np(best, rtol)
    held = s[rr, arg]
    s[rr, arg] = np.inf
    several = s.min(axis=1) <= thr  # a second record in C(a) (false on NaN rows)
    s[rr, arg] = held
    several[nan] = True  # there ``arg`` is a NaN's position, not C's member
    count = np.ones(nr, np.int64)
    link = arg.astype(np.int64)
    many = np.flatnonzero(several)
    if many.size:
        _settle_many(s[many], thr[many], best[many], rid[many], rtol, seed, cap,
                     count, link, many)
    ok = (truth >= 0) & (truth < n_b)
    out_ts[ok] = s[np.flatnonzero(ok), truth[ok]]
    out_min[:] = best
    out_count[:] = count
    out_link[:] = link
    return True


def _settle_many(s: np.ndarray, thr: np.ndarray, best: np.ndarray, rid: np.ndarray,
                 rtol: float, seed: int, cap: int, count: np.ndarray, link: np.ndarray,
                 where: np.ndarray) -> None:
    """|C(a)| and the link of the rows ``where`` (several records in C(a), or a NaN
    first minimum), drawn as the kernel draws them, into ``count`` and ``link``."""
    rows, cols = np.nonzero(s <= thr[:, None])
    cnt = np.bincount(rows, minlength=s.shape[0])
    start = np.cumsum(cnt) - cnt
    got = np.full(s.shape[0], -1, np.int64)
    has = cnt > 0
    got[has] = cols[start[has] + pick_np(seed, rid[has], cnt[has])]
    over = np.flatnonzero(_overflows(s, best, cnt, start, cols, rtol, cap))
    if over.size:  # the kernel's recount: reservoir sampling over C in file order
        got[over] = cols[start[over] + _reservoir(cnt[over], seed, rid[over])]
    count[where] = cnt
    link[where] = got


def _overflows(s: np.ndarray, best: np.ndarray, count: np.ndarray, start: np.ndarray,
               cols: np.ndarray, rtol: float, cap: int) -> np.ndarray:
    """Which rows the kernel flags as overflowed (recounted). Always when |C| > cap. When
    |C| ≤ cap and the first member of C in file order is the first minimum k*, no member
    of C was ever lost (the buffer only holds records of C before k* and after it) and an
    earlier loss was cleared at k* (its old minimum is above t(min)): never. Otherwise
    (a near-tie minimum reached after another member of C) the buffer is replayed."""
    over = count > cap
    has = (count > 0) & ~over
    first = np.full(s.shape[0], -1, np.int64)
    first[has] = cols[start[has]]
    doubt = np.flatnonzero(has)
    doubt = doubt[s[doubt, first[doubt]] != best[doubt]]
    for r in doubt:
        over[r] = _replay(s[r].tolist(), rtol, cap)
    return over


def _replay(row: list[float], rtol: float, cap: int) -> bool:
    """The kernel's buffer on one row of scores in file order (kernels.nearest_block,
    ``new_minimum`` and ``buffer_candidate``): whether it ends flagged as overflowed.
    Python floats are IEEE doubles, so t(x) = x + rtol·|x| has the rule's bits."""
    cur = thr = float("inf")
    buf: list[float] = []
    over = False
    for x in row:
        if x <= thr:
            if x < cur:
                old, cur = cur, x
                thr = cur + rtol * abs(cur)
                buf = [y for y in buf if y <= thr]
                if over and old > thr:
                    over = False
            if len(buf) < cap:
                buf.append(x)
            else:
                over = True
    return over


def _reservoir(count: np.ndarray, seed: int, rid: np.ndarray) -> np.ndarray:
    """Position in C (file order) of the kernel's reservoir draw (rules.reservoir_start,
    reservoir_step) for rows with ``count`` tied records, all rows stepped together."""
    order = np.argsort(-count, kind="stable")
    cnt = count[order]
    state = splitmix_np(seed, rid[order])
    pos = np.zeros(cnt.size, np.int64)
    for c in range(1, int(cnt[0]) + 1):
        n = int(np.searchsorted(-cnt, -c, side="right"))  # rows with count ≥ c
        st = splitmix_np(state[:n], c)
        state[:n] = st
        pos[:n][st % np.uint64(c) == 0] = c - 1
    out = np.empty_like(pos)
    out[order] = pos
    return out
