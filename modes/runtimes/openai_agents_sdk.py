"""The OpenAI Agents SDK side of the ``openai_agents`` mode: bench's two ports in the SDK's own types.

Imported only when the mode runs (``agents`` is the optional extra ``bench[openai-agents]``). The SDK's ``Runner``
drives the run; bench sits under it twice: the ``Model`` the agent talks to asks bench's model through
``ctx.propose``, and every tool's body goes through ``ctx.act``. Nothing here calls OpenAI: the model is bench's,
and the SDK's tracing is off (globally when this module is imported, and in every run's configuration).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import agents
from agents import Agent, FunctionTool, ModelResponse, RunConfig, RunContextWrapper, Runner, RunState, Usage
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
from agents.items import ToolApprovalItem, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from harness.core import ActionRecord, ActionSpec, HumanDecision, ModeResult, RunContext, UserInputError, crash_point
from modes.prompting import decision_line, observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step
from modes.react import ANSWER, step_limit
from modes.runtimes.base import StepLimitReached, stop_for_approval
from modes.runtimes.own_code import wrong_return

agents.set_tracing_disabled(True)  # takes precedence over OPENAI_AGENTS_DISABLE_TRACING, which bench sets too

STATE_FILE = "agents_run_state.json"  # the serialised RunState of a run waiting for an approval (its first stop)
AGENT_NAME = "bench_agent"  # one agent per run: RunState.from_string finds it again by this name
CALL_PREFIX = "bench_call_"  # a tool call's id is this and its ordinal in the run's conversation


def call_id(step: int) -> str:
    return f"{CALL_PREFIX}{step}"


def step_of(call: str) -> int:
    """The step a tool call belongs to: its ordinal in the conversation, written into its id by the model port."""
    if not call.startswith(CALL_PREFIX):
        raise ValueError(f"tool call id {call!r} was not made by bench's model port")
    return int(call.removeprefix(CALL_PREFIX))


def _item(item: Any) -> Mapping[str, Any]:
    return item if isinstance(item, Mapping) else {}


def conversation_calls(items: str | list[TResponseInputItem]) -> list[tuple[str, str]]:
    """Each tool call of the conversation, in order: (its name, what came back to the model; '' while pending)."""
    if isinstance(items, str):
        return []
    outputs = {
        _item(i).get("call_id"): str(_item(i).get("output", ""))
        for i in items
        if _item(i).get("type") == "function_call_output"
    }
    return [
        (str(_item(i).get("name")), outputs.get(_item(i).get("call_id"), ""))
        for i in items
        if _item(i).get("type") == "function_call"
    ]


class BenchModel(Model):
    """The SDK's model interface in front of bench's model: each turn is one ``next_action`` request.

    The step of a request is the ordinal of the tool call it may produce (the calls already in the conversation,
    plus one), so it stays the same when a run resumes from its saved state in another process. A proposed finish
    becomes the agent's final text message; any other action one function call, whose id carries its step.
    """

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.finished_at: int | None = None  # the step at which the model proposed finish

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        ctx, scenario = self.ctx, self.ctx.scenario
        calls = conversation_calls(input)
        step = len(calls) + 1
        system = system_message(scenario, system_instructions or "", scenario.actions, ANSWER)
        observations = [output for _, output in calls]
        messages = [system, user_message(observations, "Choose the next action.")]
        offered = [spec.name for spec in scenario.actions]
        reply = await ctx.propose("next_action", messages, next_action_schema(scenario.actions), offered, step=step)
        proposal = read_step(reply.proposal)
        usage = Usage(
            requests=1,
            input_tokens=reply.usage.prompt_tokens,
            output_tokens=reply.usage.completion_tokens,
            total_tokens=reply.usage.total_tokens,
        )
        if proposal.action == scenario.finish_action.name:
            self.finished_at = step
            text = ResponseOutputText(text=reply.text, type="output_text", annotations=[], logprobs=[])
            message = ResponseOutputMessage(
                id=f"bench_message_{step}", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=usage, response_id=None)
        if step > ctx.limits.max_steps:
            raise StepLimitReached(step, proposal.action)
        arguments = json.dumps(proposal.args, ensure_ascii=False)
        tool_call = ResponseFunctionToolCall(
            id=call_id(step), call_id=call_id(step), type="function_call", name=proposal.action, arguments=arguments
        )
        return ModelResponse(output=[tool_call], usage=usage, response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("bench runs the Agents SDK with Runner.run, never streamed")


class ScenarioTools:
    """One SDK function tool per task and wait action of the scenario, each running through the gateway.

    A tool whose gate is not open when the SDK plans the call needs approval: the SDK pauses the run before its
    body. ``waited`` holds the calls of wait tools whose wait the adapter already recorded when the SDK paused them;
    once approved, such a call's body reports the decision instead of recording the same wait again.
    """

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.offered = [spec.name for spec in ctx.scenario.actions]
        self.waited: dict[str, str] = {}  # call id -> what its body returns (the decision at its gate)
        self.tools = [self._tool(spec) for spec in ctx.scenario.actions if spec.kind in ("task", "wait")]

    def _tool(self, spec: ActionSpec) -> FunctionTool:
        async def invoke(tool_ctx: ToolContext[Any], raw: str) -> str:
            if tool_ctx.tool_call_id in self.waited:
                return self.waited[tool_ctx.tool_call_id]
            record = self.ctx.act(spec.name, _arguments(raw), allowed=self.offered, step=step_of(tool_ctx.tool_call_id))
            return observation_line(record)

        gate = spec.gate

        async def gate_closed(_run: RunContextWrapper[Any], _args: dict[str, Any], _call: str) -> bool:
            return gate is not None and not self.ctx.approved(gate)

        return FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=dict(spec.args),
            on_invoke_tool=invoke,
            strict_json_schema=False,  # the gateway checks the arguments against the scenario's schema
            needs_approval=gate_closed if gate is not None else False,
        )


def _arguments(raw: str) -> Any:
    """The call's arguments as the model wrote them; text that is no JSON goes to the gateway as it is (refused)."""
    try:
        return json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return raw


class AgentsRun:
    """One bench run as an SDK run: ``Runner.run`` until the agent's final message, settling every approval the SDK
    pauses for on the way (record the wait, save the state, suspend; then approve or reject and run again)."""

    def __init__(self, ctx: RunContext, instructions: str, factory: Callable[[Any, Any], Any] | None = None):
        self.ctx = ctx
        self.model, self.tools = BenchModel(ctx), ScenarioTools(ctx)
        if factory is None:
            self.agent: Agent[Any] = Agent(
                name=AGENT_NAME, instructions=instructions, model=self.model, tools=list(self.tools.tools)
            )
            return
        built = factory(list(self.tools.tools), self.model)  # a user's own agent (--mode FILE.py:FACTORY)
        if not isinstance(built, Agent):
            raise wrong_return(built, "an Agents SDK Agent")
        self.agent = built
        foreign = sorted({t.name for t in built.tools if getattr(t, "name", "") not in ctx.scenario.action_map})
        if foreign:
            detail = {"tools": foreign, "why": "the agent's own tools: not bench's, so never offered to its model"}
            ctx.decide(0, "framework", None, "tools_not_provided", detail)

    async def run(self) -> ModeResult:
        return await self._drive(self.ctx.scenario.task.strip())

    async def resume(self, decision: HumanDecision) -> ModeResult:
        """From the state saved at the stop: the decision goes to the call paused at its gate, then the SDK runs on."""
        ctx = self.ctx
        state = await load_state(self.agent, ctx.state_dir, len(ctx.gateway.decisions) - 1)  # the decision's stop
        paused = [item for item in state.get_interruptions() if self._gate(item) == decision.gate]
        if not paused:
            raise UserInputError(
                f"{ctx.state_dir}: the saved Agents SDK run state waits for no approval at gate '{decision.gate}'"
            )
        self._carry_out(state, paused[0], decision)
        return await self._drive(state)

    async def _drive(self, start: str | RunState[Any, Any]) -> ModeResult:
        ctx, scenario = self.ctx, self.ctx.scenario
        config = RunConfig(tracing_disabled=True, workflow_name="bench")
        max_turns = ctx.limits.max_steps + 2  # a model turn per action, one for the finish, one spare
        while True:
            try:
                result = await Runner.run(self.agent, start, run_config=config, max_turns=max_turns)
            except StepLimitReached as limit:
                return step_limit(ctx, limit.step, limit.proposed)
            except MaxTurnsExceeded:  # not reached while the model port keeps to the step limit; the SDK's own cap
                ctx.decide(ctx.trace.last_step, "framework", None, "step_limit", {"max_turns": max_turns})
                return ModeResult("step_limit")
            except ModelBehaviorError as exc:  # e.g. a call to a tool the agent does not have: the SDK ends the run
                ctx.fail(ctx.trace.last_step, "framework", "Runner.run", "schema", str(exc))
                return ModeResult("error")
            if not result.interruptions:
                step = self.model.finished_at or ctx.trace.last_step
                ctx.decide(step, "framework", scenario.finish_action.name, "run_finished")
                return ModeResult("finished")
            state = result.to_state()
            for item in state.get_interruptions():
                self._settle(state, item)
            start = state

    def _settle(self, state: RunState[Any, Any], item: ToolApprovalItem) -> None:
        """One call the SDK paused for approval: the wait goes into the gateway's record, then the run stops there.

        A wait tool records its own wait (the model proposed it); a gated task asks for its gate's approval. When
        nobody can be asked (the request is blocked), the call goes back to the model as refused, with the reason.
        """
        ctx, spec, call = self.ctx, self._spec(item), _call_id(item)
        step = step_of(call)
        if spec is None or spec.gate is None:  # an agent's own needs_approval where no gate is: approved, as a person
            ctx.decide(step, "framework", item.tool_name, "review_answered", {"gate": None, "answer": "approve"})
            state.approve(item)
            return
        gate = spec.gate
        if ctx.approved(gate):  # an agent's own needs_approval where the gate is open already: approved
            state.approve(item)
            return
        waited = (
            ctx.act(spec.name, _arguments(_raw_arguments(item)), allowed=self.tools.offered, step=step)
            if spec.kind == "wait"
            else None
        )
        decision = stop_for_approval(
            ctx,
            gate,
            step=step,
            detail={"tool": spec.name, "call_id": call},
            action=spec.name,
            wait=waited,
            save=lambda: save_state(state, ctx.state_dir, len(ctx.gateway.decisions)),
        )
        if isinstance(decision, ActionRecord):
            ctx.decide(step, "framework", spec.name, "refused", {"guard": "gate_closed", "reason": decision.reason})
            state.reject(item, rejection_message=observation_line(decision))
            return
        self._carry_out(state, item, decision)

    def _carry_out(self, state: RunState[Any, Any], item: ToolApprovalItem, decision: HumanDecision) -> None:
        """A decision at a paused call, in the SDK's terms: approve it, or reject it with the reviewer's note."""
        call = _call_id(item)
        note = decision_line(step_of(call), decision)
        spec = self._spec(item)
        if decision.decision == "approve":
            if spec is not None and spec.kind == "wait":
                self.tools.waited[call] = note  # its wait is in the gateway's record already
            state.approve(item)
        else:
            state.reject(item, rejection_message=note)

    def _spec(self, item: ToolApprovalItem) -> ActionSpec | None:
        return self.ctx.scenario.action_map.get(item.tool_name or "")

    def _gate(self, item: ToolApprovalItem) -> str | None:
        """The gate guarding a paused call's action (None: no gate does, or the tool is the agent's own)."""
        spec = self._spec(item)
        return spec.gate if spec is not None else None


def _call_id(item: ToolApprovalItem) -> str:
    return str(_item(item.raw_item).get("call_id") or getattr(item.raw_item, "call_id", ""))


def _raw_arguments(item: ToolApprovalItem) -> str:
    return str(_item(item.raw_item).get("arguments") or getattr(item.raw_item, "arguments", "") or "")


def state_file(stop: int) -> str:
    """The file of the run's stop ``stop`` (numbered by the decisions given before it): each stop keeps its own, so a
    resume killed after it saved its next stop, before the trace says so, is carried out again from the stop its
    decision belongs to, not from the newer one."""
    return STATE_FILE if stop == 0 else STATE_FILE.replace(".json", f".{stop}.json")


def save_state(state: RunState[Any, Any], folder: Path | None, stop: int) -> None:
    """The run state at stop ``stop``, written whole or not at all (a temporary file, then a rename), when the run
    has a folder."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / state_file(stop)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state.to_json()), encoding="utf-8")
    os.replace(temporary, path)
    crash_point()  # the SDK's state is saved: a kill point of the crash sweep


async def load_state(agent: Agent[Any], folder: Path | None, stop: int) -> RunState[Any, Any]:
    """The run state saved when the run suspended at stop ``stop``; missing: one line naming the file."""
    path = (folder / state_file(stop)) if folder is not None else None
    if path is None or not path.is_file():
        raise UserInputError(f"{path or state_file(stop)}: no saved Agents SDK run state; the run cannot be resumed")
    return await RunState.from_string(agent, path.read_text(encoding="utf-8"))
