"""The live client, one behaviour at a time on httpx.MockTransport: the request body each setting makes, the key
header, Retry-After and back-off, capability refusals that step the matrix down once, retries and their bound,
transport failures, and every way a 2xx body can be unreadable (cap, encoding, JSON, depth)."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime

import httpx
import pytest

from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.models.capabilities import WireSettings
from harness.models.live import (
    ADAPTATIONS_PER_REQUEST,
    ERROR_BODY_BYTES,
    RAW_KEPT_CHARS,
    SCHEMA_NOTE,
    LiveConfig,
    LiveSource,
    auth_headers,
    backoff_seconds,
    request_body,
    retry_after_seconds,
)
from harness.models.scrub import REDACTED

KEY = "sk-unit-4f9c2a7e1b"
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": False}
OK = {
    "choices": [{"message": {"role": "assistant", "content": '{"x": 1}'}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


def ask(messages=({"role": "system", "content": "rules"}, {"role": "user", "content": "go"})) -> ModelRequest:
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=2)
    return ModelRequest("content", tuple(messages), SCHEMA, (), view, RequestMeta("scen", "react", 4, 2))


def config(**changes) -> LiveConfig:
    base = dict(url="http://model.test/v1/chat/completions", model="m", api_key=KEY, retries=2, backoff_s=1.0)
    return LiveConfig(**{**base, **changes})


class Script:
    """Answers in order (an exception is raised instead); keeps each request's JSON body."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.bodies: list[dict] = []
        self.headers: list[httpx.Headers] = []
        self.methods: list[str] = []
        self.urls: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        self.headers.append(request.headers)
        self.methods.append(request.method)
        self.urls.append(str(request.url))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def exchange(script, cfg=None, notes=None, source_out=None):
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go():
        source = LiveSource(
            cfg or config(),
            transport=httpx.MockTransport(script),
            sleep=sleep,
            notify=None if notes is None else notes.append,
        )
        if source_out is not None:
            source_out.append(source)
        try:
            return await source.for_run(7).exchange(ask())
        finally:
            await source.aclose()

    return asyncio.run(go()), slept


# ---------------------------------------------------------------- the request body


def test_the_body_carries_model_messages_sampling_tokens_seed_and_the_schema():
    body = request_body(config(temperature=0.3, max_tokens=99), ask(), seed=2**31 + 5)
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "go"}],
        "temperature": 0.3,
        "max_tokens": 99,
        "seed": 5,
        "response_format": {"type": "json_schema", "json_schema": {"name": "content", "schema": SCHEMA}},
    }


def test_the_body_never_changes_the_requests_own_messages():
    request = ask()
    request_body(config(response_format="none"), request, seed=1)
    assert request.messages[0] == {"role": "system", "content": "rules"}


def test_settings_leave_out_temperature_and_seed_and_pick_the_token_parameter():
    settings = WireSettings("json_schema", False, "max_completion_tokens", False, frozenset({"seed"}))
    body = request_body(config(), ask(), seed=1, settings=settings)
    assert "temperature" not in body and "seed" not in body and body["max_completion_tokens"] == 512


def test_strict_json_schema_sends_the_strict_subset_or_falls_back_when_it_cannot():
    body = request_body(config(strict=True), ask(), seed=1)
    spec = body["response_format"]["json_schema"]
    assert spec["strict"] is True and spec["name"] == "content" and spec["schema"]["additionalProperties"] is False
    loose = dict(SCHEMA, additionalProperties=True)
    request = ask()
    request = ModelRequest(request.purpose, request.messages, loose, (), request.view, request.meta)
    spec = request_body(config(strict=True), request, seed=1)["response_format"]["json_schema"]
    assert "strict" not in spec and spec["schema"] == loose


def test_json_object_carries_the_schema_for_llamacpp_and_the_prompt_elsewhere():
    llama = request_body(config(provider="llamacpp", response_format="json_object"), ask(), seed=1)
    assert llama["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert llama["messages"][0]["content"] == "rules"
    deepseek = request_body(config(provider="deepseek", response_format="json_object"), ask(), seed=1)
    assert deepseek["response_format"] == {"type": "json_object"}
    assert deepseek["messages"][0]["content"] == "rules" + SCHEMA_NOTE + json.dumps(SCHEMA, sort_keys=True)
    generic = request_body(config(provider="generic", response_format="json_object"), ask(), seed=1)
    assert generic["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert generic["messages"][0]["content"].endswith(json.dumps(SCHEMA, sort_keys=True))


def test_no_structured_output_puts_the_schema_into_the_system_message_or_else_the_last():
    body = request_body(config(response_format="none"), ask(), seed=1)
    assert "response_format" not in body
    assert body["messages"][0]["content"] == "rules" + SCHEMA_NOTE + json.dumps(SCHEMA, sort_keys=True)
    assert body["messages"][1]["content"] == "go"
    no_system = request_body(config(response_format="none"), ask(({"role": "user", "content": "go"},)), seed=1)
    assert no_system["messages"][0]["content"].startswith("go" + SCHEMA_NOTE)


def test_the_thinking_switch_is_the_profiles_minus_what_the_endpoint_refused():
    body = request_body(config(provider="dashscope", disable_thinking=True), ask(), seed=1)
    assert body["enable_thinking"] is False
    settings = config(provider="dashscope", disable_thinking=True).initial_settings()
    dropped = WireSettings(
        settings.response_format, False, "max_tokens", True, frozenset({"enable_thinking"}), thinking_off=True
    )
    assert "enable_thinking" not in request_body(config(provider="dashscope"), ask(), seed=1, settings=dropped)
    assert "thinking" not in request_body(config(), ask(), seed=1)


def test_a_message_without_content_gets_the_schema_note_alone():
    body = request_body(
        config(response_format="none"), ask(({"role": "system"}, {"role": "user", "content": "go"})), seed=1
    )
    assert body["messages"][0]["content"] == SCHEMA_NOTE + json.dumps(SCHEMA, sort_keys=True)


def test_the_key_goes_into_the_header_its_profile_documents():
    assert auth_headers(config()) == {"Authorization": f"Bearer {KEY}"}
    assert auth_headers(config(provider="azure")) == {"api-key": KEY}
    assert auth_headers(config(api_key="")) == {}


def test_the_client_sends_the_key_header_and_the_body():
    script = Script(httpx.Response(200, json=OK))
    got, _ = exchange(script)
    assert script.headers[0]["authorization"] == f"Bearer {KEY}" and script.bodies[0]["model"] == "m"
    assert script.methods == ["POST"] and script.urls == ["http://model.test/v1/chat/completions"]
    assert got.request["model"] == "m" and got.response == OK and got.error is None


# ---------------------------------------------------------------- waiting


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("  3  ", 3.0),
        ("0.5", 0.5),
        ("-4", 0.0),
        ("soon", None),
        ("Thu, 01 Jan 2026 00:00:10 GMT", 10.0),
    ],
)
def test_retry_after_reads_seconds_or_a_date(header, seconds):
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds(header, now) == seconds


def test_retry_after_a_date_is_counted_from_now_by_default():
    assert retry_after_seconds("Fri, 01 Jan 2100 00:00:00 GMT") > 10**9


def test_retry_after_a_date_in_the_past_is_no_wait_and_a_date_without_zone_is_utc():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds("Wed, 31 Dec 2025 23:00:00 GMT", now) == 0.0
    assert retry_after_seconds("Thu, 01 Jan 2026 00:00:20 -0000", now) == 20.0


def test_backoff_doubles_half_fixed_half_jitter_and_is_capped():
    cfg = config(backoff_s=1.0, max_wait_s=6.0)
    rng = random.Random(3)
    for retry, delay in ((0, 1.0), (1, 2.0), (2, 4.0), (3, 6.0), (9, 6.0)):
        waits = [backoff_seconds(cfg, retry, rng, None) for _ in range(200)]
        assert all(delay / 2 <= w <= delay for w in waits)
        assert min(waits) < delay * 0.6 and max(waits) > delay * 0.9  # the jitter spans the upper half
        assert all(isinstance(w, float) and w == round(w, 3) for w in waits)
        assert any(w != round(w, 2) for w in waits)  # milliseconds kept
    assert backoff_seconds(cfg, 0, rng, 2.5) == 2.5 and backoff_seconds(cfg, 0, rng, 100.0) == 6.0
    assert backoff_seconds(cfg, 0, rng, 0.0) == 0.0 and backoff_seconds(cfg, 0, rng, 2.12345) == 2.123


# ---------------------------------------------------------------- retries


def test_a_429_or_a_5xx_is_retried_after_its_wait_and_each_attempt_is_kept():
    script = Script(
        httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "2"}),
        httpx.Response(503, text="busy"),
        httpx.Response(200, json=OK),
    )
    got, slept = exchange(script)
    assert got.response == OK and len(script.bodies) == 3
    assert [(a.kind, a.status, a.wait_s) for a in got.attempts] == [("http_4xx", 429, 2.0), ("http_5xx", 503, slept[1])]
    assert slept[0] == 2.0 and 1.0 <= slept[1] <= 2.0
    assert got.attempts[0].message == 'HTTP 429: {"error":{"message":"slow down"}}'
    assert got.attempts[1].message == "HTTP 503: busy"


def test_retries_stop_at_their_bound_with_the_last_failure():
    script = Script(*[httpx.Response(500, text=f"down {n}") for n in range(3)])
    got, slept = exchange(script, config(retries=2))
    assert len(script.bodies) == 3 and len(slept) == 2 and len(got.attempts) == 2
    assert got.error is not None and (got.error.kind, got.error.message) == ("http_5xx", "HTTP 500: down 2")
    assert got.latency_ms > 0 and got.request["model"] == "m"


def test_a_4xx_that_is_no_capability_refusal_is_not_retried():
    script = Script(httpx.Response(401, json={"error": {"message": f"bad key {KEY}"}}))
    got, slept = exchange(script)
    assert slept == [] and got.attempts == [] and got.error is not None and got.error.kind == "http_4xx"
    assert got.error.message == 'HTTP 401: {"error":{"message":"bad key ' + REDACTED + '"}}'


def test_a_connection_error_and_a_timeout_are_classified_and_retried():
    script = Script(httpx.ConnectError(f"refused {KEY}"), httpx.ReadTimeout("slow"), httpx.Response(200, json=OK))
    got, slept = exchange(script)
    assert [a.kind for a in got.attempts] == ["network", "timeout"] and len(slept) == 2
    assert got.attempts[0].message == f"ConnectError: refused {REDACTED}"
    assert got.attempts[1].message == "no answer within 120s (ReadTimeout)" and got.attempts[1].status is None


def test_a_transport_error_without_a_message_is_named_by_its_type():
    got, _ = exchange(Script(httpx.ConnectError(""), httpx.ConnectError(""), httpx.ConnectError("")))
    assert got.error is not None and got.error.message == "ConnectError"


# ---------------------------------------------------------------- capability refusals


def refusal(message: str, param: str | None = None) -> httpx.Response:
    return httpx.Response(400, json={"error": {"message": message, "param": param}})


def test_a_capability_refusal_steps_the_matrix_down_once_and_is_sent_again_at_once():
    notes: list[str] = []
    sources: list[LiveSource] = []
    script = Script(refusal("response_format json_schema is not supported"), httpx.Response(200, json=OK))
    got, slept = exchange(script, notes=notes, source_out=sources)
    assert slept == [] and got.response == OK
    assert script.bodies[0]["response_format"]["type"] == "json_schema"
    assert script.bodies[1]["response_format"]["type"] == "json_object"
    (attempt,) = got.attempts
    assert (attempt.kind, attempt.status, attempt.wait_s) == ("http_4xx", 400, 0.0)
    assert attempt.message.endswith("; adapted response_format: json_schema -> json_object")
    (source,) = sources
    (adaptation,) = source.adaptations
    assert (adaptation.what, adaptation.before, adaptation.after) == ("response_format", "json_schema", "json_object")
    assert (adaptation.scenario, adaptation.mode, adaptation.trial, adaptation.step) == ("scen", "react", 2, 4)
    assert adaptation.because == "HTTP 400: response_format json_schema is not supported"
    assert notes == [adaptation.line()]
    assert source.settings.response_format == "json_object"
    facts = source.manifest_facts()
    assert facts["adaptations"] == [adaptation.model_dump()] and facts["wire_settings"] == source.settings.describe()


def test_the_reason_an_adaptation_records_is_scrubbed_and_cut():
    sources: list[LiveSource] = []
    long = f"temperature is not supported for {KEY} " + "x" * 400
    exchange(Script(refusal(long, "temperature"), httpx.Response(200, json=OK)), source_out=sources)
    (adaptation,) = sources[0].adaptations
    assert KEY not in adaptation.because and REDACTED in adaptation.because and len(adaptation.because) <= 220


def test_adapt_says_a_request_with_stale_settings_is_sent_again_and_ignores_other_refusals():
    source = LiveSource(config())
    stale = WireSettings("none", False, "max_tokens", True)
    body = request_body(config(), ask(), seed=1)
    assert (
        source.adapt(stale, body, 400, "anything", ask()) == "sent again with the settings an earlier refusal adapted"
    )
    assert source.adapt(source.settings, body, 400, '{"error": {"message": "context too long"}}', ask()) is None
    assert source.adaptations == []


def test_adaptations_per_request_are_bounded():
    answers = [refusal("json_schema is not supported", "response_format")] * (ADAPTATIONS_PER_REQUEST + 3)
    script = Script(*answers)

    async def go():
        source = LiveSource(config(retries=0), transport=httpx.MockTransport(script))
        # every refusal is read against settings that look fresh: only the bound stops the loop
        source.adapt = lambda used, body, status, text, request: "adapted again"  # type: ignore[method-assign]
        try:
            return await source.for_run(1).exchange(ask())
        finally:
            await source.aclose()

    got = asyncio.run(go())
    assert len(got.attempts) == ADAPTATIONS_PER_REQUEST and got.error is not None
    assert len(script.bodies) == ADAPTATIONS_PER_REQUEST + 1


# ---------------------------------------------------------------- what a 2xx body can be


def test_a_body_over_the_cap_is_dropped_there_and_kept_as_unreadable():
    body = json.dumps(OK).encode()
    got, _ = exchange(Script(httpx.Response(200, content=body)), config(max_response_bytes=20))
    assert got.truncated and got.response is None and got.response_bytes == 20 and got.max_response_bytes == 20
    assert got.unreadable == "the body passed the 20-byte cap (--max-response-bytes) and was dropped there"
    assert got.raw == body[:20].decode()


def test_a_body_exactly_at_the_cap_is_read_whole():
    body = json.dumps(OK).encode()
    got, _ = exchange(Script(httpx.Response(200, content=body)), config(max_response_bytes=len(body)))
    assert not got.truncated and got.response == OK and got.response_bytes == len(body)


def test_a_body_streamed_in_pieces_is_cut_at_the_cap_inside_a_piece():
    pieces = [b'{"choices": ', b'[{"message": {"content": "{}"}}]', b', "usage": {}}']

    async def stream():
        for piece in pieces:
            yield piece

    class Streamed(httpx.AsyncByteStream):
        async def __aiter__(self):
            async for piece in stream():
                yield piece

    script = Script(httpx.Response(200, stream=Streamed()))
    got, _ = exchange(script, config(max_response_bytes=len(pieces[0]) + 5))
    assert got.truncated and got.raw == (pieces[0] + pieces[1][:5]).decode()
    whole, _ = exchange(Script(httpx.Response(200, stream=Streamed())), config(max_response_bytes=10_000))
    assert not whole.truncated and whole.response_bytes == sum(map(len, pieces))


def test_an_error_body_is_read_only_up_to_its_own_cap():
    got, _ = exchange(Script(httpx.Response(400, content=b"e" * (ERROR_BODY_BYTES + 100))), config(retries=0))
    assert got.error is not None and got.error.kind == "http_4xx" and len(got.error.message) < 400


def test_a_body_that_is_not_utf8_is_unreadable_and_its_usage_still_counts():
    raw = b'{"usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}, "x": "\xff"}'
    got, _ = exchange(Script(httpx.Response(200, content=raw)))
    assert got.unreadable == "the body is not valid UTF-8" and got.response is None
    assert got.salvaged_usage is not None and got.salvaged_usage.total_tokens == 10
    assert got.raw is not None and got.raw.startswith('{"usage"') and "\ufffd" in got.raw


def test_a_body_that_is_not_json_is_unreadable_with_the_parsers_words():
    got, _ = exchange(Script(httpx.Response(200, content=b"<html>oops</html>")))
    assert got.unreadable is not None and got.unreadable.startswith("the body is not JSON (Expecting value")
    assert got.raw == "<html>oops</html>" and got.salvaged_usage is None


def test_a_body_nested_past_the_depth_limit_or_too_deep_to_parse_is_unreadable():
    nested = b"[" * 70 + b"]" * 70
    got, _ = exchange(Script(httpx.Response(200, content=nested)))
    assert got.unreadable == "it is nested deeper than 64 levels"
    deeper = b"[" * 100_000 + b"]" * 100_000
    got, _ = exchange(Script(httpx.Response(200, content=deeper)))
    assert got.unreadable == "the body is nested too deeply to read" and len(got.raw or "") == RAW_KEPT_CHARS


def test_a_body_whose_encoding_cannot_be_undone_is_unreadable():
    class NotGzip(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield b"not gzip"

    got, _ = exchange(Script(httpx.Response(200, stream=NotGzip(), headers={"Content-Encoding": "gzip"})))
    assert got.unreadable is not None and got.unreadable.startswith("DecodingError: ")
    assert got.response_bytes == 0 and got.raw == ""


def test_a_key_in_a_readable_body_is_scrubbed_and_so_is_the_request():
    body = dict(OK, note=f"key {KEY}")
    got, _ = exchange(Script(httpx.Response(200, json=body)))
    assert got.response["note"] == f"key {REDACTED}" and KEY not in got.model_dump_json()


def test_one_client_serves_a_whole_matrix_and_closes_once():
    script = Script(httpx.Response(200, json=OK), httpx.Response(200, json=OK))

    async def go():
        source = LiveSource(config(concurrency=3), transport=httpx.MockTransport(script))
        assert source.label == "m" and source.scrub({"k": KEY}) == {"k": REDACTED}
        first = await source.for_run(1).exchange(ask())
        client = source._client
        await source.for_run(2).exchange(ask())
        assert source._client is client and client is not None
        assert client.headers["authorization"] == f"Bearer {KEY}"
        assert source._gate is not None and source._gate._value == 3
        await source.aclose()
        assert source._client is None and client.is_closed
        await source.aclose()
        return first

    assert asyncio.run(go()).response == OK


def test_each_run_has_its_own_seed():
    source = LiveSource(config())
    a, b = source.for_run(1), source.for_run(2)
    assert (a.seed, b.seed, a.label) == (1, 2, "m") and a._rng.random() != b._rng.random()


def test_a_status_outside_2xx_is_never_an_answer_and_its_body_is_read_under_the_error_cap():
    got, _ = exchange(Script(httpx.Response(300, text="moved elsewhere")), config(max_response_bytes=5))
    assert got.response is None and got.error is not None
    assert (got.error.kind, got.error.message) == ("http_4xx", "HTTP 300: moved elsewhere")
    got, _ = exchange(Script(httpx.Response(500, text="broken backend")), config(max_response_bytes=5, retries=0))
    assert got.error is not None and got.error.message == "HTTP 500: broken backend"


def test_an_error_body_that_is_not_utf8_is_quoted_with_replacement_characters():
    got, _ = exchange(Script(httpx.Response(502, content=b"bad \xff gateway")), config(retries=0))
    assert got.error is not None and got.error.message == "HTTP 502: bad \ufffd gateway"


def test_a_retry_after_on_an_error_whose_encoding_is_broken_is_still_honoured():
    class NotGzip(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield b"not gzip"

    broken = httpx.Response(503, stream=NotGzip(), headers={"Content-Encoding": "gzip", "Retry-After": "4"})
    got, slept = exchange(Script(broken, httpx.Response(200, json=OK)))
    assert slept == [4.0] and got.response == OK


def test_a_decoding_failure_keeps_the_cap_it_was_read_under_and_is_not_a_cut():
    class NotGzip(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield b"not gzip"

    got, _ = exchange(Script(httpx.Response(200, stream=NotGzip(), headers={"Content-Encoding": "gzip"})))
    assert got.max_response_bytes == config().max_response_bytes and got.truncated is False


def test_a_long_parser_message_is_cut_at_a_hundred_characters():
    digits = b"9" * 5000
    got, _ = exchange(Script(httpx.Response(200, content=b'{"n": ' + digits + b"}")))
    try:
        json.loads('{"n": ' + "9" * 5000 + "}")
    except ValueError as exc:
        words = str(exc)
    assert len(words) > 100 and got.unreadable == f"the body is not JSON ({words[:100]})"


def test_a_cap_crossed_in_a_later_piece_counts_every_piece_before_it():
    pieces = [b"a" * 12, b"b" * 32, b"c" * 14]

    class Streamed(httpx.AsyncByteStream):
        async def __aiter__(self):
            for piece in pieces:
                yield piece

    got, _ = exchange(Script(httpx.Response(200, stream=Streamed())), config(max_response_bytes=49))
    assert got.truncated and got.raw == "a" * 12 + "b" * 32 + "c" * 5


def test_latency_is_the_monotonic_time_of_the_attempt_in_milliseconds(monkeypatch):
    import types

    from harness.models import live

    ticks = iter([10.0, 10.2504567, 20.0, 20.5])
    monkeypatch.setattr(live, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))
    got, _ = exchange(Script(httpx.Response(200, json=OK)))
    assert got.latency_ms == 250.457
    failed, _ = exchange(Script(httpx.Response(404, text="no")))
    assert failed.latency_ms == 500.0


def test_a_fresh_source_closes_without_a_client_and_reopens_after_closing():
    async def go():
        script = Script(httpx.Response(200, json=OK), httpx.Response(200, json=OK))
        source = LiveSource(config(concurrency=1), transport=httpx.MockTransport(script))
        await source.aclose()  # nothing opened yet
        await source.for_run(1).exchange(ask())
        assert source._gate is not None and source._gate._value == 1
        await source.aclose()
        again = await source.for_run(1).exchange(ask())  # a new client after the old one closed
        await source.aclose()
        return again

    assert asyncio.run(go()).response == OK


def test_without_a_transport_the_client_bounds_connections_and_each_attempts_time():
    async def go():
        source = LiveSource(config(concurrency=0, timeout_s=7.5))
        client, gate = source._session()
        pool = client._transport._pool  # httpx's own connection pool
        try:
            return client.timeout, pool._max_connections, pool._max_keepalive_connections, gate._value
        finally:
            await source.aclose()

    timeout, connections, keepalive, slots = asyncio.run(go())
    assert timeout == httpx.Timeout(7.5) and (connections, keepalive, slots) == (1, 1, 1)


def test_the_jitter_of_a_run_is_fixed_by_its_seed():
    answers = [httpx.Response(500, text="x")] * 3
    first, second = exchange(Script(*answers))[1], exchange(Script(*answers))[1]
    assert first == second and len(first) == 2


def test_dashscope_thinking_refusal_switches_thinking_off_once():
    sources: list[LiveSource] = []
    refusal = httpx.Response(400, json={"error": {"message": "parameter.enable_thinking must be set to false"}})
    got, _ = exchange(Script(refusal, httpx.Response(200, json=OK)), config(provider="dashscope"), source_out=sources)
    assert got.response == OK and [a.what for a in sources[0].adaptations] == ["thinking"]


def test_the_reason_an_adaptation_records_quotes_two_hundred_characters_of_the_message():
    sources: list[LiveSource] = []
    message = "temperature is not supported: " + "y" * 300
    exchange(Script(refusal(message, "temperature"), httpx.Response(200, json=OK)), source_out=sources)
    (adaptation,) = sources[0].adaptations
    assert adaptation.because == "HTTP 400: " + message[:197] + "..."
