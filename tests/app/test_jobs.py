"""The app's job manager with real (spawned) worker processes: the queue and its
positions, the CLI's one-line message for a failing job, a bug's traceback in the log only,
a cancelled job's folder removed, and at most ``max_jobs`` running at once."""

from __future__ import annotations

import logging
import time

import pytest

from linkrisk.app.jobs import INTERNAL, JobManager


def _wait(jobs: JobManager, job, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while job.state in ("queued", "running"):
        assert time.monotonic() - t0 < timeout, job
        time.sleep(0.05)


@pytest.fixture
def manager():
    m = JobManager(max_jobs=1, warm=False)
    yield m
    m.shutdown()


def test_queue_errors_and_cancel(manager, tmp_path, caplog):
    m = manager
    ok = m.submit("s", "load", {"spec": "census", "label": "census", "kind": "dataset"},
                  tmp_path / "1")
    bad = m.submit("s", "load", {"spec": str(tmp_path / "missing.csv"), "label": "x",
                                 "kind": "path"}, tmp_path / "2")
    bug = m.submit("s", "load", {"spec": "census"}, tmp_path / "3")  # no label: a KeyError
    gone = m.submit("s", "load", {"spec": "census", "label": "c", "kind": "dataset"},
                    tmp_path / "4")
    assert [m.view(j)["position"] for j in (ok, bad, bug, gone)] == [1, 2, 3, 4]
    assert m.get("other session", ok.id) is None
    m.cancel(gone)
    assert gone.state == "cancelled" and not (tmp_path / "4").exists()
    with caplog.at_level(logging.ERROR, logger="linkrisk.app"):
        m.start()
        for j in (ok, bad, bug):
            _wait(m, j)
    assert ok.state == "done" and ok.result["rows"] == 1080
    assert (tmp_path / "1" / "data.pkl").is_file()
    assert bad.state == "error"
    assert bad.error.startswith(f"file not found: {tmp_path / 'missing.csv'}")  # as the CLI
    assert "\n" not in bad.error and not (tmp_path / "2").exists()
    assert bug.state == "error" and bug.error == INTERNAL
    assert "KeyError" in caplog.text and "Traceback" in caplog.text  # in the log only
    assert "Traceback" not in str(m.view(bug))


def test_cancel_running_kills_and_removes(tmp_path):
    m = JobManager(max_jobs=1, warm=False)
    try:
        m.start()
        pkl = tmp_path / "census"
        load = m.submit("s", "load", {"spec": "census", "label": "census", "kind": "dataset"},
                        pkl)
        _wait(m, load)
        args = {"original": load.result["pickle"], "methods": ["rank_swap:p=2,5,10,15,20"],
                "replications": 5}
        job = m.submit("s", "choose", args, tmp_path / "choose")
        second = m.submit("s", "load", {"spec": "census", "label": "c", "kind": "dataset"},
                          tmp_path / "later")
        t0 = time.monotonic()
        while job.state != "running" and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        assert m.view(second)["position"] == 1  # one job at a time: the other waits
        time.sleep(1.0)
        proc = job.worker.proc
        m.cancel(job)
        assert job.state == "cancelled" and not proc.is_alive()
        assert not (tmp_path / "choose").exists()
        _wait(m, second)
        assert second.state == "done"  # the queue goes on with a fresh worker
    finally:
        m.shutdown()


def test_cancelled_only_once_cleaned_and_kill_is_idempotent(tmp_path, monkeypatch):
    """A page polls from another thread while a cancel runs: it must not read "cancelled"
    while the job's folder still exists (CI caught that race), and the job loop killing the
    same worker at the same time (its pipe closed) must not fail the cancel."""
    import threading

    from linkrisk.app import jobs as jobs_mod

    m = JobManager(max_jobs=1, warm=False)
    try:
        m.start()
        load = m.submit("s", "load", {"spec": "census", "label": "census", "kind": "dataset"},
                        tmp_path / "census")
        _wait(m, load)
        job = m.submit("s", "choose", {"original": load.result["pickle"], "replications": 5,
                                       "methods": ["rank_swap:p=2,5,10,15,20"]},
                       tmp_path / "job")
        t0 = time.monotonic()
        while job.state != "running" and time.monotonic() - t0 < 60:
            time.sleep(0.01)
        assert job.state == "running"
        (tmp_path / "job" / "partial.csv").write_text("x")
        worker = job.worker
        real = jobs_mod._Worker._kill
        entered = threading.Event()

        def slow_kill(self):
            entered.set()
            time.sleep(0.5)  # a worker slow to die under load
            real(self)

        monkeypatch.setattr(jobs_mod._Worker, "_kill", slow_kill)
        t = threading.Thread(target=m.cancel, args=(job,))
        t.start()
        assert entered.wait(10)
        seen = []
        while t.is_alive():
            state = m.view(job)["state"]
            seen.append((state, (tmp_path / "job").exists()))
            worker.kill()  # the job loop meanwhile: waits for the first kill, closes nothing
            time.sleep(0.02)
        t.join()
        assert all(not (s == "cancelled" and exists) for s, exists in seen), seen
        assert ("running", True) in seen
        assert job.state == "cancelled" and not (tmp_path / "job").exists()
        assert not worker.proc.is_alive()
        m.cancel(job)  # a second cancel is a no-op
        assert job.state == "cancelled"
    finally:
        m.shutdown()
