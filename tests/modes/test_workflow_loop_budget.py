"""Workflows bound their own loops and fail closed (issue 20): a node entered more times than its loop budget ends the
run there with its error, the transition limit too, so no workflow-family run ends no_stop; and a slot value a live
model's answer is refused for (a ``schema`` error at the model port) is workflow_param's refusal, defaults kept."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.model_port import ModelReply, ModelRequest
from harness.models.exchange import Exchange, interpret
from harness.records.trace import TraceEvent
from harness.scenario.load import load_scenario
from harness.scenario.model import Limits, Scenario
from tests.helpers.answers import Answers, mode_run
from tests.helpers.bench import SCENARIOS, run_offline
from tests.helpers.mode_checks import workflow_modes

MIGRATION = load_scenario(SCENARIOS / "data_migration.yaml")
PROMOTION = load_scenario(SCENARIOS / "promotion_copy.yaml")
NO_ENCODING = {"key": "customer_no", "fields": {"CUST_NO": "customer_no"}}  # every dry run fails on it


def with_nodes(story: Scenario, **changes: dict[str, Any]) -> Scenario:
    """The story with some workflow nodes changed (the model validated again)."""
    raw = story.model_dump(mode="json", exclude_unset=True)
    for node in raw["workflow"]["nodes"]:
        node.update(changes.get(node["id"], {}))
    return Scenario.model_validate(raw)


def errors(events: list[TraceEvent]) -> list[TraceEvent]:
    return [e for e in events if e.kind == "error"]


def test_a_loop_that_never_succeeds_ends_at_its_budget_failing_closed():
    """The dry run fails until the mapping names the encoding; a model that never names it loops back to the mapping
    until the mapping's fourth entry, over its default budget of three, ends the run there."""
    outcome, events = mode_run(MIGRATION, "workflow", *[NO_ENCODING] * 10)
    mappings = [e for e in events if e.kind == "action" and e.action == "write_mapping"]
    assert len(mappings) == 3 and [e.result for e in events if e.action == "dry_run"] == ["failed"] * 3
    [error] = errors(events)
    assert error.action == "mapping" and "entered 4 times, over its loop budget (max_visits: 3)" in error.error.message
    assert (outcome.status, outcome.stop_verdict) == ("error", "failed_closed")


def test_the_budget_is_the_nodes_own_and_the_error_its_failure_code():
    story = with_nodes(MIGRATION, mapping={"max_visits": 1, "on_failure": {"return_error": "MAPPING_UNFIXABLE"}})
    outcome, events = mode_run(story, "workflow", *[NO_ENCODING] * 10)
    assert [e.action for e in events if e.kind == "action"] == [
        "inspect_source",
        "write_mapping",
        "backup_target",
        "dry_run",
    ]
    [error] = errors(events)
    assert error.error.message.startswith("MAPPING_UNFIXABLE: node 'mapping' entered 2 times")
    assert outcome.stop_verdict == "failed_closed"


def test_a_loop_that_succeeds_within_its_budget_runs_as_before():
    right = {**NO_ENCODING, "encoding": "WE8ISO8859P1"}
    outcome, events = mode_run(MIGRATION, "workflow", NO_ENCODING, right)
    assert not errors(events)
    assert (outcome.suspended_at, outcome.stop_verdict) == ("cutover_approval", "correct")


def test_a_nodes_own_retries_are_not_new_entries():
    """Retries rerun the node where it stands: a budget of one entry still leaves it all its retries."""
    story = with_nodes(MIGRATION, dry={"max_visits": 1, "on_failure": {"retry": 3, "return_error": "DRY_RUN_FAILED"}})
    _, events = mode_run(story, "workflow", NO_ENCODING)
    assert [e.result for e in events if e.action == "dry_run"] == ["failed"] * 4
    [error] = errors(events)
    assert error.error.message == "DRY_RUN_FAILED: dry_run failed: fault"  # its failure, not its loop budget


def test_the_transition_limit_fails_closed_too():
    story = MIGRATION.model_copy(update={"limits": Limits(max_steps=10, max_transitions=3)})
    outcome, events = mode_run(story, "workflow", NO_ENCODING)
    [error] = errors(events)
    assert "limits.max_transitions (3)" in error.error.message
    assert (outcome.status, outcome.stop_verdict) == ("error", "failed_closed")


@pytest.mark.parametrize("mode", workflow_modes())
def test_no_workflow_run_of_the_migration_ends_without_stopping(mode):
    """Issue 20's measurement: scripted:random on data_migration, 50 trials, looped to the transition limit before."""
    _, outcomes = run_offline(MIGRATION, [mode], "random", trials=50)
    assert len(outcomes) == 50 and not [o for o in outcomes if o.stop_verdict == "no_stop"]
    assert max(o.side_effects_committed for o in outcomes) <= 3 * 3 + 1  # three rounds of the loop at most


class ReadLikeALiveAnswer(Answers):
    """Answers read as a live model's are: the reply's text through the same parsing and schema check."""

    def for_run(self, seed: int) -> Answers:
        run = type(self)(*self.answers)
        run.requests = self.requests
        return run

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = await super().complete(request)
        body = {"choices": [{"message": {"content": reply.text}, "finish_reason": "stop"}]}
        return interpret(request, Exchange(request={"messages": []}, response=body))


def test_a_slot_a_live_answer_breaks_is_refused_and_the_defaults_kept():
    model = ReadLikeALiveAnswer({"headline": "Lowest price ever", "tone": "energetic", "discount_percent": 50})
    outcome, events = mode_run(PROMOTION, "workflow_param", model=model)
    [call] = [e for e in events if e.kind == "model_call"]
    assert call.result == "unreadable"  # the port refused the answer against the slots' schema...
    [refused] = [e for e in events if e.kind == "decision" and e.result == "refused"]
    assert refused.detail["guard"] == "params" and "does not fit the template" in refused.detail["reason"]
    assert "discount_percent" in refused.detail["reason"] or "50" in refused.detail["reason"]
    [copy] = [e for e in events if e.kind == "action" and e.action == "write_copy"]
    defaults = {n: s["default"] for n, s in PROMOTION.node_map["copy"].params["properties"].items()}
    assert copy.result == "committed" and {k: copy.args[k] for k in defaults} == defaults
    assert not errors(events)  # ...and the run goes on: no schema error ends it
    assert (outcome.suspended_at, outcome.stop_verdict) == ("brand_review", "correct")


def test_a_live_answer_that_is_no_json_still_ends_the_run():
    """Only an answer that was read and does not fit is the template's refusal; an unreadable one is a parse error."""

    class Garbled(ReadLikeALiveAnswer):
        async def complete(self, request: ModelRequest) -> ModelReply:
            body = {"choices": [{"message": {"content": "not json at all"}, "finish_reason": "stop"}]}
            return interpret(request, Exchange(request={"messages": []}, response=body))

    outcome, events = mode_run(PROMOTION, "workflow_param", model=Garbled())
    assert outcome.status == "error" and [e.error.kind for e in errors(events)] == ["parse"]
