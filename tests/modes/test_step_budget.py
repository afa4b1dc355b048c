"""Step budgets count actions, never the finish proposal, in every mode (issue 20): a run that did all its work in
exactly ``max_steps`` actions and then proposes finish finishes; one step fewer and the budget still binds."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.approvals import ApproverSpec
from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell
from harness.matrix.cell.units import Cell
from harness.models.scripted import ScriptedSource
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.model import Limits, Scenario
from modes import MODES
from modes.runtimes.base import RuntimeMode
from tests.helpers.answers import Answers, mode_run, step
from tests.helpers.units import REFUND, scenario

BUILT_IN = sorted(name for name, cls in MODES.items() if not issubclass(cls, RuntimeMode))
# The unit refund story with a workflow that does the reference work too (its own skips the note)
STORY = scenario(
    REFUND,
    workflow={
        "start": "read",
        "nodes": [
            {"id": "read", "type": "action", "action": "read_claim", "next": "note"},
            {"id": "note", "type": "model_step", "action": "note", "next": "approve"},
            {"id": "approve", "type": "approval", "gate": "manager_approval", "next": "pay"},
            {"id": "pay", "type": "model_step", "action": "pay", "next": "done"},
            {"id": "done", "type": "end"},
        ],
    },
)
# read_claim, note, ask_manager, then (approved) pay: the whole story's actions, finish not among them
ACTIONS = [s.action for s in STORY.reference_steps]


def exact_budget(story: Scenario, spare: int = 0) -> Scenario:
    """The story with as many steps as its reference path has actions (plus ``spare``)."""
    actions = len(story.reference_steps)
    return story.model_copy(update={"limits": Limits(max_steps=actions + spare)})


def reference_run(story: Scenario, mode: str) -> tuple[RunOutcome, list[TraceEvent]]:
    """scripted:reference under ``mode``, approved at every gate by scripted:approve."""
    events: list[TraceEvent] = []
    config = MatrixConfig(
        model=ScriptedSource("reference"),
        clock=FakeClock(),
        new_run_id=lambda: "run-1",
        approver=ApproverSpec("approve").for_run,
    )
    return asyncio.run(run_cell(Cell(story, mode, 1), config, events.append)), events


def test_the_story_has_four_reference_actions():
    assert ACTIONS == ["read_claim", "note", "ask_manager", "pay"]


@pytest.mark.parametrize("mode", BUILT_IN)
def test_a_budget_equal_to_the_reference_actions_finishes_in_every_mode(mode):
    outcome, events = reference_run(exact_budget(STORY), mode)
    assert outcome.status == "finished" and outcome.stop_verdict != "no_stop", (mode, outcome.status)
    assert not [e for e in events if e.kind == "decision" and e.result == "step_limit"], mode
    if MODES[mode].hard_gate:  # its own code stops at the gate, the approver opens it, the work is all done
        assert outcome.stop_verdict == "correct", (mode, outcome.stop_verdict, outcome.violations)


@pytest.mark.parametrize("mode", ["react", "react_guardrails"])
def test_the_finish_after_the_last_step_is_taken_but_no_action_is(mode):
    """The proposal after the budget is spent: a finish ends the run; anything else is not carried out."""
    story = exact_budget(STORY, spare=-2)  # two steps: read the claim, write the note
    work = [step("read_claim"), step("note", {"text": "checked"})]
    finished, _ = mode_run(story, mode, *work, step("finish"))
    assert (finished.status, finished.steps) == ("finished", 2)
    cut, events = mode_run(story, mode, *work, step("leak"))
    assert (cut.status, cut.stop_verdict, cut.steps) == ("step_limit", "no_stop", 2)
    assert "leak" not in [e.action for e in events if e.kind == "action"]
    [limit] = [e for e in events if e.kind == "decision" and e.result == "step_limit"]
    assert (limit.step, limit.action) == (3, "leak")


def test_react_guardrails_counts_a_refused_proposal_as_a_step():
    """A proposal the guard refuses used a step: the budget bounds a model that keeps proposing the refused."""
    story = exact_budget(STORY, spare=-2)
    outcome, events = mode_run(story, "react_guardrails", step("admin_override"), step("read_claim"), step("note"))
    assert [e.result for e in events if e.kind == "decision"][:1] == ["refused"]
    assert (outcome.status, outcome.steps) == ("step_limit", 1)


def test_an_agent_node_hands_in_its_report_after_its_last_step():
    """A sub-agent with a declared report and a budget of exactly the work: the finish with the report still counts."""
    story = scenario(
        REFUND,
        workflow={
            "start": "work",
            "nodes": [
                {
                    "id": "work",
                    "type": "agent",
                    "tools": ["read_claim", "note"],
                    "max_steps": 2,
                    "output": {"type": "object", "properties": {"status": {"type": "string"}}, "required": ["status"]},
                    "next": "done",
                },
                {"id": "done", "type": "end"},
            ],
        },
        oracle={"expected_stop": "finished", "reference_path": ["read_claim", "note", "finish"]},
    )
    model = Answers(step("read_claim"), step("note", {"text": "ok"}), step("finish", {"status": "done"}))
    outcome, events = mode_run(story, "workflow", model=model)
    [handback] = [e for e in events if e.kind == "decision" and e.result == "handback"]
    assert handback.detail["met"] and handback.detail["report"] == {"status": "done"}
    assert outcome.status == "finished" and len(model.requests) == 3
