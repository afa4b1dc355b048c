"""What saving checkpoints costs and who may save them: one connection per process and one commit per suspended
run, several processes writing one database at once, a committed row outliving a killed process, and only a
claim waiting for the disk."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import RunSpec, run
from harness.records.checkpoint import CHECKPOINT_FILE, Checkpoint, CheckpointStore, HumanDecision
from harness.records.trace import read_events

STORY = "blog_brief_approval"  # workflow stops at its gate: with no approver, the run suspends
APPROVE = HumanDecision(gate="brief_approval", decision="approve", who="editor")
ROWS_EACH = 40  # checkpoints each process saves; enough for their transactions to meet


class SQLiteSeen:
    """The connections opened and the COMMITs run while it is installed (``sqlite3.connect`` wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.connections = 0
        self.commits = 0
        connect: Callable[..., sqlite3.Connection] = sqlite3.connect

        def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection = connect(*args, **kwargs)
            self.connections += 1
            connection.set_trace_callback(self._statement)
            return connection

        monkeypatch.setattr(sqlite3, "connect", counting)

    def _statement(self, sql: str) -> None:
        self.commits += sql.strip().upper() in ("COMMIT", "END")


@pytest.fixture
def suspended(tmp_path: Path) -> Checkpoint:
    """The checkpoint of one real suspended run, to save copies of."""
    folder = tmp_path / "one"
    run(RunSpec(modes=["workflow"], scenarios=[STORY], model="scripted:eager", out=folder))
    store = CheckpointStore(folder)
    (run_id,) = store.run_ids()
    checkpoint = store.load(run_id)
    assert checkpoint is not None and checkpoint.status == "suspended"
    return checkpoint


def test_a_matrix_of_suspended_runs_commits_each_checkpoint_once_through_one_connection(tmp_path, monkeypatch):
    seen = SQLiteSeen(monkeypatch)
    result = run(RunSpec(modes=["workflow"], scenarios=[STORY], model="scripted:eager", trials=6, out=tmp_path / "m"))
    suspended = [e.run_id for e in read_events(result.traces) if e.kind == "summary" and e.result == "suspended"]
    assert len(suspended) == 6
    assert seen.commits == len(suspended)  # one transaction per suspended run, nothing else committed
    assert seen.connections == 1  # opened once for the matrix, not once per checkpoint
    assert sorted(CheckpointStore(result.folder).run_ids()) == sorted(suspended)
    leftovers = sorted(p.name for p in result.folder.iterdir() if p.name.startswith(CHECKPOINT_FILE))
    assert leftovers == [CHECKPOINT_FILE]  # the store was closed: its log folded into the database


def _save_copies(store: CheckpointStore, body: str, prefix: str, start: Any) -> None:
    """A writer process: waits for the others, then saves ``ROWS_EACH`` copies of one checkpoint as new runs."""
    checkpoint = Checkpoint.model_validate_json(body)
    start.wait(timeout=60)
    for n in range(ROWS_EACH):
        store.save(checkpoint.model_copy(update={"run_id": f"{prefix}-{n:03d}"}))
    store.close()


@pytest.mark.slow
def test_two_processes_saving_into_one_new_database_at_once_both_land(suspended, tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()  # no database yet: both processes race to make it, then to write it
    spawn = multiprocessing.get_context("spawn")  # fresh interpreters, as bench's worker processes are
    start = spawn.Barrier(2)
    body = suspended.model_dump_json()
    writers = [
        spawn.Process(target=_save_copies, args=(CheckpointStore(folder), body, prefix, start)) for prefix in "ab"
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0, 0]  # neither was refused a busy database
    store = CheckpointStore(folder)
    expected = sorted(f"{prefix}-{n:03d}" for prefix in "ab" for n in range(ROWS_EACH))
    assert store.run_ids() == expected
    assert all(store.load(run_id) is not None for run_id in expected)  # every row whole and matching its digest


def test_a_forked_process_writes_through_its_own_connection_and_the_parents_goes_on(suspended, tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(suspended.model_copy(update={"run_id": "parent-before"}))  # the parent's connection is open
    child = os.fork()
    if child == 0:  # the child: SQLite forbids it the parent's connection; the store opens its own
        code = 1
        try:
            store.save(suspended.model_copy(update={"run_id": "child"}))
            store.close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.save(suspended.model_copy(update={"run_id": "parent-after"}))
    store.close()
    assert CheckpointStore(tmp_path).run_ids() == ["child", "parent-after", "parent-before"]


def _save_then_die(store: CheckpointStore, body: str) -> None:
    """Saves one checkpoint and is killed at once, its connection still open, as ``kill -9`` would leave it."""
    store.save(Checkpoint.model_validate_json(body))
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_committed_checkpoint_outlives_its_process_killed_before_closing(suspended, tmp_path):
    """Commits are not synced one by one (``synchronous=NORMAL``): a process kill still loses none of them."""
    spawn = multiprocessing.get_context("spawn")
    killed = spawn.Process(target=_save_then_die, args=(CheckpointStore(tmp_path), suspended.model_dump_json()))
    killed.start()
    killed.join(timeout=60)
    assert killed.exitcode == -signal.SIGKILL
    assert (tmp_path / f"{CHECKPOINT_FILE}-wal").exists()  # the row is in the log, never folded in by a close
    survived = CheckpointStore(tmp_path).load(suspended.run_id)  # read back through the log, digest checked
    assert survived is not None
    assert survived.model_copy(update={"saved_at": None}) == suspended.model_copy(update={"saved_at": None})


def test_only_a_claim_waits_for_the_disk_a_saved_checkpoint_does_not(suspended, tmp_path, monkeypatch):
    """A person's decision is synced before its trace lines can be written; a matrix's checkpoints are not."""
    store = CheckpointStore(tmp_path)
    store.save(suspended)  # opens the connection: its setup is not what is looked at
    statements: list[str] = []
    assert store._connection is not None
    store._connection.set_trace_callback(statements.append)
    store.save(suspended)
    saved, statements[:] = list(statements), []
    store.claim(store.load(suspended.run_id) or suspended, APPROVE)
    claimed = list(statements)
    assert saved[0] == "BEGIN IMMEDIATE" and saved[-1] == "COMMIT" and not any("synchronous" in s for s in saved)
    assert claimed[:2] == ["PRAGMA synchronous=FULL", "BEGIN IMMEDIATE"]
    assert claimed[-2:] == ["COMMIT", "PRAGMA synchronous=NORMAL"]  # the next save is cheap again
