"""A workflow node that runs a Plan-and-Execute sub-flow (seed 001's middle layer), bounded by the node's contract.

The graph holds the trunk and the safety boundary; a ``plan`` node hands one stage to a planner (a model call), a
code validator (the tools the stage offers, the dependencies), an executor that runs the steps in dependency order
and keeps their statuses, and replanning after a failed step or an unmet completion condition, at most
``max_replans`` times. A step may be a ReAct sub-agent (one of the node's ``react_steps``, run by
``modes/subagent.py``): seed 001's third layer. Every call goes through the gateway; a tool outside the node's
contract, or a gated tool whose approval the workflow has not given, is refused by the runtime before it. Control
returns to the graph as an agent node's does: a handback with the evidence the runtime attaches from the gateway's
records and the plan's final state, never from what the model says; the graph then picks the way on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.core import DONE, ActionSpec, Condition, Node, RunContext
from modes.prompting import observation_line, system_message, user_message
from modes.structured_plan import PlanStep, plan_problems, read_structured_plan, ready_step, revise
from modes.structured_plan import structured_plan_schema as plan_schema
from modes.subagent import Handback, SubAgent, run_subagent

INSTRUCTIONS = (
    "You plan one stage of a fixed workflow, with a limited set of steps. Write a structured plan: each step has an "
    "id, an action from the list, its arguments, the ids of the steps it depends on, and done_when: a store artifact "
    "that holds a value once the step is done (empty: the action took effect). An executor runs the steps in "
    "dependency order; a step that names a sub-agent lets it explore with its own tools. If a step fails you are "
    "asked for a new plan; steps already done stay done. The workflow decides where the run goes after this stage."
)
ANSWER = (
    '{"plan": [{"id": "<step id>", "action": "<action>", "args": {<arguments>}, '
    '"depends_on": ["<step id>", ...], "done_when": "<artifact or empty>"}, ...]}'
)
GOAL_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {"goal": {"type": "string", "description": "what the sub-agent is to find out or do"}},
    "required": ["goal"],
    "additionalProperties": False,
}


@dataclass
class SubFlow:
    """One plan node's run: its contract, the plan and the counters the executor keeps."""

    node: Node
    handback: Handback
    observations: list[str]
    plan: list[PlanStep]
    revision: int = 0  # adopted plans so far
    ran: int = 0  # plan steps run so far, against the node's max_steps

    @property
    def where(self) -> str:
        return self.node.id

    @property
    def react(self) -> dict[str, Any]:
        return {step.name: step for step in self.node.react_steps}

    def states(self) -> list[dict[str, Any]]:
        return [step.state() for step in self.plan]


async def run_plan_subflow(ctx: RunContext, node: Node, *, step: int, observations: list[str]) -> Handback:
    """Plans, validates, executes and replans within the node's contract, then hands control back to the graph."""
    flow = SubFlow(node, Handback(met=False, step=step), observations, [])
    ctx.decide(
        step,
        "workflow",
        node.id,
        "plan_subflow",
        {
            "node": node.id,
            "tools": list(node.callable_tools),
            "react_steps": [s.name for s in node.react_steps],
            "max_replans": node.max_replans,
        },
    )
    catalog = _catalog(ctx, node)
    offered = [spec.name for spec in catalog if spec.kind != "finish"]
    system = system_message(ctx.scenario, INSTRUCTIONS, catalog, ANSWER)
    delegates = tuple((s.name, s.tools) for s in node.react_steps)
    feedback: str | None = None
    replans = 0
    reason = "no plan"
    while True:
        room = node.max_steps - flow.ran
        reply = await ctx.propose(
            "plan",
            [system, user_message(observations, _question(ctx, flow, feedback))],
            plan_schema([s for s in catalog if s.kind != "finish"], max(room, 1)),
            offered,
            step=flow.handback.step,
            feedback=feedback,
            catalog=catalog,
            delegates=delegates,
        )
        candidate = revise(flow.plan, read_structured_plan(reply.proposal, ctx.scenario.finish_action.name))
        problems = plan_problems(candidate, offered, room)
        last_chance = replans >= node.max_replans
        verdict = "ACCEPT" if not problems else "REJECT" if last_chance else "REVISE"
        ctx.plan_verdict(verdict, problems, replans, step=flow.handback.step)
        if problems:
            reason = "plan rejected: " + "; ".join(problems)
            if last_chance:
                break
            replans += 1
            feedback = "The validator sent the plan back: " + "; ".join(problems)
            continue
        flow.plan, flow.revision = candidate, flow.revision + 1
        ctx.plan_state(flow.handback.step, node.id, flow.revision, "adopted", flow.states())
        failed = await _execute(ctx, flow)
        complete = failed is None and ctx.holds(node.until)
        ended = "done" if complete else "failed" if failed is not None else "incomplete"
        ctx.plan_state(flow.handback.step, node.id, flow.revision, ended, flow.states())
        if complete:
            flow.handback.met, reason = True, ""
            break
        reason = (
            f"step {failed.id} ({failed.action}) failed: {failed.reason}"
            if failed is not None
            else "the plan ran to its end and the stage's completion condition does not hold"
        )
        if last_chance or flow.ran >= node.max_steps:
            reason += f" (replans used: {replans} of {node.max_replans}; steps run: {flow.ran} of {node.max_steps})"
            break
        replans += 1
        feedback = f"{reason}. Write the plan for what remains (replan {replans} of {node.max_replans})."
        ctx.decide(
            flow.handback.step,
            "executor",
            failed.action if failed is not None else node.id,
            "replan",
            {"node": node.id, "round": replans, "reason": reason},
        )
    flow.handback.reason = None if flow.handback.met else reason
    ctx.decide(
        flow.handback.step,
        "workflow",
        node.id,
        "handback",
        {
            "node": node.id,
            "met": flow.handback.met,
            "reason": flow.handback.reason,
            "evidence": {**flow.handback.evidence(ctx), "plan": flow.states(), "revisions": flow.revision},
        },
    )
    return flow.handback


def _catalog(ctx: RunContext, node: Node) -> list[ActionSpec]:
    """What the planner may put in a step: each react step (as a step taking a goal), then the node's own tools;
    the scenario's finish last (a planner may end with it; the reader drops it)."""
    actions = ctx.scenario.action_map
    delegated = [
        ActionSpec(name=s.name, description=f"{s.description} (a sub-agent with: {', '.join(s.tools)})", args=GOAL_ARGS)
        for s in node.react_steps
    ]
    return [*delegated, *(actions[name] for name in node.tools), ctx.scenario.finish_action]


def _question(ctx: RunContext, flow: SubFlow, feedback: str | None) -> str:
    """What the planner is asked: the stage, its completion condition and constraints, the plan so far."""
    node = flow.node
    lines = [f"Stage {node.id} of the workflow."]
    if node.until is not None:
        tests = node.until.tests()
        lines.append(
            "It is complete when: "
            + ", ".join(
                f"{test} {path}" + (f" {operand!r}" if operand is not None else "") for test, path, operand in tests
            )
        )
    if node.constraints:
        lines.append("Constraints: " + "; ".join(node.constraints))
    if flow.plan:
        shown = ", ".join(f"{s.id} ({s.action}): {s.status}" for s in flow.plan)
        lines.append(f"The plan so far (revision {flow.revision}): {shown}")
    if feedback:
        lines.append(feedback)
    lines.append("Write the plan." if not flow.plan else "Write the revised plan.")
    return "\n".join(lines)


async def _execute(ctx: RunContext, flow: SubFlow) -> PlanStep | None:
    """Runs the ready steps in dependency order until none is left or one fails (returned, its status failed)."""
    node = flow.node
    while True:
        step = ready_step(flow.plan)
        if step is None:
            return None
        if flow.ran >= node.max_steps:
            step.status, step.reason = "failed", f"the stage's step budget ({node.max_steps}) is spent"
            return step
        flow.ran += 1
        step.status = "running"
        detail = {"node": node.id, "plan_step": step.id, "revision": flow.revision}
        ctx.decide(flow.handback.step, "executor", step.action, "execute", detail)
        problem = await _run_step(ctx, flow, step)
        if problem is None and step.done_when and not ctx.holds(Condition(exists=step.done_when)):
            problem = f"its completion condition does not hold: '{step.done_when}' holds nothing"
        step.status, step.reason = ("done", None) if problem is None else ("failed", problem)
        result = "step_done" if problem is None else "step_failed"
        ctx.decide(flow.handback.step, "executor", step.action, result, {**detail, "reason": problem})
        if problem is not None:
            return step


async def _run_step(ctx: RunContext, flow: SubFlow, step: PlanStep) -> str | None:
    """One step: a react step's sub-agent, or one tool call through the gateway. Why it failed, or None."""
    node, handback = flow.node, flow.handback
    agent = flow.react.get(step.action)
    if agent is not None:
        goal = step.args.get("goal") if isinstance(step.args, dict) else None
        sub = await run_subagent(
            ctx,
            SubAgent(
                where=f"{node.id}.{step.id}",
                tools=agent.tools,
                max_steps=agent.max_steps,
                until=agent.until,
                question=f"Plan step {step.id} of stage {node.id}: {goal or agent.description} Choose the next tool.",
            ),
            step=handback.step,
            observations=flow.observations,
        )
        handback.step = sub.step
        handback.records += sub.records
        return None if sub.met else f"the sub-agent's contract is not met: {sub.reason}"
    refusal = _refusal(ctx, node, step.action)
    if refusal is not None:
        guard, reason = refusal
        ctx.decide(handback.step, "runtime", step.action, "refused", {"guard": guard, "node": node.id})
        flow.observations.append(f"step {handback.step}: {step.action} -> refused by the runtime: {reason}")
        return reason
    handback.step += 1
    record = ctx.act(step.action, step.args, allowed=list(node.tools), step=handback.step)
    handback.records.append(record)
    flow.observations.append(observation_line(record))
    return None if record.status in DONE else f"{step.action} {record.status}: {record.reason}"


def _refusal(ctx: RunContext, node: Node, action: str) -> tuple[str, str] | None:
    """(guard, reason) when the runtime will not send a step's action: outside the node's tools, or gated by an
    approval the workflow has not given."""
    if action not in node.tools:
        return "node_tools", f"'{action}' is not one of node {node.id}'s tools ({', '.join(node.tools)})"
    spec = ctx.scenario.action_map[action]
    if spec.kind == "task" and spec.gate is not None and not ctx.approved(spec.gate):
        return "gate_closed", f"'{action}' needs approval '{spec.gate}', which the workflow has not given"
    return None
