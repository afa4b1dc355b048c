"""What bench does around the modes a real agent framework runs (runtime adapters, docs/runtimes.md): a user's own
agent loaded (modes/runtimes/own_agent.py), a framework that is not installed refused before anything runs, the
frameworks' telemetry off (each adapter's own switches, modes/runtimes/base.py), and their versions for the
manifest."""

from __future__ import annotations

from collections.abc import Iterable

from harness.errors import UserInputError
from harness.matrix.cell.named_agents import load_process_agent
from modes import MODES, select_modes
from modes.runtimes.base import RuntimeMode, quiet_frameworks
from modes.runtimes.own_agent import is_agent_spec, load_agent
from modes.runtimes.process import is_process_agent


def ready_modes(names: Iterable[str]) -> list[str]:
    """``select_modes`` for a run: a user's agent (``FILE.py:FACTORY``, ``MODULE:FACTORY``, an agent process
    ``agent:CMD``) loaded and registered first; any selected mode whose framework is not installed refused, in one
    line naming its extra."""
    names = list(names)
    for name in names:
        if name in MODES:
            continue
        if is_process_agent(name):  # agent:CMD, or agent:NAME from bench.toml (docs/agents.md)
            load_process_agent(name)
        elif is_agent_spec(name):
            load_agent(name)
    selected = select_modes(names)
    refuse_missing(selected)
    return selected


def refuse_missing(names: Iterable[str]) -> None:
    """One line naming the extra of the first mode whose framework is not installed; quiet frameworks otherwise."""
    runtimes = [MODES[name] for name in names if issubclass(MODES[name], RuntimeMode)]
    for cls in runtimes:
        assert issubclass(cls, RuntimeMode)
        why = cls.missing()
        if why is not None:
            raise UserInputError(why)
    if runtimes:
        quiet_frameworks()


def framework_versions(names: Iterable[str]) -> dict[str, str]:
    """The installed versions of the frameworks the named modes run on (the manifest's ``versions``)."""
    found: dict[str, str] = {}
    for name in names:
        cls = MODES.get(name)
        if cls is not None and issubclass(cls, RuntimeMode):
            found.update(cls.versions())
    return dict(sorted(found.items()))
