"""The Responses API's shapes (what the OpenAI Agents SDK speaks by default) in chat-completions terms and back, so
the endpoint answers both from one model turn: input items become chat messages, the turn a response's output."""

from __future__ import annotations

from typing import Any


def as_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's instructions and input items as chat messages (text, function calls, their outputs)."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function"}
            call["function"] = {"name": item.get("name"), "arguments": item.get("arguments", "")}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output", "")})
        elif kind == "message":
            messages.append({"role": item.get("role", "user"), "content": item.get("content", "")})
    return messages


def as_chat_tools(tools: Any) -> list[dict[str, Any]]:
    """The request's function tools in chat-completions form (a name, a description, parameters)."""
    found = []
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("type") == "function":
            fields = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
            found.append({"type": "function", "function": fields})
    return found


def response(
    step: int, action: str | None, arguments: str, text: str, usage: dict[str, int], model: str
) -> dict[str, Any]:
    """One model turn as a Responses API response: a function call, or a final assistant message."""
    if action is not None:
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{step}", "call_id": f"call_{step}", "name": action}
        item |= {"arguments": arguments, "status": "completed"}
    else:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        item = {"type": "message", "id": f"msg_{step}", "role": "assistant", "status": "completed", "content": content}
    return {
        "id": f"resp_bench_{step}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": [item],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
