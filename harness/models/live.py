"""The live backend: an httpx client for any OpenAI-compatible ``/chat/completions`` endpoint.

Every HTTP failure is translated here, in one place, into a classified attempt: ``network``,
``timeout``, ``http_4xx`` or ``http_5xx``. 429, 5xx, timeouts and connection errors are retried a
bounded number of times with exponential back-off and jitter, honouring ``Retry-After``; each
retried attempt is kept so the trace shows it. A 400 about a capability (``response_format``, the
schema, ``max_tokens``, ``temperature``, an optional parameter) makes the whole matrix step down
once (``capabilities``), recorded on the source and in the attempt. Reading the answer (``parse``,
``schema``) is ``exchange.interpret``'s job, so a replay reads a recorded answer the same way.

Bodies are streamed and never read past ``max_response_bytes``, so a huge answer costs bounded
memory. The API key only goes into a header; every string handed on is scrubbed of it (``scrub``).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from harness.choices import ResponseFormat
from harness.core.model_port import ModelReply, ModelRequest
from harness.models.capabilities import Adaptation, WireSettings, capability_change, error_message, initial_settings
from harness.models.endpoint import chat_completions_url
from harness.models.exchange import Exchange, WireAttempt, interpret
from harness.models.parsing import excerpt, salvage_usage, unreadable_reason
from harness.models.providers import RESPONSE_FORMATS, Profile, get_profile
from harness.models.scrub import REDACTED, Scrubber
from harness.models.strict import make_strict
from harness.records.trace import ErrorInfo

__all__ = [
    "REDACTED",
    "RESPONSE_FORMATS",
    "LiveConfig",
    "LiveModel",
    "LiveSource",
    "ResponseFormat",
    "chat_completions_url",
    "request_body",
]

JSON_CONTENT = {"Content-Type": "application/json"}
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # a chat answer is a few KB; 4 MB leaves room for long reasoning
ERROR_BODY_BYTES = 64 * 1024  # an error answer is only quoted, never parsed for a proposal
RAW_KEPT_CHARS = 2000  # of an unreadable body, what the exchange and the recording keep
MAX_BODY_DEPTH = 64  # a chat-completions body is a few levels deep; deeper is not an answer
ADAPTATIONS_PER_REQUEST = 6  # every step down is finite; this only bounds a confused endpoint
# A connection is made in well under a second when it is made at all: a host that takes longer is not there. The
# read timeout is --timeout (a long answer from a slow model is worth waiting for); it never exceeds it.
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class LiveConfig:
    """How to reach the endpoint and how to ask it. Built by the CLI from the environment and flags."""

    url: str  # the full /chat/completions URL (see endpoint.chat_completions_url)
    model: str
    api_key: str = field(default="", repr=False)  # repr=False: never in a log line or a traceback
    response_format: ResponseFormat | None = None  # None: the provider profile's documented form
    provider: str = "generic"  # a name from providers.PROFILES
    provider_note: str = ""  # how the provider was chosen (given, from the host, from /models, guessed)
    strict: bool = False  # OpenAI strict structured outputs (the strict subset of each schema)
    disable_thinking: bool = False  # sends the profile's thinking switch (generic: thinking: {"type": "disabled"})
    temperature: float = 0.7
    max_tokens: int = 512
    timeout_s: float = 120.0  # per attempt, the whole request included
    retries: int = 3  # extra attempts after the first, on 429, 5xx, timeouts and connection errors
    backoff_s: float = 1.0  # first back-off; doubles with each retry, with jitter
    max_wait_s: float = 60.0  # cap on any single wait, Retry-After included
    concurrency: int = 1  # requests in flight at once
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # a 2xx body is read up to here, then dropped as unreadable

    @property
    def profile(self) -> Profile:
        return get_profile(self.provider)

    def initial_settings(self) -> WireSettings:
        return initial_settings(self.profile, self.model, self.response_format, self.strict, self.disable_thinking)


SCHEMA_NOTE = "\n\nReply with one JSON object and nothing else. It must match this JSON schema: "


def request_body(
    config: LiveConfig, request: ModelRequest, seed: int, settings: WireSettings | None = None
) -> dict[str, Any]:
    """The JSON body for one request: messages, sampling, and the structured-output form the settings allow."""
    settings = settings or config.initial_settings()
    profile = config.profile
    messages = [dict(m) for m in request.messages]
    body: dict[str, Any] = {"model": config.model, "messages": messages}
    if settings.temperature:
        body["temperature"] = config.temperature
    body[settings.token_param] = config.max_tokens
    if "seed" not in settings.dropped:
        body["seed"] = seed % 2**31
    schema = request.response_schema
    in_prompt = False
    if settings.response_format == "json_schema":
        spec: dict[str, Any] = {"name": request.purpose, "schema": schema}
        if settings.strict:
            strict_schema, problems = make_strict(schema)
            if not problems:  # a schema that cannot be strict goes non-strict (the CLI named why, up front)
                spec = {"name": request.purpose, "schema": strict_schema, "strict": True}
        body["response_format"] = {"type": "json_schema", "json_schema": spec}
    elif settings.response_format == "json_object":
        if profile.json_object in ("schema", "both"):
            # llama.cpp's form: the schema becomes a grammar, so the reply always parses.
            body["response_format"] = {"type": "json_object", "schema": schema}
        else:
            # JSON mode (OpenAI, DeepSeek, DashScope): valid JSON only.
            body["response_format"] = {"type": "json_object"}
        # Where the schema is not (or may not be) enforced, the shape goes into the instructions too.
        in_prompt = profile.json_object in ("prompt", "both")
    else:
        in_prompt = True  # no structured output on this endpoint: the schema goes into the instructions
    if in_prompt:
        note = SCHEMA_NOTE + json.dumps(schema, sort_keys=True)
        target = next((m for m in messages if m.get("role") == "system"), messages[-1])
        target["content"] = target.get("content", "") + note
    if settings.thinking_off:
        for name, value in profile.thinking_off.items():
            if name not in settings.dropped:
                body[name] = value
    return body


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(config: LiveConfig, retry: int, rng: random.Random, retry_after: float | None) -> float:
    """The wait before retry number ``retry`` (0-based): Retry-After when given, else jittered doubling.

    Half of the doubled delay is fixed and half random, so parallel runs spread out but never hammer.
    """
    if retry_after is not None:
        return round(min(config.max_wait_s, retry_after), 3)
    delay = min(config.max_wait_s, config.backoff_s * 2**retry)
    return round(delay / 2 + rng.uniform(0, delay / 2), 3)


class LiveSource:
    """One shared HTTP client for a whole matrix, with a bound on requests in flight and the matrix's wire settings.

    ``adaptations`` lists every step down the endpoint forced (the run pipeline writes it into the
    manifest); ``notify`` is called with one line for each, for the CLI to print.
    """

    def __init__(
        self,
        config: LiveConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        notify: Callable[[str], None] | None = None,
    ):
        self.config = config
        self.label = config.model
        self.scrubber = Scrubber(config.api_key)
        self.settings = config.initial_settings()
        self.adaptations: list[Adaptation] = []
        self.last_error: str | None = None  # the message of the last request that failed, scrubbed
        self._transport, self._sleep, self._notify = transport, sleep, notify
        self._client: httpx.AsyncClient | None = None
        self._gate: asyncio.Semaphore | None = None

    def for_run(self, seed: int) -> LiveModel:
        return LiveModel(self, seed)

    def _session(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        # Created on first use, inside the running event loop that will also close it.
        if self._client is None or self._gate is None:
            limit = max(1, self.config.concurrency)
            self._client = httpx.AsyncClient(
                headers=auth_headers(self.config),
                transport=self._transport,
                timeout=httpx.Timeout(self.config.timeout_s, connect=min(self.config.timeout_s, CONNECT_TIMEOUT_S)),
                limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
            )
            self._gate = asyncio.Semaphore(limit)
        return self._client, self._gate

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def scrub(self, value: Any) -> Any:
        """``value`` with the API key replaced wherever, and in whatever encoding, it appears."""
        return self.scrubber.value(value)

    def adapt(
        self, used: WireSettings, body: dict[str, Any], status: int, text: str, request: ModelRequest
    ) -> str | None:
        """Steps the matrix's settings down for a capability refusal; what changed, or None when it is no such refusal.

        Runs with no await inside, so concurrent runs never adapt the same refusal twice: a request
        that was built before another one adapted is simply sent again with the new settings.
        """
        if self.settings != used:
            return "sent again with the settings an earlier refusal adapted"
        change = capability_change(used, body, status, text, tuple(self.config.profile.thinking_off))
        if change is None:
            return None
        self.settings, what, before, after = change
        meta = request.meta
        because = f"HTTP {status}: {excerpt(error_message(text), 200)}"
        adaptation = Adaptation(
            what=what,
            before=before,
            after=after,
            because=self.scrubber.truncated(because, 220),
            scenario=meta.scenario,
            mode=meta.mode,
            trial=meta.trial,
            step=meta.step,
        )
        self.adaptations.append(adaptation)
        if self._notify is not None:
            self._notify(adaptation.line())
        return f"adapted {what}: {before} -> {after}"

    def manifest_facts(self) -> dict[str, Any]:
        """What the run's manifest adds at the end: the settings the matrix ended with and every adaptation."""
        return {"adaptations": [a.model_dump() for a in self.adaptations], "wire_settings": self.settings.describe()}


def auth_headers(config: LiveConfig) -> dict[str, str]:
    """The key in the header the profile documents (Azure: ``api-key``); nothing without a key."""
    if not config.api_key:
        return {}
    if config.profile.auth == "api-key":
        return {"api-key": config.api_key}
    return {"Authorization": f"Bearer {config.api_key}"}


@dataclass(frozen=True)
class _Body:
    """A response read up to a cap."""

    status: int
    data: bytes
    truncated: bool
    retry_after: float | None
    cap: int
    decode_error: str | None = None  # the body's content encoding could not be undone


class LiveModel:
    """One run's view of the live endpoint: its seed (sampling and jitter) and the shared client."""

    def __init__(self, source: LiveSource, seed: int):
        self.source, self.seed = source, seed
        self.label = source.label
        self._rng = random.Random(seed)

    async def complete(self, request: ModelRequest) -> ModelReply:
        return interpret(request, await self.exchange(request))

    async def exchange(self, request: ModelRequest) -> Exchange:
        """Sends the request, adapting to capability refusals and retrying what is worth retrying.

        Never raises for an HTTP problem: the exchange says what happened.
        """
        source, config = self.source, self.source.config
        client, gate = source._session()
        attempts: list[WireAttempt] = []
        retry, adaptations = 0, 0
        while True:
            settings = source.settings
            body = request_body(config, request, self.seed, settings)
            payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")  # encoded once
            async with gate:
                started = time.monotonic()
                outcome = await self._post(client, payload)
                latency_ms = _elapsed_ms(started)
            if isinstance(outcome, _Body) and 200 <= outcome.status < 300:
                return self._answer(body, payload, attempts, outcome, latency_ms)
            kind, message, status, retry_after, retryable, text = self._classify(outcome)
            if status is not None and adaptations < ADAPTATIONS_PER_REQUEST:
                change = source.adapt(settings, body, status, text, request)
                if change is not None:
                    adaptations += 1
                    attempts.append(
                        WireAttempt(
                            kind=kind, message=f"{message}; {change}", latency_ms=latency_ms, wait_s=0.0, status=status
                        )
                    )
                    continue
            if not retryable or retry >= config.retries:
                return self._failure(body, attempts, kind, message, latency_ms)
            wait = backoff_seconds(config, retry, self._rng, retry_after)
            retry += 1
            attempts.append(WireAttempt(kind=kind, message=message, latency_ms=latency_ms, wait_s=wait, status=status))
            await source._sleep(wait)

    async def _post(self, client: httpx.AsyncClient, payload: bytes) -> _Body | _Failure:
        """One attempt: the response read up to its cap, or a classified transport failure."""
        config = self.source.config
        try:
            # asyncio.timeout bounds the whole request; httpx's own timeout bounds each read.
            async with asyncio.timeout(config.timeout_s):
                async with client.stream("POST", config.url, content=payload, headers=JSON_CONTENT) as response:
                    status = response.status_code
                    cap = config.max_response_bytes if 200 <= status < 300 else ERROR_BODY_BYTES
                    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                    try:
                        data, truncated = await _read_capped(response, cap)
                    except httpx.DecodingError as exc:
                        return _Body(status, b"", False, retry_after, cap, f"{type(exc).__name__}: {exc}")
                    return _Body(status, data, truncated, retry_after, cap)
        except (TimeoutError, httpx.TimeoutException) as exc:
            return "timeout", f"no answer within {config.timeout_s:g}s ({type(exc).__name__})", None, None, True
        except httpx.HTTPError as exc:
            return (
                "network",
                self.source.scrubber.text(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__),
                None,
                None,
                True,
            )

    def _classify(self, outcome: _Body | _Failure) -> tuple[str, str, int | None, float | None, bool, str]:
        """kind, scrubbed message, status, Retry-After, retryable, and the scrubbed error text of a failed attempt."""
        if not isinstance(outcome, _Body):
            kind, message, status, retry_after, retryable = outcome
            return kind, message, status, retry_after, retryable, ""
        scrubber = self.source.scrubber
        status = outcome.status
        text = scrubber.text(outcome.data.decode("utf-8", errors="replace"))
        kind = "http_4xx" if status < 500 else "http_5xx"
        message = scrubber.text(f"HTTP {status}: {excerpt(text)}")
        # 429 and 5xx may pass; any other 4xx (bad request, bad key, unknown model) will not.
        return kind, message, status, outcome.retry_after, status == 429 or status >= 500, text

    def _answer(
        self, body: dict[str, Any], payload: bytes, attempts: list[WireAttempt], got: _Body, latency_ms: float
    ) -> Exchange:
        """The exchange of a 2xx answer: its JSON, scrubbed.

        An unreadable answer keeps why, a scrubbed excerpt and any usage found.
        """
        scrubber = self.source.scrubber
        facts = {
            "request": scrubber.value(body) if scrubber.mentions(payload.decode("utf-8")) else body,
            "attempts": attempts,
            "latency_ms": latency_ms,
            "response_bytes": len(got.data),
            "max_response_bytes": got.cap,
            "truncated": got.truncated,
        }
        reason, text = got.decode_error, None
        if reason is None and got.truncated:
            reason = f"the body passed the {got.cap}-byte cap (--max-response-bytes) and was dropped there"
        if reason is None:
            try:
                text = got.data.decode("utf-8")
            except UnicodeDecodeError:
                reason = "the body is not valid UTF-8"
        if reason is None and text is not None:
            try:
                parsed = json.loads(text)
            except RecursionError:
                reason = "the body is nested too deeply to read"
            except ValueError as exc:  # not JSON, or an integer past Python's 4,300-digit limit
                reason = f"the body is not JSON ({str(exc)[:100]})"
            else:
                reason = unreadable_reason(parsed, MAX_BODY_DEPTH)
                if reason is None:  # walked for the key only when its text may hold a piece of it
                    return Exchange(response=scrubber.answer(text, parsed), **facts)
        raw = text if text is not None else got.data.decode("utf-8", errors="replace")
        # Usage is read before anything is scrubbed or cut, so an unreadable answer still counts its tokens.
        usage = salvage_usage(raw)
        return Exchange(
            raw=scrubber.truncated(raw, RAW_KEPT_CHARS),
            unreadable=scrubber.text(reason or ""),
            salvaged_usage=usage,
            **facts,
        )

    def _failure(
        self, body: dict[str, Any], attempts: list[WireAttempt], kind: str, message: str, latency_ms: float
    ) -> Exchange:
        error = ErrorInfo(kind=kind, message=self.source.scrubber.text(message))
        self.source.last_error = error.message
        return Exchange(request=self.source.scrubber.value(body), attempts=attempts, error=error, latency_ms=latency_ms)


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The body up to ``cap`` bytes, and whether there was more; reading stops there, so memory stays bounded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = cap - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


# kind, message, HTTP status, Retry-After seconds, retryable
_Failure = tuple[str, str, int | None, float | None, bool]


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000.0, 3)
