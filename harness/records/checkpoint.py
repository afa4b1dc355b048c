"""Checkpoints of suspended runs: a SQLite database in the run folder (standard library, WAL, transactions).

A checkpoint holds what a run needs to go on in another process: the scenario (and a digest of it), the
mode, the model source, the seed, every model answer the run got and every human decision it was given
(in order), the store, the pending gate and where its trace stands. The mode's position is not pickled:
resuming feeds the recorded answers and decisions back through the mode's own code to the exact point
where it stopped (no model call, no side effect, no trace line), checks the rebuilt store against the
snapshot, and only then goes on. A digest over every field detects a hand-edited row.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.choices import GatewayPolicy
from harness.errors import UserInputError
from harness.records.trace import Usage

CHECKPOINT_FILE = "checkpoints.db"
CHECKPOINT_SCHEMA_VERSION = 1
Decision = Literal["approve", "reject", "revise"]
CheckpointStatus = Literal["suspended", "continued", "rejected"]


class RecordedAttempt(BaseModel):
    """A retried attempt before an answer, kept so a resumed run's counters match the original's."""

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str
    latency_ms: float
    wait_s: float


class RecordedReply(BaseModel):
    """One model answer a run used, with the hash of what it was asked (a resume checks both)."""

    model_config = ConfigDict(frozen=True)

    request_hash: str
    proposal: Any
    text: str
    usage: Usage
    latency_ms: float
    attempts: list[RecordedAttempt] = Field(default_factory=list)


class HumanDecision(BaseModel):
    """A person's (or a scripted approver's) decision at a gate, bound to one run and that gate."""

    model_config = ConfigDict(frozen=True)

    gate: str
    decision: Decision
    who: str
    note: str = ""
    scripted: bool = False
    seq: int | None = None  # where its human event is in the run's trace (a later resume replays up to it)


class Checkpoint(BaseModel):
    """One suspended run, as it stood when it stopped."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = CHECKPOINT_SCHEMA_VERSION
    run_id: str
    scenario: str
    scenario_digest: str
    mode: str
    model: str  # the --model choice that ran it: scripted:NAME, replay:DIR, live or local
    model_label: str
    trial: int
    seed: int
    gateway_policy: GatewayPolicy
    status: CheckpointStatus
    pending_gate: str | None
    replies: list[RecordedReply]
    decisions: list[HumanDecision]  # decided before this suspension, in order
    store: dict[str, Any]  # the virtual store's artifacts, approvals, wait markers and call counts
    records: int  # gateway records so far
    next_seq: int  # the number the run's next trace event gets
    wall_ms: float  # time spent running so far, across processes

    def digest(self) -> str:
        return content_digest(self.model_dump(mode="json"))


def content_digest(value: Any) -> str:
    """A SHA-256 of a JSON value's canonical text: the same content hashes the same on any machine."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CheckpointStore:
    """The checkpoints of one run folder; every write is a transaction, so a crash leaves the last good row."""

    def __init__(self, folder: Path):
        self.path = folder / CHECKPOINT_FILE

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for reading what another process wrote: a damaged file is one line, not a traceback."""
        try:
            with self._connect() as db:
                yield db
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path}: not a readable checkpoint database ({exc})") from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30.0)) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
                " pending_gate TEXT, body TEXT NOT NULL, digest TEXT NOT NULL)"
            )
            with connection:  # one transaction: committed on success, rolled back on any error
                yield connection

    def save(self, checkpoint: Checkpoint) -> None:
        body = checkpoint.model_dump_json()
        with self._connect() as db:
            db.execute(
                "INSERT INTO checkpoints (run_id, status, pending_gate, body, digest) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status=excluded.status, pending_gate=excluded.pending_gate, "
                "body=excluded.body, digest=excluded.digest",
                (checkpoint.run_id, checkpoint.status, checkpoint.pending_gate, body, checkpoint.digest()),
            )

    def load(self, run_id: str) -> Checkpoint | None:
        """The run's checkpoint, checked against its digest; None when the run never suspended."""
        if not self.path.exists():
            return None
        with self._reading() as db:
            row = db.execute(
                "SELECT status, pending_gate, body, digest FROM checkpoints WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None:
            return None
        status, pending_gate, body, digest = row
        try:
            checkpoint = Checkpoint.model_validate_json(body)
        except (ValidationError, TypeError, ValueError):  # a body that is not the JSON text bench wrote
            raise UserInputError(f"{self.path}: the checkpoint of run {run_id} does not read; it was edited") from None
        if checkpoint.digest() != digest or (checkpoint.status, checkpoint.pending_gate) != (status, pending_gate):
            raise UserInputError(
                f"{self.path}: the checkpoint of run {run_id} does not match its digest; "
                "it was edited by hand, refusing to resume it"
            )
        return checkpoint

    def suspended(self) -> list[tuple[str, str]]:
        """(run id, pending gate) of every run waiting for a decision."""
        if not self.path.exists():
            return []
        with self._reading() as db:
            rows = db.execute(
                "SELECT run_id, pending_gate FROM checkpoints WHERE status = 'suspended' ORDER BY run_id"
            ).fetchall()
        return [(str(run_id), str(gate)) for run_id, gate in rows]
