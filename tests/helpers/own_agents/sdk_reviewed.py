"""An Agents SDK agent that asks a person before every tool call (``needs_approval=True`` on each tool)."""

import dataclasses
from typing import Any

from agents import Agent


def build(tools: list[Any], model: Any) -> Agent:
    reviewed = [dataclasses.replace(tool, needs_approval=True) for tool in tools]
    return Agent(name="careful_writer", instructions="Write the post; ask first.", model=model, tools=reviewed)
