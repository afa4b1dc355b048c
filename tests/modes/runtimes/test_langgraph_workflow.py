"""``langgraph_workflow``: the scenario's workflow as a LangGraph StateGraph whose approval nodes interrupt; it walks
every story as bench's own ``workflow`` does (the same walk's code runs in each graph node), and resumes from
LangGraph's SQLite checkpoint."""

from __future__ import annotations

import asyncio
import itertools

import pytest

pytest.importorskip("langgraph")

from harness.core import HumanDecision
from harness.core.approvals import ApproverSpec
from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_matrix
from harness.models.scripted import ScriptedSource
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.load import load_all
from harness.scenario.model import Scenario
from modes import get_mode
from modes.runtimes.langgraph_driver import DATABASE
from tests.helpers.adapter_runs import adapter_ctx, carried, committed, judged, resumed_context
from tests.helpers.bench import SCENARIOS

MODE = "langgraph_workflow"
LIBRARY = load_all(SCENARIOS)
GATE_STORIES = ("blog_brief_approval", "blog_two_gates", "procurement_approval")


def runs(s: Scenario, modes: list[str], policy: str, gateway: str, approver: str | None) -> list[list[TraceEvent]]:
    """One run of each mode, each run's events; ``approver`` decides at every stop (none: the run suspends)."""
    events: list[TraceEvent] = []
    counter = itertools.count(1)
    config = MatrixConfig(
        model=ScriptedSource(policy),
        gateway_policy=gateway,  # type: ignore[arg-type]
        clock=FakeClock(),
        new_run_id=lambda: f"run-{next(counter)}",
        approver=ApproverSpec(approver).for_run if approver else MatrixConfig.approver,
    )
    asyncio.run(run_matrix(cells_for([s], modes, 1), config, events.append))
    return [[e for e in events if e.mode == mode] for mode in modes]


def walked(events: list[TraceEvent]) -> list[tuple]:
    """What a walk did, wherever its code ran: every event but who stopped the run (the workflow, or LangGraph)."""
    return [(e.step, e.kind, e.action, e.result, e.args) for e in events if e.kind not in ("run_start", "summary")]


def outcome_of(events: list[TraceEvent]) -> RunOutcome:
    outcome = events[-1].outcome
    assert outcome is not None
    return outcome


@pytest.mark.parametrize(
    ("policy", "gateway", "approver"),
    [
        ("reference", "enforce", None),
        ("eager", "audit", None),
        ("reference", "enforce", "approve_after_revision"),
        ("compliant", "enforce", "approve"),
        ("eager", "enforce", "reject"),
    ],
)
@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_every_story_walks_as_benchs_own_workflow_walks_it(name, policy, gateway, approver):
    s = LIBRARY[name]
    ours, theirs = runs(s, [MODE, "workflow"], policy, gateway, approver)
    assert walked(ours) == walked(theirs)
    mine, built_in = outcome_of(ours), outcome_of(theirs)
    assert (mine.status, mine.suspended_at, mine.stop_verdict, mine.violations) == (
        built_in.status,
        built_in.suspended_at,
        built_in.stop_verdict,
        built_in.violations,
    )
    stops = [e.decision_maker for e in ours if e.kind == "suspend"]
    assert set(stops) <= {"framework"}  # an approval node's stop is LangGraph's interrupt


@pytest.mark.parametrize("name", GATE_STORIES)
def test_the_reference_policy_stops_at_the_gate_the_oracle_expects(name):
    s = LIBRARY[name]
    [events] = runs(s, [MODE], "reference", "enforce", None)
    outcome = outcome_of(events)
    assert (outcome.status, outcome.suspended_at, outcome.stop_verdict) == (
        "suspended",
        s.oracle.expected_stop,
        "correct",
    )


@pytest.mark.parametrize("name", GATE_STORIES)
def test_an_eager_model_commits_nothing_gated_early_even_audited(name):
    [events] = runs(LIBRARY[name], [MODE], "eager", "audit", None)
    assert outcome_of(events).premature_side_effects == 0


@pytest.mark.parametrize("name", GATE_STORIES)
def test_a_run_suspended_at_an_approval_node_resumes_from_sqlite_and_commits_the_gated_work_once(name, tmp_path):
    s = LIBRARY[name]
    ctx, _ = adapter_ctx(s, "reference", state_dir=tmp_path)
    stopped = asyncio.run(carried(get_mode(MODE).run(ctx)))
    gate = s.oracle.expected_stop
    assert (stopped.status, stopped.suspended_at) == ("suspended", gate) and (tmp_path / DATABASE).is_file()
    gated = {a.name for a in s.actions if a.kind == "task" and a.gate == gate}
    assert not any(committed(ctx, action) for action in gated)

    approval = HumanDecision(gate=gate, decision="approve", who="tester")
    fresh, later = resumed_context(ctx, approval, ScriptedSource("reference").for_run(0))
    outcome = judged(fresh, asyncio.run(carried(get_mode(MODE).resume(fresh, approval))))
    done = {action: committed(fresh, action) for action in gated}
    assert all(len(steps) <= 1 for steps in done.values()) and any(done.values())
    assert outcome.repeated_side_effects == 0 and outcome.premature_side_effects == 0
    assert [e.result for e in later if e.kind == "decision" and e.action == gate] == ["approved"]


def test_a_revision_brought_by_a_resume_sends_the_walk_back_to_the_step_before_the_gate(tmp_path):
    s = LIBRARY["blog_brief_approval"]
    ctx, _ = adapter_ctx(s, "reference", state_dir=tmp_path)
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    revision = HumanDecision(gate="brief_approval", decision="revise", who="tester", note="shorter")
    fresh, later = resumed_context(ctx, revision, ScriptedSource("reference").for_run(0))
    again = asyncio.run(carried(get_mode(MODE).resume(fresh, revision)))
    assert (again.status, again.suspended_at) == ("suspended", "brief_approval")
    assert [(e.kind, e.action) for e in later if e.kind in ("transition", "suspend")] == [
        ("transition", "brief"),
        ("transition", "approve_brief"),
        ("suspend", "brief_approval"),
    ]
    assert committed(fresh, "create_brief") == [1, 3]  # written again after the note, at the walk's next step
