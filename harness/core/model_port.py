"""The model interface: a request for a proposal, the reply, and the sources that hand models to runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from harness.core.gateway import ActionRecord
from harness.records.trace import Usage
from harness.scenario.model import ActionSpec, ReferenceStep

Purpose = Literal["next_action", "plan", "content", "route"]


@dataclass(frozen=True)
class PolicyView:
    """Structured facts a scripted policy decides from; an LLM sees the same facts as text in the messages."""

    catalog: tuple[ActionSpec, ...]  # every action of the scenario, in declared order
    history: tuple[ActionRecord, ...]  # what the gateway did with earlier proposals
    approvals: frozenset[str]
    agent_role: str
    max_plan_steps: int
    feedback: str | None = None  # a plan validator's REVISE reason
    # The oracle's correct steps, both halves of the story: only scripted:reference reads them (a perfect-model
    # stand-in, to tell a mode's limits from a model's); no other policy, and never an LLM, sees them.
    reference: tuple[ReferenceStep, ...] = ()
    routes: tuple[RouteChoice, ...] = ()  # a route request's choices, in declared order
    # A plan node's planning request: the steps it may hand to a ReAct sub-agent, each with that sub-agent's tools
    # (an LLM reads the same in the messages).
    delegates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    refused: frozenset[str] = frozenset()  # gates a person rejected in this run (the agent is told so too)
    # Gates whose work a person sent back for a revision since the gate's latest recorded wait: the wait was answered
    # (the agent is told so, with the note), so nothing is pending there until the revised work asks again.
    revising: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RouteChoice:
    """One way out of a workflow node the model may be asked to pick (an LLM reads the same in the messages)."""

    target: str  # the node the route goes to
    allowed: bool  # whether the workflow's rules allow it now (its condition holds)
    leads_to: tuple[tuple[str, Any], ...] = ()  # the first steps down that route: (action, fixed args or None)


@dataclass(frozen=True)
class RequestMeta:
    """Where a request comes from: names a replay miss and says which run a recorded answer belongs to."""

    scenario: str
    mode: str
    step: int
    trial: int = 1  # with scenario and mode, keys a recorded answer to the run it belongs to


@dataclass(frozen=True)
class ModelRequest:
    """A request for one proposal: the next action, a plan, or the content of the current step."""

    purpose: Purpose
    messages: tuple[dict[str, str], ...]
    response_schema: dict[str, Any]
    offered: tuple[str, ...]
    view: PolicyView
    meta: RequestMeta


@dataclass(frozen=True)
class Attempt:
    """One failed attempt of a model call, kept so the trace shows every retry."""

    kind: str
    message: str
    latency_ms: float
    wait_s: float  # back-off slept before the next attempt


@dataclass(frozen=True)
class ModelReply:
    """The parsed proposal with the facts of the call that produced it."""

    proposal: Any
    text: str
    usage: Usage
    latency_ms: float
    failed_attempts: tuple[Attempt, ...] = field(default=())


class Model(Protocol):
    """Anything that answers proposal requests: scripted policies, recorded replies, a live endpoint."""

    label: str

    async def complete(self, request: ModelRequest) -> ModelReply: ...


class ModelSource(Protocol):
    """Hands each run its model: a fresh seeded one (scripted) or a shared client (live)."""

    label: str

    def for_run(self, seed: int) -> Model: ...

    async def aclose(self) -> None: ...
