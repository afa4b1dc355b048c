"""What bench does around the modes a real agent framework runs (runtime adapters, docs/runtimes.md): a framework
that is not installed refused before anything runs, the frameworks' telemetry off, and their versions for the
manifest. A user's own agent is loaded by custom_mode.py, which builds on this module."""

from __future__ import annotations

import os
from collections.abc import Iterable

from harness.errors import UserInputError
from modes import MODES
from modes.runtimes.base import RuntimeMode

# Every framework's own telemetry, off: bench runs offline and its traces are the only record of a run. Set in the
# process's environment before a framework is imported (LangSmith and the Agents SDK read it once), whatever the
# user's shell says. PydanticAI sends nothing unless logfire is installed and configured (bench never does); its
# first-run banner on a terminal is turned off too.
TELEMETRY_OFF = {
    "LANGCHAIN_TRACING_V2": "false",  # LangChain / LangGraph: no LangSmith tracing
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the OpenAI Agents SDK: no traces exported to OpenAI
    "PYDANTIC_AI_NO_BANNER": "1",  # PydanticAI: no first-run banner on stderr
}


def quiet_frameworks() -> None:
    """Turns every framework's own telemetry off in this process (``TELEMETRY_OFF``)."""
    os.environ.update(TELEMETRY_OFF)


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
