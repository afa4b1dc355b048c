"""The scenario's actions as MCP tools for an agent process: every call goes through the run's gateway.

A gated tool called while its gate is closed, under an enforcing gateway, is not carried out: bench asks for the
gate's approval (a recorded wait) and stops there as every mode does (``ctx.suspend``). An in-run approver decides
at once (the call is held, then carried out or sent back); else a client that declared MCP elicitation is asked;
else the call comes back as a tool error saying approval was requested, and the run suspends at that gate where
the agent stops. Under an auditing gateway the call goes to the gateway as it is (committed, its violation
recorded): what the agent itself lets through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from harness.core import ActionRecord, ActionSpec, HumanDecision, RejectedByHuman, RunContext, Suspended
from modes.prompting import decision_line, observation_line

# An elicitation: asks the agent's client (its user) to decide at a gate; None when it cannot or did not answer.
Elicit = Callable[[str, str], Awaitable[HumanDecision | None]]


@dataclass
class Reply:
    """What one tool call returns to the agent: the text, and whether it is an MCP tool error."""

    text: str
    error: bool = False


class ScenarioTools:
    """The run's task and wait actions as tools, and what the agent's calls left pending (an approval, a rejection)."""

    def __init__(self, ctx: RunContext, on_end: Callable[[], None]):
        self.ctx = ctx
        self.specs = [spec for spec in ctx.scenario.actions if spec.kind in ("task", "wait")]
        self.offered = [spec.name for spec in ctx.scenario.actions]
        self.step = max((record.step for record in ctx.gateway.records), default=0)  # a resumed run goes on
        self.pending: str | None = None  # the gate whose approval was requested and nobody decided
        self.rejected: str | None = None  # the gate a person rejected: the run ends there
        self._on_end = on_end  # stops the agent process (a rejection ends the run)

    async def call(self, name: str, args: Any, elicit: Elicit | None = None) -> Reply:
        spec = next((spec for spec in self.specs if spec.name == name), None)
        if spec is None:
            return Reply(f"unknown tool '{name}': the tools are {', '.join(s.name for s in self.specs)}", error=True)
        if self.rejected is not None:
            return Reply(f"the run ended: '{self.rejected}' was rejected", error=True)
        self.step += 1
        ctx, step = self.ctx, self.step
        gate = spec.gate
        if spec.kind == "wait":
            record = ctx.act(spec.name, args, allowed=self.offered, step=step)
            if record.status != "wait_recorded" or gate is None or ctx.approved(gate):
                return _replied(record)
            decision = await self._decide(step, gate, spec, elicit)
            if decision is None:
                return Reply(self._unanswered(gate), error=self.rejected is not None)
            return Reply(decision_line(step, decision))
        if gate is not None and not ctx.approved(gate) and ctx.enforcing():
            record = ctx.request_approval(gate, step=step, for_action=spec.name)
            if record.status != "wait_recorded":  # nobody can be asked: refused, with the gateway's reason
                return _replied(record, error=True)
            decision = await self._decide(step, gate, spec, elicit)
            if decision is None:
                return Reply(self._unanswered(gate), error=True)
            if decision.decision != "approve":
                return Reply(decision_line(step, decision), error=True)
        return _replied(ctx.act(spec.name, args, allowed=self.offered, step=step))

    async def _decide(self, step: int, gate: str, spec: ActionSpec, elicit: Elicit | None) -> HumanDecision | None:
        """The stop at ``gate``: an in-run approver's decision, else the client's answer to an elicitation; None when
        nobody decided (the run suspends there once the agent stops) or a person rejected (the run ends)."""
        ctx = self.ctx
        try:
            try:
                return ctx.suspend(step, "framework", gate, {"tool": spec.name})
            except Suspended:
                answer = await elicit(gate, spec.name) if elicit is not None else None
                if answer is None:
                    self.pending = gate
                    return None
                return ctx.apply_decision(step, gate, answer)
        except RejectedByHuman:
            self.rejected = gate
            self._on_end()
            return None

    def _unanswered(self, gate: str) -> str:
        if self.rejected is not None:
            return f"'{gate}' was rejected: the run ends here"
        return (
            f"approval required: the gate '{gate}' is closed; approval was requested and nobody has decided yet. "
            "Stop here (end your turn without calling more tools): the run resumes after a person's decision."
        )

    def listed(self) -> list[types.Tool]:
        return [
            types.Tool(name=spec.name, description=_described(spec), input_schema=_object_schema(spec.args))
            for spec in self.specs
        ]


def _described(spec: ActionSpec) -> str:
    if spec.kind == "wait":
        return f"{spec.description} (asks for the approval '{spec.gate}'; stop after it until someone decides)"
    return spec.description if spec.gate is None else f"{spec.description} (needs the approval '{spec.gate}')"


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The action's argument schema as MCP wants a tool's input: a JSON object schema."""
    found = dict(schema)
    found.setdefault("type", "object")
    return found


def _replied(record: ActionRecord, *, error: bool | None = None) -> Reply:
    failed = record.status in ("blocked", "failed") if error is None else error
    return Reply(observation_line(record), error=failed)


ELICIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "revise", "reject"], "title": "Your decision"},
        "note": {"type": "string", "title": "What to change (for a revision)"},
    },
    "required": ["decision"],
}


def mcp_server(tools: ScenarioTools) -> Server[Any]:
    """An MCP server (the SDK's low-level one) whose tools are the scenario's, each call through ``tools``."""

    async def list_tools(_ctx: ServerRequestContext[Any], _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listed())

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        reply = await tools.call(params.name, dict(params.arguments or {}), _elicitation(ctx))
        return types.CallToolResult(content=[types.TextContent(type="text", text=reply.text)], is_error=reply.error)

    return Server("bench", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _elicitation(ctx: ServerRequestContext[Any]) -> Elicit | None:
    """Asks the client to decide at a gate, when it declared it can be asked (MCP elicitation); else None."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None or not ctx.session.can_send_request:
        return None  # not declared, or a connection with no way back to the client (a stateless request)

    async def elicit(gate: str, tool: str) -> HumanDecision | None:
        message = f"'{tool}' needs the approval '{gate}'. Approve, ask for a revision, or reject?"
        result = await ctx.session.elicit_form(message, ELICIT_SCHEMA, ctx.request_id)
        content = result.content or {}
        decision = content.get("decision")
        if result.action != "accept" or decision not in ("approve", "revise", "reject"):
            return None
        return HumanDecision(gate=gate, decision=decision, who="mcp_elicitation", note=str(content.get("note", "")))

    return elicit
