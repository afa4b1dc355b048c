"""Shared pieces of the prompts: how a task, its rules, its actions and the observations read as text.

Each mode writes its own instructions around these, so changing one mode's prompt changes only it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harness.core import ActionRecord, ActionSpec, HumanDecision, Scenario


def describe_action(spec: ActionSpec) -> str:
    props = spec.args.get("properties", {})
    args = ", ".join(f"{key}: {_type_name(sub)}" for key, sub in props.items()) or "none"
    return f"- {spec.name}: {spec.description} (args: {args})"


def _type_name(schema: Any) -> str:
    """A property's type as the prompt names it; a boolean sub-schema is ``true`` (any value) or ``false`` (none)."""
    if isinstance(schema, dict):
        return f"{schema.get('type', 'any')}"
    return "any" if schema is True else "not allowed"


def system_message(scenario: Scenario, instructions: str, actions: Iterable[ActionSpec], answer: str) -> dict[str, str]:
    rules = "\n".join(f"{i}. {rule.text}" for i, rule in enumerate(scenario.rules, start=1))
    catalog = "\n".join(describe_action(spec) for spec in actions)
    text = (
        f"{instructions}\n\nTask: {scenario.task.strip()}\n\nRules:\n{rules}\n\n"
        f"Actions:\n{catalog}\n\nAnswer with one JSON object only: {answer}"
    )
    return {"role": "system", "content": text}


def observation_line(record: ActionRecord) -> str:
    return f"step {record.step}: {record.action} -> {record.status}: {_compact(record.observation)}"


def decision_line(step: int, decision: HumanDecision) -> str:
    """What the agent is told of a decision at a gate: an approval, a revision request with its note, or a rejection
    (at a gate the story goes on from) with its note."""
    if decision.decision == "revise":
        return (
            f"step {step}: the reviewer did not approve '{decision.gate}' yet and asked for a revision: {decision.note}"
        )
    if decision.decision == "reject":
        why = f": {decision.note}" if decision.note else ""
        return f"step {step}: the reviewer rejected '{decision.gate}'{why}; what it guards is not carried out"
    return f"step {step}: '{decision.gate}' was approved"


def user_message(observations: list[str], question: str) -> dict[str, str]:
    seen = "\n".join(observations) if observations else "Nothing has been done yet."
    return {"role": "user", "content": f"Observations:\n{seen}\n\n{question}"}


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 300 else text[:297] + "..."
