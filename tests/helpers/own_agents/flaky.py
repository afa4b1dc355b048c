"""An agent with a bug that shows in every other run: its model node raises a KeyError on its first turn."""

import itertools
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

BUILDS = itertools.count()


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    bound = model.bind_tools(tools)
    buggy = next(BUILDS) % 2 == 1

    async def think(state: State) -> dict[str, Any]:
        if buggy:
            settings: dict[str, str] = {}
            return {"messages": [settings["temperature"]]}  # the bug: a key this agent never set
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, ["tools", END])
    graph.add_edge("tools", "think")
    return graph
