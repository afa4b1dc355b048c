"""The contract of a runtime adapter: a mode whose agent is built with a real agent framework.

The framework's own code decides the next step (a LangGraph graph, an OpenAI Agents SDK ``Runner``, a PydanticAI
``Agent``). bench puts its two ports under it: every tool the agent can call is a scenario action whose body runs
through the mode's context (``ctx.act``, so the gateway decides and records it; a blocked action comes back as the
tool's error), and the model the framework talks to is bench's model source (scripted, replay, live, local) behind
the framework's own model interface (``ctx.propose``). A side effect done in the framework's own code and not
through a tool is invisible to the gateway (docs/runtimes.md).

Approval goes through the framework's own mechanism (an ``interrupt()``, a ``needs_approval`` tool, a deferred tool):
when the framework pauses for it, the adapter saves the framework's state (the framework's own checkpointer or
serialised run state, in ``ctx.state_dir``), records the wait (``ctx.request_approval``) and stops with
``ctx.suspend(step, "framework", gate)``. ``bench resume`` then continues the run in a new process through
``resume`` from the framework's saved state, not by replaying the mode's code as for the built-in modes: what the
framework repeats on resume reaches the gateway again and is counted, which is the measurement.

A framework is an optional extra (``bench[langgraph]``, ...). Its module is imported only inside ``run`` and
``resume``, so the mode is always registered and, without its extra, refused in one line that names the extra.
"""

from __future__ import annotations

import importlib.util
from abc import abstractmethod
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from harness.core import HumanDecision, ModeResult, RunContext
from modes.base import Mode


class RuntimeMode(Mode):
    """A mode run by a real agent framework (see the module docstring)."""

    framework: ClassVar[str] = ""  # the import name that must be there, e.g. "langgraph"
    extra: ClassVar[str] = ""  # the optional extra that installs it: pip install 'bench[EXTRA]'
    distributions: ClassVar[tuple[str, ...]] = ()  # the distributions whose versions the manifest records
    # Bring your own agent (``--mode FILE.py:FACTORY``, docs/runtimes.md). ``own_agent``: what a user's factory is
    # given and returns, for an adapter that can run one ("" for one that cannot), e.g. "build(tools, model) -> a
    # StateGraph"; the loader (harness/matrix/cell/custom_mode.py) picks the adapter of the factory's framework and
    # registers a subclass with ``agent_factory`` set, which the adapter then calls with its tools and model
    # instead of building its own agent.
    own_agent: ClassVar[str] = ""
    agent_factory: ClassVar[Callable[[Any, Any], Any] | None] = None

    @classmethod
    def missing(cls) -> str | None:
        """None when the framework can be imported; otherwise the one-line reason, naming the extra."""
        if importlib.util.find_spec(cls.framework) is not None:
            return None
        return (
            f"mode '{cls.name}' runs on {cls.framework}, which is not installed: "
            f"pip install -e '.[{cls.extra}]' (./install installs every extra)"
        )

    @classmethod
    def versions(cls) -> dict[str, str]:
        """The installed version of each of the mode's distributions (what the manifest records)."""
        found: dict[str, str] = {}
        for name in cls.distributions:
            try:
                found[name] = version(name)
            except PackageNotFoundError:
                found[name] = "not installed"
        return found

    @abstractmethod
    async def resume(self, ctx: RunContext, decision: HumanDecision) -> ModeResult:
        """Continues a run that suspended at a framework approval, from the framework's state in ``ctx.state_dir``.

        The plumbing has already traced the decision, applied it to the gateway (an approval opened the gate) and
        rebuilt the gateway's records and the store as they stood at the stop. ``decision`` is an approval or a
        request for a revision (the framework is told its gated tool was sent back, with the note, and the gate stays
        closed); a rejection never gets here, it ends the run as for every mode.
        """
