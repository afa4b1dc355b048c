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
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolRuntime
from pydantic import PrivateAttr

from harness.core import DONE, ActionSpec, RunContext, audit_hash
from modes.prompting import decision_line, observation_line, user_message
from modes.proposals import next_action_schema, read_step
from modes.runtimes.base import StepLimitReached
from modes.runtimes.langgraph_base import decision_of, gate_closed
from modes.runtimes.langgraph_calls import CallBook
from modes.runtimes.langgraph_driver import ask_approval

T = TypeVar("T")
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


class BenchChatModel(BaseChatModel):
    """A LangChain chat model answered by bench's model port (``ctx.propose``), one tool call a turn.

    It answers ``ainvoke`` and ``invoke`` alike: a graph's sync node runs in a worker thread, and its call is carried
    to the run's event loop. ``with_structured_output(schema)`` asks bench's model to fill the schema (a ``content``
    request). Tools bound to it that bench did not provide cannot be offered to bench's model: they are named in the
    run's trace (``tools_not_provided``), once per binding.
    """

    _ctx: RunContext = PrivateAttr()  # the run's context: private, so pydantic never validates or copies it
    _book: CallBook = PrivateAttr()
    _loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)

    def __init__(self, ctx: RunContext, book: CallBook | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._ctx, self._book = ctx, book or CallBook()
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

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
        """Offers the model these tools (by name; their schemas are the scenario's) and the finish action; a
        structured output's schema is kept whole, to be filled."""
        converted = [convert_to_openai_tool(tool)["function"] for tool in tools]
        structured = kwargs.pop("ls_structured_output_format", None)
        if structured is not None and len(converted) == 1:
            return self.bind(structured=converted[0], **kwargs)
        names = [function["name"] for function in converted]
        foreign = [name for name in names if name not in self._ctx.scenario.action_map]
        if foreign:
            detail = {"tools": foreign, "why": "bound to the model by the agent; not bench's, so never offered to it"}
            self._ctx.decide(self._ctx.trace.last_step, "framework", None, "tools_not_provided", detail)
        return self.bind(tools=names, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """A sync call (a graph's sync node, in LangGraph's worker thread): answered on the run's event loop."""
        return on_loop(self._loop, self._agenerate(messages, stop, None, **kwargs))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """Asks bench's model for the next action; its proposal as one tool call, or the finish as a final answer."""
        try:
            if "structured" in kwargs:
                return await self._fill(messages, kwargs["structured"])
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
        self._book.note(messages)
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
            raise StepLimitReached(step, proposal.action)
        else:
            args = proposal.args if isinstance(proposal.args, dict) else {NOT_AN_OBJECT: proposal.args}
            call = {"name": proposal.action, "args": args, "id": f"call_{step}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
            self._book.note([message])
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _fill(self, messages: list[BaseMessage], function: dict[str, Any]) -> ChatResult:
        """A structured output: bench's model fills the schema (a ``content`` request for it), given as the one tool
        call LangChain's parser reads."""
        name = str(function["name"])
        schema = function.get("parameters") or {"type": "object"}
        step = len(tool_calls_in(messages)) + 1
        shown = ActionSpec(name=_action_name(name), description=function.get("description") or name, args=schema)
        reply = await self._ctx.propose(
            "content", bench_prompt(messages), schema, [shown.name], step=step, catalog=[shown]
        )
        args = reply.proposal if isinstance(reply.proposal, dict) else {}
        call = {"name": name, "args": args, "id": f"structured_{step}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


def _action_name(name: str) -> str:
    """A schema's name as an action's (lower case, letters, digits and underscores)."""
    cleaned = re.sub(r"[^a-z0-9_]", "_", re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()).strip("_")
    return cleaned if cleaned[:1].isalpha() else f"output_{cleaned}"


def on_loop(loop: asyncio.AbstractEventLoop | None, work: Coroutine[Any, Any, T]) -> T:
    """Runs ``work`` on the run's event loop from a sync caller in another thread (LangGraph runs a sync node in a
    worker thread, its context copied, so ``interrupt()`` still finds its task) and waits for it."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is None or running is loop or loop.is_closed():
        work.close()
        raise RuntimeError(
            "bench's model and tools were called synchronously on the run's event loop: "
            "call them from a graph node (LangGraph runs a sync node in a worker thread)"
        )
    return asyncio.run_coroutine_threadsafe(work, loop).result()


def finished(message: BaseMessage) -> bool:
    """Whether the model's last turn is its final answer (no tool call): the scenario's finish action."""
    return isinstance(message, AIMessage) and not message.tool_calls


def graph_messages() -> list[Any]:
    """The conversation in the graph's state as the running node sees it, for a tool called without ``ToolNode``'s
    runtime (a node of the agent's own): read through the task's config (LangGraph's own reader, pinned version), so
    such a call's step is the same in the first run and in every resume. Outside a graph: none."""
    from langgraph._internal._constants import CONFIG_KEY_READ
    from langgraph.config import get_config

    try:
        read = get_config()["configurable"].get(CONFIG_KEY_READ)
        messages = read("messages") if callable(read) else None
    except (RuntimeError, KeyError, ValueError):
        return []
    return list(messages) if isinstance(messages, list) else []


def gateway_tools(ctx: RunContext, allowed: Sequence[str], book: CallBook | None = None) -> list[BaseTool]:
    """A LangChain tool for each of the scenario's actions but finish, every call through the gateway."""
    book = book or CallBook()
    return [gateway_tool(ctx, spec, allowed, book) for spec in ctx.scenario.actions if spec.kind != "finish"]


def gateway_tool(ctx: RunContext, spec: ActionSpec, allowed: Sequence[str], book: CallBook) -> BaseTool:
    """One action as a tool: a closed gate interrupts before the body runs; the body is ``ctx.act``.

    The arguments reach the gateway as the model wrote them (the schema is given to LangChain as JSON Schema, which
    it does not check): the gateway checks them, as for every mode. Run by ``ToolNode``, the call's id and the
    conversation come from its ``ToolRuntime``; called directly (a graph's own tool node, sync or async), the call
    is found in the run's ``book``. An approval given for this call with other arguments refuses it.
    """
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None

    async def call(runtime: ToolRuntime | None = None, **args: Any) -> str:
        given = args[NOT_AN_OBJECT] if set(args) == {NOT_AN_OBJECT} else args
        state = runtime.state if runtime is not None and isinstance(runtime.state, dict) else {}
        ident = runtime.tool_call_id if runtime is not None else None
        book.note(state.get("messages") or graph_messages())
        ident = ident or book.find(spec.name, args)
        messages = state.get("messages")
        step = step_of(messages, ident) if messages and ident else book.step_of(ident, spec.name, args)
        if ident is not None:
            book.ran.add(ident)
        told: list[str] = []
        if spec.gate is not None and gate_closed(ctx, state.get("open_gates"), spec.gate):
            answer = ask_approval(
                spec.gate, step, action=spec.name if spec.kind == "task" else None, call=ident, args=args
            )
            if "blocked" in answer:
                raise ToolException(answer["blocked"])
            decision = decision_of(spec.gate, answer)
            if decision.decision == "revise":
                return f"step {step}: {spec.name} -> sent back for revision: {decision.note}"
            if decision.decision == "reject":  # the tool's result is the refusal; the agent goes on
                return decision_line(step, decision)
            if ident is not None and answer.get("digest") not in (None, audit_hash(args)):
                book.approve(ident, str(answer["digest"]))
            told.append(decision_line(step, decision))
            if spec.kind == "wait":  # what it waited for is given: nothing more to record
                return "\n".join(told)
        if ident is not None and book.changed_since_approval(ident, args):
            detail = {"guard": "approval_binding", "call": ident, "reason": "approved with other arguments"}
            ctx.decide(step, "framework", spec.name, "refused", detail)
            raise ToolException(f"step {step}: {spec.name} -> refused: its approval was for other arguments")
        record = ctx.act(spec.name, given, allowed=allowed, step=step)
        told.append(observation_line(record))
        if record.status not in (*DONE, "wait_recorded"):
            raise ToolException("\n".join(told))
        return "\n".join(told)

    def call_sync(runtime: ToolRuntime | None = None, **args: Any) -> str:
        return on_loop(loop, call(runtime, **args))

    return StructuredTool.from_function(
        func=call_sync,
        coroutine=call,
        name=spec.name,
        description=spec.description,
        args_schema=spec.args,
        handle_tool_error=True,
    )
