"""A PydanticAI agent as its documentation writes one with deferred tools: text output, or the calls awaiting
approval (``DeferredToolRequests``)."""

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests


def build(tools: Any, model: Any) -> Agent:
    return Agent(model, toolsets=[tools], output_type=[str, DeferredToolRequests], instructions="Write the post.")
