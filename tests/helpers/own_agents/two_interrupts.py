"""An agent whose review node does something before it asks twice: it records a note of the batch (a side effect
through bench's tool), then asks about each call of the batch with its own ``interrupt()``."""

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from tests.helpers.own_agents.parallel_batch import BatchModel, State


def build(tools: list[Any], model: Any) -> StateGraph:
    own, by_name = BatchModel(), {tool.name: tool for tool in tools}

    def think(state: State) -> dict[str, Any]:
        return {"messages": [own.invoke(state["messages"])]}

    def review(state: State) -> Command:
        calls = state["messages"][-1].tool_calls
        if len(calls) > 1:  # the batch: noted first, then each call asked about
            by_name["record_research"].invoke({"sources": ["S-12"], "findings": "the batch was put to review"})
            for call in calls:
                interrupt({"question": f"May I run {call['name']}?", "tool_call": call})
        return Command(goto="tools")

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("review", review, destinations=("tools",))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, {"tools": "review", END: END})
    graph.add_edge("tools", "think")
    return graph
