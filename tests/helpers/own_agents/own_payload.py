"""Every tool call put to a person by the agent's own step: ``interrupt()`` with its own payload, answered the way its
``ANSWER`` function says."""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def answer(payload: Any, verdict: Any) -> str:
    """How this agent wants to be answered: "yes", or "no: why"."""
    return "yes" if verdict.approved else f"no: {verdict.note}"


ANSWER = answer  # bench answers the agent's own interrupts with it


def build(tools: list[Any], model: Any) -> StateGraph:
    bound = model.bind_tools(tools)

    async def think(state: State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def check(state: State) -> Command:
        call = state["messages"][-1].tool_calls[0]
        said = interrupt({"question": f"Shall I run {call['name']}?", "tool_call": call})
        if said == "yes":
            return Command(goto="tools")
        feedback = ToolMessage(content=said, tool_call_id=call["id"], name=call["name"])
        return Command(goto="think", update={"messages": [feedback]})

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("check", check, destinations=("tools", "think"))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, {"tools": "check", END: END})
    graph.add_edge("tools", "think")
    return graph
