"""Finds out a dead endpoint early: one request before a live matrix, and a stop when model calls keep failing.

Before the first run, ``preflight`` sends one tiny chat request. Nothing listening, an answer that is
not JSON (a web page, a proxy's error page), a 2xx without ``choices`` or a 404, 405 or 501 on the
chat completions path mean the URL is not an OpenAI-compatible endpoint: one line naming the URL asked
and what came back, exit 3, in seconds instead of a matrix of retried runs. A 429, a 5xx and a request
that times out are tried again with the run requests' own back-off and ``Retry-After`` rules (``--retries``
times) before anything is concluded: a busy endpoint answers 503 to a first request and then works.
The preflight's read timeout is short (``PREFLIGHT_READ_S``, or ``--timeout`` when that is shorter): its
request asks for one token, so an endpoint that accepts the connection and sends nothing back within it,
every try, is a silent endpoint: one line within a minute at the defaults (``--provider auto``'s ``/models`` listing
waits 5 s, then 4 tries of 10 s with waits of 0.5 to 4 s between them: about 52 s), not a matrix of 120-second waits.
Any other JSON answer (a 400 about a parameter, a 401, a 5xx or 429 still there after the retries) is an
endpoint that is there: the matrix starts and meets it the usual way.

During the matrix, ``FailureStreak`` stops taking new cells after ``limit`` model calls in a row failed at the
endpoint (``network``, ``timeout``, ``http_4xx``, ``http_5xx``: each run that ended so is one call that failed
after its retries); a run that made no model call at all (a workflow walking to its gate) neither counts nor
breaks the streak, and the runs in flight finish. ``DEFAULT_STOP_AFTER`` is 10: each of those calls already
retried its request (3 times by default, over several seconds), so ten in a row is an endpoint that stopped
answering, not a blip; ten is more than the runs in flight at any usual ``--concurrency`` (4 or 8), so one
short outage that fails every run in flight at once does not stop the matrix; and it is a minute or so at
concurrency 1 with the default retries, where a dead endpoint used to cost the whole matrix. An endpoint that
fails one call in five at random stops a matrix this way with a chance of 0.2^10 (1e-7) per run.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import httpx

from harness.errors import UserInputError
from harness.models.config import DEFAULT_STOP_AFTER
from harness.models.endpoint import public_url
from harness.models.live import CONNECT_TIMEOUT_S, LiveConfig, auth_headers, backoff_seconds, retry_after_seconds
from harness.models.parsing import excerpt
from harness.models.scrub import Scrubber

__all__ = ["DEFAULT_STOP_AFTER", "EndpointUnusable", "FailureStreak", "is_preflight", "preflight"]

ENDPOINT_ERRORS = ("network", "timeout", "http_4xx", "http_5xx")  # the infrastructure errors an endpoint causes
NOT_AN_ENDPOINT = (404, 405, 501)  # no chat completions here: a wrong path, a server that does not take POST
PREFLIGHT_MESSAGES = ({"role": "user", "content": "Reply with the word ok."},)  # test servers recognise it
PREFLIGHT_READ_S = 10.0  # one token asked for: an endpoint that is there sends it (or an error) well within this
BODY_BYTES = 64 * 1024  # an answer is only quoted, never kept
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class EndpointUnusable(UserInputError):
    """The URL does not answer like an OpenAI-compatible endpoint: one line naming it and what came back, exit 3."""

    exit_code = 3  # harness.matrix.pipeline.exit_status.INFRASTRUCTURE: nothing could be judged


def is_preflight(body: Any) -> bool:
    """Whether a request body is the preflight request (the test servers answer it apart from their script)."""
    return isinstance(body, dict) and body.get("messages") == list(PREFLIGHT_MESSAGES)


def preflight_body(config: LiveConfig) -> dict[str, Any]:
    """One request as small as a chat request can be: one message, one token, the profile's token parameter."""
    return {"model": config.model, "messages": list(PREFLIGHT_MESSAGES), config.initial_settings().token_param: 1}


def preflight(
    config: LiveConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Asks the endpoint once (and again, as run requests would, after a 429, a 5xx or a timeout); raises
    ``EndpointUnusable`` when it is no endpoint or stays silent, returns a note when it was only busy."""
    scrubber = Scrubber(config.api_key)
    asked = scrubber.text(public_url(config.url))

    def unusable(what: str) -> EndpointUnusable:
        return EndpointUnusable(
            f"{asked} does not look like an OpenAI-compatible endpoint: {scrubber.truncated(what, 300)} "
            "(check LLM_API_URL; bench probe shows what the endpoint supports)"
        )

    read_s = min(config.timeout_s, PREFLIGHT_READ_S)
    timeout = httpx.Timeout(read_s, connect=min(config.timeout_s, CONNECT_TIMEOUT_S))
    rng = random.Random(0)  # the jitter of the waits between tries, as a run's is seeded
    tries = config.retries + 1
    with httpx.Client(headers=auth_headers(config), timeout=timeout, transport=transport) as client:
        for retry in range(tries):
            last = retry == tries - 1
            try:
                with client.stream("POST", config.url, json=preflight_body(config)) as response:
                    data = _read_capped(response)
            except httpx.ConnectTimeout:
                raise unusable(f"no connection within {timeout.connect:g}s") from None
            except httpx.TimeoutException:
                if last:
                    raise EndpointUnusable(
                        f"{asked} accepted the connection but did not answer a one-token request within {read_s:g}s, "
                        f"{tries} times: a silent endpoint (check that its model is loaded and serving)"
                    ) from None
                sleep(backoff_seconds(config, retry, rng, None))
                continue
            except httpx.HTTPError as exc:
                raise unusable(
                    f"no connection ({type(exc).__name__}: {exc})" if str(exc) else type(exc).__name__
                ) from None
            status = response.status_code
            if status == 429 or (status >= 500 and status not in NOT_AN_ENDPOINT):  # what a run request retries
                if not last:
                    sleep(backoff_seconds(config, retry, rng, retry_after_seconds(response.headers.get("Retry-After"))))
                    continue
                if status == 429:
                    return f"the endpoint answered HTTP 429 (busy) {tries} times to a first request; starting anyway"
            return _judged(response, status, data.decode("utf-8", errors="replace"), unusable)
    return None  # not reached: the last try returns or raises


def _judged(
    response: httpx.Response, status: int, text: str, unusable: Callable[[str], EndpointUnusable]
) -> str | None:
    """What one answer says: None for an endpoint that is there, ``EndpointUnusable`` for anything else."""
    if status in NOT_AN_ENDPOINT:
        raise unusable(f"HTTP {status}, {_what_came_back(response, text)}")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        raise unusable(f"HTTP {status}, not JSON: {_what_came_back(response, text)}") from None
    if not isinstance(parsed, dict):
        raise unusable(f"HTTP {status}, JSON that is not an object: {excerpt(parsed, 120)}")
    if 200 <= status < 300 and not isinstance(parsed.get("choices"), list):
        raise unusable(f"HTTP {status} without choices: {excerpt(parsed, 120)}")
    return None


def _read_capped(response: httpx.Response) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= BODY_BYTES:
            break
    return b"".join(chunks)[:BODY_BYTES]


def _what_came_back(response: httpx.Response, text: str) -> str:
    """The kind of body, and its title (a web page) or its start; where a redirect points."""
    kind = response.headers.get("Content-Type", "no Content-Type").split(";")[0].strip() or "no Content-Type"
    where = response.headers.get("Location")
    moved = f", redirecting to {excerpt(where, 80)}" if where else ""
    title = _TITLE.search(text[:BODY_BYTES])
    if title:
        return f"{kind}{moved}, a web page titled {excerpt(title.group(1), 80)!r}"
    if not text.strip():
        return f"{kind}{moved}, an empty body"
    return f"{kind}{moved}: {excerpt(text, 120)}"


Cell = TypeVar("Cell")


class FailureStreak:
    """How many model calls in a row failed at the endpoint; past ``limit`` (0: never) the matrix stops."""

    def __init__(self, limit: int = 0):
        self.limit = limit
        self.kinds: list[str] = []  # the endpoint errors of the calls in the streak, in order
        self.stopped_by: tuple[int, str] | None = None  # the streak that tripped: how many calls, which errors
        self.cut = False  # a cell was left out because of it (a streak that ends the matrix stops nothing)
        self.last_error: Callable[[], str | None] = lambda: None  # the source's last error message, for the line

    @property
    def count(self) -> int:
        return len(self.kinds)

    @classmethod
    def for_run(cls, live: bool, limit: int) -> FailureStreak:
        """A streak for a matrix: only a live model's endpoint can fail this way."""
        return cls(limit if live else 0)

    def add(self, outcome: Any) -> None:
        """One finished run (a ``RunOutcome``): a run ended by an endpoint error is one more failed call, a run whose
        model calls all went through ends the streak, and a run with no model call (or an interrupted one) leaves
        it as it is."""
        if outcome.status == "interrupted":
            return
        kinds = sorted(k for k in outcome.errors if k in ENDPOINT_ERRORS) if outcome.status == "error" else []
        if outcome.stop_verdict == "infrastructure" and kinds:
            self.kinds.append(kinds[0])
        elif outcome.llm_calls or outcome.stop_verdict == "infrastructure":
            self.kinds = []  # a call that went through, or bench's own plumbing (a replay miss) in between
        if self.limit and self.count >= self.limit and self.stopped_by is None:
            self.stopped_by = (self.count, " and ".join(sorted(set(self.kinds))))

    def cells(self, cells: Iterable[Cell]) -> Iterator[Cell]:
        """The cells, until the streak trips: the workers then take no new run."""
        for cell in cells:
            if self.stopped_by is not None:
                self.cut = True
                return
            yield cell

    def line(self) -> str | None:
        """Why the matrix stopped early (None: it did not), for the manifest and stderr."""
        if self.stopped_by is None or not self.cut:
            return None
        count, kind = self.stopped_by
        last = self.last_error()
        said = f" (the last: {excerpt(last, 160)})" if last else ""
        return (
            f"stopped after {count} runs in a row ended in {kind}{said}; the rest of the matrix was not started "
            f"(--stop-after-failures {self.limit}; 0 never stops)"
        )
