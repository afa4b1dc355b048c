"""Messages over a pipe as frames (an 8-byte length, then the pickled bytes), read without ever waiting on half a one.

A process killed in the middle of a write leaves half a frame in its pipe. A reader that asked for a whole message
would wait for the rest forever; ``FrameReader`` only takes what the pipe holds now and hands out whole frames, and
its end of file (every writer gone) says the writer died, with whatever half frame it left dropped.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

HEADER = struct.Struct("!Q")
READS_AT_ONCE = 64  # reads of one pipe per call at most, so one busy writer cannot hold the reader


def send(fd: int, message: Any) -> None:
    """Writes ``message`` whole to ``fd`` (a blocking pipe); OSError (BrokenPipeError) when no reader is left."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> Any:
    """The next whole message from ``fd`` (a blocking pipe); EOFError at its end, a half frame included."""
    (size,) = HEADER.unpack(_exactly(fd, HEADER.size))
    return pickle.loads(_exactly(fd, size))


def _exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class FrameReader:
    """The whole frames a pipe has delivered so far, read without blocking; ``ended`` once every writer is gone."""

    def __init__(self, fd: int):
        os.set_blocking(fd, False)
        self.fd = fd
        self.ended = False
        self._buffer = bytearray()

    def read(self, drain: bool = False) -> list[Any]:
        """The messages whole in the pipe now (``drain``: up to its end, for a writer known to have exited)."""
        reads = 0
        while not self.ended and (drain or reads < READS_AT_ONCE):
            reads += 1
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.ended = True
                break
            self._buffer += chunk
        messages = []
        while len(self._buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buffer)
            if len(self._buffer) < HEADER.size + size:
                break
            messages.append(pickle.loads(bytes(self._buffer[HEADER.size : HEADER.size + size])))
            del self._buffer[: HEADER.size + size]
        return messages
