"""An agent on its own model that calls two gated tools in one parallel batch (blog_layered's ``write_synopsis``,
guarded by brief_approval, and ``outline_sections``, guarded by synopsis_approval), run by ``ToolNode``."""

from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

TURNS: list[list[tuple[str, dict[str, Any]]]] = [
    [("search_sources", {"query": "who decides"})],
    [("record_research", {"sources": ["S-12"], "findings": "code paths against model decisions"})],
    [("write_brief", {"topic": "who decides", "audience": "engineers", "outline": ["workflows", "agents"]})],
    [("write_synopsis", {"synopsis": "Workflows decide in code."}), ("outline_sections", {"sections": ["one"]})],
]


class BatchModel(BaseChatModel):
    """The agent's own model: the turns above, then a final answer."""

    @property
    def _llm_type(self) -> str:
        return "batch"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn >= len(TURNS):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
        calls = [
            {"name": name, "args": args, "id": f"batch_{turn}_{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(TURNS[turn])
        ]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=calls))])


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build(tools: list[Any], model: Any) -> StateGraph:
    own = BatchModel()

    def think(state: State) -> dict[str, Any]:
        return {"messages": [own.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", tools_condition, ["tools", END])
    graph.add_edge("tools", "think")
    return graph
