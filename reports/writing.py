"""Every report file goes out whole or not at all, and a file the system refuses is named in one line."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from harness.errors import WriteFailed


def write_whole(path: Path, data: str | bytes) -> None:
    """Writes ``path`` through a temporary sibling put in place at the end: a full disk leaves the old file (if
    any) as it was and no temporary behind, and raises WriteFailed naming ``path``."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise WriteFailed(path, exc.strerror or type(exc).__name__) from None
