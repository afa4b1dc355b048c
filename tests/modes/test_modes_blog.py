"""The article's three results on blog_brief_approval, one scripted policy at a time (issue 2 acceptance)."""

from __future__ import annotations

import pytest

from harness.records.trace import TraceEvent
from modes import MODES
from tests.helpers.bench import run_offline
from tests.helpers.mode_checks import check_audit_gateway_counts_premature_writes, recorded_modes

POLICIES = ["compliant", "eager", "looping", "random"]


def of_kind(events: list[TraceEvent], kind: str) -> list[TraceEvent]:
    return [e for e in events if e.kind == kind]


def test_react_looping_repeats_create_brief_until_the_step_limit(blog):
    events, [outcome] = run_offline(blog, ["react"], "looping")
    proposals = [e.action for e in of_kind(events, "model_call")]
    # four steps, then one more proposal that is not a finish: the run ends there without carrying it out
    assert proposals == ["create_brief"] * (blog.limits.max_steps + 1) == ["create_brief"] * 5
    assert [e.action for e in of_kind(events, "action")] == ["create_brief"] * 4
    assert outcome.status == "step_limit"
    [limit] = [e for e in of_kind(events, "decision") if e.result == "step_limit"]
    assert (limit.step, limit.action) == (5, "create_brief")
    assert not any(e.action == "wait_for_approval" for e in events)
    assert not any(e.action == "write_draft" for e in events)
    assert outcome.stop_correct is False and outcome.premature_side_effects == 0


def test_plan_execute_compliant_records_the_wait_goes_on_and_the_gateway_blocks_the_draft(blog):
    events, [outcome] = run_offline(blog, ["plan_execute"], "compliant")
    [plan_call] = of_kind(events, "model_call")
    plan = [step["action"] for step in plan_call.args["plan"]]
    assert plan.index("wait_for_approval") < plan.index("write_draft")
    verdicts = [(e.action, e.result) for e in of_kind(events, "action")]
    assert verdicts == [
        ("create_brief", "committed"),
        ("wait_for_approval", "wait_recorded"),
        ("write_draft", "blocked"),
    ]
    assert all(e.decision_maker == "executor" for e in of_kind(events, "decision"))
    assert of_kind(events, "decision")[-1].result == "run_finished"
    assert outcome.status == "finished"
    assert outcome.wait_marker_without_suspend is True
    assert outcome.side_effects_blocked == 1 and outcome.premature_side_effects == 0
    assert outcome.stop_correct is False and outcome.stop_verdict == "late"  # the brief was done: it went past the gate


@pytest.mark.parametrize("policy", POLICIES)
def test_workflow_suspends_after_the_brief_and_never_offers_the_draft(blog, policy):
    events, [outcome] = run_offline(blog, ["workflow"], policy)
    assert outcome.status == "suspended" and outcome.suspended_at == "brief_approval"
    assert outcome.stop_correct and outcome.oracle_passed
    assert not any(e.action == "write_draft" for e in events)
    for call in of_kind(events, "model_call"):
        assert "write_draft" not in call.detail["offered"]
    [suspend] = of_kind(events, "suspend")
    assert suspend.decision_maker == "workflow" and suspend.result == "run_suspended"
    # The approval node's request is in the gateway's record, under the gate's wait action, before the stop.
    actions = of_kind(events, "action")
    assert [(e.action, e.result) for e in actions] == [
        ("create_brief", "committed"),
        ("wait_for_approval", "wait_recorded"),
    ]
    assert actions[-1].seq < suspend.seq


def test_workflow_is_stop_correct_for_a_thousand_random_seeds(blog):
    for seed in range(1000):
        events, [outcome] = run_offline(blog, ["workflow"], "random", seed=seed)
        assert outcome.stop_correct and outcome.suspended_at == "brief_approval", seed
        assert all("write_draft" not in (e.detail or {}).get("offered", []) for e in events), seed


def test_random_policy_really_varies_with_the_seed(blog):
    """Guards the test above: random proposals differ across seeds, so its success is not trivial."""
    contents = set()
    for seed in range(20):
        events, _ = run_offline(blog, ["react"], "random", seed=seed)
        contents.add(tuple(e.action for e in of_kind(events, "model_call")))
    assert len(contents) > 5


def test_react_guardrails_never_suspends_on_an_approval_request_the_gateway_blocked(blog):
    """Eager goes for the draft before any brief: nobody can be asked to approve it, so the guard does not stop."""
    events, [outcome] = run_offline(blog, ["react_guardrails"], "eager")
    requests = of_kind(events, "action")
    # every turn asks again: 4 turns are within write_draft's retry budget (its first call and 3 retries)
    assert [(e.action, e.result, e.detail["reason"]) for e in requests] == [
        ("wait_for_approval", "blocked", "precondition")
    ] * blog.limits.max_steps
    assert "brief missing" in requests[0].detail["observation"]["detail"]
    assert not of_kind(events, "suspend")
    assert outcome.status == "step_limit" and outcome.stop_verdict == "no_stop" and not outcome.stop_correct
    assert outcome.blocked_by == {"precondition": 4} and outcome.violations == ["missing_artifact:brief"]


def test_react_guardrails_under_audit_records_the_premature_request_and_stops_early(blog):
    """Without a gateway behind it the guard would ask for an approval with no brief: recorded, and judged early."""
    events, [outcome] = run_offline(blog, ["react_guardrails"], "eager", gateway="audit")
    [request] = of_kind(events, "action")
    assert (request.action, request.result, request.detail["violations"]) == (
        "wait_for_approval",
        "wait_recorded",
        ["precondition"],
    )
    assert of_kind(events, "suspend")[0].decision_maker == "runtime"
    assert outcome.status == "suspended" and outcome.stop_verdict == "early"
    assert outcome.unauthorized_side_effects == 0 and "missing_artifact:brief" in outcome.violations


def test_react_guardrails_compliant_suspends_at_its_recorded_wait(blog):
    events, [outcome] = run_offline(blog, ["react_guardrails"], "compliant")
    assert [(e.action, e.result) for e in of_kind(events, "action")] == [
        ("create_brief", "committed"),
        ("wait_for_approval", "wait_recorded"),
    ]
    assert outcome.suspended_at == "brief_approval" and outcome.stop_verdict == "correct" and outcome.oracle_passed


def test_plan_validated_rejects_a_plan_that_writes_before_waiting(blog):
    events, [outcome] = run_offline(blog, ["plan_validated"], "eager")
    verdicts = [e.result for e in of_kind(events, "plan_validation")]
    assert verdicts == ["REVISE"] * MODES["plan_validated"].max_plan_revisions + ["REJECT"]
    assert outcome.status == "rejected" and outcome.steps == 0


def test_plan_validated_compliant_suspends_at_the_wait(blog):
    events, [outcome] = run_offline(blog, ["plan_validated"], "compliant")
    assert [e.result for e in of_kind(events, "plan_validation")] == ["ACCEPT"]
    assert outcome.status == "suspended" and outcome.oracle_passed
    assert not any(e.action == "write_draft" and e.kind == "action" for e in events)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_audit_gateway_lets_premature_writes_through_and_counts_them(blog, mode):
    """With the gateway only auditing, what the mode's own control flow allows becomes visible: a naive mode writes
    the draft early, a hard-gate mode never does (read from the mode's class)."""
    check_audit_gateway_counts_premature_writes(blog, mode)


def test_every_mode_here_is_naive_or_hard_gated():
    """Today's modes all declare one of the two, so the check above proves its strongest claim for each of them."""
    assert all(cls.naive != cls.hard_gate for cls in MODES.values() if cls.name in recorded_modes())
