"""Structured plans (seed 001): the dependency checks refuse a bad plan (an unknown id, a cycle, a step listed before
its dependency, an id used twice), in the plan node's validator and in plan_validated's; a flat plan reads as a chain;
the executor's next step is the first whose dependencies are done; a revision keeps what is done."""

from __future__ import annotations

import pytest

from harness.core import ModelError
from modes.plan_validated import validate_plan
from modes.proposals import Step
from modes.structured_plan import (
    PlanStep,
    dependency_problems,
    plan_problems,
    read_structured_plan,
    ready_step,
    revise,
)
from tests.helpers.units import REFUND, scenario

S = scenario(REFUND)


def _plan(*steps: tuple[str, str, tuple[str, ...]]) -> list[PlanStep]:
    return [PlanStep(step_id, action, {}, depends) for step_id, action, depends in steps]


GOOD = _plan(("read", "read_claim", ()), ("note", "note", ("read",)), ("ask", "ask_manager", ("note",)))


def test_a_plan_in_dependency_order_has_no_problem():
    assert dependency_problems(GOOD) == []


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (_plan(("read", "read_claim", ()), ("note", "note", ("lookup",))), "depends on unknown step 'lookup'"),
        (_plan(("a", "read_claim", ("b",)), ("b", "note", ("a",))), "a -> b -> a depend on each other in a cycle"),
        (_plan(("a", "read_claim", ("a",))), "a -> a depend on each other in a cycle"),
        (_plan(("note", "note", ("read",)), ("read", "read_claim", ())), "depends on 'read', which comes after it"),
        (_plan(("read", "read_claim", ()), ("read", "note", ())), "id 'read' is used twice"),
    ],
    ids=["unknown_id", "cycle", "self_dependency", "before_its_dependency", "id_twice"],
)
def test_the_dependency_checks_refuse_a_bad_plan(plan, words):
    problems = dependency_problems(plan)
    assert any(words in problem for problem in problems), problems
    verdict, reasons = validate_plan(S, plan, set(), max_steps=6)  # plan_validated's validator checks them too
    assert verdict == "REVISE" and any(words in reason for reason in reasons), reasons


def test_plan_validated_finds_nothing_to_check_in_a_flat_plans_dependencies():
    flat = [Step("read_claim", {}), Step("note", {"text": "n"}), Step("ask_manager", {}), Step("finish", {})]
    assert validate_plan(S, flat, set(), max_steps=6) == ("ACCEPT", [])


def test_the_plan_nodes_validator_refuses_an_action_the_stage_does_not_offer_and_too_many_steps():
    problems = plan_problems(GOOD, ["read_claim", "note"], max_steps=2)
    assert any("(ask_manager): not one of this stage's steps" in p for p in problems), problems
    assert any("3 steps to run, more than the 2" in p for p in problems), problems


def test_a_flat_plan_reads_as_a_chain_with_its_actions_as_ids_and_no_finish():
    proposal = {"plan": [{"action": "note", "args": {"text": "a"}}, {"action": "note"}, {"action": "finish"}]}
    steps = read_structured_plan(proposal, "finish")
    assert [(s.id, s.action, s.depends_on) for s in steps] == [("note", "note", ()), ("note_2", "note", ("note",))]


def test_a_structured_step_keeps_its_own_id_dependencies_and_completion_condition():
    proposal = {
        "plan": [
            {"id": "r", "action": "read_claim", "args": {}, "depends_on": [], "done_when": ""},
            {"id": "n", "action": "note", "args": {"text": "x"}, "depends_on": ["r"], "done_when": "note"},
        ]
    }
    steps = read_structured_plan(proposal, "finish")
    assert [(s.id, s.depends_on, s.done_when, s.status) for s in steps] == [
        ("r", (), None, "pending"),
        ("n", ("r",), "note", "pending"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"plan": []},
        {"plan": [{"id": "", "action": "note"}]},
        {"plan": [{"id": "a", "action": "note", "depends_on": "b"}]},
    ],
    ids=["empty", "empty_id", "depends_on_not_a_list"],
)
def test_a_plan_that_does_not_read_is_a_schema_error(bad):
    with pytest.raises(ModelError) as raised:
        read_structured_plan(bad, "finish")
    assert raised.value.kind == "schema"


def test_the_next_step_is_the_first_pending_one_whose_dependencies_are_done():
    plan = _plan(("a", "read_claim", ()), ("b", "note", ("a",)), ("c", "ask_manager", ()))
    assert ready_step(plan).id == "a"
    plan[0].status = "failed"
    assert ready_step(plan).id == "c"  # b waits for a; c depends on nothing
    plan[2].status = "done"
    assert ready_step(plan) is None


def test_a_revision_keeps_done_steps_done_and_reruns_a_failed_one():
    current = _plan(("a", "read_claim", ()), ("b", "note", ("a",)), ("x", "leak", ()))
    current[0].status, current[1].status, current[2].status = "done", "failed", "done"
    revised = revise(current, _plan(("a", "read_claim", ()), ("b", "note", ("a",))))
    assert [(s.id, s.status) for s in revised] == [("x", "done"), ("a", "done"), ("b", "pending")]
    assert dependency_problems(revised) == []
