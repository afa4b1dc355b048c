"""A report's worker processes: jobs run forked when there are cores for them, in the caller on one core, and a
file a worker cannot write is named in the parent as the one WriteFailed line."""

from __future__ import annotations

import os

import pytest

from harness.errors import WriteFailed
from reports.workers import Workers
from reports.writing import write_whole


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
