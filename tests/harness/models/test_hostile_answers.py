"""Answers no reader can take (too deep, too many digits, lone surrogates, bad UTF-8, 150 MB) are the model's
``parse`` errors with their tokens and latency counted, never ``internal``; a body is read only up to its cap."""

from __future__ import annotations

import asyncio
import json
import tracemalloc

import pytest

from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.errors import ModelError
from harness.models.live import LiveConfig, LiveSource
from harness.models.recording import RecordEntry
from harness.records.trace import TraceEvent
from harness.scenario.model import ActionSpec
from modes import select_modes
from modes.proposals import next_action_schema
from tests.helpers.bench import bench_process as bench
from tests.helpers.hostile_server import HostileServer, completion_bytes
from tests.helpers.sweeps import sample

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

SCHEMA = next_action_schema([ActionSpec(name="finish", description="end")])
USAGE = b'"usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}'
MB = 1024 * 1024


def request() -> ModelRequest:
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=3)
    return ModelRequest(
        purpose="next_action",
        messages=({"role": "user", "content": "go"},),
        response_schema=SCHEMA,
        offered=("finish",),
        view=view,
        meta=RequestMeta("s", "react", 1, 1),
    )


def ask(server: HostileServer, **config) -> tuple[ModelError | None, object]:
    """One live call; the error it ends in and the exchange (which must serialise, as the recording does)."""

    async def go():
        source = LiveSource(
            LiveConfig(url=server.base_url + "/chat/completions", model="m", retries=0, timeout_s=20, **config)
        )
        try:
            model = source.for_run(1)
            exchange = await model.exchange(request())
            try:
                model_reply = await model.complete(request())
            except ModelError as exc:
                return exc, exchange
            return None, (exchange, model_reply)
        finally:
            await source.aclose()

    return asyncio.run(go())


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


PATHOLOGICAL = {
    "brackets in the content": completion_bytes("[" * 3000),
    "brackets as the body": b"[" * 3000,
    "a 5,000-digit integer in the content": completion_bytes(
        '{"step": {"action": "finish", "args": {"n": ' + "9" * 5000 + "}}}"
    ),
    "a 5,000-digit integer in the body": b'{"x": ' + b"7" * 5000 + b', "choices": [], ' + USAGE + b"}",
    "a lone surrogate in the body": b'{"choices": [{"message": {"content": "\\ud800 {\\"step\\": 1}"}}], '
    + USAGE
    + b"}",
    "a lone surrogate in the content's JSON": completion_bytes(
        '{"step": {"action": "finish", "args": {"s": "\\udc00"}}}'
    ),
    "10,000-deep nesting in the content": completion_bytes(deep(10_000)),
    "10,000-deep nesting in the body": b'{"choices": ' + deep(10_000).encode() + b", " + USAGE + b"}",
    "70-deep nesting the parser takes": b'{"choices": [{"message": {"content": "x"}}], "n": '
    + deep(70).encode()
    + b", "
    + USAGE
    + b"}",
    "invalid UTF-8": b'{"choices": [{"message": {"content": "\xff\xfe\xc3"}}], ' + USAGE + b"}",
}


@pytest.mark.parametrize("name", sample(list(PATHOLOGICAL), 4, seed=0))  # all ten in CI
def test_an_unreadable_answer_is_a_parse_error_with_its_tokens_counted(name):
    with HostileServer([PATHOLOGICAL[name]]) as server:
        error, exchange = ask(server)
    assert error is not None and error.kind == "parse", name
    assert error.answer is not None and error.answer.latency_ms > 0
    # Read from the body even where the body as a whole is unreadable; a body of brackets reports none.
    assert error.answer.usage.total_tokens == (0 if name == "brackets as the body" else 37)
    RecordEntry(
        scenario="s",
        mode="react",
        trial=1,
        step=1,
        purpose="next_action",
        request_hash="h",
        occurrence=0,
        model="m",
        exchange=exchange,
    ).model_dump_json()  # the recording can hold it


def test_a_150_mb_answer_is_read_only_up_to_the_cap_in_bounded_memory():
    prefix = b'{"choices": [{"message": {"content": "'
    size = 150 * MB

    def chunks():
        yield prefix
        block = b"a" * MB
        for _ in range(size // MB):
            yield block

    with HostileServer([(len(prefix) + size, chunks)]) as server:
        tracemalloc.start()
        try:
            error, exchange = ask(server, max_response_bytes=2 * MB)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert error.kind == "parse" and "cap" in str(error)
    assert exchange.truncated and exchange.max_response_bytes == 2 * MB and exchange.response_bytes == 2 * MB
    assert len(exchange.raw) <= 2000  # the recording keeps an excerpt, not the body
    assert peak < 40 * MB, peak  # two calls, each holding at most the 2 MB it read


@pytest.mark.slow
def test_a_live_matrix_of_pathological_answers_ends_in_parse_errors_never_internal(tmp_path):
    out = tmp_path / "run"
    with HostileServer(list(PATHOLOGICAL.values())) as server:
        result = bench(
            "run",
            "--live",
            "--mode",
            "all",
            "--scenario",
            "blog_brief_approval",
            "--trials",
            "2",
            "--out",
            str(out),
            "--retries",
            "0",
            "--max-response-bytes",
            "65536",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": "none"},
        )
    assert result.returncode == 0, result.stderr
    events = [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    ended = {e.error.kind for e in events if e.kind == "error"}
    assert ended == {"parse"}
    calls = [e for e in events if e.kind == "model_call"]
    assert len(calls) == 2 * len(BUILT_IN) and all(e.latency_ms > 0 for e in calls)  # one call a run: each fails
    served = [list(PATHOLOGICAL)[i % len(PATHOLOGICAL)] for i in range(len(calls))]  # the server cycles them
    assert sorted(e.usage.total_tokens for e in calls) == sorted(
        0 if name == "brackets as the body" else 37 for name in served
    )  # every body but the bare brackets reports usage
    summaries = [e.outcome for e in events if e.kind == "summary"]
    assert all(s.stop_verdict != "infrastructure" and s.llm_calls == 1 for s in summaries)
    lines = (out / "recording.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(BUILT_IN) and all(
        RecordEntry.model_validate_json(line).exchange.max_response_bytes == 65536 for line in lines
    )
    assert json.loads((out / "manifest.json").read_text())["live"]["client"]["max_response_bytes"] == 65536
