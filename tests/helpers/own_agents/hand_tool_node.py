"""A tool node written by hand: each call run with ``tool.invoke(args)`` in a sync node, no ``ToolNode``."""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    by_name = {tool.name: tool for tool in tools}
    bound = model.bind_tools(tools)

    async def think(state: State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def act(state: State) -> dict[str, Any]:
        results = []
        for call in state["messages"][-1].tool_calls:
            content = str(by_name[call["name"]].invoke(call["args"]))
            results.append(ToolMessage(content=content, tool_call_id=call["id"], name=call["name"]))
        return {"messages": results}

    def route(state: State) -> str:
        return "act" if state["messages"][-1].tool_calls else END

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("act", act)
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", route, ["act", END])
    graph.add_edge("act", "think")
    return graph
