"""Where a suspended run's trace stands against its checkpoint, and the sink that lets a decision be carried out again.

A resume killed after it claimed its decision (``CheckpointStore.claim``) may have written any number of the
run's trace lines. Carrying the same decision out again from the same checkpoint goes the same way (scripted
and replayed models by their seed, a live one from its recording), so the lines already in the trace are
met again one by one: each is compared with the one it stands for and not written twice; only the lines past
them are written. A line that differs stops everything before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.errors import UserInputError
from harness.matrix.commands.trace_diff import compare_runs
from harness.records.checkpoint import Checkpoint, HumanDecision
from harness.records.trace import TraceEvent
from harness.terminal import printable

DECISIONS = ("approve", "reject", "revise")


class TraceDiverged(BaseException):
    """Carrying a claimed decision out again met a trace line it does not write the same way.

    A BaseException, so that no mode can swallow it: the run stops there, before anything is written.
    """


def run_events(traces: Path, run_id: str) -> list[TraceEvent]:
    """The run's events in the order of the file; lines that do not mention it are passed over unread, torn or
    damaged ones are skipped."""
    if not traces.exists():
        return []
    if not traces.is_file():  # a FIFO or a device would block or never end
        raise UserInputError(f"{traces}: not a regular file")
    found = []
    with open(traces, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if run_id not in line:
                continue
            try:
                event = TraceEvent.model_validate_json(line)
            except ValueError:  # a torn or hand-damaged line (ValidationError is a ValueError)
                continue
            if event.run_id == run_id:
                found.append(event)
    return found


def events_past(traces: Path, events: list[TraceEvent], checkpoint: Checkpoint) -> list[TraceEvent]:
    """The run's events after the suspended summary its checkpoint follows, numbered on from it; one line when the
    trace does not hold that summary or goes on out of step."""
    stop_seq = checkpoint.next_seq - 1
    at = [
        index
        for index, event in enumerate(events)
        if event.seq == stop_seq
        and event.kind == "summary"
        and event.outcome is not None
        and event.outcome.status == "suspended"
        and event.outcome.suspended_at == checkpoint.pending_gate
    ]
    if not at:
        raise UserInputError(
            f"{traces}: run {checkpoint.run_id} does not end where its checkpoint says "
            "(a suspended summary); refusing to resume it"
        )
    past = events[at[-1] + 1 :]
    if [e.seq for e in past] != list(range(checkpoint.next_seq, checkpoint.next_seq + len(past))):
        raise UserInputError(
            f"{traces}: run {checkpoint.run_id}: its lines after the suspended summary are not numbered on from it; "
            "refusing to resume it"
        )
    return past


def decision_in_trace(traces: Path, past: list[TraceEvent], checkpoint: Checkpoint) -> HumanDecision | None:
    """The decision a resume wrote to the trace without claiming it first (bench before claims): the human event
    right after the checkpoint's stop. None when the trace ends at the stop; one line when it goes on otherwise."""
    if not past:
        return None
    first, gate = past[0], checkpoint.pending_gate
    detail = first.detail or {}
    if first.kind != "human" or first.action != gate or first.result not in DECISIONS or "who" not in detail:
        raise UserInputError(
            f"{traces}: run {checkpoint.run_id} goes on past its checkpoint without a decision at '{gate}'; "
            "refusing to resume it"
        )
    return HumanDecision.model_validate(
        {
            "gate": gate,
            "decision": first.result,
            "who": str(detail["who"]),
            "note": str(detail.get("note") or ""),
            "scripted": bool(detail.get("scripted")),
        }
    )


class CatchUp:
    """A resumed run's sink: the lines the trace holds already are compared, not written again; the rest are.

    ``met``: how many of them the run takes as its own without emitting them again (a framework-run mode goes on
    from where a killed resume of it got to: ``harness.matrix.cell.runtime_resume``).
    """

    def __init__(
        self,
        traces: Path,
        first_seq: int,
        written: list[TraceEvent],
        write: Callable[[TraceEvent], None],
        met: int = 0,
    ):
        self._traces, self._first, self._written, self._write = traces, first_seq, written, write
        self.emitted = met  # lines the run has emitted since its checkpoint, met again or written

    def __call__(self, event: TraceEvent) -> None:
        index = event.seq - self._first
        if index != self.emitted:  # never a gap, never a line twice
            raise TraceDiverged(f"{self._traces}: run {event.run_id}: line {event.seq} comes out of order")
        if index < len(self._written):
            found = compare_runs([self._written[index]], [event], (event.scenario, event.mode, event.trial))
            if found is not None:
                held, now = printable(found.recorded, one_line=True), printable(found.replayed, one_line=True)
                raise TraceDiverged(
                    f"{self._traces}: run {event.run_id}: carrying its claimed decision out again does not write "
                    f"what the trace holds (line {event.seq} differs in {', '.join(found.fields)}: the trace has "
                    f"{held}, the run now {now}); refusing to write more"
                )
        else:
            self._write(event)
        self.emitted += 1

    @property
    def caught_up(self) -> bool:
        """Whether every line the trace held was met again."""
        return self.emitted >= len(self._written)
