"""The tool calls of a LangGraph run, as bench's tools need them in any graph: each call's step, and the approval
bound to it.

bench's tools learn their call's id and the conversation from LangGraph's ``ToolRuntime`` when ``ToolNode`` runs
them; a graph of the user's own may call a tool directly (``tool.ainvoke(call["args"])``), without either. The book
knows every call the model made (noted from the conversation each turn, and from the saved state on resume), so
such a call is found by its action and arguments. An approval is bound to the call it was given for (its id and
its arguments' digest): the same call run later with other arguments is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core import audit_hash


def tool_calls_of(message: Any) -> list[Mapping[str, Any]]:
    """The tool calls of a model turn (a LangChain ``AIMessage``; anything else has none)."""
    calls = getattr(message, "tool_calls", None)
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def unanswered_calls(messages: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The tool calls of the conversation's last model turn that no tool message answers yet."""
    answered = {getattr(m, "tool_call_id", None) for m in messages}
    for message in reversed(messages):
        calls = tool_calls_of(message)
        if calls or getattr(message, "type", "") == "ai":
            return [c for c in calls if c.get("id") not in answered]
    return []


class CallBook:
    """Every tool call of the run (id -> step, action, arguments' digest) and the approvals bound to calls."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[int, str, str]] = {}
        self.ran: set[str] = set()
        self.approvals: dict[str, str] = {}  # call id -> the digest of the arguments it was approved with

    def note(self, messages: Sequence[Any]) -> None:
        """Adds the conversation's tool calls not seen yet, in order: a call's step is its ordinal (from 1)."""
        for message in messages:
            for call in tool_calls_of(message):
                ident = str(call.get("id") or "")
                if ident and ident not in self.calls:
                    self.calls[ident] = (len(self.calls) + 1, str(call.get("name")), audit_hash(call.get("args")))

    def find(self, action: str, args: Any) -> str | None:
        """The id of the latest call of ``action`` with these arguments, one not run yet first; None: no such call."""
        digest = audit_hash(args)
        matching = [ident for ident, (_, name, made) in self.calls.items() if name == action and made == digest]
        fresh = [ident for ident in matching if ident not in self.ran]
        found = fresh or matching
        return found[-1] if found else None

    def step_of(self, call: str | None, action: str | None, args: Any) -> int:
        """A call's step: its ordinal when known (by id, else by action and arguments); else the next one."""
        ident = call if call in self.calls else (self.find(action, args) if action is not None else None)
        return self.calls[ident][0] if ident is not None else len(self.calls) + 1

    def approve(self, call: str, digest: str) -> None:
        self.approvals[call] = digest

    def changed_since_approval(self, call: str, args: Any) -> bool:
        """Whether ``call`` was approved with other arguments than it runs with now."""
        return call in self.approvals and self.approvals[call] != audit_hash(args)
