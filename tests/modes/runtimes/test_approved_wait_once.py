"""An approved wait is recorded once in every adapter: the gateway's wait for a gate, then the decision, and nothing
that records the same wait again when the framework goes on (PydanticAI runs an approved wait tool's body: that body
must not ask the gateway a second time)."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.approvals import Suspended, parse_approver
from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell
from harness.matrix.cell.units import Cell
from harness.models.scripted import ScriptedSource
from harness.records.checkpoint import HumanDecision
from harness.records.trace import TraceEvent
from harness.scenario.load import load_scenario
from modes import MODES, get_mode
from modes.runtimes.base import RuntimeMode
from tests.helpers.bench import SCENARIOS
from tests.modes.runtimes.test_pydantic_ai import resumed, scripted_ctx

ADAPTERS = sorted(name for name, cls in MODES.items() if issubclass(cls, RuntimeMode))
STORIES = ("blog_brief_approval", "bank_transfer_compliance")


def waits_and_approvals(events: list[TraceEvent]) -> tuple[list[tuple[str | None, int]], list[str | None]]:
    """The waits the gateway recorded (action, step) and the approvals a person gave (gate), from the trace."""
    waits = [(e.action, e.step) for e in events if e.kind == "action" and e.result == "wait_recorded"]
    approvals = [e.action for e in events if e.kind == "human" and e.result == "approve"]
    return waits, approvals


@pytest.mark.parametrize("name", STORIES)
@pytest.mark.parametrize("mode", ADAPTERS)
def test_each_approval_in_run_follows_exactly_one_recorded_wait(mode, name):
    s = load_scenario(SCENARIOS / f"{name}.yaml")
    events: list[TraceEvent] = []
    config = MatrixConfig(
        model=ScriptedSource("reference"), clock=FakeClock(), approver=parse_approver("scripted:approve").for_run
    )
    outcome = asyncio.run(run_cell(Cell(s, mode, 1), config, events.append))
    waits, approvals = waits_and_approvals(events)
    assert approvals and len(waits) == len(approvals) == outcome.resumes
    assert len(set(waits)) == len(waits)  # no wait recorded twice for one step
    assert outcome.stop_verdict == "correct"


def test_a_pydantic_ai_run_resumed_with_an_approval_records_no_second_wait(tmp_path):
    pytest.importorskip("pydantic_ai")
    s = load_scenario(SCENARIOS / "blog_brief_approval.yaml")
    ctx, _ = scripted_ctx(s, "reference", state_dir=tmp_path)
    with pytest.raises(Suspended):
        asyncio.run(get_mode("pydantic_ai").run(ctx))
    approval = HumanDecision(gate="brief_approval", decision="approve", who="tester")
    fresh, events = resumed(s, ctx, approval)
    assert asyncio.run(get_mode("pydantic_ai").resume(fresh, approval)).status == "finished"
    assert [r.action for r in fresh.gateway.records if r.status == "wait_recorded"] == ["wait_for_approval"]
    assert [e.result for e in events if e.decision_maker == "framework"].count("tool_approved") == 1
