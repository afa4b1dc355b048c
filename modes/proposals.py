"""Response schemas the modes ask for, and the strict reading of what comes back.

Every schema has an object at its root, as OpenAI's Structured Outputs require ("root objects must
not be anyOf and must be an object"), so the same request is valid for OpenAI (strict or not),
vLLM's and llama.cpp's grammars, Ollama's ``format`` and Gemini. The union of offered actions sits
under one property, ``step``; ``read_step`` unwraps it, so modes see the same Steps as ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core import ActionSpec, ModelError


@dataclass(frozen=True)
class Step:
    """One proposed action with its arguments."""

    action: str
    args: Any


STEP_KEY = "step"  # the property of a next-action answer that holds the chosen action


def action_choice(offered: Sequence[ActionSpec]) -> dict[str, Any]:
    """One offered action with arguments that fit that action's own schema (a union, never a root).

    Each branch binds the action's name (an enum of one) to that action's argument schema, so
    endpoints that constrain decoding to the schema (llama.cpp's grammar) cannot produce an unknown
    action or free-form arguments; other endpoints get the same schema as instructions.
    """
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"action": {"type": "string", "enum": [spec.name]}, "args": spec.args},
                "required": ["action", "args"],
                "additionalProperties": False,
            }
            for spec in offered
        ]
    }


def next_action_schema(offered: Sequence[ActionSpec]) -> dict[str, Any]:
    """The next action: an object whose one property, ``step``, is one offered action with fitting arguments."""
    return {
        "type": "object",
        "properties": {STEP_KEY: action_choice(offered)},
        "required": [STEP_KEY],
        "additionalProperties": False,
    }


def plan_schema(offered: Sequence[ActionSpec], max_steps: int) -> dict[str, Any]:
    """An ordered list of 1..max_steps offered actions, each with fitting arguments."""
    return {
        "type": "object",
        "properties": {
            "plan": {"type": "array", "minItems": 1, "maxItems": max_steps, "items": action_choice(offered)}
        },
        "required": ["plan"],
        "additionalProperties": False,
    }


def route_schema(targets: Sequence[str]) -> dict[str, Any]:
    """A route choice: an object whose one property, ``route``, names one of the offered branches."""
    return {
        "type": "object",
        "properties": {"route": {"type": "string", "enum": list(targets)}},
        "required": ["route"],
        "additionalProperties": False,
    }


def read_route(proposal: Any) -> str:
    """A route proposal's chosen branch; anything but ``{"route": str}`` is a schema error (whether the branch is
    allowed is code's decision, not the reader's)."""
    route = proposal.get("route") if isinstance(proposal, dict) else None
    if not isinstance(route, str):
        raise ModelError("schema", f"expected {{'route': str}}, got {_short(proposal)}")
    return route


def read_step(proposal: Any) -> Step:
    """A next-action proposal (``{"step": {...}}``, or the bare step a plan holds) as a Step.

    Anything else is a schema error.
    """
    if isinstance(proposal, dict) and set(proposal) == {STEP_KEY}:
        proposal = proposal[STEP_KEY]
    if not isinstance(proposal, dict) or not isinstance(proposal.get("action"), str):
        raise ModelError("schema", f"expected {{'action': str, 'args': object}}, got {_short(proposal)}")
    args = proposal.get("args", {})
    return Step(proposal["action"], args if args is not None else {})


def read_plan(proposal: Any) -> list[Step]:
    """A plan proposal as Steps; anything else is a schema error."""
    plan = proposal.get("plan") if isinstance(proposal, dict) else None
    if not isinstance(plan, list) or not plan:
        raise ModelError("schema", f"expected {{'plan': [steps]}}, got {_short(proposal)}")
    return [read_step(item) for item in plan]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
