"""Tolerant reading of model answers: fences, prose, reasoning_content, and the parse / schema classification."""

from __future__ import annotations

import pytest

from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.errors import ModelError
from harness.models.exchange import Exchange, WireAttempt, interpret
from harness.models.parsing import check_schema, extract_json, message_text, usage_of
from harness.records.trace import ErrorInfo, Usage
from harness.scenario.model import ActionSpec
from modes.proposals import next_action_schema, plan_schema


def specs(*names):
    return [ActionSpec(name=name, description=name) for name in names]


SCHEMA = next_action_schema(specs("create_brief", "wait_for_approval", "finish"))


def body(content, reasoning=None, usage=None):
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    result = {"choices": [{"message": message, "finish_reason": "stop"}]}
    if usage is not None:
        result["usage"] = usage
    return result


def request(schema=SCHEMA):
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=4)
    return ModelRequest(
        purpose="next_action",
        messages=({"role": "user", "content": "go"},),
        response_schema=schema,
        offered=("create_brief",),
        view=view,
        meta=RequestMeta("s", "react", 1, 2),
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"action": "create_brief", "args": {}}',
        '  \n{"action": "create_brief", "args": {}}\n',
        '```json\n{"action": "create_brief", "args": {}}\n```',
        '```\n{"action": "create_brief", "args": {}}```',
        'Sure. I will create the brief first: {"action": "create_brief", "args": {}} and then wait.',
        'Thinking {not json} ... final: {"action": "create_brief", "args": {}}',
    ],
)
def test_json_is_found_in_fences_and_prose(text):
    assert extract_json(text) == {"action": "create_brief", "args": {}}


@pytest.mark.parametrize(
    "text", ["", "I will create the brief.", '{"action": "create_brief", "args": {', "{'action': 'finish'}"]
)
def test_text_without_json_is_a_parse_error(text):
    with pytest.raises(ModelError) as caught:
        extract_json(text)
    assert caught.value.kind == "parse"


@pytest.mark.parametrize(
    "text",
    [
        # cut at the token limit: the inner objects are complete, the answer is not
        '{"plan": [{"action": "create_brief", "args": {}}, {"action": "write_draft", "args": {"body": "a long',
        'Here is the plan: {"plan": [{"action": "create_brief", "args": {"topic": "x"}}, {"action": "fini',
        '{ "action": "finish", "args": { "id": "1081547296,title: \'Finish\' } }\n\nThis is a JSON response',
    ],
)
def test_a_truncated_answer_is_a_parse_error_not_its_inner_object(text):
    with pytest.raises(ModelError) as caught:
        extract_json(text)
    assert caught.value.kind == "parse"


def test_raw_newlines_inside_strings_are_read():
    """llama.cpp's grammar lets a model put a raw newline in a JSON string; the value is still clear."""
    assert extract_json('{"action": "finish", "args": {"note": "two\nlines"}}') == {
        "action": "finish",
        "args": {"note": "two\nlines"},
    }


def test_args_must_fit_the_chosen_action():
    schema = next_action_schema(
        [
            ActionSpec(
                name="create_brief",
                description="d",
                args={"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
            )
        ]
    )
    check_schema({"step": {"action": "create_brief", "args": {"topic": "x"}}}, schema)
    with pytest.raises(ModelError) as caught:
        check_schema({"step": {"action": "create_brief", "args": {}}}, schema)
    assert caught.value.kind == "schema"


def test_a_malformed_but_closed_block_is_skipped():
    with pytest.raises(ModelError):
        extract_json("{oops} then [1, 2")  # skipped block, then an unterminated list: nothing to answer with
    assert extract_json('note {not: json} answer {"action": "finish", "args": {"s": "} {"}}') == {
        "action": "finish",
        "args": {"s": "} {"},
    }


def test_reasoning_content_is_read_when_content_is_empty():
    assert message_text(body("", reasoning='{"action": "finish", "args": {}}')) == '{"action": "finish", "args": {}}'
    assert message_text(body(None, reasoning="x")) == "x"
    assert message_text(body("content wins", reasoning="ignored")) == "content wins"


@pytest.mark.parametrize(
    "payload, words",
    [
        (body(""), "empty content"),
        (body("   "), "empty content"),
        ({"choices": []}, "no choices"),
        ({"error": {"message": "boom"}}, "no choices"),
        ({"choices": [{"text": "legacy"}]}, "no message"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_missing_text_is_a_parse_error(payload, words):
    with pytest.raises(ModelError) as caught:
        message_text(payload)
    assert caught.value.kind == "parse" and words in str(caught.value)


def test_unknown_action_and_missing_field_are_schema_errors():
    with pytest.raises(ModelError) as caught:
        check_schema({"step": {"action": "launch_rockets", "args": {}}}, SCHEMA)
    assert caught.value.kind == "schema" and "launch_rockets" in str(caught.value)
    with pytest.raises(ModelError) as caught:
        check_schema({"plan": [{"action": "finish"}]}, plan_schema(specs("finish"), 3))
    assert caught.value.kind == "schema" and "args" in str(caught.value)
    check_schema({"step": {"action": "finish", "args": {}}}, SCHEMA)  # fits: no error


def test_usage_is_read_and_completed():
    assert usage_of(body("x", usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})) == Usage(
        prompt_tokens=10, completion_tokens=5, total_tokens=15
    )
    assert usage_of(body("x", usage={"prompt_tokens": 10, "completion_tokens": 5})).total_tokens == 15
    assert usage_of(body("x")) == Usage()


def test_interpret_returns_the_proposal_with_usage_latency_and_retries():
    attempt = WireAttempt(kind="http_5xx", message="HTTP 503", latency_ms=3.0, wait_s=0.5, status=503)
    exchange = Exchange(
        request={},
        attempts=[attempt],
        latency_ms=12.5,
        response=body(
            '```json\n{"action": "finish", "args": {}}\n```',
            usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        ),
    )
    reply = interpret(request(), exchange)
    assert reply.proposal == {"step": {"action": "finish", "args": {}}}  # a bare step is read into its envelope
    assert reply.usage.total_tokens == 10 and reply.latency_ms == 12.5
    assert [(a.kind, a.wait_s) for a in reply.failed_attempts] == [("http_5xx", 0.5)]


def test_interpret_keeps_the_answer_of_an_unreadable_reply():
    exchange = Exchange(
        request={},
        latency_ms=9.0,
        response=body('{"action": "launch_rockets", "args": {}}', usage={"total_tokens": 30}),
    )
    with pytest.raises(ModelError) as caught:
        interpret(request(), exchange)
    error = caught.value
    assert error.kind == "schema"
    assert error.answer.usage.total_tokens == 30 and error.answer.latency_ms == 9.0
    assert "launch_rockets" in error.answer.text


def test_a_reply_cut_at_the_token_limit_says_so():
    cut = body('{"action": "finish", "args": {"note": "and then', usage={"total_tokens": 99})
    cut["choices"][0]["finish_reason"] = "length"
    with pytest.raises(ModelError) as caught:
        interpret(request(), Exchange(request={}, response=cut, latency_ms=5.0))
    assert caught.value.kind == "parse" and "cut at the token limit" in str(caught.value)


def test_interpret_raises_the_recorded_failure_and_non_json_bodies():
    failed = Exchange(
        request={},
        error=ErrorInfo(kind="timeout", message="no answer within 1s"),
        attempts=[WireAttempt(kind="timeout", message="t", latency_ms=1000, wait_s=1)],
    )
    with pytest.raises(ModelError) as caught:
        interpret(request(), failed)
    assert caught.value.kind == "timeout" and len(caught.value.failed_attempts) == 1 and caught.value.answer is None
    with pytest.raises(ModelError) as caught:
        interpret(request(), Exchange(request={}, raw="<html>gateway</html>"))
    assert caught.value.kind == "parse" and "html" in str(caught.value)
