"""Work units: a run of the matrix as something any executor can run, and whose result the driver writes whole.

A unit is one (scenario, mode, trial) of a matrix with everything that decides its run: the matrix seed, the
``--model`` value, the gateway policy and the approver. Its id (and so its run id) is a digest of those, so the
same matrix gives the same run ids from every executor and on every ``--resume``; a run started again after a
kill writes under the id its dropped attempt had. Its result is its run's trace lines, handed to the one writer
of ``traces.jsonl`` in one piece once the run's summary is written (``UnitLines``): a folder never holds half a
unit from a worker, and a kill loses only the units in flight.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.records.trace import TraceEvent
from harness.scenario.model import Scenario

UnitSink = Callable[[Sequence[TraceEvent]], None]  # a finished run's every line, in order


@dataclass(frozen=True)
class Cell:
    """One run of the matrix."""

    scenario: Scenario
    mode: str
    trial: int


def unit_id(seed: int, cell: Cell, model_choice: str, gateway_policy: str, approver: str) -> str:
    """The unit's stable id (16 hex digits): it depends only on what decides the run, never on scheduling."""
    key = "\x1f".join((str(seed), cell.scenario.id, cell.mode, str(cell.trial), model_choice, gateway_policy, approver))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class UnitLines:
    """Collects one run's trace events and hands them on together once its summary arrives.

    A run that ends without a summary (a harness failure that stops the matrix) hands on nothing: its unit is not
    finished, and ``--resume`` runs it again.
    """

    __slots__ = ("_events", "_sink")

    def __init__(self, sink: UnitSink):
        self._sink = sink
        self._events: list[TraceEvent] = []

    def __call__(self, event: TraceEvent) -> None:
        self._events.append(event)
        if event.kind == "summary":
            events, self._events = self._events, []
            self._sink(events)
