"""The checkpoint database: a decision is claimed and settled by compare-and-set, rows written before claims still
read, reading never writes, and a write the system refuses is WriteFailed naming the file."""

from __future__ import annotations

import resource
import sqlite3
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.errors import UserInputError, WriteFailed
from harness.records.checkpoint import (
    CHECKPOINT_FILE,
    Checkpoint,
    CheckpointMoved,
    CheckpointStore,
    HumanDecision,
    content_digest,
    stop_id,
)

APPROVE = HumanDecision(gate="brief_approval", decision="approve", who="editor")


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    """A run folder with two runs waiting at their gate."""
    folder = tmp_path / "run"
    run(RunSpec(modes=["workflow", "react_guardrails"], scenarios=["blog_brief_approval"], model="scripted:reference",
                out=folder))  # fmt: skip
    return CheckpointStore(folder)


def first(store: CheckpointStore) -> Checkpoint:
    checkpoint = store.load(store.run_ids()[0])
    assert checkpoint is not None and checkpoint.status == "suspended"
    return checkpoint


def test_a_claim_is_a_compare_and_set_on_the_stop_as_it_was_read(store):
    checkpoint = first(store)
    claimed = store.claim(checkpoint, APPROVE)
    assert store.load(checkpoint.run_id) == claimed
    assert (claimed.status, claimed.claim, claimed.pending_gate) == ("deciding", APPROVE, "brief_approval")
    with pytest.raises(CheckpointMoved):  # the same stop, claimed again from what was read before
        store.claim(checkpoint, APPROVE.model_copy(update={"who": "legal", "decision": "reject"}))
    assert store.load(checkpoint.run_id) == claimed  # the first claim stands, untouched
    assert store.suspended() == [(r, g) for r, g in store.suspended() if r != checkpoint.run_id]  # not waiting
    assert {stop.run_id: stop.claim for stop in store.open_stops()}[checkpoint.run_id] == APPROVE
    assert store.decisions_given() == 1  # a claim counts as a decision given


def test_settling_replaces_only_the_claim_it_carried_out(store):
    checkpoint = first(store)
    with pytest.raises(CheckpointMoved):  # nothing was claimed
        store.settle(checkpoint, checkpoint.model_copy(update={"status": "continued", "pending_gate": None}))
    claimed = store.claim(checkpoint, APPROVE)
    done = checkpoint.model_copy(update={"status": "continued", "pending_gate": None, "decisions": [APPROVE]})
    store.settle(claimed, done)
    settled = store.load(checkpoint.run_id)
    assert settled is not None and (settled.status, settled.claim, settled.decisions) == ("continued", None, [APPROVE])
    with pytest.raises(CheckpointMoved):  # settled once: the claim is gone
        store.settle(claimed, done)
    assert store.decisions_given() == 1


def test_a_row_written_before_claims_still_reads(store):
    """Bodies and digests without the later fields (claim, saved_at, runtime) are what older bench wrote: still
    valid."""
    checkpoint = first(store).model_copy(update={"saved_at": None})
    old_body = checkpoint.model_dump_json(exclude={"claim", "saved_at", "runtime"})
    old_digest = content_digest(checkpoint.model_dump(mode="json", exclude={"claim", "saved_at", "runtime"}))
    assert old_digest == checkpoint.digest()
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE checkpoints SET body = ?, digest = ? WHERE run_id = ?", (old_body, old_digest,
                                                                                    checkpoint.run_id))  # fmt: skip
    db.close()
    assert store.load(checkpoint.run_id) == checkpoint


def test_reading_never_writes_a_missing_an_empty_or_a_live_database(store, tmp_path):
    missing = CheckpointStore(tmp_path / "nowhere")
    (tmp_path / "nowhere").mkdir()
    assert missing.load("x") is None and missing.run_ids() == [] and missing.open_stops() == []
    assert not missing.path.exists()  # not created
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / CHECKPOINT_FILE).write_bytes(b"")
    with pytest.raises(UserInputError, match="empty \\(0 bytes\\)"):
        CheckpointStore(empty).load("x")
    assert (
        sorted(p.name for p in empty.iterdir()) == [CHECKPOINT_FILE] and (empty / CHECKPOINT_FILE).stat().st_size == 0
    )
    before = store.path.read_bytes()
    store.load(store.run_ids()[0])
    store.open_stops()
    store.decisions_given()
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in store.path.parent.iterdir() if p.name.startswith(CHECKPOINT_FILE)) == [
        CHECKPOINT_FILE
    ]


def test_a_refused_write_is_write_failed_naming_the_database_and_the_last_rows_stay(store):
    checkpoint = first(store)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))  # no file may grow past 1 KiB: as good as a full disk
    try:
        with pytest.raises(WriteFailed) as refused:
            store.claim(checkpoint, APPROVE)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert refused.value.path == str(store.path) and str(refused.value).startswith(f"{store.path}: cannot write: ")
    assert store.load(checkpoint.run_id) == checkpoint  # rolled back: the run still waits at its gate


def test_a_stop_id_is_fixed_by_its_run_stop_number_and_gate():
    assert stop_id("d2785d27975b56be", 0, "brief_approval") == "0be12ddb"  # documented: the same in every version
    others = {stop_id("d2785d27975b56be", 1, "brief_approval"), stop_id("d2785d27975b56be", 0, "synopsis_approval")}
    assert len(others | {"0be12ddb"}) == 3
