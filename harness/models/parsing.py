"""Tolerant reading of a model's answer: the text of the reply, the JSON inside it, checked against the schema."""

from __future__ import annotations

import json
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from harness.errors import ModelError
from harness.trace import Usage

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
    for field in ("content", "reasoning_content"):
        text = message.get(field)
        if isinstance(text, str) and text.strip():
            return text
    reason = choices[0].get("finish_reason")
    raise ModelError("parse", f"empty content and no reasoning_content (finish_reason: {reason})")


def usage_of(body: Any) -> Usage:
    """Token counts from the body's ``usage``; zeros when the endpoint reports none."""
    raw = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(raw, dict):
        return Usage()
    counts = {key: raw.get(key) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    counts = {key: value for key, value in counts.items() if isinstance(value, int) and value >= 0}
    if "total_tokens" not in counts:
        counts["total_tokens"] = counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
    return Usage(**counts)


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the first balanced object in prose.

    Raw control characters inside strings are accepted (``strict=False``): llama.cpp's grammar lets a
    model put a newline inside a JSON string, and the value is still unambiguous.
    """
    stripped = text.strip()
    candidates = [stripped] + [block.strip() for block in _FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate, strict=False)
        except json.JSONDecodeError:
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
        except json.JSONDecodeError:
            close = _closing(text, start)
            if close is None:
                break
            position = close + 1
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value):
            return value
        position = end
    raise ModelError("parse", f"no JSON value in the reply: {excerpt(text)}")


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
        validator = Draft202012Validator(schema)
    except SchemaError as exc:  # the mode's schema, not the model, is wrong
        raise ModelError("internal", f"invalid response schema: {exc.message}") from exc
    error = best_match(validator.iter_errors(proposal))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ModelError("schema", f"reply does not fit the schema at {where}: {error.message[:200]}")


def excerpt(value: Any, limit: int = 160) -> str:
    """A short one-line rendering of a value for an error message."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
