"""What the LangGraph adapters share before LangGraph is imported: the extra, the versions, telemetry off, and what an
approval ``interrupt()`` asks and is answered.

This module imports no framework code, so both modes register without the extra; ``RuntimeMode.run`` and ``resume``
check the extra and turn telemetry off before their LangGraph-bound code is imported (in ``drive``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar, Literal, NotRequired, TypedDict

from harness.core import HumanDecision, RunContext
from modes.runtimes.base import RuntimeMode

# When LangGraph writes a checkpoint: "async" (its default: while the next step runs), "sync" (before the next step
# starts) or "exit" (only when the graph stops).
Durability = Literal["sync", "async", "exit"]


class LangGraphMode(RuntimeMode):
    """A mode whose agent is a LangGraph graph, checkpointed in the run folder (``langgraph.sqlite``)."""

    framework = "langgraph"
    extra = "langgraph"
    distributions = ("langgraph", "langgraph-checkpoint-sqlite", "langchain-core")
    # LangChain sends traces to LangSmith when these say so; bench's runs never leave the machine.
    telemetry_off = (
        ("LANGCHAIN_TRACING_V2", "false"),
        ("LANGSMITH_TRACING", "false"),
        ("LANGSMITH_TRACING_V2", "false"),
    )
    # When LangGraph writes its checkpoints (``Durability``; LangGraph's default). What a crash between a tool's
    # commit and the next checkpoint repeats depends on it.
    durability: ClassVar[Durability] = "async"
    PARAMETERS = ("durability",)


class GateRequest(TypedDict):
    """What an interrupt asks: approval of ``gate``, at ``step``, for a gated tool's ``action`` or a ``node``."""

    gate: str
    step: int
    action: str | None
    node: str | None
    call: NotRequired[str]  # a tool's request: its call's id and its arguments' digest, which the answer must name
    digest: NotRequired[str]


class GateAnswer(TypedDict, total=False):
    """The resume value: the decision (approve or revise, with its note), or why nobody could be asked; and the
    request it answers (``gate``, ``call``, ``digest``), so it reaches no other call."""

    decision: Literal["approve", "revise", "reject"]
    note: str
    who: str
    blocked: str  # the blocked request's observation line
    reason: str  # the blocked request's reason, as a node's failure
    gate: str
    call: str | None
    digest: str | None


def decision_of(gate: str, answer: GateAnswer) -> HumanDecision:
    """The decision an answer carries, for the lines the agent is told."""
    return HumanDecision(
        gate=gate, decision=answer.get("decision", "approve"), who=answer.get("who", ""), note=answer.get("note", "")
    )


def open_gates(ctx: RunContext) -> list[str]:
    """The gates open now, as a node saves them in the graph's state: a node LangGraph runs again after a resume
    decides from what was saved, so it reaches the same ``interrupt()`` and gets its answer."""
    return sorted(ctx.open_gates())


def gate_closed(ctx: RunContext, saved_open: Collection[str] | None, gate: str) -> bool:
    """Whether a gate stops a node: closed in the graph's saved state (``open_gates``; None: nothing saved), or
    closed now."""
    return (saved_open is not None and gate not in saved_open) or not ctx.approved(gate)
