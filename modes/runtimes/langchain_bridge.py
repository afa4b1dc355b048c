"""bench's two ports in LangChain's terms, for the LangGraph adapters: a chat model and the scenario's tools.

``BenchChatModel`` is a LangChain chat model whose every turn asks bench's model (scripted, replay, live, local)
through ``ctx.propose("next_action", ...)``: the conversation the framework keeps is rendered as bench's prompt (the
system text, then the tool results as observations), and the proposal comes back as an ``AIMessage`` with one tool
call, or, for the scenario's finish action, a final ``AIMessage`` without one. ``gateway_tools`` are LangChain tools
built from the scenario's actions; each body sends its call through the gateway (``ctx.act``) and returns the
observation, a blocked or failed call as the tool's error. A tool whose gate is closed asks for approval with
LangGraph's ``interrupt()`` before its body runs (``langgraph_driver.ask_approval``).

Each call's step is its ordinal among the tool calls of the conversation the graph saved, so a call LangGraph runs
again after a resume reaches the gateway under the same step and counts as a repeat (``repeated_side_effects``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolRuntime
from pydantic import PrivateAttr

from harness.core import DONE, ActionSpec, RunContext
from modes.prompting import decision_line, observation_line, user_message
from modes.proposals import next_action_schema, read_step
from modes.runtimes.langgraph_base import decision_of, gate_closed
from modes.runtimes.langgraph_driver import ask_approval

QUESTION = "Choose the next action."  # what the agent is asked each turn when the conversation asks nothing else
NOT_AN_OBJECT = "__bench_args__"  # carries arguments that are no JSON object through LangChain's dict-only tool call


def tool_calls_in(messages: Sequence[BaseMessage]) -> list[str]:
    """The ids of every tool call the conversation's AI messages made, in order."""
    return [call["id"] or "" for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]


def step_of(messages: Sequence[BaseMessage], call_id: str) -> int:
    """A tool call's step: its ordinal (from 1) among the conversation's tool calls; the same whenever it runs."""
    calls = tool_calls_in(messages)
    return calls.index(call_id) + 1 if call_id in calls else len(calls) + 1


def bench_prompt(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """The framework's conversation as bench's prompt: its system text, then one user turn with the tool results as
    observations and the latest human question."""
    system = "\n\n".join(str(m.text) for m in messages if isinstance(m, SystemMessage))
    observations = [str(m.text) for m in messages if isinstance(m, ToolMessage)]
    questions = [str(m.text) for m in messages if isinstance(m, HumanMessage)]
    prompt = [{"role": "system", "content": system}] if system else []
    return [*prompt, user_message(observations, questions[-1] if questions else QUESTION)]


class Escaped(Exception):
    """Carries a ``BaseException`` of bench's (a stop request, ``RunInterrupted``) out of LangChain's chat model call,
    which mistakes one for a result (langchain-core 1.8's ``agenerate`` reads ``.generations`` off it); the adapter
    raises ``inner`` again once the graph has given up."""

    def __init__(self, inner: BaseException):
        super().__init__(f"{type(inner).__name__} inside the chat model")
        self.inner = inner


class StepsSpent(Exception):
    """The model proposed an action after the run's ``max_steps`` tool calls: the graph stops, nothing is called.

    A finish is control, not a step: it is taken even then. Raised by the model, so the budget holds in any graph
    built around it (a user's own too).
    """

    def __init__(self, step: int, proposed: str):
        super().__init__(f"step {step}: '{proposed}' proposed after the last step")
        self.step, self.proposed = step, proposed


class BenchChatModel(BaseChatModel):
    """A LangChain chat model answered by bench's model port (``ctx.propose``), one tool call a turn."""

    _ctx: RunContext = PrivateAttr()  # the run's context: private, so pydantic never validates or copies it

    def __init__(self, ctx: RunContext, **kwargs: Any):
        super().__init__(**kwargs)
        self._ctx = ctx

    @property
    def _llm_type(self) -> str:
        return "bench"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Offers the model these tools (by name; their schemas are the scenario's) and the finish action."""
        names = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        return self.bind(tools=names, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("bench's model answers asynchronously: run the graph with ainvoke")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Asks bench's model for the next action; its proposal as one tool call, or the finish as a final answer."""
        try:
            return await self._ask(messages, **kwargs)
        except (Exception, asyncio.CancelledError):
            raise
        except BaseException as stop_signal:  # a stop request: LangChain would turn it into an AttributeError
            raise Escaped(stop_signal) from None

    async def _ask(self, messages: list[BaseMessage], **kwargs: Any) -> ChatResult:
        scenario = self._ctx.scenario
        finish = scenario.finish_action
        bound = set(kwargs.get("tools") or [spec.name for spec in scenario.actions])
        offered = [spec for spec in scenario.actions if spec.name in bound or spec is finish]
        taken = len(tool_calls_in(messages))
        step = taken + 1
        reply = await self._ctx.propose(
            "next_action",
            bench_prompt(messages),
            next_action_schema(offered),
            [spec.name for spec in offered],
            step=step,
        )
        proposal = read_step(reply.proposal)
        if proposal.action == finish.name:
            message = AIMessage(content=reply.text)
        elif taken >= self._ctx.limits.max_steps:
            raise StepsSpent(step, proposal.action)
        else:
            args = proposal.args if isinstance(proposal.args, dict) else {NOT_AN_OBJECT: proposal.args}
            call = {"name": proposal.action, "args": args, "id": f"call_{step}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def finished(message: BaseMessage) -> bool:
    """Whether the model's last turn is its final answer (no tool call): the scenario's finish action."""
    return isinstance(message, AIMessage) and not message.tool_calls


def gateway_tools(ctx: RunContext, allowed: Sequence[str]) -> list[BaseTool]:
    """A LangChain tool for each of the scenario's actions but finish, every call through the gateway."""
    return [gateway_tool(ctx, spec, allowed) for spec in ctx.scenario.actions if spec.kind != "finish"]


def gateway_tool(ctx: RunContext, spec: ActionSpec, allowed: Sequence[str]) -> BaseTool:
    """One action as a tool: a closed gate interrupts before the body runs; the body is ``ctx.act``.

    The arguments reach the gateway as the model wrote them (the schema is given to LangChain as JSON Schema, which
    it does not check): the gateway checks them, as for every mode.
    """

    async def call(runtime: ToolRuntime, **args: Any) -> str:
        state = runtime.state if isinstance(runtime.state, dict) else {}
        step = step_of(state.get("messages", []), runtime.tool_call_id or "")
        told: list[str] = []
        if spec.gate is not None and gate_closed(ctx, state.get("open_gates"), spec.gate):
            answer = ask_approval(spec.gate, step, action=spec.name if spec.kind == "task" else None)
            if "blocked" in answer:
                raise ToolException(answer["blocked"])
            decision = decision_of(spec.gate, answer)
            if decision.decision == "revise":
                return f"step {step}: {spec.name} -> sent back for revision: {decision.note}"
            told.append(decision_line(step, decision))
            if spec.kind == "wait":  # what it waited for is given: nothing more to record
                return "\n".join(told)
        given = args[NOT_AN_OBJECT] if set(args) == {NOT_AN_OBJECT} else args
        record = ctx.act(spec.name, given, allowed=allowed, step=step)
        told.append(observation_line(record))
        if record.status not in (*DONE, "wait_recorded"):
            raise ToolException("\n".join(told))
        return "\n".join(told)

    return StructuredTool.from_function(
        coroutine=call,
        name=spec.name,
        description=spec.description,
        args_schema=spec.args,
        handle_tool_error=True,
    )
