"""The prebuilt ReAct agent with a structured final answer (``response_format``: the model's
``.with_structured_output(Report)``)."""

from typing import Any

from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel


class Report(BaseModel):
    """What the agent reports when it is done."""

    summary: str
    done: bool


def build(tools: list[Any], model: Any) -> Any:
    return create_react_agent(model, tools, response_format=Report)
