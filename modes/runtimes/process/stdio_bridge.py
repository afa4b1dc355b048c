"""The run's MCP tools over stdio, for a client that starts its server itself: ``BENCH_MCP_STDIO`` is this module's
command with the run's URL (``python -m modes.runtimes.process.stdio_bridge URL``). Every call goes on to the run's
streamable HTTP endpoint, so it reaches the same gateway; elicitation is not passed through (docs/agents.md)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def bridge(url: str) -> None:
    async with Client(url) as upstream:

        async def list_tools(_ctx: ServerRequestContext[Any], _params: Any) -> types.ListToolsResult:
            return await upstream.list_tools()

        async def call_tool(
            _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await upstream.call_tool(params.name, dict(params.arguments or {}))

        server = Server("bench", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m modes.runtimes.process.stdio_bridge MCP_URL")
    anyio.run(bridge, sys.argv[1])
