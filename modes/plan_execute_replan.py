"""Plan-and-Execute with replanning (seed 001): the model writes a plan; after a step fails, it is asked again.

The executor is the suspending one (the harness checks approvals before execution: a planned wait stops the run,
a gated step asks for its approval first). When a step fails or is blocked, the rest of the plan is dropped and the
planner gets the observations so far and writes the plan for what remains, at most ``max_replans`` times a run;
after that the plan runs on as written, as the naive executor would. No validator checks the plans.
"""

from __future__ import annotations

from typing import ClassVar

from harness.core import ModeResult, RunContext
from modes.base import Mode, mode
from modes.executor import Revision, run_plan_suspending
from modes.plan_execute import ANSWER
from modes.prompting import system_message, user_message
from modes.proposals import plan_schema, read_plan

INSTRUCTIONS = (
    "You are a planner. Write the complete plan for the task as an ordered list of actions taken from the list; "
    "an executor carries it out step by step and stops at every wait until the approval is given. If a step "
    "fails, you will be asked for a new plan for what remains. End with finish."
)


@mode("plan_execute_replan")
class PlanExecuteReplan(Mode):
    summary = "The model plans; the executor stops at every wait; a failed step sends the rest back to the planner."
    decides = "the model's plan, revised by the model after a failed step; run by the executor"
    visible = "all actions, at each planning"
    stopper = "the executor's return at a wait; the replan budget bounds the replanning"
    intervention = "approvals suspend; nothing reviews the plans"
    autonomy = "plans the steps and replans after a failure"
    spectrum = 9
    hard_gate = True
    max_replans: ClassVar[int] = 2  # new plans after failed steps, in a run
    PARAMETERS = ("max_replans",)

    async def run(self, ctx: RunContext) -> ModeResult:
        scenario = ctx.scenario
        offered = [spec.name for spec in scenario.actions]
        max_len = ctx.limits.max_steps + 1
        system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
        feedback: str | None = None
        replans = 0
        executed = 0
        observations: list[str] = []
        while True:
            question = "Write the plan." if not observations else "Write the plan for what remains of the task."
            if feedback:
                question = f"{feedback}\n{question}"
            reply = await ctx.propose(
                "plan",
                [system, user_message(observations, question)],
                plan_schema(scenario.actions, max_len),
                offered,
                step=executed,
                feedback=feedback,
            )
            plan = read_plan(reply.proposal)
            ran = await run_plan_suspending(
                ctx,
                plan,
                offered,
                executed=executed,
                observations=observations,
                stop_on_failure=replans < self.max_replans,
            )
            if isinstance(ran, ModeResult):
                return ran
            executed = ran.executed
            if isinstance(ran, Revision):
                feedback = f"The reviewer sent the plan back at a gate: {ran.note}"
                continue
            replans += 1
            feedback = (
                f"Step {ran.plan_index} of your plan ({ran.action}) {ran.status}: "
                f"{ran.reason or 'see the observations'} (replan {replans} of {self.max_replans})."
            )
            ctx.decide(executed, "executor", ran.action, "replan", {"plan_index": ran.plan_index, "round": replans})
