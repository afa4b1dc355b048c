"""A model that gives fixed answers, and one run of a mode on them: hand-made runs for the verdict tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from harness.core.approvals import Gatekeeper, NobodyYet
from harness.core.clock import FakeClock
from harness.core.gateway import GatewayPolicy
from harness.core.model_port import ModelReply, ModelRequest
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell
from harness.matrix.cell.units import Cell
from harness.records.trace import RunOutcome, TraceEvent, Usage
from harness.scenario.model import Scenario


class Answers:
    """Answers in order (an exception given as an answer is raised instead), then finish; one per run."""

    label = "test:answers"

    def __init__(self, *answers: Any):
        self.answers = answers
        self.requests: list[ModelRequest] = []  # what each run asked, in order (the last run's)

    def for_run(self, seed: int) -> Answers:
        run = Answers(*self.answers)
        run.requests = self.requests
        return run

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        answer, self.answers = (
            (self.answers[0], self.answers[1:]) if self.answers else ({"action": "finish", "args": {}}, ())
        )
        if isinstance(answer, Exception):
            raise answer
        return ModelReply(proposal=answer, text=json.dumps(answer), usage=Usage(), latency_ms=0.0)

    async def aclose(self) -> None:
        return None


def mode_run(
    scenario: Scenario,
    mode: str,
    *answers: Any,
    policy: GatewayPolicy = "enforce",
    approver: Callable[[int], Gatekeeper] | None = None,
    model: Answers | None = None,
) -> tuple[RunOutcome, list[TraceEvent]]:
    """One run of ``mode`` on the given answers (or ``model``), on a fake clock, with its trace events; ``approver``
    decides at its stops (default: nobody, the run suspends)."""
    events: list[TraceEvent] = []
    config = MatrixConfig(
        model=model or Answers(*answers),
        gateway_policy=policy,
        clock=FakeClock(),
        new_run_id=lambda: "run-1",
        approver=approver or (lambda seed: NobodyYet()),
    )
    outcome = asyncio.run(run_cell(Cell(scenario, mode, 1), config, events.append))
    return outcome, events


def step(action: str, args: Any = None) -> dict[str, Any]:
    """A next-action answer."""
    return {"action": action, "args": args if args is not None else {}}
