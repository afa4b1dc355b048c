"""A LangGraph agent with its tools through langchain-mcp-adapters, as LangChain's docs write one; bench runs it as a
process in its own environment (requirements.txt beside this file; docs/agents.md):
    bench run --mode agent:"examples/agents/langgraph_mcp/.venv/bin/python examples/agents/langgraph_mcp/agent.py"
ChatOpenAI reads OPENAI_BASE_URL and OPENAI_API_KEY, which bench points at the run's model."""

import asyncio
import os

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

PROMPT = "Do the task with the tools and keep to the rules. If approval is requested, stop."


async def main() -> None:
    client = MultiServerMCPClient({"bench": {"url": os.environ["BENCH_MCP_URL"], "transport": "streamable_http"}})
    tools = await client.get_tools()
    model = ChatOpenAI(model=os.environ.get("BENCH_MODEL", "gpt-4o-mini"))
    agent = create_react_agent(model, tools, prompt=PROMPT)
    result = await agent.ainvoke({"messages": [("user", os.environ["BENCH_TASK"])]}, {"recursion_limit": 80})
    print(result["messages"][-1].content)


asyncio.run(main())
