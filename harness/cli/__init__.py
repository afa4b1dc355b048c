"""The ``bench`` command: thin typer commands and the one error boundary (a user error is one line and exit 2)."""

from harness.cli.app import app, main

__all__ = ["app", "main"]
