"""An OpenAI-compatible chat-completions endpoint in front of bench's model: any OpenAI client drives on it.

Each request is one ``next_action`` request to the run's model (``ctx.propose``: scripted, replay, live or local;
traced, tokens counted). The request is bench's own prompt, built from what the agent sent: its system text, the
task and rules, the tools it offers (those that are scenario actions, and the finish), and the tool results in its
conversation, so a recording keys the same on every replay. The proposal comes back in the client's terms: a tool
call, or, for the finish, a final assistant message. The step of a request is the count of tool calls in the
conversation plus one, so it stays the same when a resumed agent sends the conversation so far again.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.core import ActionSpec, ModelError, RunContext
from modes.prompting import system_message, user_message
from modes.proposals import next_action_schema, read_step
from modes.react import ANSWER, INSTRUCTIONS
from modes.runtimes.process.responses import as_chat_tools, as_messages, response

MODEL_NAME = "bench"  # the one model the endpoint lists: whatever --model the run has answers as it


@dataclass(frozen=True)
class Turn:
    """One answer: a tool call (``action`` set) or a final message, with bench's count of the tokens."""

    step: int
    action: str | None
    arguments: str
    text: str
    usage: dict[str, int]


class ChatEndpoint:
    """Answers the agent's chat requests from the run's model; keeps what ends the run early (a step limit, a failed
    model call) for the mode to act on when the agent stops."""

    def __init__(self, ctx: RunContext, key: str, on_end: Callable[[], None]):
        self.ctx, self.key = ctx, key
        self.step_limit: tuple[int, str] | None = None  # (step, proposed action) past the run's last step
        self.failure: ModelError | None = None  # the model call that failed: the run ends with its error
        self.finished_at: int | None = None  # the step at which the model proposed the finish
        self.conversation: list[Any] = []  # the last conversation the agent sent, with bench's answer
        self._on_end = on_end

    async def turn(self, messages: list[Any], tools: list[Any]) -> Turn:
        ctx, scenario = self.ctx, self.ctx.scenario
        names = {_tool_name(tool) for tool in tools}
        offered = [spec for spec in scenario.actions if spec.kind == "finish" or _offered_as(spec, names)]
        step = sum(len(m.get("tool_calls") or []) for m in messages if _role(m) == "assistant") + 1
        system = "\n\n".join(_text(m.get("content")) for m in messages if _role(m) in ("system", "developer"))
        observations = [_text(m.get("content")) for m in messages if _role(m) == "tool"]
        prompt = [
            system_message(scenario, system or INSTRUCTIONS, offered, ANSWER),
            user_message(observations, "Choose the next action."),
        ]
        reply = await ctx.propose(
            "next_action", prompt, next_action_schema(offered), [spec.name for spec in offered], step=step
        )
        proposal = read_step(reply.proposal)
        usage = {
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
            "total_tokens": reply.usage.total_tokens,
        }
        if proposal.action == scenario.finish_action.name or proposal.action not in {s.name for s in offered}:
            self.finished_at = step
            text = json.dumps(proposal.args, ensure_ascii=False) if proposal.args else "done"
            return Turn(step, None, "", text, usage)
        if step > ctx.limits.max_steps:  # the run's steps are spent: the agent is told to stop, and is stopped
            self.step_limit = (step, proposal.action)
            self._on_end()
            return Turn(step, None, "", f"the run's {ctx.limits.max_steps} steps are spent", usage)
        name = next(n for n in sorted(names) if _offered_as_name(proposal.action, n))
        return Turn(step, name, json.dumps(proposal.args, ensure_ascii=False), "", usage)

    async def completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: a tool call or the final message, streamed when asked."""
        body = await self._read(request, "messages")
        if isinstance(body, Response):
            return body
        turn = await self._turn(body["messages"], list(body.get("tools") or []))
        if isinstance(turn, Response):
            return turn
        answer = _completion(turn, str(body.get("model") or MODEL_NAME))
        self.conversation = [*body["messages"], answer["choices"][0]["message"]]
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(_chunks(answer, usage), media_type="text/event-stream")
        return JSONResponse(answer)

    async def responses(self, request: Request) -> Response:
        """``POST /v1/responses`` (the Responses API, the OpenAI Agents SDK's default), not streamed."""
        body = await self._read(request, "input")
        if isinstance(body, Response):
            return body
        if body.get("stream"):
            return _error(400, "invalid_request_error", "stream: bench's Responses endpoint answers whole responses")
        messages = as_messages(body)
        turn = await self._turn(messages, as_chat_tools(body.get("tools")))
        if isinstance(turn, Response):
            return turn
        model = str(body.get("model") or MODEL_NAME)
        answer = response(turn.step, turn.action, turn.arguments, turn.text, turn.usage, model)
        self.conversation = [*messages, _completion(turn, model)["choices"][0]["message"]]  # in chat form
        return JSONResponse(answer)

    async def _read(self, request: Request, required: str) -> dict[str, Any] | Response:
        """The request's JSON body, or the error response for a wrong key, a bad body or a run that has ended."""
        if request.headers.get("authorization", "") != f"Bearer {self.key}":
            return _error(401, "invalid_api_key", "the key is the run's OPENAI_API_KEY")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid_request_error", "the body is not JSON")
        if not isinstance(body, dict) or body.get(required) is None:
            return _error(400, "invalid_request_error", f"{required}: required")
        if required == "messages" and not isinstance(body["messages"], list):
            return _error(400, "invalid_request_error", "messages: a list is required")
        if self.failure is not None or self.step_limit is not None:
            return _error(409, "run_ended", "the run has ended")
        return body

    async def _turn(self, messages: list[Any], tools: list[Any]) -> Turn | Response:
        try:
            return await self.turn(messages, tools)
        except ModelError as exc:
            self.failure = exc
            self._on_end()
            return _error(502, "model_error", f"bench's model failed: {exc}")

    async def models(self, _request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "bench"}]})

    def routes(self) -> list[Route]:
        return [
            Route("/v1/chat/completions", self.completions, methods=["POST"]),
            Route("/v1/responses", self.responses, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ]


def _completion(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.action is not None:
        call = {"id": f"call_{turn.step}", "type": "function"}
        message["tool_calls"] = [{**call, "function": {"name": turn.action, "arguments": turn.arguments}}]
    return {
        "id": f"chatcmpl-bench-{turn.step}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if turn.action is not None else "stop"}
        ],
        "usage": turn.usage,
    }


async def _chunks(answer: dict[str, Any], usage: bool) -> AsyncIterator[str]:
    """The same answer as a stream: one chunk with the whole message, one with its finish reason, then done."""
    choice = answer["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **call} for call in delta["tool_calls"]]
    head = {key: answer[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    yield _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if usage:
        yield _sse({**head, "choices": [], "usage": answer["usage"]})
    yield "data: [DONE]\n\n"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": code, "code": code}}, status_code=status)


def _role(message: Any) -> str:
    return str(message.get("role", "")) if isinstance(message, dict) else ""


def _text(content: Any) -> str:
    """A message's content as text: a string (an MCP result a client passed on as JSON: its text parts), or the
    text of its parts."""
    if isinstance(content, str):
        try:
            parts = _parts(json.loads(content))
        except ValueError:
            parts = None
        return content if parts is None else "\n".join(parts)
    parts = _parts(content)
    return "\n".join(parts) if parts is not None else ("" if content is None else str(content))


def _parts(value: Any) -> list[str] | None:
    """The text parts of a content list or part (``{"type": "text", "text": ...}``); None for anything else."""
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return [value["text"]]
    if isinstance(value, list) and value and all(_parts(item) is not None for item in value):
        return [text for item in value for text in _parts(item) or []]
    return None


def _tool_name(tool: Any) -> str:
    function = tool.get("function") if isinstance(tool, dict) else None
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def _offered_as_name(action: str, name: str) -> bool:
    """Whether the client's tool ``name`` is the scenario action ``action`` (as is, or with a client's prefix)."""
    return name == action or name.endswith(f"_{action}")


def _offered_as(spec: ActionSpec, names: set[str]) -> bool:
    return spec.kind in ("task", "wait") and any(_offered_as_name(spec.name, name) for name in names)
