"""Both plan executors on plans written here: the plain one runs a planned wait as a marker and goes on; the
suspending one stops before every gate that is closed when its step comes, including a threshold gate that came
to apply after planning, and runs the held-back step exactly once after the approval."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.approvals import RejectedByHuman, Suspended
from harness.core.outcome import ModeResult
from harness.scenario.model import Limits
from modes.executor import Revision, run_plan, run_plan_suspending
from modes.proposals import Step
from tests.helpers.units import REFUND, THRESHOLD, Decisions, actions_of, make_ctx, scenario

S = scenario(REFUND)
T = scenario(THRESHOLD)
EVERYTHING = [a.name for a in S.actions]
WORK = [Step("read_claim", {}), Step("note", {"text": "n"})]
PAY = Step("pay", {"amount": 10})
FINISH = Step("finish", {})


def decisions(events):
    return [(e.step, e.action, e.result, (e.detail or {}).get("plan_index")) for e in events if e.kind == "decision"]


# ---------------------------------------------------------------- the plain executor


def test_the_plain_executor_runs_a_planned_wait_as_a_marker_and_goes_on():
    ctx, events = make_ctx(S, policy="audit")
    result = asyncio.run(run_plan(ctx, [*WORK, Step("ask_manager", {}), PAY, FINISH], EVERYTHING))
    assert result.status == "finished" and result.suspended_at is None
    assert actions_of(events) == [
        ("read_claim", "read"),
        ("note", "committed"),
        ("ask_manager", "wait_recorded"),
        ("pay", "committed"),
    ]
    assert not any(e.kind == "suspend" for e in events)
    assert decisions(events) == [
        (1, "read_claim", "execute", 1),
        (2, "note", "execute", 2),
        (3, "ask_manager", "execute", 3),
        (4, "pay", "execute", 4),
        (4, "finish", "run_finished", 5),
    ]


def test_the_plain_executor_leaves_the_refusal_to_the_gateway():
    ctx, events = make_ctx(S)
    asyncio.run(run_plan(ctx, [*WORK, PAY], EVERYTHING))
    assert actions_of(events)[-1] == ("pay", "blocked")


def test_the_plain_executor_passes_the_offer_to_the_gateway():
    ctx, events = make_ctx(S)
    asyncio.run(run_plan(ctx, [Step("note", {"text": "n"})], ["read_claim"]))
    assert actions_of(events) == [("note", "blocked")] and ctx.gateway.records[0].reason == "not_allowed"


def test_the_plain_executor_stops_at_finish_and_runs_nothing_after_it():
    ctx, events = make_ctx(S)
    result = asyncio.run(run_plan(ctx, [Step("read_claim", {}), FINISH, Step("note", {"text": "n"})], EVERYTHING))
    assert result.status == "finished" and actions_of(events) == [("read_claim", "read")]


def test_the_plain_executor_says_when_the_plan_ran_out():
    ctx, events = make_ctx(S)
    result = asyncio.run(run_plan(ctx, WORK, EVERYTHING))
    assert result.status == "finished" and decisions(events)[-1] == (2, None, "plan_exhausted", None)


def test_the_plain_executor_runs_at_most_max_steps_steps():
    ctx, events = make_ctx(S, limits=Limits(max_steps=2))
    result = asyncio.run(run_plan(ctx, [*WORK, Step("read_claim", {}), FINISH], EVERYTHING))
    assert result.status == "step_limit" and len(actions_of(events)) == 2
    assert decisions(events)[-1] == (2, None, "step_limit", 3)


def test_the_plain_executor_with_exactly_max_steps_steps_finishes():
    ctx, _events = make_ctx(S, limits=Limits(max_steps=2))
    assert asyncio.run(run_plan(ctx, [*WORK, FINISH], EVERYTHING)).status == "finished"


# ---------------------------------------------------------------- the suspending executor


def test_the_suspending_executor_stops_at_a_wait_for_an_unapproved_gate():
    ctx, events = make_ctx(S)
    with pytest.raises(Suspended) as stopped:
        asyncio.run(run_plan_suspending(ctx, [*WORK, Step("ask_manager", {}), PAY, FINISH], EVERYTHING))
    assert stopped.value.gate == "manager_approval"
    assert actions_of(events) == [("read_claim", "read"), ("note", "committed"), ("ask_manager", "wait_recorded")]
    suspend = events[-1]
    assert (suspend.kind, suspend.step, suspend.decision_maker, suspend.detail) == (
        "suspend",
        3,
        "executor",
        {"plan_index": 3},
    )


def test_the_suspending_executor_passes_a_wait_for_a_gate_already_approved():
    ctx, events = make_ctx(S)
    ctx.gateway.store.approvals.add("manager_approval")
    result = asyncio.run(run_plan_suspending(ctx, [*WORK, Step("ask_manager", {}), PAY, FINISH], EVERYTHING))
    assert result == ModeResult("finished")
    assert actions_of(events)[-1] == ("pay", "committed") and not any(e.kind == "suspend" for e in events)


def test_a_gated_step_with_no_planned_wait_asks_for_the_approval_first_and_never_runs_unapproved():
    ctx, events = make_ctx(S, policy="audit")
    with pytest.raises(Suspended):
        asyncio.run(run_plan_suspending(ctx, [*WORK, PAY, FINISH], EVERYTHING))
    assert actions_of(events) == [("read_claim", "read"), ("note", "committed"), ("ask_manager", "wait_recorded")]
    assert decisions(events)[-1] == (3, "pay", "request_approval", 3)
    assert "payment" not in ctx.gateway.store.artifacts


def test_a_threshold_gate_that_came_to_apply_after_planning_stops_the_executor_before_its_step():
    """Planned while the amount was under the threshold (the gate open): the plan has no wait. The first step
    raises the amount over it; the executor must ask for legal's countersign before placing the order."""
    ctx, events = make_ctx(T, policy="audit")
    assert ctx.approved("legal")  # open when the plan was made
    plan = [Step("set_amount", {"amount": 500}), Step("place_order", {}), FINISH]
    with pytest.raises(Suspended) as stopped:
        asyncio.run(run_plan_suspending(ctx, plan, [a.name for a in T.actions]))
    assert stopped.value.gate == "legal"
    assert actions_of(events) == [("set_amount", "committed"), ("ask_legal", "wait_recorded")]
    assert not ctx.gateway.store.has("placed")


def test_a_threshold_gate_that_stays_open_does_not_stop_the_executor():
    ctx, events = make_ctx(T)
    plan = [Step("set_amount", {"amount": 60}), Step("place_order", {}), FINISH]
    result = asyncio.run(run_plan_suspending(ctx, plan, [a.name for a in T.actions]))
    assert result == ModeResult("finished")
    assert actions_of(events) == [("set_amount", "committed"), ("place_order", "committed")]


def test_after_the_approval_the_held_back_step_runs_exactly_once():
    gatekeeper = Decisions("approve")
    ctx, events = make_ctx(S, gatekeeper=gatekeeper)
    seen: list[str] = []
    result = asyncio.run(run_plan_suspending(ctx, [*WORK, PAY, FINISH], EVERYTHING, observations=seen))
    assert result == ModeResult("finished")
    assert actions_of(events) == [
        ("read_claim", "read"),
        ("note", "committed"),
        ("ask_manager", "wait_recorded"),
        ("pay", "committed"),
    ]
    assert [e.kind for e in events].count("human") == 1
    assert decisions(events)[-3:] == [
        (3, "pay", "request_approval", 3),
        (3, "pay", "execute", 3),
        (3, "finish", "run_finished", 4),
    ]
    assert seen == [
        'step 1: read_claim -> read: {"claim": {"amount": 2600, "id": "EX-1"}}',
        'step 2: note -> committed: {"stored": "note"}',
        'step 3: ask_manager -> wait_recorded: {"approval": "pending", "requested_for": "pay", '
        '"wait_marker": "manager_approval"}',
        "step 3: 'manager_approval' was approved",
        'step 3: pay -> committed: {"stored": "payment"}',
    ]
    assert gatekeeper.asked == [("manager_approval", 0)]


def test_after_the_approval_of_a_planned_wait_the_plan_goes_on_to_the_gated_step():
    ctx, events = make_ctx(S, gatekeeper=Decisions("approve"))
    result = asyncio.run(run_plan_suspending(ctx, [*WORK, Step("ask_manager", {}), PAY, FINISH], EVERYTHING))
    assert result == ModeResult("finished")
    assert actions_of(events)[-2:] == [("ask_manager", "wait_recorded"), ("pay", "committed")]
    assert decisions(events)[-2:] == [(4, "pay", "execute", 4), (4, "finish", "run_finished", 5)]


def test_a_blocked_approval_request_is_the_steps_result_and_the_plan_goes_on():
    ctx, events = make_ctx(S)
    result = asyncio.run(run_plan_suspending(ctx, [Step("read_claim", {}), PAY, FINISH], EVERYTHING))
    assert result == ModeResult("finished")
    assert actions_of(events) == [("read_claim", "read"), ("ask_manager", "blocked")]
    assert not any(e.kind == "suspend" for e in events)


def test_a_revision_request_goes_back_to_the_planner_with_the_note_and_the_steps_run():
    ctx, _events = make_ctx(S, gatekeeper=Decisions("revise", note="pay less"))
    seen: list[str] = []
    result = asyncio.run(run_plan_suspending(ctx, [*WORK, PAY, FINISH], EVERYTHING, observations=seen))
    assert result == Revision("pay less", 3)
    assert "payment" not in ctx.gateway.store.artifacts
    assert seen[-1] == "step 3: the reviewer did not approve 'manager_approval' yet and asked for a revision: pay less"


def test_a_rejection_ends_the_run_at_the_gate():
    ctx, _ = make_ctx(S, gatekeeper=Decisions("reject"))
    with pytest.raises(RejectedByHuman):
        asyncio.run(run_plan_suspending(ctx, [*WORK, PAY, FINISH], EVERYTHING))
    assert "payment" not in ctx.gateway.store.artifacts


def test_a_later_plan_continues_the_step_count_and_the_limit_counts_every_plan():
    ctx, events = make_ctx(S, limits=Limits(max_steps=3))
    result = asyncio.run(run_plan_suspending(ctx, WORK, EVERYTHING, executed=2))
    assert result == ModeResult("step_limit")
    assert [e.step for e in events if e.kind == "action"] == [3]
    assert decisions(events)[-1] == (3, None, "step_limit", 2)


def test_the_suspending_executor_says_when_the_plan_ran_out_and_stops_at_finish():
    ctx, events = make_ctx(S)
    result = asyncio.run(run_plan_suspending(ctx, WORK, EVERYTHING))
    assert result == ModeResult("finished") and decisions(events)[-1] == (2, None, "plan_exhausted", None)
    ctx, events = make_ctx(S)
    asyncio.run(run_plan_suspending(ctx, [FINISH, *WORK], EVERYTHING))
    assert actions_of(events) == [] and decisions(events) == [(0, "finish", "run_finished", 1)]


def test_the_suspending_executor_passes_the_offer_to_the_gateway_and_unknown_steps_to_it_too():
    ctx, _events = make_ctx(S)
    asyncio.run(run_plan_suspending(ctx, [Step("note", {"text": "n"}), Step("launch", {})], ["read_claim"]))
    assert [r.reason for r in ctx.gateway.records] == ["not_allowed", "unknown_action"]
