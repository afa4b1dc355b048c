"""Hybrid planner (seed 003's mode 5): the model writes a plan; a person reviews it before any step runs.

The review is a stop like any approval (``ctx.suspend`` at the mode's own review point, ``plan_review``, which no
scenario gate may be named): without an approver the run suspends there, resumable with ``bench resume``; the
reviewer approves, rejects (the run ends, nothing done), or sends the plan back with a note for the planner
(at most ``max_review_rounds`` times, then the plan is dropped: ``rejected``). An approved plan runs on the
suspending executor: it stops at the plan's waits and before a gated step whose approval is missing. A reviewer who
sends the plan back at a gate gets a new plan, which is reviewed again before it runs.
"""

from __future__ import annotations

from typing import ClassVar

from harness.core import PLAN_REVIEW, ModeResult, RunContext
from modes.base import Mode, mode
from modes.executor import run_plan_suspending
from modes.plan_execute import ANSWER
from modes.prompting import system_message, user_message
from modes.proposals import plan_schema, read_plan

INSTRUCTIONS = (
    "You are a planner. Write the complete plan for the task as an ordered list of actions taken from the list. "
    "A person reviews the plan before any step runs, and may send it back with a note; the executor then stops "
    "at every wait until the approval is given. End with finish."
)


@mode("hybrid_planner")
class HybridPlanner(Mode):
    summary = "The model plans; a person reviews the plan before any step runs; execution stops at every wait."
    decides = "the model's plan, once a person approved it; run by the executor"
    visible = "all actions, at planning time"
    stopper = "the reviewer (the plan review is a stop), and the executor's return at a wait"
    intervention = "a person reviews the plan before execution; approvals suspend"
    autonomy = "plans the steps; execution is controlled"
    spectrum = 5
    published_p95_ms = 1800.0
    published_error_rate = 0.045
    story = "cross-system data migration (data_migration)"
    typical_story = "data_migration"
    hard_gate = True
    review_points = frozenset({PLAN_REVIEW})
    max_review_rounds: ClassVar[int] = 2  # times a reviewer may send one plan back before it is dropped
    PARAMETERS = ("max_review_rounds",)

    async def run(self, ctx: RunContext) -> ModeResult:
        scenario = ctx.scenario
        offered = [spec.name for spec in scenario.actions]
        max_len = ctx.limits.max_steps + 1
        system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
        feedback: str | None = None
        rounds = 0
        executed = 0  # steps run by earlier plans of this run (a reviewer can send a plan back at a gate)
        observations: list[str] = []
        while True:
            question = "Write the plan." if feedback is None else f"{feedback}\nWrite the revised plan."
            if observations:
                question = (f"{feedback}\n" if feedback else "") + "Write the plan for what remains of the task."
            reply = await ctx.propose(
                "plan",
                [system, user_message(observations, question)],
                plan_schema(scenario.actions, max_len),
                offered,
                step=executed,
                feedback=feedback,
            )
            plan = read_plan(reply.proposal)
            shown = [{"action": s.action, "args": s.args} for s in plan]
            review = ctx.suspend(executed, "runtime", PLAN_REVIEW, {"plan": shown, "round": rounds})
            if review.decision == "revise":
                if rounds == self.max_review_rounds:
                    reason = f"the reviewer sent the plan back {rounds + 1} times"
                    ctx.decide(executed, "runtime", PLAN_REVIEW, "plan_dropped", {"reason": reason})
                    return ModeResult("rejected")
                rounds += 1
                feedback = f"The reviewer sent the plan back: {review.note}"
                continue
            ran = await run_plan_suspending(ctx, plan, offered, executed=executed, observations=observations)
            if isinstance(ran, ModeResult):
                return ran
            executed, rounds = ran.executed, 0
            feedback = f"The reviewer sent the plan back at a gate: {ran.note}"
