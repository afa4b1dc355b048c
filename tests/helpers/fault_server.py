"""A real local OpenAI-compatible HTTP server for the tests, scripted to misbehave in every way the client must survive.

Each request gets the next behaviour of a cyclic script. A good answer is built from the request's
response schema, so it always fits whatever the mode asked for. The preflight request a live matrix
starts with (``harness.models.dead_endpoint``) is answered at once and is no part of the script or the counts,
unless ``preflight`` names behaviours for it: the preflight requests get those in turn (counted apart, in
``preflights``), then good answers. ``silent`` accepts the request and never answers (until the server
stops); ``503_page`` is a proxy's plain-text 503.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.models.dead_endpoint import is_preflight

BEHAVIOURS = (
    "ok",
    "429",
    "500",
    "503",
    "hang",
    "malformed",
    "empty",
    "reasoning",
    "unknown_action",
    "fenced",
    "echo_key",
    "silent",
    "503_page",
)


def instance(schema: dict[str, Any]) -> Any:
    """A small value that fits ``schema`` (the subset the modes use: choices, objects, arrays, enums, scalars)."""
    if "anyOf" in schema:
        return instance(schema["anyOf"][0])
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if isinstance(kind, list):  # a nullable type (strict schemas): the first real one
        kind = next((k for k in kind if k != "null"), "null")
        if kind == "null":
            return None
    if kind == "object":
        props = schema.get("properties", {})
        return {key: instance(props[key]) for key in schema.get("required", []) if key in props}
    if kind == "array":
        return [instance(schema.get("items", {})) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return "text"


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    """The response schema a request carries, in either structured-output form."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    return fmt.get("schema", {"type": "object"})


def completion(content: str, *, reasoning: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fault-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
    }


def unknown_action(schema: dict[str, Any]) -> Any:
    """A well-formed answer naming an action nobody offered."""
    if "plan" in schema.get("properties", {}):
        return {"plan": [{"action": "launch_rockets", "args": {}}]}
    return {"action": "launch_rockets", "args": {}}


HOLD_LIMIT_S = 60.0


class FaultServer:
    """Serves the script on 127.0.0.1 at a free port, in threads; counts what it served and what it saw."""

    def __init__(
        self,
        script: list[str] | tuple[str, ...],
        *,
        hang_s: float = 2.0,
        hold_until: int = 0,
        delay_s: float = 0.0,
        preflight: list[str] | tuple[str, ...] = (),
    ):
        self.script = list(script)
        self._preflight = iter(preflight)
        # hang_s: how long "hang" holds its answer (cut short when the server stops). hold_until: each request is held
        # until this many are in flight at once (then none is held), so a concurrency bound is reached by events,
        # not by timing; a client that never gets there fails the test after HOLD_LIMIT_S instead of hanging.
        # delay_s: every answer waits this long first (a slow model), cut short when the server stops.
        self.hang_s, self.hold_until, self.delay_s = hang_s, hold_until, delay_s
        self.served: Counter[str] = Counter()
        self.preflights: Counter[str] = Counter()  # the preflight requests, by what they were answered
        self.authorizations: set[str] = set()
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.held_too_long = False
        self._lock = threading.Lock()
        self._full = threading.Event()
        self._closing = threading.Event()
        self._next = itertools.cycle(self.script)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = False  # server_close() joins every handler thread: nothing outlives the test
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # a hanging or held request answers now
        self._full.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                if is_preflight(body):  # a live matrix's first request: answered at once, outside the script
                    with server._lock:
                        behaviour = next(server._preflight, "ok")
                        server.preflights[behaviour] += 1
                    with suppress(BrokenPipeError, ConnectionResetError):
                        self._answer(behaviour, body)
                    return
                with server._lock:
                    behaviour = next(server._next)
                    server.served[behaviour] += 1
                    server.bodies.append(body)
                    server.authorizations.add(self.headers.get("Authorization", ""))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    if server.in_flight >= server.hold_until:
                        server._full.set()
                try:
                    if not server._full.wait(HOLD_LIMIT_S):
                        server.held_too_long = True
                    if server.delay_s and server._closing.wait(server.delay_s):
                        return  # the test is over: leave without an answer
                    self._answer(behaviour, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the hang case)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, behaviour: str, body: dict[str, Any]) -> None:
                schema = schema_of(body)
                good = json.dumps(instance(schema))
                if behaviour == "ok":
                    self._send(200, completion(good))
                elif behaviour == "429":
                    self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
                elif behaviour == "silent":
                    server._closing.wait()  # accepted, never answered: the client's read timeout is all that ends it
                elif behaviour == "503_page":
                    self._send_raw(503, b"Service Unavailable", {"Content-Type": "text/plain"})
                elif behaviour in ("500", "503"):
                    self._send(int(behaviour), {"error": {"message": f"server error {behaviour}"}})
                elif behaviour == "hang":
                    if server._closing.wait(server.hang_s):
                        return  # the test is over: leave without an answer
                    self._send(200, completion(good))
                elif behaviour == "malformed":
                    self._send_raw(200, b'{"choices": [{"message": {"content": "{\\"action\\"')
                elif behaviour == "empty":
                    self._send(200, completion(""))
                elif behaviour == "reasoning":
                    self._send(200, completion("", reasoning=good))
                elif behaviour == "unknown_action":
                    self._send(200, completion(json.dumps(unknown_action(schema))))
                elif behaviour == "fenced":
                    self._send(200, completion(f"Here is my answer:\n```json\n{good}\n```\nDone."))
                elif behaviour == "echo_key":
                    # A badly behaved endpoint that quotes the credentials back in its error.
                    self._send(401, {"error": {"message": f"bad key: {self.headers.get('Authorization')}"}})
                else:
                    raise AssertionError(f"unknown behaviour {behaviour}")

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(payload).encode(), headers)

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                headers = {"Content-Type": "application/json", **(headers or {})}
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
