"""A report's worker processes: jobs run forked when there are cores for them, in the caller on one core, a file a
worker cannot write is named in the parent as the one WriteFailed line, and no worker outlives a killed report."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from harness.errors import WriteFailed
from reports.workers import Workers
from reports.writing import write_whole
from tests.helpers.bench import wait_for


def test_jobs_run_in_forked_workers_with_two_cores_and_in_the_calling_process_with_one():
    with Workers(2) as two:
        assert two.submit(os.getpid)() != os.getpid()
    with Workers(1) as one:
        assert one.submit(os.getpid)() == os.getpid()


def test_a_file_a_worker_cannot_write_is_raised_in_the_parent_naming_it(tmp_path):
    (tmp_path / "runs").write_text("a file where the run pages' folder goes")
    target = tmp_path / "runs" / "r1.html"
    with Workers(2) as workers, pytest.raises(WriteFailed) as refused:
        workers.submit(write_whole, target, "<html></html>")()
    assert refused.value.path == str(target)
    assert str(refused.value).startswith(f"{target}: cannot write: ")


def test_a_job_beside_the_caller_is_forked_where_there_is_a_second_core_and_runs_in_the_caller_on_one(monkeypatch):
    from reports import workers

    monkeypatch.setattr(workers, "cores", lambda: 2)
    with Workers.beside() as aside:
        assert aside.submit(os.getpid)() != os.getpid()
    monkeypatch.setattr(workers, "cores", lambda: 1)
    with Workers.beside() as aside:
        assert aside.submit(os.getpid)() == os.getpid()


def test_a_pool_freezes_the_collectors_view_of_the_parents_objects_while_its_workers_live():
    import gc

    assert gc.get_freeze_count() == 0
    with Workers(2) as two:
        assert gc.get_freeze_count() == 0  # nothing forked yet
        two.submit(os.getpid)()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_job_beside_the_caller_runs_at_a_lower_priority_and_pool_workers_at_the_callers(monkeypatch):
    from reports import workers

    monkeypatch.setattr(workers, "cores", lambda: 2)
    mine = os.nice(0)
    with Workers.beside() as aside:
        assert aside.submit(os.nice, 0)() == min(mine + workers.BESIDE_NICE, 19)
    with Workers(2) as two:
        assert two.submit(os.nice, 0)() == mine


def _note_pid_and_wait(path: str) -> None:
    """A long job (the run pages of a large folder): says which process runs it, then works on."""
    Path(path).write_text(str(os.getpid()))
    time.sleep(300)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (a dead child nobody reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads processes from /proc (Linux)")
def test_a_report_killed_mid_way_leaves_no_worker_writing_on(tmp_path):
    noted = tmp_path / "worker.pid"
    workers: set[int] = set()
    report = os.fork()
    if report == 0:  # the report: a pool of two workers, one of them on a job that outlasts the test
        try:
            with Workers(2) as workers:
                workers.submit(_note_pid_and_wait, str(noted))()
        finally:
            os._exit(0)
    try:
        wait_for(lambda: noted.exists() and noted.read_text() != "", 60, "the worker to start its job")
        workers |= {int(pid) for pid in Path(f"/proc/{report}/task/{report}/children").read_text().split()}
        assert int(noted.read_text()) in workers and all(_running(pid) for pid in workers)
    finally:
        os.kill(report, signal.SIGKILL)  # as a kill -9, or the OOM killer, ends a report
        os.waitpid(report, 0)
    try:
        wait_for(lambda: not any(_running(pid) for pid in workers), 60, "the workers to end with their report")
    finally:  # a failure leaves no process behind either
        for pid in workers:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
