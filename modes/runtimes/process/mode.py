"""Any agent in any language as a mode: ``--mode agent:"CMD ..."``, or an agent named in ``bench.toml``.

bench runs CMD once per run, as a process, and serves it the scenario's actions as MCP tools and its model as an
OpenAI-compatible endpoint (``modes.runtimes.process.run``). The agent's own code decides everything between the
two: bench sees only the calls that reach its ports, and judges the run from the gateway when the process ends.
``bench resume`` runs CMD again with the decision and the conversation so far, for an agent that declares it can
go on (``resume = true`` in bench.toml); an agent that does not is refused in one line.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import ClassVar

from harness.core import HumanDecision, ModeResult, RunContext, UserInputError
from modes.base import MODES, mode
from modes.runtimes.base import RuntimeMode
from modes.runtimes.process.run import ProcessRun

PREFIX = "agent:"
TIME_LIMIT_S = 300.0  # a run's time limit, unless bench.toml gives the agent its own


class ProcessAgent(RuntimeMode):
    """An agent process: its command, whether it can be resumed, and the run's time limit."""

    summary = "Your agent as a process, in any language: bench's actions as MCP tools, bench's model over HTTP."
    decides = "the agent's own code, in its process"
    visible = "the task and wait actions, as MCP tools"
    stopper = "the agent, when its process exits; a closed gate's tool asks for approval and the run suspends"
    intervention = "an approval at each gated call: held and decided in-run, else asked for and the run suspends"
    autonomy = "whatever its code does; bench sees its tool calls and model calls only"
    spectrum = 20  # after bench's ten and the framework adapters
    framework = "mcp"  # bench's MCP server comes from the MCP SDK, a dependency of bench itself
    extra = "runtimes"
    distributions = ("mcp",)
    command: ClassVar[str] = ""  # as the user gave it
    argv: ClassVar[tuple[str, ...]] = ()  # as bench starts it (relative paths that exist made absolute)
    resumable: ClassVar[bool] = False
    time_limit_s: ClassVar[float] = TIME_LIMIT_S
    PARAMETERS = ("command", "resumable", "time_limit_s")

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        problem = self.resume_refusal() if decision is not None else None
        if problem is not None:
            raise UserInputError(problem)
        return await ProcessRun(ctx, self.argv, self.time_limit_s).run(decision)

    @classmethod
    def resume_refusal(cls) -> str | None:
        """None when the agent declared it can go on from a decision; else the one line that refuses the resume."""
        if cls.resumable:
            return None
        return (
            f"mode '{cls.name}': this agent declares no resume (bench would run its command again with the decision "
            "and the conversation so far); name it in bench.toml with resume = true if it reads them (docs/agents.md)"
        )


def is_process_agent(spec: str) -> bool:
    """Whether a ``--mode`` value names an agent process (``agent:CMD``)."""
    return spec.startswith(PREFIX)


def register_process_agent(
    name: str, command: str, *, resumable: bool = False, time_limit_s: float = TIME_LIMIT_S, base: Path | None = None
) -> str:
    """Registers the agent command as the mode ``name``; one line for a command that cannot run. ``base``: the
    folder relative paths in the command are read from (the current one by default)."""
    if name in MODES:
        return name
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UserInputError(f"--mode {name}: the command does not parse ({exc})") from None
    if not words:
        raise UserInputError(f"--mode {name}: give the agent's command after 'agent:', e.g. agent:\"node agent.js\"")
    if time_limit_s <= 0:
        raise UserInputError(f"agent '{name}': time_limit_s must be positive, not {time_limit_s:g}")
    argv = _resolved(words, base or Path.cwd())
    if shutil.which(argv[0]) is None:
        raise UserInputError(
            f"--mode {name}: '{words[0]}' is not a program bench can run (not found or not executable)"
        )
    attributes = {
        "__module__": __name__,
        "command": command,
        "argv": tuple(argv),
        "resumable": resumable,
        "time_limit_s": float(time_limit_s),
        "summary": f"Your agent process ({command}): bench's actions as MCP tools, bench's model over HTTP.",
    }
    mode(name)(type("AgentProcess", (ProcessAgent,), attributes))
    return name


def _resolved(words: list[str], base: Path) -> list[str]:
    """The command with each word that names an existing file or folder under ``base`` made absolute: the agent runs
    in its own working folder, so a path given from the current one still finds its file there."""
    found = []
    for word in words:
        path = base / word
        relative = not word.startswith("-") and not Path(word).is_absolute() and ("/" in word or path.is_file())
        found.append(os.path.abspath(path) if relative and path.exists() else word)  # a venv's python is a link: kept
    return found
