"""What LangGraph runs again when a graph resumes from an interrupt, pinned to the installed version.

These are findings about the framework, not bugs of bench's to hide: LangGraph re-runs an interrupted node from its
start, so whatever that node did before its ``interrupt()`` happens again, and bench's gateway counts it. An upgrade
that changes what is repeated fails (or, on another version, skips loudly) here, so docs/runtimes.md is re-checked.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.types import Command, interrupt

from harness.core.outcome import repeated_side_effects
from modes.runtimes.langchain_bridge import gateway_tools
from modes.runtimes.langgraph_driver import GraphRun, checkpointer
from tests.helpers.adapter_runs import adapter_ctx, committed
from tests.helpers.answers import Answers
from tests.helpers.units import REFUND, scenario

PINNED = "1.2.24"  # the LangGraph these findings were made on
REFUND_STORY = scenario(REFUND)


@pytest.fixture(autouse=True)
def pinned_langgraph() -> None:
    installed = version("langgraph")
    if installed != PINNED:
        pytest.skip(
            f"LANGGRAPH {installed} IS INSTALLED, THESE FINDINGS ARE PINNED TO {PINNED}: re-check what it runs again "
            "on resume, then update PINNED here and the findings in docs/runtimes.md"
        )


class Conversation(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    open_gates: list[str]


def test_a_toolnode_batch_runs_its_plain_tool_again_when_it_resumes_an_interrupted_one(tmp_path):
    """One AI message calls ``note`` (a plain write) and ``pay`` (gated): ``pay`` interrupts, the node's writes are
    dropped, and on resume ToolNode runs the whole batch again: ``note`` commits twice, under the same step."""
    ctx, _ = adapter_ctx(REFUND_STORY, Answers(), approver="approve", state_dir=tmp_path)
    batch = AIMessage(
        content="",
        tool_calls=[
            {"name": "note", "args": {"text": "checked"}, "id": "call_1", "type": "tool_call"},
            {"name": "pay", "args": {"amount": 10}, "id": "call_2", "type": "tool_call"},
        ],
    )

    async def run() -> None:
        async with checkpointer(ctx) as saver:
            graph = StateGraph(Conversation)
            graph.add_node("tools", ToolNode(gateway_tools(ctx, [a.name for a in ctx.scenario.actions])))
            graph.add_edge(START, "tools")
            graph.add_edge("tools", END)
            runner = GraphRun(ctx, graph.compile(checkpointer=saver), recursion_limit=5, durability="async")
            await runner.start({"messages": [batch], "open_gates": []})

    asyncio.run(run())
    assert committed(ctx, "note") == [1, 1] and committed(ctx, "pay") == [2]
    assert repeated_side_effects(ctx.gateway.records) == 1


def test_a_node_with_two_interrupts_runs_its_code_before_the_first_again_on_each_resume():
    """What the node committed before its first ``interrupt()`` commits again at each of the two resumes."""
    ctx, _ = adapter_ctx(REFUND_STORY, Answers())

    def node(state: dict[str, Any]) -> dict[str, Any]:
        ctx.act("note", {"text": "checked"}, allowed=["note"], step=1)
        first = interrupt("first")
        second = interrupt("second")
        return {"answers": [first, second]}

    graph = StateGraph(TypedDict("Answers", {"answers": list}, total=False))
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}

    async def run() -> list:
        out = await compiled.ainvoke({}, config, version="v2")
        surfaced = [out.interrupts]
        for answer in ("yes", "also"):
            out = await compiled.ainvoke(Command(resume=answer), config, version="v2")
            surfaced.append(out.interrupts)
        assert out.value == {"answers": ["yes", "also"]}
        return [[i.value for i in interrupts] for interrupts in surfaced]

    assert asyncio.run(run()) == [["first"], ["second"], []]
    assert committed(ctx, "note") == [1, 1, 1]
    assert repeated_side_effects(ctx.gateway.records) == 2


def test_two_tools_of_one_batch_that_interrupt_surface_one_at_a_time_and_the_batch_reruns_for_each():
    """Both tools reach ``interrupt()`` in the first pass, yet only the first surfaces; each resume runs the whole
    batch again (so the map form of ``Command(resume=...)`` is never needed for a ToolNode batch here)."""
    ran: list[str] = []

    def gated(name: str) -> StructuredTool:
        async def body(runtime: ToolRuntime) -> str:
            ran.append(name)
            return f"{name}: {interrupt(name)}"

        return StructuredTool.from_function(coroutine=body, name=name, description=name)

    graph = StateGraph(Conversation)
    graph.add_node("tools", ToolNode([gated("first"), gated("second")]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    calls = [{"name": n, "args": {}, "id": n, "type": "tool_call"} for n in ("first", "second")]

    ids: list[str] = []

    async def run() -> list[list[str]]:
        out = await compiled.ainvoke({"messages": [AIMessage(content="", tool_calls=calls)]}, config, version="v2")
        surfaced = [[i.value for i in out.interrupts]]
        while out.interrupts:
            ids.extend(i.id for i in out.interrupts)
            out = await compiled.ainvoke(Command(resume={i.id: "ok" for i in out.interrupts}), config, version="v2")
            surfaced.append([i.value for i in out.interrupts])
        return surfaced

    assert asyncio.run(run()) == [["first"], ["second"], []]
    assert len(set(ids)) == 2  # each its own id (langgraph#6626 reported parallel interrupts sharing one)
    assert ran == ["first", "second"] * 3
