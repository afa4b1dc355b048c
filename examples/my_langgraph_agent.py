"""A LangGraph agent of your own, run by bench: bench run --mode examples/my_langgraph_agent.py:build

bench calls ``build`` with its tools (the scenario's actions as LangChain tools, each one going through bench's
gateway) and its chat model (whatever --model names: a scripted policy, a recording, your endpoint), and compiles
the graph it returns with its own checkpointer, so a gated tool's approval survives the process (bench resume).
Anything this file does outside the tools is invisible to bench's gateway (docs/runtimes.md).
"""

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    """The agent: the model picks a tool, the tool runs, the model sees its result, until it answers plainly."""
    bound = model.bind_tools(tools)

    async def think(state: State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, ["tools", END])
    graph.add_edge("tools", "think")
    return graph
