"""The prebuilt ReAct agent, returned compiled."""

from typing import Any

from langgraph.prebuilt import create_react_agent


def build(tools: list[Any], model: Any) -> Any:
    return create_react_agent(model, tools)
