"""bench's commands by noun, each a plain function; harness/cli/app.py registers them on the typer app in order."""

__all__ = ["model", "report", "resume", "run", "runs", "scenarios"]
