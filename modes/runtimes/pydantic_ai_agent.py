"""The PydanticAI agent behind the ``pydantic_ai`` mode: bench's two ports under a real ``pydantic_ai.Agent``.

Imported only when the mode runs (modes/runtimes/pydantic_ai.py), so the mode registers without the extra.

- The model the agent talks to is a ``FunctionModel`` whose function asks bench's model for the next action
  (``ctx.propose``, the same request as ReAct's) and answers with one ``ToolCallPart``: a scenario action, or the
  finish action, which is the agent's output tool. Nothing goes over the network; instrumentation stays off.
- Each task and wait action is a tool whose body sends the call through the gateway (``ctx.act``) and returns the
  observation; a blocked action comes back as the tool's result, so the run goes on as in every mode.
- A tool whose gate is not approved needs approval (PydanticAI's ``ApprovalRequiredToolset``): the agent run ends
  with ``DeferredToolRequests`` before the tool's body runs. The adapter saves the message history, asks the gateway
  for the approval (a recorded wait) and suspends; the decision comes back to PydanticAI as ``DeferredToolResults``,
  in this process (an in-run approver) or in a new one (``bench resume``). Whatever PydanticAI then executes reaches
  the gateway again and is counted, except an approved wait tool: its wait is recorded already, its result is the
  decision.
- A tool call's step is its ordinal among the tool calls of the message history: stable across a resume, so a call
  PydanticAI executes twice shows up as a repeated side effect of one step.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    Tool,
    ToolApproved,
    ToolDenied,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.output import StructuredDict, ToolOutput
from pydantic_ai.tools import RunContext as ToolContext  # PydanticAI's, beside bench's RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset
from pydantic_ai.usage import RequestUsage
from pydantic_core import SchemaValidator, core_schema

from harness.core import (
    ActionRecord,
    ActionSpec,
    HumanDecision,
    ModelError,
    ModeResult,
    RunContext,
    UserInputError,
    crash_point,
)
from modes.prompting import decision_line, observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step
from modes.react import ANSWER, INSTRUCTIONS  # the same request as ReAct's: only the loop around it differs
from modes.runtimes.base import StepLimitReached, stop_for_approval
from modes.runtimes.own_code import wrong_return

STATE_FILE = "pydantic_ai_state.json"  # in ctx.state_dir: the message history and the approvals it waits for
STATE_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class PendingApproval:
    """A tool call PydanticAI deferred for approval: what the saved state needs to answer it later."""

    tool_call_id: str
    tool: str
    gate: str
    step: int

    def as_json(self) -> dict[str, Any]:
        return {"tool_call_id": self.tool_call_id, "tool": self.tool, "gate": self.gate, "step": self.step}


@dataclasses.dataclass(frozen=True)
class SavedState:
    """What a suspended run leaves in its state folder: the history up to the deferred call, and that call."""

    history: list[ModelMessage]
    pending: tuple[PendingApproval, ...]


Factory = Callable[[Any, Any], Any]  # a user's own agent: build(tools, model) -> Agent (--mode FILE.py:FACTORY)


async def start(ctx: RunContext, factory: Factory | None = None) -> ModeResult:
    """Runs the agent from the scenario's task to its end, or to a suspension that raises out of ``ctx.suspend``."""
    return await drive(ctx, None, None, factory)


async def resume(ctx: RunContext, decision: HumanDecision, factory: Factory | None = None) -> ModeResult:
    """Continues from the saved history with the decision as PydanticAI's deferred tool results."""
    saved = load_state(ctx)
    gates = {p.gate for p in saved.pending}
    if decision.gate not in gates:
        raise UserInputError(
            f"{state_path(ctx)}: the saved PydanticAI run waits for {', '.join(sorted(gates))}, "
            f"not for '{decision.gate}'"
        )
    return await drive(ctx, saved.history, answer(ctx, saved.pending, decision), factory)


async def drive(
    ctx: RunContext,
    history: list[ModelMessage] | None,
    results: DeferredToolResults | None,
    factory: Factory | None = None,
) -> ModeResult:
    """Runs the agent until it finishes or uses its steps; at each deferred approval, saves, asks and suspends."""
    agent = build_agent(ctx) if factory is None else own_agent(ctx, factory)
    finish = ctx.scenario.finish_action.name
    while True:
        try:
            run = await agent.run(
                ctx.scenario.task.strip() if history is None else None,
                message_history=history,
                deferred_tool_results=results,
            )
        except StepLimitReached as spent:
            return spent.end(ctx)
        except UnexpectedModelBehavior as exc:  # PydanticAI gave up on the model's answers (its retries are spent)
            raise ModelError("schema", f"PydanticAI: {exc}") from exc
        history = run.all_messages()
        steps = call_steps(history)
        output = run.output
        if not isinstance(output, DeferredToolRequests):
            last = [c for c in tool_calls(history) if c.tool_name == finish]
            ctx.decide(steps[last[-1].tool_call_id] if last else len(steps), "framework", finish, "run_finished")
            return ModeResult("finished")
        results = await settle(ctx, history, output, steps)


async def settle(
    ctx: RunContext, history: list[ModelMessage], requests: DeferredToolRequests, steps: dict[str, int]
) -> DeferredToolResults:
    """The answer to PydanticAI's deferred call (the model port makes one call a turn, so at most one is deferred).

    The state is saved, then the gateway is asked for the gate's approval (a recorded wait). A request the gateway
    blocks is denied at once with the gateway's reason; a recorded one suspends: nobody to decide ends the run here
    (``Suspended``), a decision in this run answers the call.
    """
    (call,) = requests.approvals
    spec = ctx.scenario.action_map.get(call.tool_name)
    if spec is None or spec.gate is None or ctx.approved(spec.gate):  # an agent's own requires_approval: a person
        step, gate_named = steps.get(call.tool_call_id, 0), spec.gate if spec is not None else None
        if gate_named is None:
            ctx.decide(step, "framework", call.tool_name, "review_answered", {"gate": None, "answer": "approve"})
        return DeferredToolResults(approvals={call.tool_call_id: ToolApproved()})
    gate = spec.gate
    pending = PendingApproval(call.tool_call_id, call.tool_name, gate, steps[call.tool_call_id])
    ctx.decide(pending.step, "framework", call.tool_name, "approval_required", {"gate": gate, "id": call.tool_call_id})
    save_state(ctx, history, (pending,))  # saved before the gateway is asked
    decision = stop_for_approval(
        ctx, gate, step=pending.step, detail={"tool": call.tool_name, "id": call.tool_call_id}, action=call.tool_name
    )
    if isinstance(decision, ActionRecord):
        return DeferredToolResults(approvals={call.tool_call_id: deny(ctx, pending, observation_line(decision))})
    return answer(ctx, (pending,), decision)


def answer(ctx: RunContext, pending: Sequence[PendingApproval], decision: HumanDecision) -> DeferredToolResults:
    """A decision at a gate as PydanticAI's results: its calls approved once the gate is open, else denied with the
    reviewer's note (a revision request leaves the gate closed)."""
    approvals: dict[str, ToolApproved | ToolDenied] = {}
    for call in pending:
        if decision.decision == "approve" and ctx.approved(call.gate):
            ctx.decide(call.step, "framework", call.tool, "tool_approved", {"gate": call.gate, "id": call.tool_call_id})
            approvals[call.tool_call_id] = ToolApproved()
        else:
            approvals[call.tool_call_id] = deny(ctx, call, decision_line(call.step, decision))
    return DeferredToolResults(approvals=dict(approvals))


def deny(ctx: RunContext, call: PendingApproval, why: str) -> ToolDenied:
    ctx.decide(call.step, "framework", call.tool, "tool_denied", {"gate": call.gate, "id": call.tool_call_id})
    return ToolDenied(why)


# ---------------------------------------------------------------- the agent on bench's ports


def build_agent(ctx: RunContext) -> Agent[None, Any]:
    """A PydanticAI agent whose model is bench's model and whose tools are the scenario's actions."""
    finish = ctx.scenario.finish_action
    agent: Agent[None, Any] = Agent(
        FunctionModel(bench_model(ctx), model_name=f"bench:{ctx.model.label}"),
        output_type=[
            ToolOutput(StructuredDict(own(finish.args), name=finish.name), name=finish.name),
            DeferredToolRequests,
        ],
        toolsets=[scenario_toolset(ctx)],
        # PydanticAI's retry budget (an unknown tool, an unreadable output) never ends the run before the step limit
        retries=ctx.limits.max_steps,
        name="bench",
    )
    agent.instrument = False  # the framework's own telemetry stays off
    return agent


def scenario_toolset(ctx: RunContext) -> ApprovalRequiredToolset[None]:
    """The scenario's task and wait actions as one toolset, a call requiring approval while its gate is closed."""
    scenario = ctx.scenario
    tools = [action_tool(ctx, spec) for spec in scenario.actions if spec.kind in ("task", "wait")]

    def needs_approval(run: ToolContext[None], tool: ToolDefinition, args: dict[str, Any]) -> bool:
        spec = scenario.action_map.get(tool.name)
        return spec is not None and spec.gate is not None and not ctx.approved(spec.gate)

    return ApprovalRequiredToolset(FunctionToolset(tools), approval_required_func=needs_approval)


def own_agent(ctx: RunContext, factory: Factory) -> Agent[None, Any]:
    """A user's own agent, built by its factory on bench's toolset and model (its telemetry off)."""
    model = FunctionModel(bench_model(ctx), model_name=f"bench:{ctx.model.label}")
    built = factory(scenario_toolset(ctx), model)
    if not isinstance(built, Agent):
        raise wrong_return(built, "a PydanticAI Agent")
    built.instrument = False
    return built


def bench_model(ctx: RunContext) -> Any:
    """The FunctionModel's function: bench's model proposes the next action from the observations in the history."""
    scenario = ctx.scenario
    offered = [spec.name for spec in scenario.actions]
    system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
    schema = next_action_schema(scenario.actions)

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        steps = call_steps(messages)
        trace_refusals(ctx, messages, steps)
        step = len(steps) + 1
        prompt = [system, user_message(observations(messages, steps), "Choose the next action.")]
        reply = await ctx.propose("next_action", prompt, schema, offered, step=step)
        proposal = read_step(reply.proposal)
        if step > ctx.limits.max_steps and proposal.action != scenario.finish_action.name:
            raise StepLimitReached(step, proposal.action)
        usage = reply.usage
        finish = scenario.finish_action.name
        as_text = (
            proposal.action == finish and info.allow_text_output and finish not in {t.name for t in info.output_tools}
        )
        part = (
            TextPart(reply.text)
            if as_text
            else ToolCallPart(proposal.action, tool_args(proposal.args), tool_call_id=f"step-{step}")
        )
        return ModelResponse(
            parts=[part],
            usage=RequestUsage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                # a scripted model reports no tokens: PydanticAI must not estimate some
                unmeasured_requests=0 if usage.prompt_tokens or usage.completion_tokens else 1,
            ),
        )

    return respond


def tool_args(args: Any) -> dict[str, Any] | str:
    """A proposal's arguments as a tool call carries them: an object as it is, anything else as its JSON text (which
    PydanticAI reads back as the same value, and refuses: a tool takes an object)."""
    return args if isinstance(args, dict) else json.dumps(args)


def action_tool(ctx: RunContext, spec: ActionSpec) -> Tool[None]:
    """A scenario action as a PydanticAI tool: its body goes through the gateway and returns the observation."""
    allowed = [a.name for a in ctx.scenario.actions]

    async def call(run: ToolContext[None], **args: Any) -> str:
        step = call_steps(run.messages)[run.tool_call_id or ""]
        waited = answered_wait(ctx, spec, step)
        return waited or observation_line(ctx.act(spec.name, args, allowed=allowed, step=step))

    tool = Tool.from_schema(
        call, name=spec.name, description=spec.description, json_schema=own(spec.args), takes_ctx=True
    )
    # from_schema checks nothing, so arguments that are not an object would reach ``**args`` and crash the run:
    # checked as an object, anything else goes back to the model as PydanticAI's retry (the gateway checks the rest)
    tool.function_schema = dataclasses.replace(
        tool.function_schema, validator=SchemaValidator(core_schema.dict_schema())
    )
    return tool


def answered_wait(ctx: RunContext, spec: ActionSpec, step: int) -> str | None:
    """The result of a wait tool PydanticAI runs once its approval came: ``settle`` recorded that wait before the
    decision, so the decision is the tool's result and the gateway records no second wait (None: not that case)."""
    if spec.kind != "wait" or spec.gate is None:
        return None
    recorded = any(r.status == "wait_recorded" and r.gate == spec.gate and r.step == step for r in ctx.gateway.records)
    decided = [d.decision for d in ctx.gateway.decisions if d.decision.gate == spec.gate]
    return decision_line(step, decided[-1]) if recorded and decided else None


def own(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a scenario's schema for PydanticAI, which edits the schemas it is given (StructuredDict adds a
    title): the scenario stays as loaded, for other runs and for the digest a resume checks."""
    return copy.deepcopy(schema)


# ---------------------------------------------------------------- reading the message history


def tool_calls(messages: Sequence[ModelMessage]) -> list[ToolCallPart]:
    return [p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]


def call_steps(messages: Sequence[ModelMessage]) -> dict[str, int]:
    """Each tool call's step: its ordinal among the history's tool calls (the finish included)."""
    return {call.tool_call_id: number for number, call in enumerate(tool_calls(messages), start=1)}


def tool_returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def observations(messages: Sequence[ModelMessage], steps: dict[str, int]) -> list[str]:
    """What the agent has seen, as ReAct's observation lines: each tool's result, a denial, a framework refusal."""
    lines = []
    for part in tool_returns(messages):
        if part.outcome in ("success", "denied"):
            lines.append(str(part.content))
        else:
            lines.append(
                f"step {steps.get(part.tool_call_id, 0)}: {part.tool_name} -> refused by PydanticAI: "
                f"{part.model_response_str(wrap_if_error=False)}"
            )
    return lines


def trace_refusals(ctx: RunContext, messages: Sequence[ModelMessage], steps: dict[str, int]) -> None:
    """Traces the calls PydanticAI itself refused since the model last answered (an unknown tool, bad output)."""
    fresh: list[ModelMessage] = []
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            break
        fresh.append(message)
    for part in tool_returns(list(reversed(fresh))):
        if part.outcome not in ("success", "denied"):
            reason = part.model_response_str(wrap_if_error=False)
            ctx.decide(steps.get(part.tool_call_id, 0), "framework", part.tool_name, "refused", {"reason": reason})


# ---------------------------------------------------------------- the state a suspended run leaves


def state_path(ctx: RunContext) -> Path:
    if ctx.state_dir is None:
        raise UserInputError("mode 'pydantic_ai' resumes from its saved state, and this run has no state folder")
    return ctx.state_dir / STATE_FILE


def save_state(ctx: RunContext, history: list[ModelMessage], pending: Sequence[PendingApproval]) -> None:
    """Keeps the history and the deferred call under the run's stop number (the decisions given so far), beside the
    earlier stops', atomically (a temporary file, then a rename). A resume killed after it reached its next stop
    and before the trace says so is resumed again from the stop its decision belongs to, not the newer one.
    Nothing without a state folder (an in-memory run: the history stays in this process)."""
    if ctx.state_dir is None:
        return
    path = state_path(ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    stop = len(ctx.gateway.decisions)
    stops = {number: saved for number, saved in _read(path).get("stops", {}).items() if int(number) < stop}
    stops[str(stop)] = {
        "pending": [p.as_json() for p in pending],
        "history": ModelMessagesTypeAdapter.dump_python(history, mode="json"),
    }
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        json.dump({"format": STATE_FORMAT, "framework": "pydantic_ai", "stops": stops}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    crash_point()  # PydanticAI's history is saved: a kill point of the crash sweep


def load_state(ctx: RunContext) -> SavedState:
    """The history and deferred call of the stop the decision just given belongs to (the run's last decision); a
    missing or unreadable state is one line naming the file."""
    path = state_path(ctx)
    if not path.exists():
        raise UserInputError(f"{path}: no saved PydanticAI state to resume from")
    stop = len(ctx.gateway.decisions) - 1
    saved = _read(path).get("stops", {}).get(str(stop))
    if saved is None:
        raise UserInputError(f"{path}: no saved PydanticAI state for the run's stop {stop}")
    try:
        pending = tuple(
            PendingApproval(str(p["tool_call_id"]), str(p["tool"]), str(p["gate"]), int(p["step"]))
            for p in saved["pending"]
        )
        history = ModelMessagesTypeAdapter.validate_python(saved["history"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UserInputError(f"{path}: stop {stop} is not a saved PydanticAI state: {_first_line(exc)}") from None
    if not pending:
        raise UserInputError(f"{path}: the saved PydanticAI state of stop {stop} waits for no approval")
    return SavedState(history, pending)


def _read(path: Path) -> dict[str, Any]:
    """The state file's content ({} before the first stop); anything but this format is one line naming it."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserInputError(f"{path}: cannot read the saved PydanticAI state: {_first_line(exc)}") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT or not isinstance(data.get("stops"), dict):
        raise UserInputError(f"{path}: not a saved PydanticAI state of format {STATE_FORMAT}")
    return data


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
