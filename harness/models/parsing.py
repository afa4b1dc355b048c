"""Tolerant reading of a model's answer: the text of the reply, the JSON inside it, checked against the schema."""

from __future__ import annotations

import json
import re
from typing import Any

from jsonschema.exceptions import SchemaError

from harness.errors import ModelError
from harness.records.trace import Usage
from harness.scenario.json_schema import check_for

# A fenced block, with or without a language tag: models wrap JSON in these even when told not to.
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_OPENING = re.compile(r"[{\[]")


def message_text(body: Any) -> str:
    """The assistant's text in a chat-completions body; ``reasoning_content`` when ``content`` is empty.

    Reasoning models that think by default put the whole answer in ``reasoning_content`` and leave
    ``content`` empty (the article's pitfall table); the JSON is usually still there.
    """
    if not isinstance(body, dict):
        raise ModelError("parse", f"response is not a JSON object: {excerpt(body)}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError("parse", f"response has no choices: {excerpt(body)}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ModelError("parse", f"first choice has no message: {excerpt(choices[0])}")
    # reasoning_content: DeepSeek, vLLM, llama.cpp, DashScope; reasoning: Ollama's OpenAI compatibility.
    for field in ("content", "reasoning_content", "reasoning"):
        text = _text_of(message.get(field))
        if text.strip():
            return text
    reason = choices[0].get("finish_reason")
    raise ModelError("parse", f"empty content and no reasoning_content (finish_reason: {reason})")


def _text_of(value: Any) -> str:
    """A message field as text: a string, or the text parts of a list of content parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part["text"] for part in value if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


# Where each provider reports the finer counts (docs/live-models.md: provider profiles); the first one present wins.
REASONING_PATHS = (
    ("completion_tokens_details", "reasoning_tokens"),
    ("output_tokens_details", "reasoning_tokens"),
    ("reasoning_tokens",),
)
CACHED_PATHS = (
    ("prompt_tokens_details", "cached_tokens"),
    ("prompt_cache_hit_tokens",),
    ("input_tokens_details", "cached_tokens"),
    ("cached_tokens",),
)
MAX_COUNT = 2**53  # a count past this is no token count (and would not survive a float column)


def usage_of(body: Any) -> Usage:
    """Token counts from the body's ``usage``; zeros where it reports none.

    Reasoning and cached tokens are read wherever the provider reports them.
    """
    raw = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(raw, dict):
        return Usage()
    counts = {key: _count(raw.get(key)) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    for name, paths in (("reasoning_tokens", REASONING_PATHS), ("cached_tokens", CACHED_PATHS)):
        counts[name] = next((c for c in (_count(_at(raw, path)) for path in paths) if c is not None), None)
    found = {key: value for key, value in counts.items() if value is not None}
    if "total_tokens" not in found:
        found["total_tokens"] = found.get("prompt_tokens", 0) + found.get("completion_tokens", 0)
    return Usage(**found)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else None


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


_USAGE = re.compile(r'"usage"\s*:\s*(\{[^{}]{0,2000}(?:\{[^{}]{0,2000}\}[^{}]{0,2000}){0,8}\})')


def salvage_usage(text: str) -> Usage | None:
    """Token counts from the ``usage`` object of a body that cannot be read whole (cut, too deep, bad digits)."""
    for match in _USAGE.finditer(text):
        try:
            usage = json.loads(match.group(1))
        except (ValueError, RecursionError):
            continue
        if isinstance(usage, dict):
            return usage_of({"usage": usage})
    return None


def unreadable_reason(value: Any, max_depth: int) -> str | None:
    """Why a decoded JSON value cannot be carried on (nested past ``max_depth``, a lone surrogate), or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return "it holds a lone surrogate, which is not valid Unicode"
        elif isinstance(item, (dict, list)):
            if depth > max_depth:
                return f"it is nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((sub, depth + 1) for sub in item.values())
            else:
                stack.extend((sub, depth + 1) for sub in item)
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_PROPOSAL_DEPTH = 32


def fit_envelope(proposal: Any, schema: dict[str, Any]) -> Any:
    """A bare answer put into the schema's one-property envelope, which is what it means.

    Next-action schemas wrap the step as ``{"step": {...}}``; a model that was only prompted (no
    structured output) often answers the bare step. An answer without the envelope's property can
    never fit as it is, so wrapping it loses nothing and lets the schema check say what is wrong
    inside. Envelopes holding a list (a plan) are left alone: a bare object is no plan.
    """
    if not isinstance(proposal, dict) or not isinstance(schema, dict) or schema.get("type") != "object":
        return proposal
    required, properties = schema.get("required"), schema.get("properties")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(properties, dict):
        return proposal
    key = required[0]
    inner = properties.get(key)
    if key in proposal or not isinstance(inner, dict) or inner.get("type") == "array":
        return proposal
    return {key: proposal}


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the first balanced object in prose.

    Raw control characters inside strings are accepted (``strict=False``): llama.cpp's grammar lets a
    model put a newline inside a JSON string, and the value is still unambiguous.
    """
    stripped = text.strip()
    candidates = [stripped] + [block.strip() for block in _FENCE.findall(text)]
    for candidate in candidates:
        try:
            return _readable(json.loads(candidate, strict=False))
        except RecursionError:
            raise ModelError("parse", "the reply is nested too deeply to read") from None
        except ValueError:  # not JSON, or an integer past Python's 4,300-digit limit
            pass
    decoder = json.JSONDecoder(strict=False)
    # Prose around the JSON: the first opening bracket that starts a complete value wins. A bracket that
    # starts something malformed is skipped whole when it closes; when it never closes (a reply cut at
    # the token limit), everything after it is inside it, and an inner object must not pass for the answer.
    position = 0
    while (match := _OPENING.search(text, position)) is not None:
        start = match.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            close = _closing(text, start)
            if close is None:
                break
            position = close + 1
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value):
            return _readable(value)
        position = end
    raise ModelError("parse", f"no JSON value in the reply: {excerpt(text)}")


def _readable(value: Any) -> Any:
    """``value``, or a parse error when nothing downstream could carry it (too deep, a lone surrogate)."""
    reason = unreadable_reason(value, MAX_PROPOSAL_DEPTH)
    if reason is not None:
        raise ModelError("parse", f"the reply's JSON cannot be used: {reason}")
    return value


def _closing(text: str, start: int) -> int | None:
    """Where the bracket at ``start`` closes, minding JSON strings; None when it never does."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index
    return None


def check_schema(proposal: Any, schema: dict[str, Any]) -> None:
    """Raises a ``schema`` error naming the first problem when ``proposal`` does not fit ``schema``."""
    try:
        error = check_for(schema).first_error(proposal)
    except (ValueError, SchemaError) as exc:  # the mode's schema, not the model, is wrong
        raise ModelError("internal", f"invalid response schema: {exc}") from exc
    if error is not None:
        where, message = error
        raise ModelError("schema", f"reply does not fit the schema at {where or '(top level)'}: {message[:200]}")


def excerpt(value: Any, limit: int = 160) -> str:
    """A short one-line rendering of a value for an error message."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = repr(value)[: limit * 4]
    text = _SURROGATE.sub("\ufffd", " ".join(text[: limit * 4].split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."
