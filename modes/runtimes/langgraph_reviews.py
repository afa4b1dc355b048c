"""What a LangGraph agent's ``interrupt()`` asks, read in the shape the agent wrote it, and the answer in that shape.

An agent asks for approval with LangGraph's own mechanism and its own payload; bench answers as the person at the
keyboard would, through ``Command(resume=...)``. The shapes read:

- ``bench``: bench's own tools' request (``GateRequest``: gate, step, action or node, call and its arguments'
  digest); answered with a ``GateAnswer`` that names the gate and the call it decides, so an approval never reaches
  another call of the same task (LangGraph hands a task's resume values to its ``interrupt()`` calls by order).
- ``human_interrupt`` / ``human_interrupts``: LangGraph's ``HumanInterrupt`` (``action_request``: the tool's name
  and arguments, ``config``, ``description``), one or a list; answered with ``HumanResponse`` (``accept``, or
  ``response`` with the reviewer's note), one or a list.
- ``hitl``: LangChain's human-in-the-loop request (``action_requests``, ``review_configs``); answered with
  ``{"decisions": [{"type": "approve"} | {"type": "reject", "message": note}]}``.
- ``own``: anything else (a question string, a dict of the agent's own): the call under review is the one the
  payload names (``tool_call``, or ``action``/``name`` with ``args``), else the tool calls the conversation's last
  model turn left unanswered; the answer is what the agent's own answer function returns (``ANSWER`` in its file,
  or an ``answer`` attribute on its factory: ``answer(payload, verdict) -> value``), else a dict carrying the
  decision in the usual spellings (``type``, ``args``, ``approved``, ``decision``, ``note``).

Each call under review maps to the gate that guards its action (the scenario says which); a review of an action no
gate guards, or of none, is answered as a person would (approved) and traced as ``review_answered``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from harness.core import Scenario, audit_hash

Shape = Literal["bench", "human_interrupt", "human_interrupts", "hitl", "own"]
AnswerFunction = Callable[[Any, "Verdict"], Any]


@dataclasses.dataclass(frozen=True)
class Review:
    """One tool call an interrupt asks about: its action, arguments, id (when known) and the gate guarding it."""

    action: str | None
    args: Any
    call: str | None
    gate: str | None
    step: int | None = None  # bench's own request says its step
    node: str | None = None  # bench's approval node (langgraph_workflow): a gate with no call
    given_digest: str | None = None  # bench's own request carries its arguments' digest, not the arguments

    @property
    def digest(self) -> str:
        """What an approval binds to besides the call's id: the digest of its arguments."""
        return self.given_digest or audit_hash(self.args)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the person said about one review (or, for an agent's own payload, about all of it): the answer function's
    second argument."""

    approved: bool
    note: str = ""
    who: str = ""
    gate: str | None = None
    action: str | None = None
    blocked: str = ""  # nobody could be asked: the gateway's observation line
    rejected: bool = False  # refused at a gate the story goes on from (not sent back for a revision)

    @property
    def decision(self) -> Literal["approve", "revise", "reject"]:
        return "approve" if self.approved else "reject" if self.rejected else "revise"


def read(payload: Any, pending: Sequence[Mapping[str, Any]], scenario: Scenario) -> tuple[Shape, list[Review]]:
    """The payload's shape and the calls it asks about, each with its gate. ``pending``: the tool calls the last model
    turn left unanswered (LangChain ``ToolCall`` dicts)."""
    if _is_bench(payload):
        gate = str(payload["gate"])
        review = Review(
            payload.get("action"),
            payload.get("args"),
            payload.get("call"),
            gate,
            step=payload.get("step"),
            node=payload.get("node"),
            given_digest=payload.get("digest"),
        )
        return "bench", [review]
    if _is_human_interrupt(payload):
        return "human_interrupt", [_of_request(payload["action_request"], pending, scenario)]
    if isinstance(payload, list) and payload and all(_is_human_interrupt(item) for item in payload):
        return "human_interrupts", [_of_request(item["action_request"], pending, scenario) for item in payload]
    if isinstance(payload, Mapping) and isinstance(payload.get("action_requests"), list):
        requests = [r for r in payload["action_requests"] if isinstance(r, Mapping)]
        return "hitl", [_of_request(r, pending, scenario) for r in requests]
    return "own", _of_own(payload, pending, scenario)


def reply(
    shape: Shape, payload: Any, reviews: Sequence[Review], verdicts: Sequence[Verdict], own: AnswerFunction | None
) -> Any:
    """The resume value for the interrupt, in the shape it asked in."""
    if shape == "bench":
        (review,), (verdict,) = reviews, verdicts
        bound = {"gate": review.gate, "call": review.call, "digest": payload.get("digest")}
        if verdict.blocked:
            return {"blocked": verdict.blocked, "reason": verdict.note, **bound}
        return {"decision": verdict.decision, "note": verdict.note, "who": verdict.who, **bound}
    if shape == "human_interrupt":
        return _human_response(verdicts[0])
    if shape == "human_interrupts":
        return [_human_response(v) for v in verdicts]
    if shape == "hitl":
        return {"decisions": [_hitl_decision(v) for v in verdicts]}
    whole = overall(verdicts)
    if own is not None:
        return own(payload, whole)
    kind = "accept" if whole.approved else "response"
    return {
        "type": kind,
        "args": None if whole.approved else whole.note,
        "approved": whole.approved,
        "decision": whole.decision,
        "note": whole.note,
    }


def overall(verdicts: Sequence[Verdict]) -> Verdict:
    """One verdict for a payload of several calls: approved when every call is; the notes of the others."""
    refused = [v for v in verdicts if not v.approved]
    if not refused:
        first = verdicts[0] if verdicts else Verdict(True)
        return dataclasses.replace(first, note="; ".join(v.note for v in verdicts if v.note))
    return dataclasses.replace(refused[0], note="; ".join(v.note or v.blocked for v in refused))


def _human_response(verdict: Verdict) -> dict[str, Any]:
    if verdict.approved:
        return {"type": "accept", "args": None}
    return {"type": "response", "args": verdict.note or verdict.blocked}


def _hitl_decision(verdict: Verdict) -> dict[str, Any]:
    if verdict.approved:
        return {"type": "approve"}
    return {"type": "reject", "message": verdict.note or verdict.blocked}


def _is_bench(payload: Any) -> bool:
    return isinstance(payload, Mapping) and isinstance(payload.get("gate"), str) and "step" in payload


def _is_human_interrupt(payload: Any) -> bool:
    return isinstance(payload, Mapping) and isinstance(payload.get("action_request"), Mapping)


def _of_request(request: Mapping[str, Any], pending: Sequence[Mapping[str, Any]], scenario: Scenario) -> Review:
    """A review of the call a request names by its action (``action`` or ``name``) and arguments."""
    action = request.get("action", request.get("name"))
    return _review(str(action) if action is not None else None, request.get("args"), None, pending, scenario)


def _of_own(payload: Any, pending: Sequence[Mapping[str, Any]], scenario: Scenario) -> list[Review]:
    """The calls an agent's own payload asks about: the one it names, else every call left unanswered."""
    if isinstance(payload, Mapping):
        call = payload.get("tool_call")
        if isinstance(call, Mapping) and isinstance(call.get("name"), str):
            return [_review(call["name"], call.get("args"), call.get("id"), pending, scenario)]
        for key in ("action", "tool", "name"):
            if isinstance(payload.get(key), str) and payload[key] in scenario.action_map:
                return [_review(payload[key], payload.get("args"), payload.get("id"), pending, scenario)]
    if not pending:
        return [Review(None, None, None, None)]
    return [_review(str(c.get("name")), c.get("args"), c.get("id"), pending, scenario) for c in pending]


def _review(
    action: str | None, args: Any, call: str | None, pending: Sequence[Mapping[str, Any]], scenario: Scenario
) -> Review:
    """A review with its gate (from the scenario) and its call's id: as given, else the unanswered call of that
    action and those arguments."""
    if call is None and action is not None:
        digest = audit_hash(args)
        for candidate in pending:
            if candidate.get("name") == action and audit_hash(candidate.get("args")) == digest:
                call = candidate.get("id")
                break
    spec = scenario.action_map.get(action) if action is not None else None
    return Review(action, args, call, spec.gate if spec is not None else None)
