"""A local endpoint whose answers are whatever bytes a test hands it: pathological bodies, echoed keys, web pages.

Each request gets the next answer of a cycle; an answer is bytes, or a function of the request
(headers and body) returning bytes, or ``(length, chunks)``: an iterator of byte chunks (for a body
too big to hold, or one whose pieces straddle what the client reads at once), sent with that length,
or chunked when the length is None (``Transfer-Encoding: chunked``). The preflight request a live
matrix and ``bench probe`` start with (``harness.models.dead_endpoint``) gets a plain good answer,
outside the cycle and the count, unless ``answers_preflight``: then it is answered like any request
(an endpoint that is a web page answers the preflight with its page too). An answer of None closes the
connection without a word: an endpoint that went away after the preflight.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.models.dead_endpoint import is_preflight

Answer = (
    bytes
    | Callable[[dict[str, str], dict[str, Any]], bytes]
    | tuple[int | None, Callable[[], Iterable[bytes]]]
    | None  # the connection is closed with no answer at all: the client's network error
)


def completion_bytes(content: Any, usage: dict[str, int] | None = None) -> bytes:
    """A chat completion whose message content is ``content`` (a string, or a list of content parts)."""
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
    }
    return json.dumps(body).encode()


class HostileServer:
    """Serves the answers on 127.0.0.1 in threads; counts what it served."""

    def __init__(
        self,
        answers: list[Answer],
        *,
        status: int = 200,
        content_type: str = "application/json",
        answers_preflight: bool = False,
    ):
        self._answers = itertools.cycle(answers)
        self.status = status
        self.content_type = content_type
        self.answers_preflight = answers_preflight
        self.served = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked answers need it; every answer says its length or is chunked

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                if is_preflight(body) and not server.answers_preflight:
                    data = completion_bytes("ok")
                    self._head(len(data), 200, "application/json")
                    self.wfile.write(data)
                    return
                with server._lock:
                    answer = next(server._answers)
                    server.served += 1
                try:
                    if answer is None:
                        self.close_connection = True
                        return
                    if isinstance(answer, tuple):  # (length, chunks): streamed, never held whole
                        length, chunks = answer
                        self._head(length)
                        for chunk in chunks():
                            self.wfile.write(chunk if length is not None else b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        if length is None:
                            self.wfile.write(b"0\r\n\r\n")
                        return
                    data = answer(dict(self.headers), body) if callable(answer) else answer
                    self._head(len(data))
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading at its cap

            def _head(self, length: int | None, status: int | None = None, content_type: str | None = None) -> None:
                self.send_response(status or server.status)
                self.send_header("Content-Type", content_type or server.content_type)
                if length is None:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

        return Handler
