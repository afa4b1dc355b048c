"""What the client sends an endpoint, and how it steps down, once per matrix, when the endpoint refuses a capability.

The wire settings start from the provider profile (and whether the model is a reasoning model).
When an endpoint answers 400 (or 422) about ``response_format``, the schema, ``max_tokens``,
``temperature`` or an optional parameter, ``capability_change`` names the next weaker setting:
json_schema strict, then json_schema, then json_object, then the schema in the prompt; the token
parameter the error asks for; the endpoint's default temperature; the optional parameter left out.
A 400 about anything else is not a capability: it stays an ``http_4xx`` error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.choices import ResponseFormat
from harness.models.providers import Profile, TokenParam

CAPABILITY_STATUSES = (400, 422)
# Words with which the documented error messages refuse a parameter or a value.
REFUSALS = (
    "unsupported",
    "not supported",
    "does not support",
    "doesn't support",
    "unrecognized",
    "unknown",
    "not allowed",
    "not permitted",
    "extra inputs",
    "unavailable",
    "invalid",
    "only the default",
    "not available",
    "cannot be used",
    "use '",
    "instead",
    "is not one of",
    "must be",
)
WEAKER_FORMAT: dict[str, ResponseFormat] = {"json_schema": "json_object", "json_object": "none"}
OPTIONAL_PARAMETERS = ("seed", "thinking", "enable_thinking", "chat_template_kwargs", "reasoning_effort")


@dataclass(frozen=True)
class WireSettings:
    """What goes into every request body right now; shared by the whole matrix and only ever made weaker."""

    response_format: ResponseFormat
    strict: bool
    token_param: TokenParam
    temperature: bool  # False: left out, the endpoint's default applies
    dropped: frozenset[str] = field(default_factory=frozenset)  # optional parameters the endpoint refused
    thinking_off: bool = False  # send the profile's switch that turns thinking off

    def describe(self) -> dict[str, Any]:
        return {
            "response_format": self.response_format,
            "strict": self.strict,
            "token_param": self.token_param,
            "temperature": "sent" if self.temperature else "endpoint default",
            "dropped": sorted(self.dropped),
            "thinking_off": self.thinking_off,
        }


def initial_settings(
    profile: Profile, model: str, response_format: ResponseFormat | None, strict: bool, disable_thinking: bool = False
) -> WireSettings:
    """The settings a profile documents for ``model``.

    A reasoning model gets its own token parameter and the default sampling.
    """
    reasoning = profile.is_reasoning(model)
    fmt = response_format or profile.response_format
    return WireSettings(
        response_format=fmt,
        strict=strict and fmt == "json_schema",
        token_param=profile.reasoning_token_param if reasoning else profile.token_param,
        temperature=not reasoning or "temperature" in profile.reasoning_sampling,
        thinking_off=disable_thinking,
    )


class Adaptation(BaseModel):
    """One step down, as the manifest and the model_retry event record it."""

    model_config = ConfigDict(frozen=True)

    what: str  # response_format, token_param, temperature or parameter
    before: str
    after: str
    because: str  # the endpoint's answer, scrubbed and cut
    scenario: str
    mode: str
    trial: int
    step: int

    def line(self) -> str:
        """The one line the CLI prints on stderr."""
        return (
            f"the endpoint refused {self.what} {self.before} ({self.because[:120]}); "
            f"using {self.after} for the rest of the matrix"
        )


def capability_change(
    settings: WireSettings, body: dict[str, Any], status: int, text: str, thinking_fields: tuple[str, ...] = ()
) -> tuple[WireSettings, str, str, str] | None:
    """The weaker settings a refusal asks for, with (what, before, after); None when it is not about a capability."""
    low = text.lower()
    # llama-cpp-python answers a request that fails its validation with a 500 that says so.
    if status not in CAPABILITY_STATUSES and not (status == 500 and "validation error" in low):
        return None
    param = _error_param(text)
    refused = any(word in low for word in REFUSALS)

    def named(name: str) -> bool:
        return param == name or re.search(rf"(?<![a-z_]){re.escape(name)}(?![a-z_])", low) is not None

    if (
        settings.token_param == "max_tokens"
        and named("max_tokens")
        and ("max_completion_tokens" in low or (refused and param == "max_tokens"))
    ):
        return (
            replace(settings, token_param="max_completion_tokens"),
            "token_param",
            "max_tokens",
            "max_completion_tokens",
        )
    if settings.token_param == "max_completion_tokens" and named("max_completion_tokens") and refused:
        return replace(settings, token_param="max_tokens"), "token_param", "max_completion_tokens", "max_tokens"
    if settings.temperature and "temperature" in body and named("temperature") and refused:
        return (
            replace(settings, temperature=False),
            "temperature",
            str(body["temperature"]),
            "the endpoint's default temperature",
        )
    # DashScope's open Qwen3 models refuse a non-streaming call unless enable_thinking is false.
    if not settings.thinking_off and any(named(name) for name in thinking_fields):
        return replace(settings, thinking_off=True), "thinking", "on", f"off ({', '.join(thinking_fields)})"
    for name in OPTIONAL_PARAMETERS:
        if name in body and name not in settings.dropped and named(name) and refused:
            return replace(settings, dropped=settings.dropped | {name}), "parameter", name, f"no {name}"
    about_format = any(word in low for word in ("response_format", "json_schema", "json_object", "schema", "'json'"))
    if about_format and (refused or "schema" in low):
        if settings.strict:
            return replace(settings, strict=False), "response_format", "json_schema strict", "json_schema (not strict)"
        weaker = WEAKER_FORMAT.get(settings.response_format)
        if weaker is not None:
            after = weaker if weaker != "none" else "none (the schema in the prompt)"
            return replace(settings, response_format=weaker), "response_format", settings.response_format, after
    return None


def _error(text: str) -> dict[str, Any]:
    """The ``error`` object of an OpenAI-style error body, or an empty one."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _error_param(text: str) -> str | None:
    """The ``param`` an OpenAI-style error body names, when it does."""
    param = _error(text).get("param")
    return param.lower() if isinstance(param, str) else None


def error_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the text itself."""
    message = _error(text).get("message")
    return message if isinstance(message, str) else text
