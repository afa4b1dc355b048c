"""The plan validator on plans written here: what it accepts, sends back and rejects, gates already open included,
and the plan_validated mode that uses it (the open gates it is given come from the store, at planning time)."""

from __future__ import annotations

import pytest

from modes.plan_validated import PlanValidated, validate_plan
from modes.proposals import Step
from tests.helpers.answers import mode_run
from tests.helpers.units import REFUND, THRESHOLD, scenario

S = scenario(REFUND)
T = scenario(THRESHOLD)
WORK = [Step("read_claim", {}), Step("note", {"text": "n"})]
WAIT = Step("ask_manager", {})
PAY = Step("pay", {"amount": 1})
FINISH = Step("finish", {})


def plan(*names: str) -> list[Step]:
    return [Step(name, {}) for name in names]


def test_a_plan_that_waits_before_the_gated_step_is_accepted():
    assert validate_plan(S, [*WORK, WAIT, PAY, FINISH], set(), 6) == ("ACCEPT", [])


def test_a_gated_step_without_a_wait_before_it_is_sent_back_naming_the_step_and_gate():
    verdict, reasons = validate_plan(S, [*WORK, PAY, FINISH], set(), 6)
    assert verdict == "REVISE" and reasons == ["step 3: 'pay' needs a wait for 'manager_approval' before it"]


def test_a_wait_after_the_gated_step_does_not_count():
    verdict, reasons = validate_plan(S, [*WORK, PAY, WAIT, FINISH], set(), 6)
    assert verdict == "REVISE" and reasons == ["step 3: 'pay' needs a wait for 'manager_approval' before it"]


def test_a_gate_already_approved_needs_no_wait():
    assert validate_plan(S, [*WORK, PAY, FINISH], {"manager_approval"}, 6) == ("ACCEPT", [])


def test_an_open_gate_does_not_excuse_another_gates_step():
    verdict, reasons = validate_plan(S, [*WORK, PAY, FINISH], {"some_other_gate"}, 6)
    assert verdict == "REVISE" and len(reasons) == 1


def test_a_wait_for_another_gate_does_not_count():
    other = scenario(
        REFUND.replace(
            "  - {name: finish, kind: finish, description: End the run.}",
            "  - {name: ask_review, kind: wait, gate: review, description: Ask for a review.}\n"
            "  - {name: finish, kind: finish, description: End the run.}",
        ).replace(
            "  - {name: manager_approval, description: The manager approves refunds., on_rejection: end}",
            "  - {name: manager_approval, description: The manager approves refunds., on_rejection: end}\n"
            "  - {name: review, description: A review.}",
        )
    )
    assert validate_plan(other, [*WORK, Step("ask_review", {}), PAY, FINISH], set(), 6)[0] == "REVISE"


def test_an_unknown_action_is_sent_back():
    verdict, reasons = validate_plan(S, [*WORK, Step("launch", {}), FINISH], set(), 6)
    assert verdict == "REVISE" and reasons == ["step 3: unknown action 'launch'"]


def test_finish_anywhere_but_last_is_sent_back():
    verdict, reasons = validate_plan(S, [FINISH, *WORK, FINISH], set(), 6)
    assert verdict == "REVISE" and reasons == ["step 1: finish must be the last step"]
    assert validate_plan(S, [*WORK], set(), 6) == ("ACCEPT", [])  # no finish at all: the plan just runs out


def test_a_plan_longer_than_the_steps_left_is_sent_back_and_finish_does_not_count():
    assert validate_plan(S, [*WORK, FINISH], set(), 2) == ("ACCEPT", [])
    verdict, reasons = validate_plan(S, [*WORK, WAIT, FINISH], set(), 2)
    assert verdict == "REVISE" and reasons == ["the plan has more than 2 action steps"]


def test_every_reason_is_given_at_once_in_plan_order():
    verdict, reasons = validate_plan(S, [FINISH, Step("launch", {}), PAY, *WORK], set(), 3)
    assert verdict == "REVISE"
    assert reasons == [
        "step 1: finish must be the last step",
        "step 2: unknown action 'launch'",
        "step 3: 'pay' needs a wait for 'manager_approval' before it",
        "the plan has more than 3 action steps",
    ]


def test_a_step_the_agents_role_may_not_call_is_rejected_outright():
    verdict, reasons = validate_plan(S, [*WORK, Step("admin_override", {}), Step("admin_override", {})], set(), 6)
    assert verdict == "REJECT"
    assert reasons == ["'admin_override' is not permitted for role 'agent'"] * 2


def test_a_role_that_may_call_it_is_not_rejected():
    admin = scenario(REFUND, agent_role="admin")
    assert validate_plan(admin, [*WORK, Step("admin_override", {})], set(), 6) == ("ACCEPT", [])


def test_a_threshold_gate_under_its_threshold_needs_no_wait():
    """The mode passes the gates open at planning time: a threshold gate under its threshold is one of them."""
    assert validate_plan(T, plan("set_amount", "place_order", "finish"), {"legal"}, 5) == ("ACCEPT", [])
    assert validate_plan(T, plan("set_amount", "place_order", "finish"), set(), 5)[0] == "REVISE"


# ---------------------------------------------------------------- the mode around it


def plan_answer(*steps: Step) -> dict:
    return {"plan": [{"action": s.action, "args": s.args} for s in steps]}


def test_the_mode_accepts_a_plan_without_a_wait_when_the_gate_was_approved_before_the_run():
    approved = scenario(THRESHOLD, gates=[{"name": "legal", "description": "d", "approved": True}])
    outcome, events = mode_run(
        approved, "plan_validated", plan_answer(Step("set_amount", {"amount": 500}), Step("place_order", {}), FINISH)
    )
    assert [e.result for e in events if e.kind == "plan_validation"] == ["ACCEPT"]
    assert outcome.status == "finished" and outcome.side_effects_committed == 2


def test_the_mode_accepts_an_open_threshold_gate_and_its_executor_still_stops_once_the_gate_applies():
    outcome, events = mode_run(
        T, "plan_validated", plan_answer(Step("set_amount", {"amount": 500}), Step("place_order", {}), FINISH)
    )
    assert [e.result for e in events if e.kind == "plan_validation"] == ["ACCEPT"]
    assert (outcome.status, outcome.suspended_at, outcome.premature_side_effects) == ("suspended", "legal", 0)


def test_the_mode_sends_back_then_rejects_after_its_revisions():
    bad = plan_answer(*WORK, PAY, FINISH)
    outcome, events = mode_run(S, "plan_validated", *[bad] * (PlanValidated.max_plan_revisions + 1))
    verdicts = [(e.result, (e.detail or {}).get("revision")) for e in events if e.kind == "plan_validation"]
    assert verdicts == [("REVISE", 0), ("REVISE", 1), ("REJECT", 2)]
    assert outcome.status == "rejected" and outcome.steps == 0
    last = [e for e in events if e.kind == "plan_validation"][-1]
    assert last.detail is not None and last.detail["reasons"][-1] == "no revisions left"


def test_the_mode_runs_the_revised_plan_once_it_waits_before_the_gate():
    outcome, events = mode_run(
        S, "plan_validated", plan_answer(*WORK, PAY, FINISH), plan_answer(*WORK, WAIT, PAY, FINISH)
    )
    calls = [e for e in events if e.kind == "model_call"]
    assert len(calls) == 2
    assert outcome.status == "suspended" and outcome.stop_verdict == "correct"


@pytest.mark.parametrize("steps_left", [0, 1])
def test_the_validator_counts_only_the_steps_left(steps_left):
    verdict, _ = validate_plan(S, [Step("read_claim", {}), FINISH], set(), steps_left)
    assert verdict == ("ACCEPT" if steps_left else "REVISE")
