"""The live client against exact fault shapes (httpx.MockTransport).

Request body, retries, back-off, classification, the key.
"""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime

import httpx
import pytest

from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.errors import ModelError
from harness.models.live import (
    LiveConfig,
    LiveSource,
    backoff_seconds,
    chat_completions_url,
    request_body,
    retry_after_seconds,
)
from harness.scenario.model import ActionSpec
from modes.proposals import next_action_schema

KEY = "sk-test-MARKER-7f3a"
SCHEMA = next_action_schema([ActionSpec(name=n, description=n) for n in ("create_brief", "finish")])
GOOD = {
    "choices": [{"message": {"role": "assistant", "content": '{"action": "finish", "args": {}}'}}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15},
}


def make_request(purpose="next_action"):
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=3)
    return ModelRequest(
        purpose=purpose,
        messages=({"role": "system", "content": "rules"}, {"role": "user", "content": "go"}),
        response_schema=SCHEMA,
        offered=("create_brief", "finish"),
        view=view,
        meta=RequestMeta("blog", "react", 2, 1),
    )


def config(**changes):
    base = dict(
        url="http://model.test/v1/chat/completions", model="m", api_key=KEY, retries=3, backoff_s=0.5, timeout_s=5.0
    )
    base.update(changes)
    return LiveConfig(**base)


class Script:
    """Answers requests in order from a list of responses or exceptions; keeps what it saw."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(script, cfg=None, request=None):
    """One call through a LiveSource on a mock transport; sleeps are recorded, not slept."""
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def complete():
        source = LiveSource(cfg or config(), transport=httpx.MockTransport(script), sleep=fake_sleep)
        try:
            return await source.for_run(seed=12345).complete(request or make_request())
        finally:
            await source.aclose()

    try:
        return asyncio.run(complete()), slept, None
    except ModelError as exc:
        return None, slept, exc


@pytest.mark.parametrize(
    "given, expected",
    [
        ("http://127.0.0.1:8765/v1", "http://127.0.0.1:8765/v1/chat/completions"),
        ("http://127.0.0.1:8765/v1/", "http://127.0.0.1:8765/v1/chat/completions"),
        ("https://api.example/v1/chat/completions", "https://api.example/v1/chat/completions"),
        ("https://api.example/v1/chat/completions/", "https://api.example/v1/chat/completions"),
    ],
)
def test_base_or_full_url_both_work(given, expected):
    assert chat_completions_url(given) == expected


def test_success_sends_body_and_key_header_and_reads_usage():
    script = Script(httpx.Response(200, json=GOOD))
    reply, slept, error = run(script)
    assert error is None and slept == []
    assert reply.proposal == {"step": {"action": "finish", "args": {}}} and reply.usage.total_tokens == 15
    sent = script.requests[0]
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    body = json.loads(sent.content)
    assert body["model"] == "m" and body["messages"][1] == {"role": "user", "content": "go"}
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "next_action", "schema": SCHEMA}}
    assert "thinking" not in body and KEY not in sent.content.decode()


def test_structured_output_options():
    request = make_request()
    llama = request_body(config(response_format="json_object"), request, 7)
    assert llama["response_format"] == {"type": "json_object", "schema": SCHEMA}
    plain = request_body(config(response_format="none", disable_thinking=True), request, 7)
    assert "response_format" not in plain and plain["thinking"] == {"type": "disabled"}
    assert json.dumps(SCHEMA, sort_keys=True) in plain["messages"][0]["content"]  # the schema goes into the prompt
    assert request.messages[0]["content"] == "rules"  # the request itself is left alone
    assert request_body(config(), request, 2**40 + 5)["seed"] == (2**40 + 5) % 2**31


def test_429_honours_retry_after_then_succeeds():
    script = Script(
        httpx.Response(429, headers={"Retry-After": "7"}, json={"error": "slow down"}), httpx.Response(200, json=GOOD)
    )
    reply, slept, error = run(script)
    assert error is None and slept == [7.0]
    assert [(a.kind, a.wait_s) for a in reply.failed_attempts] == [("http_4xx", 7.0)]
    assert "429" in reply.failed_attempts[0].message


def test_retry_after_is_capped_and_read_as_a_date():
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert backoff_seconds(config(max_wait_s=10), 0, random.Random(1), 3600.0) == 10.0


def test_backoff_doubles_with_jitter_and_is_capped():
    cfg = config(backoff_s=1.0, max_wait_s=6.0)
    rng = random.Random(3)
    waits = [backoff_seconds(cfg, retry, rng, None) for retry in range(5)]
    for retry, wait in enumerate(waits):
        delay = min(6.0, 2**retry)
        assert delay / 2 <= wait <= delay
    assert len(set(waits[:3])) == 3


def test_5xx_exhausts_retries_with_every_attempt_kept():
    script = Script(*(httpx.Response(503, text="busy") for _ in range(3)), httpx.Response(500, text="broken"))
    _, slept, error = run(script)
    assert error.kind == "http_5xx" and "500" in str(error)
    assert [a.kind for a in error.failed_attempts] == ["http_5xx"] * 3 and len(slept) == 3
    assert len(script.requests) == 4  # retries=3: four attempts in all


def test_4xx_other_than_429_is_not_retried_and_the_key_is_scrubbed():
    script = Script(httpx.Response(401, json={"error": f"invalid key Bearer {KEY}"}))
    _, slept, error = run(script)
    assert error.kind == "http_4xx" and "401" in str(error) and slept == []
    assert KEY not in str(error) and "[redacted]" in str(error)


def test_connection_errors_and_timeouts_are_classified_and_retried():
    script = Script(httpx.ConnectError("connection refused"), httpx.ReadTimeout("slow"), httpx.Response(200, json=GOOD))
    reply, slept, error = run(script)
    assert error is None and [a.kind for a in reply.failed_attempts] == ["network", "timeout"] and len(slept) == 2
    script = Script(*(httpx.ConnectError("refused") for _ in range(2)))
    _, _, error = run(script, config(retries=1))
    assert error.kind == "network" and len(error.failed_attempts) == 1


def test_a_2xx_body_that_is_not_json_is_a_parse_error_not_retried():
    script = Script(httpx.Response(200, text="<html>proxy page</html>"))
    _, slept, error = run(script)
    assert error.kind == "parse" and slept == [] and len(script.requests) == 1


def test_reasoning_only_and_unknown_action_answers():
    reasoning = {
        "choices": [{"message": {"content": "", "reasoning_content": 'ok {"action": "create_brief", "args": {}}'}}]
    }
    reply, _, error = run(Script(httpx.Response(200, json=reasoning)))
    assert error is None and reply.proposal == {"step": {"action": "create_brief", "args": {}}}
    unknown = {
        "choices": [{"message": {"content": '{"action": "launch_rockets", "args": {}}'}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }
    _, _, error = run(Script(httpx.Response(200, json=unknown)))
    assert error.kind == "schema" and error.answer.usage.total_tokens == 10


def test_an_echoed_key_is_scrubbed_from_a_successful_body():
    echo = {"choices": [{"message": {"content": '{"action": "finish", "args": {}}'}}], "note": f"you sent {KEY}"}
    script = Script(httpx.Response(200, json=echo))

    async def go():
        source = LiveSource(config(), transport=httpx.MockTransport(script))
        try:
            return await source.for_run(1).exchange(make_request())
        finally:
            await source.aclose()

    exchange = asyncio.run(go())
    assert KEY not in exchange.model_dump_json() and "[redacted]" in exchange.response["note"]
    assert KEY not in repr(config())  # the key stays out of reprs (logs, tracebacks)


def test_whole_request_deadline_bounds_a_trickling_server():
    async def slow_handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json=GOOD)

    async def go():
        source = LiveSource(config(timeout_s=0.05, retries=0), transport=httpx.MockTransport(slow_handler))
        try:
            return await source.for_run(1).exchange(make_request())
        finally:
            await source.aclose()

    exchange = asyncio.run(go())
    assert exchange.error is not None and exchange.error.kind == "timeout"
