"""A child process that ends with its parent: no worker outlives a killed matrix or a killed report."""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def die_with(parent_pid: int) -> None:
    """Linux: this process gets SIGKILL when its parent dies (PR_SET_PDEATHSIG); it exits at once when the parent
    died before the signal was armed. Elsewhere nothing is armed."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)
