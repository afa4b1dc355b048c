"""Reading a file someone else may have put in place: a regular file only, never more than a bound, UTF-8.

A FIFO named like a scenario or a manifest would block a plain ``open`` forever and a device would
never end, so the file is opened without blocking and checked before a byte is read; a file past the
bound is refused after reading one byte more than the bound, never held whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Unreadable(Exception):
    """Why a file cannot be read: ``where`` (a line, or empty) and a one-line ``reason``."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}" if where else reason)


def read_text(path: Path, limit: int) -> str:
    """The UTF-8 text of the regular file at ``path``, at most ``limit`` bytes; else ``Unreadable``."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file reads as usual.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Unreadable("", f"cannot read: {exc.strerror or type(exc).__name__}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable("", "cannot read: not a regular file")
        data = _read_at_most(fd, limit + 1)
    except OSError as exc:
        raise Unreadable("", f"cannot read: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unreadable("", f"larger than {_size(limit)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Unreadable(f"line {line}", f"not UTF-8 text (byte {exc.start})") from None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _size(limit: int) -> str:
    return f"{limit // (1 << 20)} MiB" if limit % (1 << 20) == 0 else f"{limit:,} bytes"
