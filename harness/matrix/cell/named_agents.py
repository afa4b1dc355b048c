"""``bench.toml`` in the working folder: an agent process named on the command line (``--mode agent:NAME``).

    [agents.NAME]
    command = "node agent.js"   # required: the agent's command line (a relative path is read from this folder)
    resume = true               # it reads BENCH_RESUME_* and can go on after a decision (default false)
    time_limit_s = 120          # the run's time limit in seconds (default 300)

``--mode agent:CMD`` with no such table runs CMD itself, without resume (docs/agents.md).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from harness.errors import UserInputError
from harness.files import Unreadable, read_text
from modes.runtimes.process import PREFIX, register_process_agent
from modes.runtimes.process.mode import TIME_LIMIT_S

SETTINGS_FILE = "bench.toml"
MAX_SETTINGS_BYTES = 1024 * 1024
_KEYS = ("command", "resume", "time_limit_s")


def load_process_agent(spec: str, folder: Path | None = None) -> str:
    """Registers ``agent:NAME`` as bench.toml names it, else ``agent:CMD`` as the command itself; one line for
    anything wrong."""
    folder = folder or Path.cwd()
    value = spec.removeprefix(PREFIX).strip()
    table = _agent_tables(folder / SETTINGS_FILE).get(value)
    if table is None:
        return register_process_agent(spec, value, base=folder)
    where = f"{folder / SETTINGS_FILE}: agents.{value}"
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: must be a table ({', '.join(_KEYS)})")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise UserInputError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(_KEYS)}")
    command, resume, limit = table.get("command"), table.get("resume", False), table.get("time_limit_s", TIME_LIMIT_S)
    if not isinstance(command, str) or not command.strip():
        raise UserInputError(f"{where}: command: must be a non-empty string (the agent's command line)")
    if not isinstance(resume, bool):
        raise UserInputError(f"{where}: resume: must be true or false")
    if isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0:
        raise UserInputError(f"{where}: time_limit_s: must be a positive number of seconds")
    return register_process_agent(spec, command, resumable=resume, time_limit_s=float(limit), base=folder)


def _agent_tables(path: Path) -> dict[str, object]:
    if not path.exists():
        return {}
    try:
        settings = tomllib.loads(read_text(path, MAX_SETTINGS_BYTES))
    except (Unreadable, tomllib.TOMLDecodeError) as exc:
        raise UserInputError(f"{path}: {exc}") from None
    agents = settings.get("agents", {})
    if not isinstance(agents, dict):
        raise UserInputError(f"{path}: agents: must be a table of [agents.NAME] tables")
    return agents
