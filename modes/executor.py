"""The plan executors: a plain one that runs every step (a planned wait is only a marker), and a suspending
one that returns at an unapproved gate (and, asked to, at a step that failed, so the planner can replan). Both run
each step through the gateway; neither edits the plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, overload

from harness.core import ModeResult, RunContext
from modes.prompting import decision_line, observation_line
from modes.proposals import Step


async def run_plan(ctx: RunContext, plan: list[Step], allowed: list[str]) -> ModeResult:
    """Runs the plan in order as written. A wait step records its marker and the executor goes on, as a
    naive executor does: "wait" in a plan is data. Only the gateway blocks what it can."""
    finish = ctx.scenario.finish_action.name
    executed = 0
    for index, item in enumerate(plan, start=1):
        if item.action == finish:
            ctx.decide(executed, "executor", finish, "run_finished", {"plan_index": index})
            return ModeResult("finished")
        if executed == ctx.limits.max_steps:
            ctx.decide(executed, "executor", None, "step_limit", {"plan_index": index})
            return ModeResult("step_limit")
        executed += 1
        ctx.decide(executed, "executor", item.action, "execute", {"plan_index": index})
        ctx.act(item.action, item.args, allowed=allowed, step=executed)
    ctx.decide(executed, "executor", None, "plan_exhausted")
    return ModeResult("finished")


@dataclass(frozen=True)
class Revision:
    """The reviewer sent the plan back at a gate: what to change, and how many steps already ran."""

    note: str
    executed: int


@dataclass(frozen=True)
class StepFailed:
    """A step of the plan failed, was blocked, or was refused by the executor: the planner can be asked again."""

    action: str
    status: str  # failed, blocked, or refused (by the executor itself: a tool the agent's role may not call)
    reason: str | None
    plan_index: int
    executed: int


@overload
async def run_plan_suspending(
    ctx: RunContext,
    plan: list[Step],
    allowed: list[str],
    *,
    executed: int = 0,
    observations: list[str] | None = None,
    stop_on_failure: Literal[False] = False,
) -> ModeResult | Revision: ...


@overload
async def run_plan_suspending(
    ctx: RunContext,
    plan: list[Step],
    allowed: list[str],
    *,
    executed: int = 0,
    observations: list[str] | None = None,
    stop_on_failure: bool,
) -> ModeResult | Revision | StepFailed: ...


async def run_plan_suspending(
    ctx: RunContext,
    plan: list[Step],
    allowed: list[str],
    *,
    executed: int = 0,
    observations: list[str] | None = None,
    stop_on_failure: bool = False,
) -> ModeResult | Revision | StepFailed:
    """Runs the plan in order, but a wait step for an unapproved gate stops the run there (real control), and
    so does a gated step whose gate is closed when its turn comes (a threshold that came to apply after
    planning): the step asks for the approval first and runs only once it is given. A revision request
    goes back to the planner; ``executed`` continues the step count of an earlier plan of the same run.
    With ``stop_on_failure`` a step that fails or is blocked ends this plan too (the rest is not run)."""
    finish = ctx.scenario.finish_action.name
    seen = observations if observations is not None else []
    for index, item in enumerate(plan, start=1):
        if item.action == finish:
            ctx.decide(executed, "executor", finish, "run_finished", {"plan_index": index})
            return ModeResult("finished")
        if executed == ctx.limits.max_steps:
            ctx.decide(executed, "executor", None, "step_limit", {"plan_index": index})
            return ModeResult("step_limit")
        spec = ctx.scenario.action_map.get(item.action)
        gate = spec.gate if spec is not None else None
        executed += 1
        if spec is not None and not ctx.scenario.permitted(spec):
            # the runtime enforces the role's tools itself: a plan naming another role's tool never reaches the
            # gateway, whatever the gateway's policy (seed 001: allowed tools enforced by the runtime)
            reason = f"role '{ctx.scenario.agent_role}' may not call '{item.action}'"
            ctx.decide(executed, "executor", item.action, "refused", {"plan_index": index, "reason": reason})
            seen.append(f"step {executed}: {item.action} -> refused by the executor: {reason}")
            if stop_on_failure:
                return StepFailed(item.action, "refused", reason, index, executed)
            continue
        held_back = spec is not None and spec.kind == "task" and gate is not None and not ctx.approved(gate)
        if held_back:
            # ask before the action, never run it unapproved; a blocked request (its preconditions missing)
            # is this step's result and the plan goes on
            ctx.decide(executed, "executor", item.action, "request_approval", {"plan_index": index})
            record = ctx.request_approval(gate or "", step=executed, for_action=item.action)
        else:
            ctx.decide(executed, "executor", item.action, "execute", {"plan_index": index})
            record = ctx.act(item.action, item.args, allowed=allowed, step=executed)
        seen.append(observation_line(record))
        if record.status == "wait_recorded" and record.gate is not None and not ctx.approved(record.gate):
            decision = ctx.suspend(executed, "executor", record.gate, {"plan_index": index})
            seen.append(decision_line(executed, decision))
            if decision.decision == "revise":
                return Revision(decision.note, executed)
            if decision.decision == "reject":  # the refused step is not run; the plan goes on
                ctx.decide(executed, "executor", item.action, "rejected", {"plan_index": index})
                continue
            if held_back:  # approved: the step that waited for it runs now, once
                ctx.decide(executed, "executor", item.action, "execute", {"plan_index": index})
                record = ctx.act(item.action, item.args, allowed=allowed, step=executed)
                seen.append(observation_line(record))
        if stop_on_failure and record.status in ("failed", "blocked"):
            ctx.decide(executed, "executor", item.action, "step_failed", {"plan_index": index, "status": record.status})
            return StepFailed(record.action, record.status, record.reason, index, executed)
    ctx.decide(executed, "executor", None, "plan_exhausted")
    return ModeResult("finished")
