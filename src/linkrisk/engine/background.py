"""Compile the attack kernels in a background process after a cold command (issue 43).

A command run before numba has compiled linkrisk's kernels scans its small problems with
numpy instead (:mod:`linkrisk.engine.nearest.small`): no minute of compilation on a file
of a thousand records. Those kernels are then still uncompiled, and a command without the
small path (a larger file, or many searches) would pay the compilation after all. So when
a command took the small path for that reason (:func:`~.nearest.small.deferred`), the
command line starts ``linkrisk warmup --background`` as a detached process at the lowest
CPU priority: it compiles the attacks' kernels into numba's cache while the user reads the
result, and the next run loads them.

* At most one such process per cache: it holds :func:`lock_path` (its pid) while it
  compiles; a lock whose process is gone is stale and taken over.
* ``LINKRISK_BACKGROUND_COMPILE=0`` (or ``off``/``no``/``false``) turns it off; the tests
  do. The Python API does not start it by itself (a library should not spawn processes
  unasked): :func:`linkrisk.warmup_in_background` is the API's way, and the command line's.
* Trade-off: the process uses one core for about a minute (at nice 19, so it yields to
  any other work) and outlives the command that started it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: the environment variable that turns the background compilation off
ENV = "LINKRISK_BACKGROUND_COMPILE"

_OFF = {"0", "off", "no", "false"}


def enabled() -> bool:
    """False when :data:`ENV` says off."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def cache_dir() -> Path:
    """The folder numba caches linkrisk's kernels in: ``NUMBA_CACHE_DIR`` (linkrisk sets it
    for a read-only install, :func:`linkrisk.numba_cache_dir`), else ``__pycache__`` beside
    the sources."""
    where = os.environ.get("NUMBA_CACHE_DIR")
    if where:
        return Path(where)
    return Path(__file__).resolve().parents[1] / "__pycache__"


def lock_path() -> Path:
    """The lock of the background compilation of :func:`cache_dir` (in that folder when it
    can be written, else in the temporary folder, named after it)."""
    d = cache_dir()
    if os.access(d if d.is_dir() else d.parent, os.W_OK):
        return d / "linkrisk-warmup.lock"
    tag = hashlib.sha1(str(d).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"linkrisk-warmup-{tag}.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def holder(path: Path | None = None) -> int | None:
    """The pid of the live process holding the lock, else None (no lock, or a stale one)."""
    path = lock_path() if path is None else path
    try:
        pid = int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _alive(pid) else None


def running() -> bool:
    """Whether a background compilation of this cache is under way."""
    return holder() is not None


@contextlib.contextmanager
def hold_lock(path: Path | None = None) -> Iterator[bool]:
    """Take the lock for this process; yields False (and takes nothing) when another live
    process holds it. The lock is removed on leaving."""
    path = lock_path() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if holder(path) is not None:
                yield False
                return
            with contextlib.suppress(FileNotFoundError):  # stale: take it over
                path.unlink()
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        try:
            yield True
        finally:
            with contextlib.suppress(FileNotFoundError):
                if holder(path) == os.getpid():
                    path.unlink()
        return
    yield False


def start() -> int | None:
    """Start ``linkrisk warmup --background`` detached (its own session, no terminal,
    output discarded); its pid, or None when :data:`ENV` says off or one is running."""
    if not enabled() or running():
        return None
    proc = subprocess.Popen(
        [sys.executable, "-m", "linkrisk", "warmup", "--background"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd=tempfile.gettempdir(), close_fds=True)
    return proc.pid


def start_if_deferred() -> int | None:
    """:func:`start` when this process left kernels uncompiled (the small path took their
    problems: :func:`~.nearest.small.deferred`), else None."""
    # not imported: the CLI asks after every command, and a command that never searched
    # (``methods``, ``--help``) must not pay numba's import for the answer "no"
    small = sys.modules.get("linkrisk.engine.nearest.small")
    if small is None or not small.deferred():
        return None
    return start()
