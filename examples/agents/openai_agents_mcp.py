"""An OpenAI Agents SDK agent with its MCP server client, as the SDK's docs write one; bench runs it as a process:
    bench run --mode agent:"python examples/agents/openai_agents_mcp.py" --scenario blog_brief_approval
The SDK's OpenAI client reads OPENAI_BASE_URL and OPENAI_API_KEY, which bench points at the run's model; its MCP
client talks to the run's tools at BENCH_MCP_URL (docs/agents.md)."""

import asyncio
import os

from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

set_tracing_disabled(True)  # nothing goes to OpenAI's tracing (the model is the SDK's default: the Responses API)


async def main() -> None:
    async with MCPServerStreamableHttp(params={"url": os.environ["BENCH_MCP_URL"]}, name="bench") as tools:
        agent = Agent(
            name="writer",
            instructions="Do the task with the tools and keep to the rules. If approval is requested, stop.",
            mcp_servers=[tools],
            model=os.environ.get("BENCH_MODEL", "gpt-4o-mini"),
        )
        result = await Runner.run(agent, os.environ["BENCH_TASK"], max_turns=30)
        print(result.final_output)


asyncio.run(main())
