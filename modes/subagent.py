"""The contract of an autonomous node (seed 001): a bounded inner ReAct loop that hands control back to code.

The tools it may call are enforced by the runtime (anything else is refused before the gateway) and by the gateway
(``allowed``); a gated tool whose gate is closed is held back by the runtime; its report is checked against the
node's declared output schema and its success criteria (``until``) by code; and the evidence of what it did (steps,
actions, statuses, changed artifacts) is attached by the runtime from the gateway's records, never taken from the
model's words. Workflow agent nodes and the fallback loop
of ``workflow_fallback_react`` both run through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.core import ActionRecord, Condition, RunContext, check_for
from modes.prompting import observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step

INSTRUCTIONS = (
    "You work inside one node of a workflow with a limited set of tools. Choose one tool at "
    "each turn from the observations; choose finish when the node's goal is met."
)
REPORT_INSTRUCTIONS = (
    "You work inside one node of a workflow with a limited set of tools. Choose one tool at each turn from the "
    "observations. When the node's goal is met, choose finish with your report as its arguments; code checks the "
    "report, and the workflow decides where the run goes next."
)
ANSWER = '{"step": {"action": "<one tool name>", "args": {<arguments>}}}'


@dataclass(frozen=True)
class SubAgent:
    """What a sub-agent may do and what code checks when it hands control back."""

    where: str  # the node it works for
    tools: tuple[str, ...]
    max_steps: int  # tool calls it may make (a proposal the runtime refuses is one); its finish is not one
    until: Condition | None  # the success criteria, checked by code
    output: dict[str, Any] | None = None  # the report's schema; declared, only a finish with a fitting report ends it
    instructions: str = INSTRUCTIONS
    question: str = ""  # what each turn asks; default: choose the node's next tool


@dataclass
class Handback:
    """What the runtime knows when a sub-agent hands control back."""

    met: bool  # the success criteria hold and, where one is declared, the report fits its schema
    reason: str | None = None  # why not
    report: Any = None  # the model's report, as given (only when it fits)
    records: list[ActionRecord] = field(default_factory=list)  # the gateway's records of its calls
    step: int = 0  # the run's step count after it

    @property
    def suggested_route(self) -> str | None:
        route = self.report.get("suggested_route") if isinstance(self.report, dict) else None
        return route if isinstance(route, str) else None

    def evidence(self, ctx: RunContext) -> dict[str, Any]:
        """From the gateway's records only: each call's step, action and status, and the artifacts changed."""
        changed: list[str] = []
        for record in self.records:
            spec = ctx.scenario.action_map.get(record.action)
            if record.status == "committed" and spec is not None:
                changed += [key for key in (spec.writes, *spec.invalidates) if key and key not in changed]
        return {
            "calls": [{"step": r.step, "action": r.action, "status": r.status} for r in self.records],
            "changed_artifacts": changed,
        }


async def run_subagent(ctx: RunContext, agent: SubAgent, *, step: int, observations: list[str]) -> Handback:
    """Runs the inner loop to its finish, its success criteria or its step budget, then checks the contract.

    Without a declared report the loop ends as soon as ``until`` holds (code says the goal is met); with one, only
    the model's finish ends it early, and ``until`` is checked afterwards.
    """
    scenario = ctx.scenario
    finish = scenario.finish_action
    if agent.output is not None:
        finish = finish.model_copy(update={"args": agent.output})  # the finish carries the node's report
    offered = [*agent.tools, finish.name]
    catalog = [*(scenario.action_map[name] for name in agent.tools), finish]
    system = system_message(
        scenario, REPORT_INSTRUCTIONS if agent.output is not None else agent.instructions, catalog, ANSWER
    )
    schema = next_action_schema(catalog)
    question = agent.question or f"Node {agent.where}: choose the next tool."
    handback = Handback(met=False, step=step)
    finished = False
    for turn in range(1, agent.max_steps + 2):  # its steps, then one more turn in which only a finish is taken
        if agent.output is None and agent.until is not None and ctx.holds(agent.until):
            break
        if turn > agent.max_steps and agent.output is None:
            break  # without a report to hand in, a finish now would change nothing: code checks `until` alone
        messages = [system, user_message(observations, question)]
        reply = await ctx.propose("next_action", messages, schema, offered, step=handback.step + 1, catalog=catalog)
        proposal = read_step(reply.proposal)
        if proposal.action == finish.name:
            ctx.decide(handback.step, "workflow", agent.where, "node_done", {"node": agent.where, "by": "llm"})
            handback.report, finished = proposal.args, True
            break
        if turn > agent.max_steps:
            break  # its steps are spent and this is no finish: not carried out
        refusal = _refusal(ctx, agent, proposal.action)
        if refusal is not None:  # never sent: the gateway would refuse it too, unless it only audits
            guard, reason = refusal
            ctx.decide(handback.step, "runtime", proposal.action, "refused", {"guard": guard, "node": agent.where})
            observations.append(f"step {handback.step}: {proposal.action} -> refused by the runtime: {reason}")
            continue
        handback.step += 1
        record = ctx.act(proposal.action, proposal.args, allowed=agent.tools, step=handback.step)
        handback.records.append(record)
        observations.append(observation_line(record))
    handback.met, handback.reason = _check(ctx, agent, handback, finished)
    if not handback.met:
        handback.report = None if agent.output is not None else handback.report
    ctx.decide(
        handback.step,
        "workflow",
        agent.where,
        "handback",
        {
            "node": agent.where,
            "met": handback.met,
            "reason": handback.reason,
            "report": handback.report,
            "evidence": handback.evidence(ctx),
        },
    )
    return handback


def _refusal(ctx: RunContext, agent: SubAgent, action: str) -> tuple[str, str] | None:
    """(guard, reason) when the runtime will not send a proposal: a tool outside the node's list, or a gated tool
    whose approval the workflow has not given."""
    if action not in agent.tools:
        return "node_tools", f"'{action}' is not one of node {agent.where}'s tools ({', '.join(agent.tools)})"
    spec = ctx.scenario.action_map[action]
    if spec.kind == "task" and spec.gate is not None and not ctx.approved(spec.gate):
        return "gate_closed", f"'{action}' needs approval '{spec.gate}', which the workflow has not given"
    return None


def _check(ctx: RunContext, agent: SubAgent, handback: Handback, finished: bool) -> tuple[bool, str | None]:
    """The contract, checked by code: a report that fits the schema (where one is declared), then ``until``."""
    if agent.output is not None:
        if not finished:
            return False, f"no report after {agent.max_steps} steps"
        error = check_for(agent.output).first_error(handback.report)
        if error is not None:
            where, message = error
            return False, f"the report does not fit the node's output schema: {where + ': ' if where else ''}{message}"
    if agent.until is not None and not ctx.holds(agent.until):
        return False, "readiness contract not met"
    return True, None
