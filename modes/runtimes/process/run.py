"""One run of an agent process: bench's two ports served, the agent started with their URLs, judged when it stops.

The agent gets the run's task and the URLs in environment variables (``ENV`` names them; docs/agents.md), a
working folder of the run's own (the same one again on a resume), and the run's time limit. When it exits (or
is stopped) the run ends as the gateway and the model port saw it: a model failure ends it with that error, a
rejection as rejected, a spent step budget at its step limit, the time limit as a run that did not stop, a
non-zero exit as the agent's error (``agent_error``), an approval asked for and not given as suspended at that
gate; else finished. What the agent wrote in its working folder is listed in the trace (the gateway cannot see it).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import AgentError, HumanDecision, ModeResult, RejectedByHuman, RunContext, Suspended
from modes.react import step_limit
from modes.runtimes.process.chat import MODEL_NAME, ChatEndpoint
from modes.runtimes.process.child import Exit, run_agent

if TYPE_CHECKING:
    from modes.runtimes.process.tools import ScenarioTools

WORK_DIR = "work"  # the agent's working folder, in the run's state folder
CONVERSATION_FILE = "conversation.json"  # the conversation at the stop, handed to a resumed agent
FILES_LISTED = 50  # the files written that the trace names (and how many more there were)
# Variables of bench's own environment the agent does not get: credentials are bench's, not the agent's.
WITHHELD = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")

# What the agent process is given (docs/agents.md lists them with examples).
ENV = (
    "BENCH_TASK",  # the task and its rules, as the prompt to start from
    "BENCH_MCP_URL",  # the scenario's actions as MCP tools, streamable HTTP
    "BENCH_MCP_STDIO",  # a command that serves the same tools over stdio, for a client that spawns its server
    "OPENAI_BASE_URL",  # bench's model as an OpenAI-compatible endpoint (chat completions)
    "OPENAI_API_KEY",  # the key that endpoint takes, this run's own
    "BENCH_MODEL",  # the model name to ask for (any name is answered by the run's --model)
    "BENCH_WORKDIR",  # the agent's working folder (also its current folder)
    "BENCH_RUN_ID",
    "BENCH_SCENARIO",
    "BENCH_RESUME_DECISION",  # on a resume only: approve or revise
    "BENCH_RESUME_GATE",  # on a resume only: the gate decided
    "BENCH_RESUME_NOTE",  # on a resume only: the reviewer's note (what to change, for a revision)
    "BENCH_RESUME_CONVERSATION",  # on a resume only: a JSON file, the chat messages up to the stop
)


class AgentExited(Exception):
    """The agent process ended in failure (a non-zero exit, or it never started): the run is judged ``agent_error``."""


class ProcessRun:
    """One run (or one resumed part of it) of the agent command ``argv`` under ``ctx``."""

    def __init__(self, ctx: RunContext, argv: Sequence[str], time_limit_s: float):
        self.ctx, self.argv, self.time_limit_s = ctx, list(argv), time_limit_s

    async def run(self, decision: HumanDecision | None = None) -> ModeResult:
        # the servers' packages (mcp, uvicorn) load only for a run of an agent process: every other bench command
        # starts without them (about half of bench run's start-up, before its endpoint is even asked)
        from modes.runtimes.process.serve import serving
        from modes.runtimes.process.tools import ScenarioTools

        ctx = self.ctx
        stop = asyncio.Event()
        tools, chat = ScenarioTools(ctx, stop.set), ChatEndpoint(ctx, secrets.token_hex(16), stop.set)
        with self._work_dir() as folder:
            before = _files(folder)
            async with serving(tools, chat) as urls:
                env = self._env(folder, chat.key, urls.mcp, urls.openai, decision)
                ended = await run_agent(self.argv, folder, env, self.time_limit_s, stop)
            written = _written(folder, before)
        if ctx.state_dir is not None and tools.pending is not None:  # a resume hands the agent its conversation
            _save_conversation(ctx.state_dir / CONVERSATION_FILE, chat.conversation)
        return self._ended(ended, tools, chat, written)

    def _ended(self, ended: Exit, tools: ScenarioTools, chat: ChatEndpoint, written: list[str]) -> ModeResult:
        """How the run ended, from what the ports saw and how the process ended (see the module docstring)."""
        ctx = self.ctx
        step = ctx.trace.last_step
        detail: dict[str, Any] = {
            "exit_code": ended.code,
            "timed_out": ended.timed_out,
            "stopped_by_bench": ended.stopped,
            "files_written": written[:FILES_LISTED],
        }
        if len(written) > FILES_LISTED:
            detail["files_not_listed"] = len(written) - FILES_LISTED
        if ended.code is not None:  # it ended on its own: what it printed is its own (a stopped one's depends on when)
            detail["output_bytes"] = ended.output_bytes
            if ended.code != 0:
                detail["output_tail"] = ended.tail[-500:]
        elif ended.not_started:
            detail["output_tail"] = ended.not_started
        ctx.decide(step, "framework", None, "agent_exited", detail)
        if chat.failure is not None:
            raise chat.failure
        if tools.rejected is not None:
            raise RejectedByHuman(tools.rejected)
        if chat.step_limit is not None:
            return step_limit(ctx, *chat.step_limit)
        if ended.not_started:
            raise AgentError(AgentExited(f"the agent did not start: {ended.not_started}"))
        if ended.timed_out:
            reason = f"the agent ran past the run's time limit of {self.time_limit_s:g} s and was stopped"
            ctx.decide(step, "runtime", None, "time_limit", {"time_limit_s": self.time_limit_s, "reason": reason})
            return ModeResult("step_limit")
        if ended.code != 0:
            raise AgentError(AgentExited(f"the agent exited with status {ended.code}: {_last_words(ended.tail)}"))
        if tools.pending is not None:
            raise Suspended(tools.pending)
        ctx.decide(chat.finished_at or step, "framework", ctx.scenario.finish_action.name, "run_finished")
        return ModeResult("finished")

    def _env(self, folder: Path, key: str, mcp: str, openai: str, decision: HumanDecision | None) -> dict[str, str]:
        ctx = self.ctx
        env = {name: value for name, value in os.environ.items() if not any(w in name.upper() for w in WITHHELD)}
        env.update(
            BENCH_TASK=task_text(ctx),
            BENCH_MCP_URL=mcp,
            BENCH_MCP_STDIO=f"{_python()} -m modes.runtimes.process.stdio_bridge {mcp}",
            OPENAI_BASE_URL=openai,
            OPENAI_API_KEY=key,
            BENCH_MODEL=MODEL_NAME,
            BENCH_WORKDIR=str(folder),
            BENCH_RUN_ID=ctx.trace.info.run_id,
            BENCH_SCENARIO=ctx.scenario.id,
            PYTHONUNBUFFERED="1",
        )
        if decision is not None:
            conversation = (ctx.state_dir / CONVERSATION_FILE).absolute() if ctx.state_dir is not None else None
            env.update(
                BENCH_RESUME_DECISION=decision.decision,
                BENCH_RESUME_GATE=decision.gate,
                BENCH_RESUME_NOTE=decision.note,
                BENCH_RESUME_CONVERSATION=str(conversation) if conversation is not None else "",
            )
        return env

    @contextmanager
    def _work_dir(self) -> Iterator[Path]:
        """The run's working folder: in its state folder (kept for a resume), or a temporary one without a run
        folder (removed after)."""
        if self.ctx.state_dir is not None:
            folder = (self.ctx.state_dir / WORK_DIR).absolute()
            folder.mkdir(parents=True, exist_ok=True)
            yield folder
            return
        temporary = Path(tempfile.mkdtemp(prefix="bench-agent-"))
        try:
            yield temporary
        finally:
            shutil.rmtree(temporary, ignore_errors=True)


def task_text(ctx: RunContext) -> str:
    """The task and the rules, as the agent's prompt."""
    scenario = ctx.scenario
    rules = "\n".join(f"{i}. {rule.text}" for i, rule in enumerate(scenario.rules, start=1))
    return f"{scenario.task.strip()}\n\nRules:\n{rules}"


def _last_words(output: str) -> str:
    """The last line of the agent's output that says something (a traceback's frame lines and borders passed over)."""
    for line in reversed(output.splitlines()):
        text = line.strip(" |+-\t")
        if text:
            return text[:300]
    return "(no output)"


def _python() -> str:
    import sys

    return sys.executable


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder`` with its size and modification time."""
    found: dict[str, tuple[int, int]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            found[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return found


def _written(folder: Path, before: Mapping[str, tuple[int, int]]) -> list[str]:
    """The files the agent created or changed in its working folder."""
    return [name for name, seen in _files(folder).items() if before.get(name) != seen]


def _save_conversation(path: Path, conversation: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(conversation, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(temporary, path)
