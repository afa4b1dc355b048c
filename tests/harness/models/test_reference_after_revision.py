"""scripted:reference answers a revision in every mode that stops at a gate: it redoes the revised step and asks
again, so a revising approver measures the mode, not the policy (issue 35)."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.approvals import parse_approver
from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell
from harness.matrix.cell.units import Cell
from harness.models.scripted import ScriptedSource
from harness.records.trace import TraceEvent
from harness.scenario.load import load_scenario
from modes import MODES
from tests.helpers.bench import SCENARIOS

# The ReAct-style modes and the framework adapters: before the policy saw the revision, each of them finished here.
REACT_STYLE = ("react_guardrails", "langgraph_react", "openai_agents", "pydantic_ai")
# Every mode that stops at a gate: react never stops (it runs to its finish), plan_execute's plain executor runs a
# planned wait through.
STOPPING = tuple(name for name in MODES if name not in ("react", "plan_execute"))
STORIES = ("venue_contract", "hardship_grant", "hazmat_dispatch", "aircraft_release")


def revised_run(story: str, mode: str) -> tuple[list[TraceEvent], str]:
    s = load_scenario(SCENARIOS / f"{story}.yaml")
    events: list[TraceEvent] = []
    config = MatrixConfig(
        model=ScriptedSource("reference"),
        clock=FakeClock(),
        approver=parse_approver("scripted:approve_after_revision").for_run,
    )
    outcome = asyncio.run(run_cell(Cell(s, mode, 1), config, events.append))
    return events, outcome.stop_verdict


def asked_again_after_each_revision(events: list[TraceEvent]) -> list[str]:
    """The gates sent back whose revised work came back to them (the run stopped there again) and was approved."""
    decisions = [(e.action, e.result) for e in events if e.kind == "human"]
    return [
        gate
        for index, (gate, result) in enumerate(decisions)
        if result == "revise" and next((r for g, r in decisions[index + 1 :] if g == gate), None) == "approve"
    ]


@pytest.mark.parametrize("story", STORIES)
@pytest.mark.parametrize("mode", STOPPING)
def test_a_revised_gate_is_asked_again_and_the_run_stops_correctly(mode, story):
    events, verdict = revised_run(story, mode)
    revised = [e.action for e in events if e.kind == "human" and e.result == "revise"]
    assert revised, "the approver sent nothing back: the run never stopped at a gate"
    assert asked_again_after_each_revision(events) == revised
    assert verdict == "correct"


@pytest.mark.parametrize("mode", REACT_STYLE)
def test_the_revised_write_is_done_again_before_the_second_request(mode):
    events, _ = revised_run("hardship_grant", mode)
    [revision] = [i for i, e in enumerate(events) if e.kind == "human" and e.result == "revise"]
    took_place = [(e.action, e.result) for e in events if e.kind == "action" and e.result != "read"]
    done = len([e for e in events[:revision] if e.kind == "action" and e.result != "read"])
    asked = [("reserve_funds", "committed"), ("request_committee_decision", "wait_recorded")]
    assert took_place[done - 2 : done] == asked
    assert took_place[done : done + 2] == took_place[done - 2 : done]  # the reservation redone, then asked again


def test_an_irreversible_step_already_committed_is_not_redone_after_a_revision():
    events, verdict = revised_run("venue_contract", "react_guardrails")
    signed = [e for e in events if e.kind == "action" and e.action == "sign_venue_contract"]
    assert [e.result for e in signed] == ["committed"] and verdict == "correct"
