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
checkpoint, writing only the trace lines the killed one did not (``harness.matrix.commands.reconcile``).

A suspended run costs what a finished one does: a store keeps one connection per process open until ``close``
(a matrix closes its store when it ends), in WAL mode with ``synchronous=NORMAL``, so a saved checkpoint is one
transaction appended to the write-ahead log and no sync of its own (a connection per write used to cost five
``fdatasync`` per suspended run: the log made, synced and folded back into the database at every close). The
guarantee is the one bench makes for its trace lines: a committed row survives the process being killed at any
instant, since the system already holds it and the next opening replays the log. A power cut or a system crash
may lose the rows committed since the log was last synced (when SQLite folds it into the database, every
thousand pages or so, and at ``close``), as it may lose trace lines not yet synced; the file stays consistent.
Only a claim is synced before its commit returns: it is one per person's decision, not one per run, and a
decision must never be lost once its trace lines may be on the disk. Several processes may write to one
database at once, each through its own connection: a writer waits for another's transaction (the busy
timeout), it does not fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
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
STOP_ID_LENGTH = 8  # hex digits of a stop id: a collision among one run's few stops is one in four billion
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's transaction before it is WriteFailed


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
    cache: str | None = None
    redacted: tuple[str, ...] = ()
    input_hash: str | None = None
    output_hash: str | None = None


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

    @property
    def stop_id(self) -> str:
        """The short id of the stop this checkpoint stands at (``stop_id``)."""
        return stop_id(self.run_id, self.stop, self.pending_gate or "")

    def decided_stop(self, given: str) -> int | None:
        """Which earlier stop of the run (its number) has the short id ``given``, or None."""
        for number, decided in enumerate(self.decisions):
            if stop_id(self.run_id, number, decided.gate) == given:
                return number
        return None

    def digest(self) -> str:
        unset = {name for name in LATER_FIELDS if getattr(self, name) is None}  # rows written before them still match
        return content_digest(self.model_dump(mode="json", exclude=unset))


def stop_id(run_id: str, stop: int, gate: str) -> str:
    """A stop's short id, as ``bench runs`` and ``bench show`` print it and ``bench resume --stop`` takes it: the
    first hex digits of a SHA-256 over the run id, the stop's number (0 for the first: the decisions before it) and
    its gate. Read from the database, never stored: the same stop has the same id in every listing and process, and a
    run sent back to the same gate (``--revise``) stands at a new stop with a new id."""
    return hashlib.sha256(f"{run_id}\n{stop}\n{gate}".encode()).hexdigest()[:STOP_ID_LENGTH]


def content_digest(value: Any) -> str:
    """A SHA-256 of a JSON value's canonical text: the same content hashes the same on any machine."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CheckpointMoved(UserInputError):
    """A compare-and-set found the run's row changed since it was read: another decision got there first."""


class CheckpointStore:
    """The checkpoints of one run folder; every write is a transaction, so a crash leaves the last good row.

    Writes go through one connection, opened on the first and kept until ``close`` (or until the store is
    dropped); the schema is made once, when it opens. Reading never writes: a missing file is not created, an
    empty one gets no table (``mode=rw`` with ``query_only``). A write the system refuses (a full disk) raises
    WriteFailed naming the file.
    """

    def __init__(self, folder: Path):
        self.folder = folder  # the run folder the database belongs to
        self.path = folder / CHECKPOINT_FILE
        self._connection: sqlite3.Connection | None = None
        self._closer: weakref.finalize[[], CheckpointStore] | None = None  # closes the connection once
        self._lock = threading.Lock()  # one transaction at a time on the connection, whichever thread writes
        _STORES.add(self)

    def close(self) -> None:
        """Closes the write connection: the log is folded into the database and synced (once per matrix). The
        store opens a new connection if it writes again; one dropped without ``close`` is closed then, or at exit
        (Python's sqlite3 connections sit in a reference cycle, which would keep them open until a collection)."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        closer, self._closer, self._connection = self._closer, None, None
        if closer is not None:
            closer()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Sent to another process (a worker) without its connection: the worker opens its own."""
        return {"folder": self.folder, "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        CheckpointStore.__init__(self, state["folder"])

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read-only look at what another process wrote: a damaged file is one line, not a traceback."""
        if self.path.is_file() and self.path.stat().st_size == 0:
            raise UserInputError(f"{self.path}: empty (0 bytes): the checkpoint database was emptied")
        try:
            with closing(
                sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S)
            ) as db:
                db.execute("PRAGMA query_only=1")
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone() is None:
                    raise UserInputError(f"{self.path}: holds no checkpoints table: not bench's checkpoint database")
                yield db
        except sqlite3.OperationalError as exc:  # the system refused (a full disk cannot even hold its -shm file)
            raise UserInputError(f"{self.path}: cannot be read now ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path}: not a readable checkpoint database ({exc})") from None

    @contextmanager
    def _writing(self, synced: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on any error; a refused write is WriteFailed.

        ``BEGIN IMMEDIATE`` takes the write lock first, so a transaction never finds the database changed under
        it: another process's writer is waited for, never an error. ``synced``: the commit returns only once the
        log is on the disk (``synchronous=FULL`` for this transaction alone)."""
        with self._lock:
            try:
                db = self._connection or self._open()
                if synced:
                    db.execute("PRAGMA synchronous=FULL")
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                finally:
                    if synced:
                        db.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.OperationalError as exc:  # a full disk, a read-only file or folder, a lock held too long
                self._drop()
                raise WriteFailed(self.path, str(exc)) from None
            except sqlite3.DatabaseError as exc:
                self._drop()
                raise UserInputError(f"{self.path}: not a readable checkpoint database ({exc})") from None
        wrote()  # committed (test-only: BENCH_KILL_AFTER_WRITES may end the process here)

    def _open(self) -> sqlite3.Connection:
        """The write connection, with the database in WAL mode and its table made (both kept in the file)."""
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            _to_wal(connection)
            connection.execute("PRAGMA synchronous=NORMAL")  # a commit is not synced: see the module's docstring
            connection.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
                " pending_gate TEXT, body TEXT NOT NULL, digest TEXT NOT NULL)"
            )
        except BaseException:
            connection.close()
            raise
        self._connection, self._closer = connection, weakref.finalize(self, connection.close)
        return connection

    def _drop(self) -> None:
        """Closes a connection a write failed on, so the next write starts anew (closing may fail too: the failure
        is said already)."""
        with suppress(sqlite3.Error):
            self._release()

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
        self._swap(checkpoint, "suspended", claimed, synced=True)  # a person's decision outlives a power cut too
        return claimed

    def settle(self, claimed: Checkpoint, after: Checkpoint) -> None:
        """Replaces a claim by where the run now stands (suspended at its next stop, or decided for good)."""
        self._swap(claimed, "deciding", after.model_copy(update={"saved_at": time.time()}))

    def _swap(self, expected: Checkpoint, status: str, new: Checkpoint, synced: bool = False) -> None:
        with self._writing(synced) as db:
            changed = db.execute(
                "UPDATE checkpoints SET status = ?, pending_gate = ?, body = ?, digest = ? "
                "WHERE run_id = ? AND status = ? AND digest = ?",
                (new.status, new.pending_gate, *_body(new), new.run_id, status, expected.digest()),
            ).rowcount
            if changed != 1:
                raise CheckpointMoved(f"{self.path}: the checkpoint of run {new.run_id} changed meanwhile")

    def drop(self, run_ids: list[str]) -> None:
        """Deletes the rows of runs that are run again from their start. A database a full disk left without its
        table (created, never written) gets the table first, so the next command finds the file bench's own."""
        if not run_ids or not self.path.exists():
            return
        with self._writing() as db:
            db.executemany("DELETE FROM checkpoints WHERE run_id = ?", [(run_id,) for run_id in run_ids])

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
            claim, decisions = facts.get("claim"), facts.get("decisions")
            found.append(
                OpenStop(
                    run_id=str(run_id),
                    gate=str(gate),
                    stop=len(decisions) if isinstance(decisions, list) else 0,
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
    stop: int  # which stop of the run (0 for the first)
    next_seq: int | None  # the trace position its checkpoint names
    claim: HumanDecision | None = None

    @property
    def stop_id(self) -> str:
        return stop_id(self.run_id, self.stop, self.gate)


_STORES: weakref.WeakSet[CheckpointStore] = weakref.WeakSet()  # every store of this process, for a fork
_INHERITED: list[sqlite3.Connection] = []  # a forked child's copies of its parent's connections: never closed


def _forget_parent_connections() -> None:
    """In a forked child: SQLite forbids using (or closing) a connection the parent opened, so each store opens
    its own on its next write, and the parent's copy is kept referenced, never closed, until the child ends."""
    for store in list(_STORES):
        store._lock = threading.Lock()  # a lock another thread held at the fork would never be released here
        if store._closer is not None and store._connection is not None:
            store._closer.detach()
            _INHERITED.append(store._connection)
        store._connection = store._closer = None


os.register_at_fork(after_in_child=_forget_parent_connections)


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


def _to_wal(connection: sqlite3.Connection) -> None:
    """Puts the database in WAL mode. Two processes making a new database at once can find it locked without SQLite
    waiting its busy timeout (the mode change does not wait); this waits the same timeout itself, in short steps."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
