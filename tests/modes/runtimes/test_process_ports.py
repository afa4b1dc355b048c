"""The two ports an agent process talks to, in-process: the OpenAI-compatible endpoint in front of the run's model,
and the MCP tool server in front of its gateway (gates held, asked for, elicited; audit lets a call through)."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from starlette.applications import Starlette

from harness.core import RunContext
from harness.models.recording import request_hash
from harness.models.scripted import ScriptedSource
from modes.runtimes.process.chat import ChatEndpoint
from modes.runtimes.process.serve import serving
from modes.runtimes.process.tools import ScenarioTools, mcp_server
from tests.helpers.units import Decisions, make_ctx

KEY = "run-key"
pytestmark = pytest.mark.anyio  # the ports are async: each test runs in an event loop (anyio's plugin, asyncio)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _ctx(blog, answers: str = "reference", **kwargs: Any) -> tuple[RunContext, list]:
    return make_ctx(blog, model=ScriptedSource(answers).for_run(0), **kwargs)


def _tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in names]


async def _ask(chat: ChatEndpoint, body: dict[str, Any], key: str = KEY) -> httpx.Response:
    transport = httpx.ASGITransport(app=Starlette(routes=chat.routes()))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        return await client.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})


START = [{"role": "system", "content": "Be careful."}, {"role": "user", "content": "the task"}]


async def test_a_chat_request_is_one_traced_model_call_answered_as_a_tool_call(blog):
    ctx, events = _ctx(blog)
    chat = ChatEndpoint(ctx, KEY, lambda: None)
    reply = await _ask(chat, {"model": "x", "messages": START, "tools": _tools("create_brief", "wait_for_approval")})
    assert reply.status_code == 200
    message = reply.json()["choices"][0]["message"]
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["create_brief"]
    assert reply.json()["choices"][0]["finish_reason"] == "tool_calls"
    calls = [e for e in events if e.kind == "model_call"]
    assert [(e.step, e.action) for e in calls] == [(1, "create_brief")]
    assert ctx.trace.llm_calls == 1 and set(reply.json()["usage"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    }
    request = ctx.transcript[0][0]
    assert request.offered == ("create_brief", "wait_for_approval", "finish")  # the tools it sent, and the finish
    assert "Be careful." in request.messages[0]["content"]  # the agent's own system text reaches the model


async def test_the_step_is_the_count_of_tool_calls_in_the_conversation_plus_one(blog):
    ctx, events = _ctx(blog)
    chat = ChatEndpoint(ctx, KEY, lambda: None)
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "create_brief", "arguments": "{}"}} for i in (1, 2)
    ]
    messages = [*START, {"role": "assistant", "content": None, "tool_calls": calls}]
    messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"} for i in (1, 2)]
    await _ask(chat, {"messages": messages, "tools": _tools("create_brief")})
    assert [e.step for e in events if e.kind == "model_call"] == [3]
    assert "result 1\nresult 2" in ctx.transcript[0][0].messages[1]["content"]  # the observations, in order


async def test_a_tool_result_passed_on_as_mcp_json_asks_the_model_the_same_as_its_text(blog):
    """Clients wrap an MCP result differently; the request the model is asked (and a recording keys) is the same."""
    hashes = []
    for content in ("step 1: done", json.dumps([{"type": "text", "text": "step 1: done"}])):
        ctx, _ = _ctx(blog)
        call = {"id": "any", "type": "function", "function": {"name": "create_brief", "arguments": "{}"}}
        messages = [*START, {"role": "assistant", "tool_calls": [call]}, {"role": "tool", "content": content}]
        await _ask(ChatEndpoint(ctx, KEY, lambda: None), {"messages": messages, "tools": _tools("create_brief")})
        hashes.append(request_hash(ctx.transcript[0][0]))
    assert hashes[0] == hashes[1]


async def test_a_client_prefix_on_tool_names_maps_to_the_action_and_back(blog):
    ctx, _ = _ctx(blog)
    reply = await _ask(ChatEndpoint(ctx, KEY, lambda: None), {"messages": START, "tools": _tools("bench_create_brief")})
    assert reply.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "bench_create_brief"


async def test_the_finish_is_a_final_message(blog):
    ctx, _ = _ctx(blog)
    chat = ChatEndpoint(ctx, KEY, lambda: None)
    reply = await _ask(chat, {"messages": START, "tools": []})  # no tools offered: only the finish is left
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"] and choice["message"]["content"]
    assert chat.finished_at == 1


async def test_a_request_without_the_runs_key_is_refused_and_asks_nothing(blog):
    ctx, events = _ctx(blog)
    reply = await _ask(ChatEndpoint(ctx, KEY, lambda: None), {"messages": START}, key="someone-else")
    assert reply.status_code == 401 and not events


async def test_a_streamed_request_gets_the_same_answer_in_chunks(blog):
    ctx, _ = _ctx(blog)
    body = {
        "messages": START,
        "tools": _tools("create_brief"),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    reply = await _ask(ChatEndpoint(ctx, KEY, lambda: None), body)
    chunks = [line.removeprefix("data: ") for line in reply.text.splitlines() if line.startswith("data: ")]
    assert chunks[-1] == "[DONE]"
    parsed = [json.loads(chunk) for chunk in chunks[:-1]]
    assert parsed[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "create_brief"
    assert parsed[1]["choices"][0]["finish_reason"] == "tool_calls" and "usage" in parsed[2]


async def test_a_proposal_past_the_last_step_ends_the_run_at_its_step_limit(blog):
    ctx, _ = _ctx(blog, "eager")
    ended = []
    chat = ChatEndpoint(ctx, KEY, lambda: ended.append(True))
    call = {"id": "c", "type": "function", "function": {"name": "write_draft", "arguments": "{}"}}
    spent = [{"role": "assistant", "tool_calls": [call]}] * ctx.limits.max_steps
    reply = await _ask(chat, {"messages": [*START, *spent], "tools": _tools("write_draft")})
    assert "tool_calls" not in reply.json()["choices"][0]["message"]
    assert chat.step_limit == (ctx.limits.max_steps + 1, "write_draft") and ended


# ---------------------------------------------------------------- the MCP tool server


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def test_a_gated_call_on_a_closed_gate_is_a_tool_error_saying_approval_was_requested(blog):
    ctx, events = _ctx(blog)
    tools = ScenarioTools(ctx, lambda: None)
    async with Client(mcp_server(tools)) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} >= {"create_brief", "write_draft"}
        await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
        result = await client.call_tool("write_draft", {"title": "t", "body": "b"})
    assert result.is_error and "approval was requested" in _text(result)
    assert [(r.action, r.status) for r in ctx.gateway.records][-1] == ("wait_for_approval", "wait_recorded")
    assert "write_draft" not in {r.action for r in ctx.gateway.records}  # not carried out
    assert tools.pending == "brief_approval" and any(e.kind == "suspend" for e in events)


async def test_an_in_run_approver_holds_the_call_and_it_is_carried_out_once_approved(blog):
    ctx, events = _ctx(blog, gatekeeper=Decisions("approve"))
    tools = ScenarioTools(ctx, lambda: None)
    async with Client(mcp_server(tools)) as client:
        await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
        result = await client.call_tool("write_draft", {"title": "t", "body": "b"})
    assert not result.is_error, _text(result)
    assert [(r.action, r.status) for r in ctx.gateway.records][-1] == ("write_draft", "committed")
    assert tools.pending is None and [e.result for e in events if e.kind == "human"] == ["approve"]


async def test_a_client_that_declares_elicitation_is_asked_and_its_answer_decides(blog):
    ctx, events = _ctx(blog)
    asked = []

    async def answer(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    async with Client(
        mcp_server(ScenarioTools(ctx, lambda: None)), elicitation_callback=answer, mode="legacy"
    ) as client:
        await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
        result = await client.call_tool("write_draft", {"title": "t", "body": "b"})
    assert asked and "brief_approval" in asked[0]
    assert not result.is_error and ctx.gateway.records[-1].status == "committed"
    (human,) = [e for e in events if e.kind == "human"]
    assert human.detail is not None and human.detail["who"] == "mcp_elicitation"


async def test_a_rejection_ends_the_run_and_stops_the_agent(blog):
    ctx, _ = _ctx(blog, gatekeeper=Decisions("reject"))
    stopped = []
    tools = ScenarioTools(ctx, lambda: stopped.append(True))
    async with Client(mcp_server(tools)) as client:
        await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
        result = await client.call_tool("write_draft", {"title": "t", "body": "b"})
        after = await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
    assert result.is_error and after.is_error and tools.rejected == "brief_approval" and stopped


async def test_under_audit_a_gated_call_goes_through_and_is_recorded_premature(blog):
    ctx, _ = _ctx(blog, policy="audit")
    async with Client(mcp_server(ScenarioTools(ctx, lambda: None))) as client:
        await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
        result = await client.call_tool("write_draft", {"title": "t", "body": "b"})
    assert not result.is_error
    assert ctx.gateway.records[-1].action == "write_draft" and ctx.gateway.records[-1].premature


async def test_the_responses_api_asks_the_same_turn_and_answers_a_function_call_item(blog):
    ctx, events = _ctx(blog)
    chat = ChatEndpoint(ctx, KEY, lambda: None)
    body = {
        "model": "m",
        "instructions": "Be careful.",
        "input": [
            {"role": "user", "content": "the task"},
            {"type": "function_call", "call_id": "c1", "name": "create_brief", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "step 1: create_brief -> committed"},
        ],
        "tools": [
            {"type": "function", "name": name, "parameters": {}} for name in ("create_brief", "wait_for_approval")
        ],
    }
    transport = httpx.ASGITransport(app=Starlette(routes=chat.routes()))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        reply = await client.post("/v1/responses", json=body, headers={"Authorization": f"Bearer {KEY}"})
    (item,) = reply.json()["output"]
    # the reference policy decides from the gateway's record (empty here), so its first step; the step comes from the
    # conversation (one call in it), and so does the observation
    assert (item["type"], item["name"]) == ("function_call", "create_brief")
    assert [e.step for e in events if e.kind == "model_call"] == [2]
    assert "step 1: create_brief -> committed" in ctx.transcript[0][0].messages[1]["content"]


async def test_the_stdio_bridge_serves_the_same_tools_and_its_calls_reach_the_gateway(blog):
    ctx, _ = _ctx(blog)
    tools = ScenarioTools(ctx, lambda: None)
    async with serving(tools, ChatEndpoint(ctx, KEY, lambda: None)) as urls:
        bridge = StdioServerParameters(
            command=sys.executable, args=["-m", "modes.runtimes.process.stdio_bridge", urls.mcp]
        )
        async with Client(bridge) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("create_brief", {"topic": "t", "audience": "a", "key_points": ["k"]})
    assert listed == {spec.name for spec in tools.specs}
    assert not result.is_error and [(r.action, r.status) for r in ctx.gateway.records] == [
        ("create_brief", "committed")
    ]
