"""One local HTTP server per run, in the run's own event loop: the MCP tools at ``/mcp`` and the model at ``/v1``.

It binds 127.0.0.1 on a free port the system picks, answers only while the run lasts, and is shut down when the
run's agent stops, whatever ended it. Running in the run's loop, each tool call reaches the gateway and each model
request the model port directly, in the order the agent makes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import uvicorn

from modes.runtimes.process.chat import ChatEndpoint
from modes.runtimes.process.tools import ScenarioTools, mcp_server

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Urls:
    """Where the agent finds bench: the MCP endpoint (streamable HTTP) and the OpenAI-compatible base URL."""

    mcp: str
    openai: str


class _Quiet(uvicorn.Server):
    """uvicorn without its signal handlers: the run's process keeps its own (bench's stop request)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving(tools: ScenarioTools, chat: ChatEndpoint) -> AsyncIterator[Urls]:
    """Serves both ports until the block ends; yields their URLs once the server accepts connections."""
    app = mcp_server(tools).streamable_http_app(custom_starlette_routes=chat.routes(), host=HOST)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST, 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="error", lifespan="on", timeout_graceful_shutdown=1, access_log=False)
    server = _Quiet(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            if task.done():  # it could not start: its error, raised here
                task.result()
                raise RuntimeError("bench's MCP and model server stopped before it started")
            await asyncio.sleep(0.005)
        base = f"http://{HOST}:{port}"
        yield Urls(mcp=f"{base}/mcp", openai=f"{base}/v1")
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, timeout=5)
        if not task.done():
            task.cancel()
        listener.close()
