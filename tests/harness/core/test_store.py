"""The virtual store: a run's own copy of the scenario's artifacts, its approvals, and gates that apply by threshold."""

from __future__ import annotations

import pytest

from harness.core.store import VirtualStore
from tests.helpers.units import REFUND, THRESHOLD, scenario


def test_each_run_gets_its_own_deep_copy_of_the_initial_artifacts():
    s = scenario(REFUND)
    first, second = VirtualStore.for_scenario(s), VirtualStore.for_scenario(s)
    first.artifacts["claim"]["amount"] = 1
    assert second.artifacts["claim"]["amount"] == 2600 and s.store.artifacts["claim"]["amount"] == 2600


def test_a_new_store_holds_no_approval_wait_or_call_unless_the_scenario_approved_the_gate():
    store = VirtualStore.for_scenario(scenario(REFUND))
    assert (store.approvals, store.wait_markers, store.calls) == (set(), [], {})
    assert not store.approved("manager_approval")
    approved = scenario(THRESHOLD, gates=[{"name": "legal", "description": "d", "approved": True}])
    assert VirtualStore.for_scenario(approved).approvals == {"legal"}


def test_has_reaches_into_an_artifact_by_path():
    store = VirtualStore(artifacts={"claim": {"id": "EX-1", "amount": 0, "nothing": None}})
    assert store.has("claim") and store.has("claim.id") and store.has("claim.amount")
    assert not store.has("claim.owner") and not store.has("order") and not store.has("claim.id.deeper")


def test_only_gates_with_a_condition_are_conditional():
    store = VirtualStore.for_scenario(scenario(THRESHOLD))
    assert set(store.gate_conditions) == {"legal"}
    assert VirtualStore.for_scenario(scenario(REFUND)).gate_conditions == {}


@pytest.mark.parametrize(
    ("amount", "approved", "why"),
    [
        (50, True, None),  # under the threshold: the gate does not apply
        (100, True, None),  # greater_than is strict
        (100.5, False, ""),  # over it: closed, simply not approved
        ("lots", False, "its condition cannot be evaluated (order.amount holds 'lots', not a number), so it applies"),
        (True, False, "its condition cannot be evaluated (order.amount holds True, not a number), so it applies"),
    ],
)
def test_a_threshold_gate_is_open_only_while_its_condition_certainly_does_not_hold(amount, approved, why):
    store = VirtualStore.for_scenario(scenario(THRESHOLD))
    store.artifacts["order"] = {"amount": amount}
    assert store.approved("legal") is approved
    assert store.gate_closed_because("legal") == why


def test_a_threshold_gate_on_a_missing_value_stays_closed():
    store = VirtualStore.for_scenario(scenario(THRESHOLD))
    store.artifacts.clear()
    assert not store.approved("legal")
    assert "order.amount reaches nothing" in (store.gate_closed_because("legal") or "")


def test_an_approval_opens_a_gate_whatever_its_condition_says():
    store = VirtualStore.for_scenario(scenario(THRESHOLD))
    store.artifacts["order"] = {"amount": "lots"}
    store.approvals.add("legal")
    assert store.approved("legal") and store.gate_closed_because("legal") is None


def test_an_unconditional_gate_is_closed_until_approved_and_an_unknown_gate_is_closed():
    store = VirtualStore.for_scenario(scenario(REFUND))
    assert store.gate_closed_because("manager_approval") == ""
    assert store.gate_closed_because("no_such_gate") == "" and not store.approved("no_such_gate")
    store.approvals.add("manager_approval")
    assert store.approved("manager_approval")
