"""A test-only fault: the process SIGKILLs itself right after its Nth write, so crash safety is proved at every write.

With ``BENCH_KILL_AFTER_WRITES=N`` in the environment (read once per process), every write that must survive a
crash at any instant (a trace line, a recording line, a checkpoint update, a resume's manifest) calls ``wrote``
after it is done; the Nth call kills the process, with no chance to clean up, as a power cut or ``kill -9`` would.
Unset (always, outside tests), ``wrote`` only counts nothing and returns.
"""

from __future__ import annotations

import os
import signal

KILL_AFTER_WRITES = "BENCH_KILL_AFTER_WRITES"

_left: dict[int, int | None] = {}  # process id -> writes left before the kill (None: no fault); a fork reads anew


def wrote() -> None:
    """Counts one finished write; the Nth one kills this process."""
    pid = os.getpid()
    if pid not in _left:
        _left.clear()
        value = os.environ.get(KILL_AFTER_WRITES, "").strip()
        _left[pid] = int(value) if value.isdigit() and int(value) > 0 else None
    left = _left[pid]
    if left is None:
        return
    _left[pid] = left - 1
    if left == 1:
        os.kill(pid, signal.SIGKILL)
