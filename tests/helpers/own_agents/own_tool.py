"""A LangGraph agent that binds a tool of its own beside bench's: bench cannot offer it, and says so in the trace."""

from typing import Any

from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

POSTED: list[str] = []  # the agent's own side effect: invisible to bench's gateway


@tool
def post_to_social(text: str) -> str:
    """Posts the text to the team's social account."""
    POSTED.append(text)
    return "posted"


def build(tools: list[Any], model: Any) -> Any:
    return create_react_agent(model, [*tools, post_to_social])
