"""What an agent's ``interrupt()`` asks, read in any payload it writes, and answered in the same shape: never a
KeyError or TypeError, each call mapped to the gate the scenario puts on its action."""

from __future__ import annotations

from typing import Any

import pytest

from harness.scenario.load import load_scenario
from modes.runtimes.langgraph_reviews import Verdict, read, reply
from tests.helpers.bench import ROOT

BLOG = load_scenario(ROOT / "scenarios" / "blog_brief_approval.yaml")
DRAFT = {"name": "write_draft", "args": {"title": "t", "body": "b"}, "id": "call_3", "type": "tool_call"}


def test_a_human_interrupt_list_is_answered_with_a_human_response_list_mapped_to_each_calls_gate():
    payload = [{"action_request": {"action": "write_draft", "args": DRAFT["args"]}, "config": {}, "description": ""}]
    shape, reviews = read(payload, [DRAFT], BLOG)
    assert shape == "human_interrupts"
    assert [(r.action, r.gate, r.call) for r in reviews] == [("write_draft", "brief_approval", "call_3")]
    assert reply(shape, payload, reviews, [Verdict(True)], None) == [{"type": "accept", "args": None}]
    assert reply(shape, payload, reviews, [Verdict(False, "shorter")], None) == [
        {"type": "response", "args": "shorter"}
    ]


def test_langchains_hitl_request_is_answered_with_decisions():
    payload = {"action_requests": [{"name": "create_brief", "args": {"topic": "x"}}], "review_configs": []}
    shape, reviews = read(payload, [], BLOG)
    assert (shape, reviews[0].gate) == ("hitl", None)  # no gate guards create_brief
    said = reply(shape, payload, reviews, [Verdict(False, "no")], None)
    assert said == {"decisions": [{"type": "reject", "message": "no"}]}


@pytest.mark.parametrize("payload", ["Approve?", None, 3, ["a", 1], {"question": "ok?"}, {"action_request": "x"}])
def test_any_other_payload_asks_about_the_unanswered_call_and_gets_the_default_answer(payload: Any):
    shape, reviews = read(payload, [DRAFT], BLOG)
    assert shape == "own" and [(r.action, r.call) for r in reviews] == [("write_draft", "call_3")]
    said = reply(shape, payload, reviews, [Verdict(False, "not yet")], None)
    assert said["approved"] is False and said["type"] == "response" and said["note"] == "not yet"


def test_a_payload_naming_its_tool_call_is_reviewed_as_that_call_and_answered_by_the_agents_function():
    payload = {"question": "ok?", "tool_call": DRAFT}
    shape, reviews = read(payload, [], BLOG)
    assert [(r.action, r.gate, r.call) for r in reviews] == [("write_draft", "brief_approval", "call_3")]
    assert (
        reply(shape, payload, reviews, [Verdict(True)], lambda p, v: f"{p['question']} {v.decision}") == "ok? approve"
    )


def test_a_payload_with_nothing_pending_is_a_review_of_no_action():
    _, reviews = read("anything?", [], BLOG)
    assert [(r.action, r.gate) for r in reviews] == [(None, None)]


def test_benchs_own_answer_names_the_gate_and_call_it_decides():
    request = {
        "gate": "brief_approval",
        "step": 3,
        "action": "write_draft",
        "node": None,
        "call": "call_3",
        "digest": "d",
    }
    shape, reviews = read(request, [], BLOG)
    assert shape == "bench" and reviews[0].digest == "d"
    said = reply(shape, request, reviews, [Verdict(True, who="editor")], None)
    assert said == {
        "decision": "approve",
        "note": "",
        "who": "editor",
        "gate": "brief_approval",
        "call": "call_3",
        "digest": "d",
    }
