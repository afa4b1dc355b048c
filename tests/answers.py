"""A model that gives fixed answers, and one run of a mode on them: hand-made runs for the verdict tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.clock import FakeClock
from harness.gateway import GatewayPolicy
from harness.models.base import ModelReply, ModelRequest
from harness.runner import Cell, MatrixConfig, run_cell
from harness.scenario import Scenario
from harness.trace import RunOutcome, TraceEvent, Usage


class Answers:
    """Answers in order (an exception given as an answer is raised instead), then finish; one per run."""

    label = "test:answers"

    def __init__(self, *answers: Any):
        self.answers = answers

    def for_run(self, seed: int) -> Answers:
        return Answers(*self.answers)

    async def complete(self, request: ModelRequest) -> ModelReply:
        answer, self.answers = (self.answers[0], self.answers[1:]) if self.answers else ({"action": "finish", "args": {}}, ())
        if isinstance(answer, Exception):
            raise answer
        return ModelReply(proposal=answer, text=json.dumps(answer), usage=Usage(), latency_ms=0.0)

    async def aclose(self) -> None:
        return None


def mode_run(scenario: Scenario, mode: str, *answers: Any,
             policy: GatewayPolicy = "enforce") -> tuple[RunOutcome, list[TraceEvent]]:
    """One run of ``mode`` on the given answers, on a fake clock, with its trace events."""
    events: list[TraceEvent] = []
    config = MatrixConfig(model=Answers(*answers), gateway_policy=policy, clock=FakeClock(), new_run_id=lambda: "run-1")
    outcome = asyncio.run(run_cell(Cell(scenario, mode, 1), config, events.append))
    return outcome, events


def step(action: str, args: Any = None) -> dict[str, Any]:
    """A next-action answer."""
    return {"action": action, "args": args if args is not None else {}}
