"""Scripted approvers are registered like modes: one decorated rule adds one, --approver and --help find it by
name, and an unknown name is one line listing the registered ones."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from harness.core.approvals import (
    SCRIPTED_APPROVERS,
    ApproverSpec,
    NobodyYet,
    ScriptedApprover,
    approver_choices,
    nobody_decides,
    parse_approver,
    scripted_approver,
)
from harness.errors import UnknownNameError
from harness.records.checkpoint import Decision
from harness.registry import Registry
from tests.helpers.registries import restored


@pytest.fixture
def registry() -> Iterator[Registry]:
    """The registry for the test to add to; what the test added is taken out afterwards."""
    with restored(SCRIPTED_APPROVERS) as registry:
        yield registry


def test_the_registry_holds_the_five_documented_approvers_in_order():
    assert list(SCRIPTED_APPROVERS) == ["approve", "reject", "approve_after_revision", "random", "plan_reader"]
    assert approver_choices() == "scripted:approve|reject|approve_after_revision|random|plan_reader"


@pytest.mark.parametrize("name", list(SCRIPTED_APPROVERS))
def test_every_registered_approver_parses_and_says_who_it_is(name):
    spec = parse_approver(f"scripted:{name}")
    assert spec == ApproverSpec(name) and str(spec) == f"scripted:{name}"
    decision = spec.for_run(7).decide("publish", 0)
    assert decision is not None and decision.who == f"scripted:{name}" and decision.scripted


def test_one_decorated_rule_adds_an_approver(registry):
    @scripted_approver("second_opinion")
    def second_opinion(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
        return "reject", f"'{gate}' needs a second opinion"

    assert approver_choices().endswith("|plan_reader|second_opinion")
    decision = parse_approver("scripted:second_opinion").for_run(1).decide("deploy", 0)
    assert decision is not None
    assert (decision.decision, decision.note, decision.who) == (
        "reject",
        "'deploy' needs a second opinion",
        "scripted:second_opinion",
    )


def test_a_name_registered_twice_is_refused(registry):
    with pytest.raises(ValueError, match="'approve' registered twice"):
        scripted_approver("approve")(lambda approver, gate: ("approve", ""))


@pytest.mark.parametrize("value", ["boss", "scripted:boss", "human:approve", "scripted:"])
def test_an_unknown_approver_lists_the_registered_ones(value):
    with pytest.raises(UnknownNameError) as caught:
        parse_approver(value)
    message = str(caught.value)
    assert f"unknown approver '{value}'" in message and "\n" not in message
    assert all(f"scripted:{name}" in message for name in SCRIPTED_APPROVERS)


def test_a_scripted_approver_of_an_unknown_rule_is_refused():
    with pytest.raises(UnknownNameError, match="scripted approver 'boss'"):
        ScriptedApprover("boss")


def test_approve_after_revision_sends_each_gates_work_back_once_then_approves():
    approver = ScriptedApprover("approve_after_revision")
    decisions = [approver.decide(gate, n) for n, gate in enumerate(["a", "a", "b", "a", "b"])]
    assert [d.decision for d in decisions if d is not None] == ["revise", "approve", "revise", "approve", "approve"]
    assert decisions[0] is not None and "make it more specific" in decisions[0].note


def test_the_random_approver_is_seeded_by_the_run():
    def decisions(seed: int) -> list[str]:
        approver = ApproverSpec("random").for_run(seed)
        return [d.decision for n in range(30) if (d := approver.decide(f"g{n}", n)) is not None]

    assert decisions(3) == decisions(3)
    assert set(decisions(3)) == {"approve", "reject", "revise"}
    same_rng = ScriptedApprover("random", random.Random(3 ^ 0x5EED))
    assert [d.decision for n in range(30) if (d := same_rng.decide(f"g{n}", n)) is not None] == decisions(3)


def test_without_an_approver_nobody_decides_in_run():
    gatekeeper = nobody_decides(5)
    assert isinstance(gatekeeper, NobodyYet) and gatekeeper.decide("publish", 0) is None
