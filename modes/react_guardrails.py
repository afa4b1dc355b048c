"""ReAct with guardrails (seed 003's mode 4): the model still picks each action, but runtime code checks it first.

Three layers, each a ``runtime`` event when it fires. Input: only the actions the agent's role may call are
offered, and arguments that fail the action's schema are refused. Execution: each tool has a retry budget
(``max_retries_per_tool`` calls after failed ones; a flaky tool gets them all and no more) and each call a timeout
(``call_timeout_ms`` against the action's simulated duration: a call over it fails as a timeout, nothing applied).
Output: an answer a person reads (an action with an ``answer`` policy) is checked before it commits, for forbidden
phrasing (the mode's list and the policy's) and for uncited claims (each citation must be something an earlier
tool result returned); the agent is told the policy. The guard never reads the oracle. A wait, or a gated action
whose approval is missing, becomes a real suspension once the gateway has recorded the wait or approval request; a
blocked request goes back to the model as an observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from harness.core import (
    DONE,
    MISSING,
    ActionRecord,
    ActionSpec,
    AnswerPolicy,
    ModeResult,
    RunContext,
    collect,
    field_names,
    field_values,
)
from modes.base import Mode, mode
from modes.prompting import decision_line, observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step
from modes.react import ANSWER, step_limit

INSTRUCTIONS = (
    "You are an agent. At each turn choose exactly one next action from the list, based on the "
    "task, the rules and the observations so far. A runtime guard checks every action before it "
    "runs. Choose finish when you are done."
)


@mode("react_guardrails")
class ReActGuardrails(Mode):
    summary = (
        "ReAct behind a runtime guard: allowlist, argument schema, retry budget per tool, call timeout, "
        "output filter on answers; waits and gates suspend."
    )
    decides = "the model, checked by a runtime guard before each action"
    visible = "the actions the agent's role may call"
    stopper = "the runtime guard: a wait or an unapproved gated action suspends"
    intervention = "a guard before every action and on every answer; approvals suspend"
    autonomy = "chooses each action; its inputs, retries and answers pass the guard"
    spectrum = 4
    published_p95_ms = 920.0
    published_error_rate = 0.028
    story = "internal knowledge-base answers (kb_policy_answer)"
    typical_story = "kb_policy_answer"
    hard_gate = True
    max_retries_per_tool: ClassVar[int] = 3  # retries of a tool in a run (calls after a failed one)
    call_timeout_ms: ClassVar[int] = 5_000  # a call that takes longer (simulated) is cut off as a timeout
    # Subjective phrasing an answer never carries (seed 003's output layer), on top of an answer policy's own.
    forbidden_phrases: ClassVar[tuple[str, ...]] = (
        "I think",
        "I believe",
        "I suggest",
        "I recommend",
        "in my experience",
        "based on my experience",
        "我认为",
        "我建议",
        "根据我的经验",
    )
    PARAMETERS = ("max_retries_per_tool", "call_timeout_ms", "forbidden_phrases")

    async def run(self, ctx: RunContext) -> ModeResult:
        scenario = ctx.scenario
        visible = [spec for spec in scenario.actions if scenario.permitted(spec)]
        offered = [spec.name for spec in visible]
        system = system_message(scenario, f"{INSTRUCTIONS}\n\n{self.briefing(visible)}", visible, ANSWER)
        schema = next_action_schema(visible)
        observations: list[str] = []
        results: list[ActionRecord] = []  # the gateway's records of this run's calls: what citations may cite
        step = 0
        while True:  # max_steps steps (a refused proposal is one), then one more proposal, taken only if a finish
            step += 1
            messages = [system, user_message(observations, "Choose the next action.")]
            reply = await ctx.propose("next_action", messages, schema, offered, step=step)
            proposal = read_step(reply.proposal)
            if proposal.action == scenario.finish_action.name:
                ctx.decide(step, "runtime", proposal.action, "run_finished")
                return ModeResult("finished")
            if step > ctx.limits.max_steps:
                return step_limit(ctx, step, proposal.action)
            spec = scenario.action_map.get(proposal.action)
            refusal = self.refusal(ctx, spec, proposal.action, proposal.args, offered, results)
            if refusal is not None or spec is None:
                guard, reason = refusal or ("allowlist", "not offered")
                ctx.decide(step, "runtime", proposal.action, "refused", {"guard": guard, "reason": reason})
                observations.append(f"step {step}: {proposal.action} -> refused by the guard: {reason}")
                continue
            if spec.kind == "task" and spec.gate is not None and not ctx.approved(spec.gate):
                # Stop only where someone is really asked; a blocked request goes back to the model.
                record = ctx.request_approval(spec.gate, step=step, for_action=spec.name)
            else:
                record = self.call(ctx, spec, proposal.args, offered, step)
            results.append(record)
            observations.append(observation_line(record))
            if record.status == "wait_recorded" and record.gate is not None and not ctx.approved(record.gate):
                decision = ctx.suspend(step, "runtime", record.gate, {"proposed": spec.name})
                observations.append(decision_line(step, decision))
                if decision.decision == "approve" and spec.kind == "task":
                    # the action that waited for this approval goes ahead now, once (its answer already passed)
                    record = self.call(ctx, spec, proposal.args, offered, step)
                    results.append(record)
                    observations.append(observation_line(record))

    def refusal(
        self,
        ctx: RunContext,
        spec: ActionSpec | None,
        name: str,
        args: Any,
        offered: list[str],
        results: list[ActionRecord],
    ) -> tuple[str, str] | None:
        """(guard, reason) of the first guard the proposal trips, before anything reaches the gateway; None: passes."""
        if spec is None or name not in offered:
            return "allowlist", "not offered"
        problem = ctx.argument_problem(spec.name, args)
        if problem is not None:
            return "schema", f"invalid arguments: {problem}"
        failed = sum(r.action == spec.name and r.status == "failed" for r in results)  # a retry follows a failure
        if failed > self.max_retries_per_tool:
            return "retry_budget", f"'{spec.name}' failed {failed} times; its retries are spent"
        if spec.answer is not None:
            found = answer_problem(spec.answer, args, [*self.forbidden_phrases, *spec.answer.phrases], results)
            if found is not None:
                return "output", found
        return None

    def call(self, ctx: RunContext, spec: ActionSpec, args: Any, offered: list[str], step: int) -> ActionRecord:
        """One call under the timeout; a call cut off is traced as the guard firing."""
        record = ctx.act(spec.name, args, allowed=offered, step=step, timeout_ms=self.call_timeout_ms)
        if record.reason == "timeout":
            ctx.decide(
                step,
                "runtime",
                spec.name,
                "refused",
                {"guard": "timeout", "reason": f"no result within {self.call_timeout_ms} ms; the call was cut off"},
            )
        return record

    def briefing(self, visible: Sequence[ActionSpec]) -> str:
        """What the guard checks, told to the agent: the rules it is held to are no secret."""
        lines = [
            f"The guard allows each tool {self.max_retries_per_tool} retries and cuts off a call after "
            f"{self.call_timeout_ms} ms."
        ]
        for spec in visible:
            policy = spec.answer
            if policy is None:
                continue
            phrases = ", ".join(f'"{p}"' for p in (*self.forbidden_phrases, *policy.phrases))
            line = f"{spec.name} is an answer: it must not contain {phrases}"
            if policy.citations is not None:
                what = (
                    f"a '{policy.field}' value"
                    if policy.field
                    else "a field name"
                    if policy.match == "field_names"
                    else "a value"
                )
                line += f"; every {policy.citations} must be {what} an earlier tool result returned"
            lines.append(line + ".")
        return "\n".join(lines)


def answer_problem(
    policy: AnswerPolicy, args: Any, phrases: Iterable[str], results: Sequence[ActionRecord]
) -> str | None:
    """Why an answer may not go out (a forbidden phrase, an uncited claim), or None; from the gateway's records."""
    texts = [v for v in collect(args, policy.text) if isinstance(v, str)] if policy.text else _strings(args)
    lowered = " ".join(texts).casefold()
    for phrase in phrases:
        if phrase.casefold() in lowered:
            return f"forbidden phrase '{phrase}' in the answer"
    if policy.citations is None:
        return None
    cited = list(collect(args, policy.citations))
    if not cited:
        return f"no citation at {policy.citations}"
    known = _returned(policy, results)
    for value in cited:
        if value is MISSING or value in ("", None):
            return f"a claim without a citation at {policy.citations}"
        if not isinstance(value, (str, int, float, bool)) or value not in known:
            return f"citation {value!r} is nothing a tool returned"
    return None


def _returned(policy: AnswerPolicy, results: Sequence[ActionRecord]) -> set[Any]:
    found: set[Any] = set()
    for record in results:
        if record.status not in DONE:
            continue
        observation = record.observation
        if policy.match == "field_names":
            values: Iterable[Any] = field_names(observation)
        elif policy.field is not None:
            values = field_values(observation, policy.field)
        else:
            values = _scalars(observation)
        found.update(v for v in values if isinstance(v, (str, int, float, bool)))
    return found


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def _strings(value: Any) -> list[str]:
    return [v for v in _scalars(value) if isinstance(v, str)]
