"""ReAct: the model sees every action and picks each next one from the observations."""

from __future__ import annotations

from harness.core import ModeResult, RunContext
from modes.base import Mode, mode
from modes.prompting import observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step

INSTRUCTIONS = (
    "You are an agent. At each turn choose exactly one next action from the list, "
    "based on the task, the rules and the observations so far. Choose finish when you are done."
)
ANSWER = '{"step": {"action": "<one action name>", "args": {<arguments of that action>}}}'


@mode("react")
class ReAct(Mode):
    summary = "The model picks every next action; only finish or the step limit ends the run."
    decides = "the model, from the observations"
    visible = "all actions"
    stopper = "only the model's finish, or the step limit"
    intervention = "none during the run: only the goal is set"
    autonomy = "chooses tools, order, retries and when to stop"
    spectrum = 7
    published_p95_ms = 3200.0
    published_error_rate = 0.087
    story = "research assistant: literature review, experiment design (research_assistant)"
    typical_story = "research_assistant"
    naive = True

    async def run(self, ctx: RunContext) -> ModeResult:
        scenario = ctx.scenario
        offered = [spec.name for spec in scenario.actions]
        system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
        schema = next_action_schema(scenario.actions)
        observations: list[str] = []
        step = 0
        while True:  # max_steps actions, then one more proposal: a finish is control, not a step, taken even then
            step += 1
            messages = [system, user_message(observations, "Choose the next action.")]
            reply = await ctx.propose("next_action", messages, schema, offered, step=step)
            proposal = read_step(reply.proposal)
            if proposal.action == scenario.finish_action.name:
                ctx.decide(step, "runtime", proposal.action, "run_finished")
                return ModeResult("finished")
            if step > ctx.limits.max_steps:
                return step_limit(ctx, step, proposal.action)
            record = ctx.act(proposal.action, proposal.args, allowed=offered, step=step)
            observations.append(observation_line(record))


def step_limit(ctx: RunContext, step: int, proposed: str) -> ModeResult:
    """Ends a run whose steps are spent: the proposal after its last step was not a finish (and is not carried out)."""
    budget = ctx.limits.max_steps
    reason = f"its {budget} steps are spent: only a finish is taken now, so '{proposed}' is not carried out"
    ctx.decide(step, "runtime", proposed, "step_limit", {"max_steps": budget, "reason": reason})
    return ModeResult("step_limit")
