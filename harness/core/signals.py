"""SIGINT and SIGTERM become a stop request: the run in progress stops at its next event, cleanly.

The first signal asks the runner to stop: every run in flight ends at its next trace event (or its
pending model request is cancelled) with an ``interrupted`` summary, the model server is stopped and
the manifest says ``interrupted``. A second signal stops at once (KeyboardInterrupt).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(BaseException):
    """Raised inside a run when a stop was requested; a BaseException so that no mode can swallow it."""


class StopRequest:
    """Whether a stop was asked for, by which signal, and the matrix task to cancel when it is."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._polled = False  # the matrix checks ``requested`` itself (worker processes): no task to cancel

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + (self.signum or signal.SIGINT)

    def check(self) -> None:
        """Called before every trace event: ends the run in progress once a stop was asked for."""
        if self.signum is not None:
            raise RunInterrupted()

    def attach(self, task: asyncio.Task[object]) -> None:
        """The matrix is running in ``task``: a stop cancels what it awaits (a model request)."""
        self._task, self._loop = task, task.get_loop()

    def polled(self) -> None:
        """The matrix runs elsewhere (worker processes) and checks ``requested`` between results."""
        self._polled = True

    def detach(self) -> None:
        """The matrix is over: a signal now is only noted, so closing the folder is never cut short."""
        self._task, self._closing = None, True

    def request(self, signum: int) -> None:
        if self.signum is not None and not self._closing:
            raise KeyboardInterrupt  # the second signal: stop now
        self.signum = self.signum or signum
        task, loop = self._task, self._loop
        if task is None or loop is None:
            if not self._closing and not self._polled:
                raise KeyboardInterrupt  # nothing is running yet (a model server starting): unwind now
        elif not task.done():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the matrix is over, the stop noted
                loop.call_soon_threadsafe(task.cancel)
        # else: the matrix task has ended (its folder is being closed): the stop is noted, the manifest says so

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.request(signum)

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handles SIGINT and SIGTERM while the block runs (main thread only; elsewhere, no handlers)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        for sig in SIGNALS:
            signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
