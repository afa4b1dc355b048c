"""The plan executors: a plain one that runs every step (a planned wait is only a marker), and a suspending
one that returns at an unapproved gate. Both run each step through the gateway; neither edits the plan."""

from __future__ import annotations

from harness.context import RunContext
from harness.outcome import ModeResult
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


async def run_plan_suspending(ctx: RunContext, plan: list[Step], allowed: list[str]) -> ModeResult:
    """Runs the plan in order, but a wait step for an unapproved gate returns (real control), and so does a
    gated step whose gate is closed when its turn comes (a threshold that came to apply after planning)."""
    finish = ctx.scenario.finish_action.name
    executed = 0
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
        if spec is not None and spec.kind == "task" and gate and not ctx.approved(gate):
            # a gate that came to apply after planning (a threshold): ask before the action, never run it;
            # a blocked request (its preconditions missing) is this step's result and the plan goes on
            ctx.decide(executed, "executor", item.action, "request_approval", {"plan_index": index})
            record = ctx.request_approval(gate, step=executed, for_action=item.action)
        else:
            ctx.decide(executed, "executor", item.action, "execute", {"plan_index": index})
            record = ctx.act(item.action, item.args, allowed=allowed, step=executed)
        if record.status == "wait_recorded" and record.gate is not None and not ctx.approved(record.gate):
            ctx.suspend(executed, "executor", record.gate, {"plan_index": index})
            return ModeResult("suspended", suspended_at=record.gate)
    ctx.decide(executed, "executor", None, "plan_exhausted")
    return ModeResult("finished")
