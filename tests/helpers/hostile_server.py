"""A local endpoint whose 2xx answers are whatever bytes a test hands it: pathological bodies, echoed keys.

Each request gets the next answer of a cycle; an answer is bytes, or a function of the request
(headers and body) returning bytes, or an iterator of byte chunks for a body too big to hold.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = bytes | Callable[[dict[str, str], dict[str, Any]], bytes] | tuple[int, Callable[[], Iterable[bytes]]]


def completion_bytes(content: str, usage: dict[str, int] | None = None) -> bytes:
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
    }
    return json.dumps(body).encode()


class HostileServer:
    """Serves the answers on 127.0.0.1 in threads; counts what it served."""

    def __init__(self, answers: list[Answer], *, status: int = 200):
        self._answers = itertools.cycle(answers)
        self.status = status
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
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with server._lock:
                    answer = next(server._answers)
                    server.served += 1
                try:
                    if isinstance(answer, tuple):  # (length, chunks): streamed, never held whole
                        length, chunks = answer
                        self._head(length)
                        for chunk in chunks():
                            self.wfile.write(chunk)
                        return
                    data = answer(dict(self.headers), body) if callable(answer) else answer
                    self._head(len(data))
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading at its cap

            def _head(self, length: int) -> None:
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                self.end_headers()

        return Handler
