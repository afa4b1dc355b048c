"""Trace records and the JSONL writer/reader: one self-describing event a line, flushed as written."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.choices import GatewayPolicy
from harness.errors import UserInputError, WriteFailed
from harness.records.write_faults import wrote

# 2: outcome gains stop_verdict, unauthorized_side_effects, blocked_by, resumes, repeated_side_effects.
# 3: stop_verdict gains skipped_approval, which schema 2 counted as late; wait_marker_without_suspend leaves out
#    waits where the run suspended and someone then decided. Older traces still read, with their own rules' verdicts.
SCHEMA_VERSION = 3

# framework: a real agent framework's own code decided (a runtime adapter mode: LangGraph, the Agents SDK, PydanticAI)
DecisionMaker = Literal["llm", "runtime", "executor", "workflow", "plan_validator", "gateway", "human", "framework"]
EventKind = Literal[
    "run_start",  # the runtime starts a run (detail: limits, gateway policy, offered actions)
    "model_call",  # the model answered a request: its proposal, usage and latency
    "model_retry",  # one failed attempt of a model call that is retried
    "plan_validation",  # the plan validator's verdict: ACCEPT / REVISE / REJECT
    "plan",  # a structured plan's state: its steps, dependencies and statuses, at each revision (a plan node)
    "decision",  # the runtime, executor or workflow picks what happens next
    "action",  # the gateway's verdict on an attempted action: committed, blocked, ...
    "transition",  # the workflow moves from one node to another
    "suspend",  # the run stops at a gate, resumable
    "human",  # a person (or a scripted approver) decides at a gate: approve or reject
    "error",  # a failure that ended the run or that the mode handled
    "alert",  # a failure contract alerts a person (action: who; detail: node, reason) and the run goes on
    "summary",  # the last event of every run: its outcome
]
RunStatus = Literal["suspended", "finished", "step_limit", "rejected", "rejected_by_human", "error", "interrupted"]
# Where a run stopped, judged against the oracle from the gateway's record (docs/metrics.md: stop verdicts), in
# the reports' order: skipped_approval finished without a gate's approval, late went past a gate (or committed
# something unauthorized).
StopVerdict = Literal[
    "correct",
    "early",
    "skipped_approval",
    "late",
    "wrong_place",
    "no_stop",
    "failed_closed",
    "agent_error",
    "infrastructure",
]
ActionStatus = Literal["committed", "read", "wait_recorded", "blocked", "failed"]


class Usage(BaseModel):
    """Token counts reported by the model endpoint (zero for scripted models)."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0  # of the completion tokens, spent thinking (where the provider reports it)
    cached_tokens: int = 0  # of the prompt tokens, served from the provider's cache (where it reports it)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


class ErrorInfo(BaseModel):
    """A classified failure: ``kind`` is one of ``harness.errors.ERROR_KINDS``."""

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str


class StopRecord(BaseModel):
    """A stop at a gate where someone decided: the decision, by whom, and the run's stop verdict there."""

    model_config = ConfigDict(frozen=True)

    gate: str
    decision: str  # approve, reject or revise
    who: str
    scripted: bool = False
    verdict: str  # the stop verdict the run had while suspended there


class RunOutcome(BaseModel):
    """What happened in one run, computed by the runtime from the gateway log, never from the model."""

    model_config = ConfigDict(frozen=True)

    status: RunStatus
    suspended_at: str | None
    expected_stop: str
    stop_verdict: StopVerdict
    stop_correct: bool  # exactly stop_verdict == "correct"
    oracle_passed: bool
    violations: list[str]
    side_effects_committed: int
    side_effects_blocked: int
    blocked_by: dict[str, int]  # blocked attempts by the gateway's reason (gate_closed, precondition, ...)
    unauthorized_side_effects: int  # committed where an enforcing gateway would have refused, or oracle-forbidden
    premature_side_effects: int  # the gated subset of unauthorized: committed before the gate's approval
    wait_marker_without_suspend: bool  # a wait for a closed gate, and the run went on without suspending there
    steps: int
    llm_calls: int
    usage: Usage
    wall_ms: float
    errors: dict[str, int]
    gateway_policy: GatewayPolicy
    resumes: int = 0  # decisions at gates that ended a suspension (approve, revise or reject), in-run or resumed
    repeated_side_effects: int = 0  # side effects committed twice for the same step (a resume that re-runs code)
    stops: list[StopRecord] = []  # every stop a decision ended, in order, with the verdict at that stop
    # Written only when they say something, so an outcome without them is the line it was before they existed (a
    # committed recording's summaries replay byte for byte).
    terminated: str | None = Field(None, exclude_if=lambda v: v is None)  # a failure contract's terminate: why
    cache_calls: int = Field(0, exclude_if=lambda v: v == 0)  # calls of actions with a tool cache (hits and misses)
    cache_hits: int = Field(0, exclude_if=lambda v: v == 0)  # of those, answered from the cache: the tool did not run


class TraceEvent(BaseModel):
    """One line of ``traces.jsonl``; every line names its run, so files can be merged freely."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    mode: str
    model: str
    trial: int
    seq: int
    step: int
    ts: str
    decision_maker: DecisionMaker
    kind: EventKind
    action: str | None = None
    args: Any = None
    result: str | None = None
    latency_ms: float | None = None
    usage: Usage | None = None
    error: ErrorInfo | None = None
    detail: dict[str, Any] | None = None
    outcome: RunOutcome | None = None


class TraceWriter:
    """Appends events to a JSONL file: one ``write`` system call per line, nothing buffered in the process.

    The file is unbuffered and each line goes out in a single write of its bytes, so a crash, a kill or
    Ctrl-C can only lose the line being written: every finished line is in the file, whole and valid.
    A line the system refuses (a full disk) is cut back off the file and raises WriteFailed naming it;
    after that the writer takes no more lines, so nothing is ever appended to a torn one.
    """

    _failed: str | None = None  # why a line could not be written: the file takes no more

    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "ab", buffering=0)
        except OSError as exc:
            raise WriteFailed(path, _reason(exc)) from None

    def write(self, event: BaseModel) -> None:  # a TraceEvent, or any record of a JSONL log (recordings)
        self._append(event.__pydantic_serializer__.to_json(event) + b"\n")
        wrote()  # test-only: BENCH_KILL_AFTER_WRITES=N kills the process after its Nth write

    def write_many(self, events: Sequence[BaseModel]) -> None:
        """Several records (a work unit's lines) in one write system call."""
        self.write_serialized(serialized(events))

    def write_serialized(self, data: bytes) -> None:
        """Whole JSONL lines serialised already (by a worker process), in one write system call."""
        self._append(data)
        wrote()

    def _append(self, data: bytes) -> None:
        if self._failed is not None:
            raise WriteFailed(self.path, self._failed)
        line = memoryview(data)
        try:
            while line:  # a regular file takes it in one write; a short write (a full disk) is finished or raises
                written = self._file.write(line)
                line = line[written or 0 :]
        except OSError as exc:
            self._failed = _reason(exc)
            with contextlib.suppress(OSError):  # the part that went out is cut off: the file ends on a whole line
                fd = self._file.fileno()
                os.ftruncate(fd, os.fstat(fd).st_size - (len(data) - len(line)))
            raise WriteFailed(self.path, self._failed) from None

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            os.fsync(self._file.fileno())
        except OSError as exc:
            if self._failed is None:  # a failure already raised is not reported twice
                raise WriteFailed(self.path, _reason(exc)) from None
        finally:
            self._file.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is None:
            self.close()
            return
        with contextlib.suppress(WriteFailed):  # the error on its way out says what went wrong first
            self.close()


def serialized(records: Sequence[BaseModel]) -> bytes:
    """Records as the JSONL lines a ``TraceWriter`` writes."""
    return b"".join(r.__pydantic_serializer__.to_json(r) + b"\n" for r in records)


def _reason(exc: OSError) -> str:
    """The system's words for a refused write ("No space left on device"), without the errno prefix."""
    return exc.strerror or type(exc).__name__


class TraceReadReport(BaseModel):
    """How many lines a reader had to skip, and where."""

    lines: int = 0
    skipped: int = 0
    skipped_lines: list[int] = []


Record = TypeVar("Record", bound=BaseModel)


def read_records(path: Path, record_type: type[Record], report: TraceReadReport | None = None) -> Iterator[Record]:
    """Yields the valid records of a JSONL file in order; a truncated or corrupt line is skipped and counted."""
    report = report if report is not None else TraceReadReport()
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise UserInputError(f"{path}: not a regular file")
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            report.lines += 1
            try:
                yield record_type.model_validate_json(line)
            except ValidationError:
                report.skipped += 1
                report.skipped_lines.append(number)


def read_events(path: Path, report: TraceReadReport | None = None) -> Iterator[TraceEvent]:
    """The events of a ``traces.jsonl``, skipping and counting bad lines."""
    return read_records(path, TraceEvent, report)
