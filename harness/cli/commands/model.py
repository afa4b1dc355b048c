"""bench's model commands: probe (what an endpoint supports) and serve-model (the bundled model on a port)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from harness.choices import ProviderName
from harness.cli.common import echo, environment, stderr_note, table
from harness.errors import UserInputError


def probe_command(
    model: Annotated[
        Literal["live", "local"],
        typer.Option(
            help="live (your own endpoint: LLM_API_URL, LLM_MODEL, LLM_API_KEY) or local (the bundled model, "
            "started then stopped)."
        ),
    ] = "live",
    provider: Annotated[
        Literal["auto", ProviderName] | None, typer.Option(help="The provider profile (default auto).")
    ] = None,
    local_model: Annotated[bool, typer.Option("--local-model", help="Same as --model local.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 60.0,
) -> None:
    """Ask an endpoint one tiny request per capability and print what it supports; no matrix is run."""
    from harness.matrix.commands.catalog import probe_endpoint

    description, rows = probe_endpoint(
        "local" if local_model else model, env=environment(), provider=provider, timeout_s=timeout, notify=stderr_note
    )
    echo(description)
    echo(
        table(
            [[r.capability, r.verdict, r.detail] for r in rows],
            headers=["capability", "answer", "detail"],
        )
    )
    if not any(r.verdict == "yes" for r in rows):
        echo("error: the endpoint accepted none of the probes", err=True)
        raise typer.Exit(1)


def serve_model_command(
    port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve the bundled SmolLM2 model (llama.cpp, OpenAI-compatible) on 127.0.0.1 until Ctrl-C or SIGTERM."""
    from harness.core.signals import StopRequest
    from harness.matrix.commands.catalog import model_server

    if port is not None and not 0 < port < 65536:
        raise UserInputError(f"--port must be between 1 and 65535, got {port}")
    echo("starting the bundled model server (SmolLM2-135M, llama.cpp) ...", err=True)
    stop = StopRequest()
    server = model_server(port)
    try:
        with stop.installed():  # SIGTERM unwinds like Ctrl-C, so the server is always stopped
            server.start()
            echo(f"export LLM_API_URL={server.base_url}")
            echo(f"export LLM_MODEL={server.model}")
            echo("export LLM_API_KEY=local  # the local server checks no key; any value will do")
            echo("serving; Ctrl-C stops the server", err=True)
            code = server.wait()
            raise UserInputError(f"the local model server exited with code {code}: {server.log_tail()}")
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the normal way to stop serving
        echo("server stopped", err=True)
    finally:
        server.stop()
