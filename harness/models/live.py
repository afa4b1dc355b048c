"""The live backend: an httpx client for any OpenAI-compatible ``/chat/completions`` endpoint.

Every HTTP failure is translated here, in one place, into a classified attempt: ``network``,
``timeout``, ``http_4xx`` or ``http_5xx``. 429, 5xx, timeouts and connection errors are retried a
bounded number of times with exponential back-off and jitter, honouring ``Retry-After``; each
retried attempt is kept so the trace shows it. Reading the answer (``parse``, ``schema``) is
``exchange.interpret``'s job, so a replay reads a recorded answer the same way.

The API key only ever goes into the Authorization header. It is scrubbed from every message and
every response body this module hands on, in case an endpoint echoes it back.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from datetime import UTC, datetime
from typing import Any, get_args

import httpx

from harness.models.base import ModelReply, ModelRequest
from harness.models.exchange import Exchange, WireAttempt, interpret
from harness.errors import UserInputError
from harness.manifest import LiveManifest
from harness.models.parsing import excerpt
from harness.spec import LiveOptions, ResponseFormat
from harness.trace import ErrorInfo

RESPONSE_FORMATS: tuple[str, ...] = get_args(ResponseFormat)
CHAT_PATH = "/chat/completions"
REDACTED = "[redacted]"


def chat_completions_url(url: str) -> str:
    """Accepts a base URL (``http://host:port/v1``) or the full ``.../chat/completions`` URL."""
    url = url.strip().rstrip("/")
    return url if url.endswith(CHAT_PATH) else url + CHAT_PATH


@dataclass(frozen=True)
class LiveConfig:
    """How to reach the endpoint and how to ask it. Built by the CLI from the environment and flags."""

    url: str  # the full /chat/completions URL (see chat_completions_url)
    model: str
    api_key: str = field(default="", repr=False)  # repr=False: never in a log line or a traceback
    response_format: ResponseFormat = "json_schema"
    disable_thinking: bool = False  # sends thinking: {"type": "disabled"} (the article's pitfall table)
    temperature: float = 0.7
    max_tokens: int = 512
    timeout_s: float = 120.0  # per attempt, the whole request included
    retries: int = 3  # extra attempts after the first, on 429, 5xx, timeouts and connection errors
    backoff_s: float = 1.0  # first back-off; doubles with each retry, with jitter
    max_wait_s: float = 60.0  # cap on any single wait, Retry-After included
    concurrency: int = 1  # requests in flight at once


def config_for(url: str, model: str, key: str, options: LiveOptions, concurrency: int, *, local: bool) -> LiveConfig:
    """The client's settings for an endpoint; the bundled model's server takes llama.cpp's json_object form."""
    if not url.startswith(("http://", "https://")):
        raise UserInputError("LLM_API_URL must start with http:// or https://")
    default_format: ResponseFormat = "json_object" if local else "json_schema"
    return LiveConfig(url=chat_completions_url(url), model=model, api_key=key,
                      response_format=options.response_format or default_format,
                      disable_thinking=options.disable_thinking, temperature=options.temperature,
                      max_tokens=options.max_tokens, timeout_s=options.timeout_s, retries=options.retries,
                      backoff_s=options.backoff_s, concurrency=concurrency)


def request_body(config: LiveConfig, request: ModelRequest, seed: int) -> dict[str, Any]:
    """The JSON body for one request: messages, sampling, and the structured-output option."""
    messages = [dict(m) for m in request.messages]
    body: dict[str, Any] = {"model": config.model, "messages": messages, "temperature": config.temperature,
                            "max_tokens": config.max_tokens, "seed": seed % 2**31}
    if config.response_format == "json_schema":
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": request.purpose, "schema": request.response_schema}}
    elif config.response_format == "json_object":
        # llama.cpp's form: the schema becomes a grammar, so the reply always parses.
        body["response_format"] = {"type": "json_object", "schema": request.response_schema}
    else:
        # No structured output on this endpoint: the schema goes into the instructions instead.
        note = ("\n\nReply with one JSON object and nothing else. It must match this JSON schema: "
                + json.dumps(request.response_schema, sort_keys=True))
        target = next((m for m in messages if m.get("role") == "system"), messages[-1])
        target["content"] = target.get("content", "") + note
    if config.disable_thinking:
        body["thinking"] = {"type": "disabled"}
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
    """One shared HTTP client for a whole matrix, with a bound on requests in flight."""

    def __init__(self, config: LiveConfig, *, transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.config = config
        self.label = config.model
        self._transport, self._sleep = transport, sleep
        self._client: httpx.AsyncClient | None = None
        self._gate: asyncio.Semaphore | None = None

    def for_run(self, seed: int) -> LiveModel:
        return LiveModel(self, seed)

    def _session(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        # Created on first use, inside the running event loop that will also close it.
        if self._client is None or self._gate is None:
            limit = max(1, self.config.concurrency)
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            self._client = httpx.AsyncClient(
                headers=headers, transport=self._transport, timeout=httpx.Timeout(self.config.timeout_s),
                limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
            )
            self._gate = asyncio.Semaphore(limit)
        return self._client, self._gate

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def manifest(self, *, local: bool) -> LiveManifest:
        """What a live run's manifest says about the endpoint and sampling; never the key."""
        config = self.config
        url = httpx.URL(config.url).copy_with(username=None, password=None, query=None)
        endpoint = str(url).replace(config.api_key, REDACTED) if config.api_key else str(url)
        found: dict[str, Any] = {}
        if local:
            # The model file and the inference engine decide what a recording holds.
            from harness.models.server import MODEL_FILE, engine_versions

            found = {"local_model_file": MODEL_FILE, "local_model_versions": engine_versions()}
        return LiveManifest(
            endpoint=endpoint, local_model=local, **found,
            sampling={"temperature": config.temperature, "max_tokens": config.max_tokens,
                      "response_format": config.response_format, "disable_thinking": config.disable_thinking,
                      "seed": "each run's seed"},
            client={"timeout_s": config.timeout_s, "retries": config.retries, "backoff_s": config.backoff_s,
                    "max_wait_s": config.max_wait_s, "concurrency": config.concurrency},
        )

    def scrub(self, value: Any) -> Any:
        """``value`` with the API key replaced wherever it appears."""
        key = self.config.api_key
        if not key:
            return value
        if isinstance(value, str):
            return value.replace(key, REDACTED)
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        return value


class LiveModel:
    """One run's view of the live endpoint: its seed (sampling and jitter) and the shared client."""

    def __init__(self, source: LiveSource, seed: int):
        self.source, self.seed = source, seed
        self.label = source.label
        self._rng = random.Random(seed)

    async def complete(self, request: ModelRequest) -> ModelReply:
        return interpret(request, await self.exchange(request))

    async def exchange(self, request: ModelRequest) -> Exchange:
        """Sends the request, retrying what is worth retrying; never raises for an HTTP problem."""
        source, config = self.source, self.source.config
        client, gate = source._session()
        body = request_body(config, request, self.seed)
        attempts: list[WireAttempt] = []
        for retry in range(config.retries + 1):
            async with gate:
                started = time.monotonic()
                outcome = await self._post(client, body)
                latency_ms = _elapsed_ms(started)
            if isinstance(outcome, httpx.Response):
                return self._answer(body, attempts, outcome, latency_ms)
            kind, message, status, retry_after, retryable = outcome
            if not retryable or retry == config.retries:
                return self._failure(body, attempts, kind, message, latency_ms)
            wait = backoff_seconds(config, retry, self._rng, retry_after)
            attempts.append(WireAttempt(kind=kind, message=source.scrub(message), latency_ms=latency_ms,
                                        wait_s=wait, status=status))
            await source._sleep(wait)
        raise AssertionError("unreachable: the last attempt always returns")

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response | _Failure:
        """One attempt: a 2xx response, or its classified failure and whether it is worth retrying."""
        config = self.source.config
        try:
            # asyncio.timeout bounds the whole request; httpx's own timeout bounds each read.
            async with asyncio.timeout(config.timeout_s):
                response = await client.post(config.url, json=body)
                await response.aread()
        except (TimeoutError, httpx.TimeoutException) as exc:
            return "timeout", f"no answer within {config.timeout_s:g}s ({type(exc).__name__})", None, None, True
        except httpx.TransportError as exc:
            return "network", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, None, None, True
        status = response.status_code
        if 200 <= status < 300:
            return response
        kind = "http_4xx" if status < 500 else "http_5xx"
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        # 429 and 5xx may pass; any other 4xx (bad request, bad key, unknown model) will not.
        return kind, f"HTTP {status}: {excerpt(response.text)}", status, retry_after, status == 429 or status >= 500

    def _answer(self, body: dict[str, Any], attempts: list[WireAttempt], response: httpx.Response,
                latency_ms: float) -> Exchange:
        scrub = self.source.scrub
        try:
            parsed = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return Exchange(request=body, attempts=attempts, raw=scrub(response.text[:2000]), latency_ms=latency_ms)
        return Exchange(request=body, attempts=attempts, response=scrub(parsed), latency_ms=latency_ms)

    def _failure(self, body: dict[str, Any], attempts: list[WireAttempt], kind: str, message: str,
                 latency_ms: float) -> Exchange:
        error = ErrorInfo(kind=kind, message=self.source.scrub(message))
        return Exchange(request=body, attempts=attempts, error=error, latency_ms=latency_ms)


# kind, message, HTTP status, Retry-After seconds, retryable
_Failure = tuple[str, str, int | None, float | None, bool]


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000.0, 3)
