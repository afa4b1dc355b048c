"""Every tool call reviewed by a person first, with LangGraph's ``HumanInterrupt`` / ``HumanResponse`` schema."""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    bound = model.bind_tools(tools)

    async def think(state: State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def review(state: State) -> Command:
        call = state["messages"][-1].tool_calls[0]
        request = {
            "action_request": {"action": call["name"], "args": call["args"]},
            "config": {"allow_accept": True, "allow_respond": True, "allow_edit": False, "allow_ignore": True},
            "description": f"May the agent call {call['name']}?",
        }
        response = interrupt([request])[0]
        if response["type"] == "accept":
            return Command(goto="tools")
        said = response["args"] if response["type"] == "response" else "skipped by the reviewer"
        feedback = ToolMessage(content=str(said), tool_call_id=call["id"], name=call["name"])
        return Command(goto="think", update={"messages": [feedback]})

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("review", review, destinations=("tools", "think"))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, {"tools": "review", END: END})
    graph.add_edge("tools", "think")
    return graph
