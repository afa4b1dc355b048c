"""A PydanticAI agent with its MCP toolset, as PydanticAI's docs write one; bench runs it as a process:
    bench run --mode agent:"python examples/agents/pydantic_ai_mcp.py" --scenario blog_brief_approval
The OpenAI provider reads OPENAI_BASE_URL and OPENAI_API_KEY, which bench points at the run's model; the toolset
talks to the run's tools at BENCH_MCP_URL (docs/agents.md)."""

import asyncio
import os

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel

INSTRUCTIONS = "Do the task with the tools and keep to the rules. If approval is requested, stop."


async def main() -> None:
    # A tool error (a closed gate's "approval was requested") goes back to the model as the tool's failure.
    tools = MCPToolset(os.environ["BENCH_MCP_URL"], tool_error_behavior="failed")
    agent = Agent(
        OpenAIChatModel(os.environ.get("BENCH_MODEL", "gpt-4o-mini")), toolsets=[tools], instructions=INSTRUCTIONS
    )
    async with agent:
        result = await agent.run(os.environ["BENCH_TASK"])
    print(result.output)


asyncio.run(main())
