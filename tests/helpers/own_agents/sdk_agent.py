"""An OpenAI Agents SDK agent as its documentation writes one: an ``Agent`` with instructions, a model and tools."""

from typing import Any

from agents import Agent


def build(tools: list[Any], model: Any) -> Agent:
    return Agent(name="post_writer", instructions="Write the post the user asks for.", model=model, tools=tools)
