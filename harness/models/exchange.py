"""One model call as it went over the wire, and how it is read into a reply: shared by live, recording and replay.

The live client produces an ``Exchange``; a recording stores it; a replay loads it. All three read it
with ``interpret``, so a replay re-parses the recorded body with today's parsing code and gets
exactly what a live run would get from the same answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.core.model_port import Attempt, ModelReply, ModelRequest
from harness.errors import ModelError
from harness.models.parsing import check_schema, excerpt, extract_json, fit_envelope, message_text, usage_of
from harness.models.strict import drop_nulls
from harness.records.trace import ErrorInfo, Usage


class WireAttempt(BaseModel):
    """One failed attempt that was retried: its classified failure, its latency and the back-off after it."""

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str
    latency_ms: float
    wait_s: float
    status: int | None = None  # the HTTP status, when there was one


class Exchange(BaseModel):
    """A request body, the retried attempts, and the final answer or failure. Never holds a header or a key."""

    model_config = ConfigDict(frozen=True)

    request: dict[str, Any]  # the JSON body sent to /chat/completions
    attempts: list[WireAttempt] = []
    response: Any = None  # the endpoint's JSON body on a 2xx answer
    raw: str | None = None  # the start of the body's text when a 2xx answer could not be read
    unreadable: str | None = None  # why it could not be read (not JSON, too deep, over the cap, ...)
    salvaged_usage: Usage | None = None  # token counts found in an unreadable body, read before any scrubbing
    error: ErrorInfo | None = None  # the failure no retry fixed (network, timeout, http_4xx, http_5xx)
    latency_ms: float = 0.0  # of the last attempt
    response_bytes: int | None = None  # bytes of the 2xx body that were read
    max_response_bytes: int | None = None  # the cap the body was read under
    truncated: bool = False  # the body went on past the cap and was dropped there


def model_time_ms(exchange: Exchange) -> float:
    """What a recorded call cost the run in time: every failed attempt and the back-off after it, then the last."""
    return sum(a.latency_ms + 1000.0 * a.wait_s for a in exchange.attempts) + exchange.latency_ms


def finish_reason(body: Any) -> str | None:
    """Why the endpoint stopped generating (``stop``, ``length``, ...), when it says."""
    try:
        reason = body["choices"][0].get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def strict_request(body: Any) -> bool:
    """Whether the request asked for OpenAI's strict structured outputs (optional properties then come back as null)."""
    try:
        return body["response_format"]["json_schema"].get("strict") is True
    except (KeyError, TypeError, AttributeError):
        return False


def interpret(request: ModelRequest, exchange: Exchange) -> ModelReply:
    """The reply an exchange amounts to, or the classified ``ModelError`` it ends in.

    Whatever the body holds, reading it never ends in anything but a reply or a ``parse``/``schema``
    error that carries the call's tokens and latency: a model's unreadable answer is the model's.
    """
    failed = tuple(
        Attempt(kind=a.kind, message=a.message, latency_ms=a.latency_ms, wait_s=a.wait_s) for a in exchange.attempts
    )
    if exchange.error is not None:
        raise ModelError(exchange.error.kind, exchange.error.message, failed_attempts=failed)  # type: ignore[arg-type]
    if exchange.response is None:
        raw = exchange.raw or ""
        answer = ModelReply(
            proposal=None,
            text=raw[:500],
            usage=exchange.salvaged_usage or Usage(),
            latency_ms=exchange.latency_ms,
            failed_attempts=failed,
        )
        raise ModelError(
            "parse",
            f"response body unreadable ({exchange.unreadable or 'not JSON'}): {excerpt(raw)}",
            failed_attempts=failed,
            answer=answer,
        )
    usage = usage_of(exchange.response)
    text = ""
    try:
        try:
            text = message_text(exchange.response)
            proposal = extract_json(text)
            if strict_request(exchange.request):
                proposal = drop_nulls(proposal, request.response_schema)
            proposal = fit_envelope(proposal, request.response_schema)
            check_schema(proposal, request.response_schema)
        except (ModelError, MemoryError):
            raise
        except Exception as exc:  # RecursionError, ValueError, ...: an answer no reader could take is unreadable
            raise ModelError("parse", f"unreadable reply ({type(exc).__name__}: {str(exc)[:120]})") from exc
    except ModelError as exc:
        # The model did answer: its tokens and latency still count, so the error carries the answer.
        answer = ModelReply(
            proposal=None, text=text, usage=usage, latency_ms=exchange.latency_ms, failed_attempts=failed
        )
        message = str(exc)
        if text and finish_reason(exchange.response) == "length":
            message += " (the reply was cut at the token limit)"
        raise ModelError(exc.kind, message, failed_attempts=failed, answer=answer) from exc
    return ModelReply(proposal=proposal, text=text, usage=usage, latency_ms=exchange.latency_ms, failed_attempts=failed)
