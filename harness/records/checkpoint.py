"""Checkpoints of suspended runs: a SQLite database in the run folder (standard library, WAL, transactions).

A checkpoint holds what a run needs to go on in another process: the scenario (and a digest of it), the
mode, the model source, the seed, every model answer the run got and every human decision it was given
(in order), the store, the pending gate and where its trace stands. The mode's position is not pickled:
resuming feeds the recorded answers and decisions back through the mode's own code to the exact point
where it stopped (no model call, no side effect, no trace line), checks the rebuilt store against the
snapshot, and only then goes on. A framework-run mode (a runtime adapter) is not replayed: its framework keeps
its own state in the run folder, and its checkpoint also holds the gateway's records and decisions and the trace's
counters (``runtime``), from which its resume rebuilds the gateway as it stood. A digest over every field detects
a hand-edited row.

A decision survives any crash: ``bench resume`` first claims it here, in one compare-and-set transaction
(suspended at this stop -> ``deciding``, with the decision), and only then writes the run's trace; when the
run stops again or ends, the new checkpoint replaces the claim in another compare-and-set. A process killed
in between leaves the claim, and the next ``bench resume`` carries the same decision out again from the same
checkpoint, writing only the trace lines the killed one did not (``harness.matrix.reconcile``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.choices import GatewayPolicy
from harness.errors import UserInputError, WriteFailed
from harness.records.trace import ActionStatus, Usage
from harness.records.write_faults import wrote

CHECKPOINT_FILE = "checkpoints.db"
CHECKPOINT_SCHEMA_VERSION = 1
Decision = Literal["approve", "reject", "revise"]
# deciding: a decision is claimed at the pending gate and not yet carried out (a crash left it so, or it runs now)
CheckpointStatus = Literal["suspended", "deciding", "continued", "rejected"]
# fields added after the first checkpoints: left out of the digest while unset
LATER_FIELDS = ("claim", "saved_at", "runtime")


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


class RecordedAction(BaseModel):
    """One gateway record (``harness.core.ActionRecord``) as a checkpoint keeps it."""

    model_config = ConfigDict(frozen=True)

    step: int
    action: str
    args: Any
    status: ActionStatus
    reason: str | None
    observation: Any
    side_effect: bool
    violations: list[str]
    premature: bool
    gate: str | None = None
    duration_ms: int | None = None


class RecordedGateDecision(BaseModel):
    """A decision at a gate as the gateway holds it: after which record it came, and the run's verdict there."""

    model_config = ConfigDict(frozen=True)

    decision: HumanDecision
    after_records: int
    verdict_here: str


class RuntimeState(BaseModel):
    """What a framework-run mode's resume rebuilds, since its code is not replayed to its stop: the gateway's
    records and decisions, and where the run's counters stood (the store is the checkpoint's ``store``)."""

    model_config = ConfigDict(frozen=True)

    records: list[RecordedAction]
    decisions: list[RecordedGateDecision]
    last_step: int  # the step of the run's last event (its suspend): where the decision's event goes
    llm_calls: int
    usage: Usage
    errors: dict[str, int] = Field(default_factory=dict)


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
    claim: HumanDecision | None = None  # status deciding: the decision being carried out at pending_gate
    saved_at: float | None = None  # when this row was written (seconds since the epoch): a command started
    # before it cannot have seen this stop
    runtime: RuntimeState | None = None  # a framework-run mode's stop: what its resume rebuilds (None: replayed)

    @property
    def stop(self) -> int:
        """Which stop of the run this is (0 for the first): how many decisions came before it."""
        return len(self.decisions)

    def digest(self) -> str:
        unset = {name for name in LATER_FIELDS if getattr(self, name) is None}  # rows written before them still match
        return content_digest(self.model_dump(mode="json", exclude=unset))


def content_digest(value: Any) -> str:
    """A SHA-256 of a JSON value's canonical text: the same content hashes the same on any machine."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CheckpointMoved(UserInputError):
    """A compare-and-set found the run's row changed since it was read: another decision got there first."""


class CheckpointStore:
    """The checkpoints of one run folder; every write is a transaction, so a crash leaves the last good row.

    Reading never writes: a missing file is not created, an empty one gets no table (``mode=rw`` with
    ``query_only``). A write the system refuses (a full disk) raises WriteFailed naming the file.
    """

    def __init__(self, folder: Path):
        self.folder = folder  # the run folder the database belongs to
        self.path = folder / CHECKPOINT_FILE

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read-only look at what another process wrote: a damaged file is one line, not a traceback."""
        if self.path.is_file() and self.path.stat().st_size == 0:
            raise UserInputError(f"{self.path}: empty (0 bytes): the checkpoint database was emptied")
        try:
            with closing(sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=rw", uri=True, timeout=30.0)) as db:
                db.execute("PRAGMA query_only=1")
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone() is None:
                    raise UserInputError(f"{self.path}: holds no checkpoints table: not bench's checkpoint database")
                yield db
        except sqlite3.OperationalError as exc:  # the system refused (a full disk cannot even hold its -shm file)
            raise UserInputError(f"{self.path}: cannot be read now ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path}: not a readable checkpoint database ({exc})") from None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on any error; a refused write is WriteFailed."""
        try:
            with closing(sqlite3.connect(self.path, timeout=30.0)) as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=FULL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
                    " pending_gate TEXT, body TEXT NOT NULL, digest TEXT NOT NULL)"
                )
                with connection:
                    yield connection
        except sqlite3.OperationalError as exc:  # a full disk, a read-only file or folder, a lock held too long
            raise WriteFailed(self.path, str(exc)) from None
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path}: not a readable checkpoint database ({exc})") from None
        wrote()  # committed (test-only: BENCH_KILL_AFTER_WRITES may end the process here)

    def save(self, checkpoint: Checkpoint) -> None:
        """A run's first suspension in a matrix (or its row written again by one)."""
        checkpoint = checkpoint.model_copy(update={"saved_at": time.time()})
        with self._writing() as db:
            db.execute(
                "INSERT INTO checkpoints (run_id, status, pending_gate, body, digest) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status=excluded.status, pending_gate=excluded.pending_gate, "
                "body=excluded.body, digest=excluded.digest",
                (checkpoint.run_id, checkpoint.status, checkpoint.pending_gate, *_body(checkpoint)),
            )

    def claim(self, checkpoint: Checkpoint, decision: HumanDecision) -> Checkpoint:
        """Records ``decision`` at the stop ``checkpoint`` (as read) names, before anything of it is written to the
        trace: suspended there -> deciding, in one compare-and-set; CheckpointMoved when the row changed since."""
        claimed = checkpoint.model_copy(update={"status": "deciding", "claim": decision, "saved_at": time.time()})
        self._swap(checkpoint, "suspended", claimed)
        return claimed

    def settle(self, claimed: Checkpoint, after: Checkpoint) -> None:
        """Replaces a claim by where the run now stands (suspended at its next stop, or decided for good)."""
        self._swap(claimed, "deciding", after.model_copy(update={"saved_at": time.time()}))

    def _swap(self, expected: Checkpoint, status: str, new: Checkpoint) -> None:
        with self._writing() as db:
            changed = db.execute(
                "UPDATE checkpoints SET status = ?, pending_gate = ?, body = ?, digest = ? "
                "WHERE run_id = ? AND status = ? AND digest = ?",
                (new.status, new.pending_gate, *_body(new), new.run_id, status, expected.digest()),
            ).rowcount
            if changed != 1:
                raise CheckpointMoved(f"{self.path}: the checkpoint of run {new.run_id} changed meanwhile")

    def load(self, run_id: str) -> Checkpoint | None:
        """The run's checkpoint, checked against its digest; None when the database has no row for the run (or
        there is no database)."""
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

    def run_ids(self) -> list[str]:
        """Every run the database holds a row for."""
        if not self.path.exists():
            return []
        with self._reading() as db:
            return [str(run_id) for (run_id,) in db.execute("SELECT run_id FROM checkpoints ORDER BY run_id")]

    def open_stops(self) -> list[OpenStop]:
        """Every run that waits for a decision, or whose decision is claimed but not carried out yet."""
        if not self.path.exists():
            return []
        with self._reading() as db:
            rows = db.execute(
                "SELECT run_id, status, pending_gate, body FROM checkpoints "
                "WHERE status IN ('suspended', 'deciding') ORDER BY run_id"
            ).fetchall()
        found = []
        for run_id, status, gate, body in rows:
            facts = _facts(body)
            claim = facts.get("claim")
            found.append(
                OpenStop(
                    run_id=str(run_id),
                    gate=str(gate),
                    next_seq=facts.get("next_seq") if isinstance(facts.get("next_seq"), int) else None,
                    claim=HumanDecision.model_validate(claim) if status == "deciding" and claim else None,
                )
            )
        return found

    def suspended(self) -> list[tuple[str, str]]:
        """(run id, pending gate) of every run waiting for a decision (a claimed one is not waiting)."""
        return [(stop.run_id, stop.gate) for stop in self.open_stops() if stop.claim is None]

    def decisions_given(self) -> int:
        """How many decisions the folder's runs were given with bench resume, claimed ones included."""
        if not self.path.exists():
            return 0
        with self._reading() as db:
            bodies = [body for (body,) in db.execute("SELECT body FROM checkpoints")]
        total = 0
        for body in bodies:
            facts = _facts(body)
            decisions = facts.get("decisions")
            total += (len(decisions) if isinstance(decisions, list) else 0) + bool(facts.get("claim"))
        return total


class OpenStop(BaseModel):
    """A run standing at a gate: waiting for a decision, or (``claim``) with one claimed and not yet carried out."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    gate: str
    next_seq: int | None  # the trace position its checkpoint names
    claim: HumanDecision | None = None


def _body(checkpoint: Checkpoint) -> tuple[str, str]:
    return checkpoint.model_dump_json(exclude={name for name in LATER_FIELDS if getattr(checkpoint, name) is None}), (
        checkpoint.digest()
    )


def _facts(body: object) -> dict[str, Any]:
    """The top-level fields of a row's body, for listings (a damaged body reads as empty; loading it says why)."""
    try:
        facts = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        return {}
    return facts if isinstance(facts, dict) else {}
