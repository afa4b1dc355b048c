"""What a driver that sends batches of units away keeps: one result per unit, and a unit lost too often written as such.

Both executors that run units in other processes (worker processes, Ray tasks) send a batch again when the process
running it is lost, so a unit may come back twice (``UnitLedger`` keeps the first) or never (``lost_unit`` writes it
as an infrastructure run after ``MAX_ATTEMPTS`` sends).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.core.clock import SystemClock
from harness.core.context import RunInfo, RunTrace
from harness.core.gateway import Gateway
from harness.core.outcome import ModeResult
from harness.core.store import VirtualStore
from harness.matrix.cell.cell_runner import emit_start, emit_summary, run_seed
from harness.matrix.cell.units import Cell, unit_id
from harness.matrix.executors.unit_batch import UnitDone, UnitKey, WorkerSetup
from harness.records.trace import ErrorInfo, serialized
from modes import get_mode

MAX_ATTEMPTS = 3  # times a batch is sent before its units are written as infrastructure errors


@dataclass
class UnitLedger:
    """Exactly one result per unit id: a batch sent twice (lost, then sent again) may answer twice, and only its
    first answer for a unit is written. Only batches in flight are remembered, so the driver's memory grows with
    the batches in flight, not with the matrix."""

    duplicates: int = 0
    _in_flight: dict[int, int] = field(default_factory=dict)  # batch -> its sends in flight
    _written: dict[int, set[str]] = field(default_factory=dict)  # batch -> ids of its units written

    def sent(self, batch: int) -> None:
        self._in_flight[batch] = self._in_flight.get(batch, 0) + 1

    def settled(self, batch: int) -> None:
        """A send of ``batch`` answered or was lost; once none is left in flight, the batch is forgotten."""
        left = self._in_flight.pop(batch, 1) - 1
        if left > 0:
            self._in_flight[batch] = left
        else:
            self._written.pop(batch, None)

    def first(self, batch: int, run_id: str) -> bool:
        """Whether this unit's result is the first seen (write it); a later one is counted and dropped."""
        written = self._written.setdefault(batch, set())
        if run_id in written:
            self.duplicates += 1
            return False
        written.add(run_id)
        return True


def lost_unit(setup: WorkerSetup, key: UnitKey, why: str) -> UnitDone:
    """A unit whose every send was lost (``why`` says how, in one line), as the trace of a run an infrastructure error
    ended (kind ``internal``, the kind a harness failure has): its run_start, the error naming the loss, and its
    summary, under its own id, so the matrix is complete, the run is not judged, and the report counts it with the
    infrastructure errors."""
    scenario_id, mode_name, trial = key
    scenario = next(s for s in setup.scenarios if s.id == scenario_id)
    cell = Cell(scenario, mode_name, trial)
    approver = "" if setup.approver is None else str(setup.approver)
    run_id = unit_id(setup.seed, cell, setup.model.describe(), setup.gateway_policy, approver)
    seed = run_seed(setup.seed, cell)
    events: list[Any] = []
    label = setup.label or setup.model.describe()
    trace = RunTrace(events.append, RunInfo(run_id, scenario_id, mode_name, label, trial), SystemClock())
    emit_start(trace, scenario, get_mode(mode_name), seed, setup.gateway_policy)
    trace.emit(
        step=0,
        decision_maker="runtime",
        kind="error",
        result="run_error",
        error=ErrorInfo(kind="internal", message=why),
    )
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), setup.gateway_policy)
    outcome = emit_summary(trace, scenario, gateway, ModeResult("error"), wall_ms=0.0, ended_by="internal")
    shown = tuple(events) if setup.with_events else ()
    return UnitDone(key, run_id, serialized(events), outcome, shown)
