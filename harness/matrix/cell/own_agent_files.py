"""The files of a matrix's own agents (``--mode FILE.py:FACTORY``): recorded in the manifest with their hashes, so a
replay or a resume loads each from where it was, and a resume refuses one changed since the run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.errors import UserInputError
from harness.matrix.cell.named_agents import load_process_agent
from harness.records.manifest import OwnAgentFile
from modes import MODES
from modes.runtimes.own_agent import is_agent_spec, load_agent
from modes.runtimes.own_code import agent_file
from modes.runtimes.process import is_process_agent


def agent_files(names: Iterable[str]) -> dict[str, OwnAgentFile]:
    """Each loaded own agent of ``names``: its factory's file (absolute) and the sha256 of its bytes."""
    found = {}
    for name in names:
        factory = getattr(MODES.get(name), "agent_factory", None) if is_agent_spec(name) else None
        file = agent_file(factory) if factory is not None else None
        if file is not None and file.is_file():
            found[name] = OwnAgentFile(path=str(file), sha256=hashlib.sha256(file.read_bytes()).hexdigest())
    return found


def load_recorded(names: Iterable[str], recorded: Mapping[str, OwnAgentFile]) -> list[str]:
    """The recorded modes a replay or a resume can run: bench's own as registered, each own agent loaded from its
    recorded file; a recorded agent whose file is gone is one line naming it."""
    ready = []
    for name in names:
        where = recorded.get(name) if is_agent_spec(name) else None
        if where is not None and not Path(where.path).is_file():
            raise UserInputError(f"recorded agent '{name}': {where.path}: no such file; its runs cannot be run again")
        if name not in MODES and is_process_agent(name):  # an agent process: its command again (docs/agents.md)
            load_process_agent(name)
        elif name not in MODES and is_agent_spec(name):
            load_agent(name, Path(where.path) if where is not None else None)
        if name in MODES:
            ready.append(name)
    return ready


def changed_agent(name: str, recorded: Mapping[str, OwnAgentFile]) -> str | None:
    """One line when the agent ``name`` loaded now is not the file the run was made with; None when it is (or the
    manifest, written before agents were hashed, does not say)."""
    then = recorded.get(name)
    now = agent_files([name]).get(name)
    if then is None or now is None or now.sha256 == then.sha256:
        return None
    return (
        f"agent '{name}': {now.path} changed since the run was made (sha256 {then.sha256[:12]} then, "
        f"{now.sha256[:12]} now); restore that file to go on with this run"
    )
