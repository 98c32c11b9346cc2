"""Jobs of the web app: each runs in its own spawned worker process, never in the web
server's thread, so the page stays responsive and a cancel can stop it at once.

- A worker is started ahead of need and warms up while the server is idle (it loads the
  numeric kernels, :func:`linkrisk.app.tasks.warm_up`), so the first job does not pay for
  interpreter start-up or kernel compilation.
- At most ``max_jobs`` jobs run at once; the others wait in a queue whose position each
  job reports.
- A worker leads its own process group: cancelling a job (or stopping the server) kills
  the group, and the job's folder is removed, so no partial file is left.
- A failing job reports the CLI's one-line message (:class:`~linkrisk.errors.LinkriskError`);
  any other exception is a bug whose traceback goes to the server log, not to the page.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing as mp
import os
import secrets
import shutil
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

log = logging.getLogger("linkrisk.app")

#: the message a page shows for a bug (the traceback is in the server log)
INTERNAL = "internal error: the job failed unexpectedly (the server log has the details)"


def _worker_main(conn: Connection, warm: bool) -> None:
    """A worker process: warm up, then run the jobs the server sends, one at a time, until
    it sends None (or kills the process: a cancel)."""
    try:
        os.setpgrp()  # its own group: a cancel kills it with any children it starts
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C at the server stops it, not us
    from linkrisk.errors import LinkriskError

    from . import tasks

    if warm:
        try:
            tasks.warm_up()
        except Exception:  # warming is an optimisation only
            log.debug("warm-up failed", exc_info=True)

    def send(payload: dict[str, Any]) -> None:
        conn.send(("progress", payload))

    try:
        conn.send(("ready", None))
        while True:
            msg = conn.recv()
            if msg is None:
                return
            kind, args, out = msg
            try:
                result = tasks.TASKS[kind](args, Path(out), send)
                conn.send(("done", result))
            except LinkriskError as exc:
                conn.send(("error", str(exc)))
            except MemoryError:
                conn.send(("error", "out of memory; lower the memory budget or link fewer "
                                    "records"))
            except Exception:  # reported to the server log
                conn.send(("crash", traceback.format_exc()))
    except (EOFError, OSError, KeyboardInterrupt):
        return


class _Worker:
    def __init__(self, ctx: Any, warm: bool = True) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, warm), daemon=False,
                                name="linkrisk-app-worker")
        self.proc.start()
        child.close()
        self.ready = False
        self._kill_lock = threading.Lock()
        self._killed = False

    def kill(self) -> None:
        """Stop the worker and its process group. Idempotent and thread-safe: a cancel (web
        thread) and the job loop (which sees the pipe close) may both call it, and closing
        the pipe twice would close a file descriptor that another object may already reuse."""
        with self._kill_lock:
            if self._killed:
                return
            self._killed = True
            self._kill()

    def _kill(self) -> None:
        pid = self.proc.pid
        if pid is not None and self.proc.is_alive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(pid, sig)
                except (ProcessLookupError, PermissionError, OSError):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
                self.proc.join(timeout=2 if sig == signal.SIGTERM else 5)
                if not self.proc.is_alive():
                    break
        try:
            os.killpg(pid, signal.SIGKILL)  # children the job started
        except (TypeError, OSError):
            pass
        try:
            self.conn.close()
        except OSError:
            pass


@dataclass
class Job:
    id: str
    session: str
    kind: str
    args: dict[str, Any]
    out: Path
    label: str = ""
    state: str = "queued"  # queued, running, done, error, cancelled
    progress: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    worker: _Worker | None = None
    cancelling: bool = False  # a cancel is killing the worker and removing the folder

    def public(self, position: int | None = None) -> dict[str, Any]:
        now = time.time()
        return {"id": self.id, "kind": self.kind, "label": self.label, "state": self.state,
                "progress": self.progress, "error": self.error, "position": position,
                "result": self.result if self.state == "done" else None,
                "seconds": round((self.finished or now) - (self.started or now), 2)}


class JobManager:
    """Queue, run, watch and cancel jobs on a pool of at most ``max_jobs`` warm worker
    processes (a worker runs one job at a time; a cancelled job's worker is killed and a
    fresh one warms up in its place)."""

    def __init__(self, max_jobs: int = 2, *, warm: bool = True) -> None:
        self.max_jobs = max(1, int(max_jobs))
        self.warm = warm
        self._ctx = mp.get_context("spawn")
        self._lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self._queue: deque[str] = deque()
        self._workers: list[_Worker] = []
        self._busy: dict[_Worker, Job] = {}
        self._stop = threading.Event()
        self._wake_r, self._wake_w = self._ctx.Pipe(duplex=False)
        self._thread = threading.Thread(target=self._loop, name="linkrisk-jobs", daemon=True)
        self._counter = itertools.count(1)

    def start(self) -> None:
        with self._lock:
            self._workers.append(_Worker(self._ctx, self.warm))
        self._thread.start()

    # -------------------------------------------------------------------- API
    def submit(self, session: str, kind: str, args: dict[str, Any], out: Path,
               label: str = "") -> Job:
        job = Job(f"{next(self._counter)}-{secrets.token_hex(6)}", session, kind, args, out,
                  label or kind)
        out.mkdir(mode=0o700, parents=True, exist_ok=False)
        with self._lock:
            self.jobs[job.id] = job
            self._queue.append(job.id)
        self._wake()
        return job

    def get(self, session: str, job_id: str) -> Job | None:
        job = self.jobs.get(job_id)
        return job if job is not None and job.session == session else None

    def position(self, job: Job) -> int | None:
        with self._lock:
            try:
                return self._queue.index(job.id) + 1
            except ValueError:
                return None

    def view(self, job: Job) -> dict[str, Any]:
        return job.public(self.position(job))

    def session_jobs(self, session: str) -> list[Job]:
        return [j for j in list(self.jobs.values()) if j.session == session]

    def cancel(self, job: Job) -> None:
        """Stop a queued or running job and remove its folder. The job reads "cancelled"
        only once its worker is dead and its folder is gone, so a page that sees the state
        never finds a partial file; until then it still reads "running" (or "queued")."""
        with self._lock:
            if job.cancelling or job.state not in ("queued", "running"):
                return
            job.cancelling = True
            if job.state == "queued":
                self._queue.remove(job.id)
            worker, job.worker = job.worker, None
            if worker is not None:
                self._drop(worker)
        try:
            if worker is not None:
                worker.kill()
        finally:
            shutil.rmtree(job.out, ignore_errors=True)
            with self._lock:
                job.state = "cancelled"
                job.finished = time.time()
            log.info("job %s (%s) cancelled", job.id, job.kind)
            self._wake()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake()
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
            self._busy.clear()
            for j in self.jobs.values():
                if j.state in ("queued", "running"):
                    j.state = "cancelled"
                    j.worker = None
            self._queue.clear()
        for w in workers:
            w.kill()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    # -------------------------------------------------------------------- loop
    def _wake(self) -> None:
        try:
            self._wake_w.send_bytes(b".")
        except OSError:
            pass

    def _drop(self, worker: _Worker) -> None:
        if worker in self._workers:
            self._workers.remove(worker)
        self._busy.pop(worker, None)

    def _start_queued(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            while self._queue:
                idle = [w for w in self._workers if w not in self._busy]
                idle.sort(key=lambda w: not w.ready)  # a warm one first
                if not idle:
                    if len(self._workers) >= self.max_jobs:
                        break
                    idle = [_Worker(self._ctx, False)]  # the job itself loads what it needs
                    self._workers.append(idle[0])
                worker = idle[0]
                job = self.jobs[self._queue.popleft()]
                try:
                    worker.conn.send((job.kind, job.args, str(job.out)))
                except OSError:
                    self._drop(worker)
                    worker.kill()
                    self._queue.appendleft(job.id)
                    continue
                self._busy[worker] = job
                job.worker = worker
                job.state = "running"
                job.started = time.time()
            if not self._workers:  # keep one warm worker waiting
                self._workers.append(_Worker(self._ctx, self.warm))

    def _finish(self, job: Job, state: str, result: Any = None, error: str | None = None,
                dead: bool = False) -> None:
        with self._lock:
            if job.state != "running" or job.cancelling:
                return
            job.state = state
            job.result = result
            job.error = error
            job.finished = time.time()
            worker, job.worker = job.worker, None
            if worker is not None:
                if dead:
                    self._drop(worker)
                else:
                    self._busy.pop(worker, None)
        if dead and worker is not None:
            worker.kill()
        if state != "done":
            shutil.rmtree(job.out, ignore_errors=True)
        log.info("job %s (%s) %s in %.2f s%s", job.id, job.kind, state,
                 job.finished - (job.started or job.finished),
                 f": {error}" if error else "")

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._start_queued()
            with self._lock:
                workers = {w.conn: w for w in self._workers}
            try:
                ready = wait([self._wake_r, *workers], timeout=1.0)
            except OSError:
                ready = []
            for c in ready:
                if c is self._wake_r:
                    try:
                        while self._wake_r.poll():
                            self._wake_r.recv_bytes()
                    except (EOFError, OSError):
                        pass
                    continue
                worker = workers[c]
                try:
                    while c.poll():
                        kind, payload = c.recv()
                        job = self._busy.get(worker)
                        if kind == "ready":
                            worker.ready = True
                        elif job is None:
                            continue
                        elif kind == "progress":
                            self._progress(job, payload)
                        elif kind == "done":
                            self._finish(job, "done", payload)
                        elif kind == "error":
                            self._finish(job, "error", error=payload)
                        elif kind == "crash":
                            log.error("job %s (%s) failed:\n%s", job.id, job.kind, payload)
                            self._finish(job, "error", error=INTERNAL)
                except (EOFError, OSError):
                    job = self._busy.get(worker)
                    if job is not None and job.state == "running":
                        log.error("job %s (%s): the worker process died (exit code %s)",
                                  job.id, job.kind, worker.proc.exitcode)
                        self._finish(job, "error", error=INTERNAL, dead=True)
                    else:
                        with self._lock:
                            self._drop(worker)
                        worker.kill()

    @staticmethod
    def _progress(job: Job, payload: dict[str, Any]) -> None:
        if "attack" in payload:
            job.progress.setdefault("attacks", {})[payload["attack"]] = [payload["done"],
                                                                         payload["total"]]
        else:
            job.progress.update(payload)
