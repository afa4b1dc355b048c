"""LangGraph's quickstart shape: a sync model node calling ``.invoke``, and ``ToolNode``."""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    bound = model.bind_tools(tools)

    def think(state: State) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, ["tools", END])
    graph.add_edge("tools", "think")
    return graph
