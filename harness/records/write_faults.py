"""A test-only fault: the process SIGKILLs itself right after its Nth write, so crash safety is proved at every write.

With ``BENCH_KILL_AFTER_WRITES=N`` in the environment (read once per process), every write that must survive a
crash at any instant (a trace line, a recording line, a checkpoint update, a resume's manifest) calls ``wrote``
after it is done; the Nth call kills the process, with no chance to clean up, as a power cut or ``kill -9`` would.
Unset (always, outside tests), ``wrote`` only counts nothing and returns. ``BENCH_KILL_AT=POINT`` does the same at
a named point of a multi-step change (``reached``), such as each step of ``--replace``'s swap, or, with
``BENCH_KILL_SIGNAL=TERM`` (or ``INT``), sends that signal there instead.
"""

from __future__ import annotations

import os
import signal

KILL_AFTER_WRITES = "BENCH_KILL_AFTER_WRITES"
KILL_AT = "BENCH_KILL_AT"
KILL_SIGNAL = "BENCH_KILL_SIGNAL"

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


def reached(point: str) -> None:
    """A named step of a multi-step change is done; with ``BENCH_KILL_AT`` naming it, this process is killed here
    (or sent ``BENCH_KILL_SIGNAL``: TERM or INT, to prove what a signal at that instant does)."""
    if os.environ.get(KILL_AT) == point:
        name = os.environ.get(KILL_SIGNAL, "KILL").strip().upper()
        os.kill(os.getpid(), signal.SIGTERM if name == "TERM" else signal.SIGINT if name == "INT" else signal.SIGKILL)
