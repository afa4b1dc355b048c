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

A framework is an optional extra (``bench[langgraph]``, ...). Its module is imported only inside ``drive``, so the
mode is always registered and, without its extra, refused in one line that names the extra.

The kit an adapter is built from (docs/extending.md#a-runtime-adapter), all here:

- ``RuntimeMode``: subclass it, register it with ``@mode("name")`` and set ``framework``, ``extra``,
  ``distributions``, ``telemetry_off`` (the environment switches that keep the framework's own telemetry off) and
  ``crash_sweep_modules`` (what a forked crash-sweep command imports ahead: the framework and the adapter's
  framework-bound module). Implement one method, ``drive(ctx, decision)``: the run from the start (``decision`` is
  None) or from the framework's saved state with the decision a resume brings. ``run`` and ``resume`` are the
  template around it: the install guard (``require``: one line naming the extra) and telemetry off, then ``drive``.
- ``StepLimitReached(step, proposed)``: what the adapter's model raises when the model proposes an action after the
  run's last step; ``end(ctx)`` records the framework's stop and gives ``ModeResult("step_limit")``.
- ``stop_for_approval(ctx, gate, step=..., ...)``: the approval stop every adapter makes when its framework pauses
  at a gate: the wait recorded through the gateway, the framework's state saved, the run suspended. It returns the
  decision (approve, or revise with a note) when the run may go on, or the gateway's record when nobody can be asked
  (the framework's paused call is then refused with that record's observation).
- ``telemetry_off()`` and ``quiet_frameworks()``: every registered adapter's switches, merged, and set in this
  process (the runner calls it before a matrix; a user's own agent file may import its framework at once).
"""

from __future__ import annotations

import importlib.util
import os
from abc import abstractmethod
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from harness.core import ActionRecord, HumanDecision, ModeResult, RunContext, UserInputError
from modes.base import MODES, Mode
from modes.runtimes.own_code import agent_errors


class RuntimeMode(Mode):
    """A mode run by a real agent framework (see the module docstring)."""

    framework: ClassVar[str] = ""  # the import name that must be there, e.g. "langgraph"
    extra: ClassVar[str] = ""  # the optional extra that installs it: pip install 'bench[EXTRA]'
    distributions: ClassVar[tuple[str, ...]] = ()  # the distributions whose versions the manifest records
    # Bring your own agent (``--mode FILE.py:FACTORY``, docs/runtimes.md). ``own_agent``: what a user's factory is
    # given and returns, for an adapter that can run one ("" for one that cannot), e.g. "build(tools, model) -> a
    # StateGraph"; the loader (modes/runtimes/own_agent.py) picks the adapter of the factory's framework and
    # registers a subclass with ``agent_factory`` set, which the adapter then calls with its tools and model
    # instead of building its own agent.
    own_agent: ClassVar[str] = ""
    agent_factory: ClassVar[Callable[[Any, Any], Any] | None] = None
    # Environment switches (name, value) that keep the framework's own telemetry off, set before it is imported
    # (bench runs offline; its traces are the only record of a run).
    telemetry_off: ClassVar[tuple[tuple[str, str], ...]] = ()
    # What a forked crash-sweep command would otherwise import itself (tests/helpers/runtime_crash_sweep.py): the
    # framework's heavy modules and the adapter's framework-bound one.
    crash_sweep_modules: ClassVar[tuple[str, ...]] = ()

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

    def require(self) -> None:
        """The install guard: without the framework, one line naming the extra; with it, its telemetry off before
        the framework-bound code is imported."""
        problem = self.missing()
        if problem is not None:
            raise UserInputError(problem)
        os.environ.update(dict(self.telemetry_off))

    async def run(self, ctx: RunContext) -> ModeResult:
        self.require()
        with agent_errors(type(self).agent_factory):  # a user's own agent that raises: agent_error
            return await self.drive(ctx, None)

    async def resume(self, ctx: RunContext, decision: HumanDecision) -> ModeResult:
        """Continues a run that suspended at a framework approval, from the framework's state in ``ctx.state_dir``.

        The plumbing has already traced the decision, applied it to the gateway (an approval opened the gate) and
        rebuilt the gateway's records and the store as they stood at the stop. ``decision`` is an approval or a
        request for a revision (the framework is told its gated tool was sent back, with the note, and the gate stays
        closed); a rejection never gets here, it ends the run as for every mode.
        """
        self.require()
        with agent_errors(type(self).agent_factory):
            return await self.drive(ctx, decision)

    @abstractmethod
    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        """The framework's agent on bench's ports: from the start (``decision`` None) or, with the decision a resume
        brings, from the framework's state saved at the stop. Import the framework here, never at module level."""


class StepLimitReached(Exception):
    """The model proposed an action after the run's ``max_steps`` were spent: nothing is called, the run ends at its
    step limit. Raised by the adapter's model, so the budget holds in any agent built around it (a user's own too);
    a finish is control, not a step, and is taken even then."""

    def __init__(self, step: int, proposed: str):
        super().__init__(f"step {step}: '{proposed}' proposed after the last step")
        self.step, self.proposed = step, proposed

    def end(self, ctx: RunContext) -> ModeResult:
        """The framework's stop at the step limit, recorded; the run's result."""
        ctx.decide(self.step, "framework", self.proposed, "step_limit", {"max_steps": ctx.limits.max_steps})
        return ModeResult("step_limit")


def stop_for_approval(
    ctx: RunContext,
    gate: str,
    *,
    step: int,
    detail: dict[str, Any],
    action: str | None = None,
    wait: ActionRecord | None = None,
    save: Callable[[], None] | None = None,
) -> HumanDecision | ActionRecord:
    """The run stops at ``gate`` where the framework paused for an approval.

    The gate's approval is asked through the gateway for ``action`` (a wait tool that recorded its own wait passes
    it as ``wait`` instead). When the gateway records the wait, ``save`` writes the framework's state (a framework
    that checkpoints by itself passes none) and the run suspends with ``detail`` (what the framework paused on): it
    ends here when nobody can decide now (``Suspended``; ``bench resume`` goes on through ``drive``), else the
    decision comes back (approve, or revise with a note). When the gateway blocks the request, its record comes
    back and nothing is saved: the adapter refuses the paused call with that record's observation.
    """
    record = wait if wait is not None else ctx.request_approval(gate, step=step, for_action=action)
    if record.status != "wait_recorded":
        return record
    if save is not None:
        save()
    return ctx.suspend(step, "framework", gate, detail)


def telemetry_off() -> dict[str, str]:
    """Every registered adapter's telemetry switches, merged."""
    found: dict[str, str] = {}
    for cls in MODES.values():
        if issubclass(cls, RuntimeMode):
            found.update(cls.telemetry_off)
    return found


def quiet_frameworks() -> None:
    """Turns every registered framework's own telemetry off in this process, before any of them is imported."""
    os.environ.update(telemetry_off())
