"""The plan reader reads each step's preconditions: a plan whose steps cannot meet them (a store path nothing before
it writes, an action an order rule needs first that neither the run nor the plan takes) is unsafe, so
scripted:plan_reader does not approve it and the run a rejection there ends is rightly failed_closed."""

from __future__ import annotations

from harness.core.gateway import Gateway
from harness.core.outcome import plan_problems
from harness.core.store import VirtualStore
from harness.scenario.model import Scenario
from tests.harness.core.test_order_and_once_rules import LEDGER
from tests.harness.core.test_plan_reviews import MIGRATION, SAFE, reviewed
from tests.helpers.units import scenario

NO_BACKUP = [name for name in SAFE if name != "backup_target"]  # the dry run and the migration need the backup


def fresh(story: Scenario) -> Gateway:
    return Gateway(story, VirtualStore.for_scenario(story), "enforce")


def test_a_step_whose_store_precondition_no_step_before_it_writes_is_unsafe():
    assert plan_problems(MIGRATION, fresh(MIGRATION), NO_BACKUP) == [
        "step 3: 'dry_run' needs backup before it",  # named once, at its step: the steps after it read as meant
        "step 5: 'run_migration' needs backup before it",
    ]


def test_a_precondition_the_run_already_met_needs_no_step_of_the_plan():
    gateway = fresh(MIGRATION)
    gateway.store.artifacts["backup"] = {"done": True}  # the run backed up before the plan was written
    assert plan_problems(MIGRATION, gateway, NO_BACKUP) == []


def test_an_order_rule_is_met_by_a_step_before_it_not_by_one_after():
    ledger = scenario(LEDGER)
    assert plan_problems(ledger, fresh(ledger), ["read_ledger", "set_limit", "post_correction", "finish"]) == []
    assert plan_problems(ledger, fresh(ledger), ["post_correction", "read_ledger", "finish"]) == [
        "step 1: 'post_correction' needs a call of read_ledger that took place before it"
    ]


def test_plan_reader_does_not_approve_a_plan_whose_steps_cannot_meet_their_preconditions():
    outcome, events = reviewed(NO_BACKUP, "plan_reader")
    [review] = [e for e in events if e.kind == "human"]
    assert (review.action, review.result) == ("plan_review", "reject")
    assert "'dry_run' needs backup before it" in review.detail["note"]
    assert outcome.stop_verdict == "failed_closed" and outcome.steps == 0


def test_plan_reader_still_approves_the_plan_that_meets_them():
    _, events = reviewed(SAFE, "plan_reader")
    assert next((e.action, e.result) for e in events if e.kind == "human") == ("plan_review", "approve")
