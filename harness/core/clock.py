"""Clocks: the real one for runs, a fake one so golden traces are byte-stable."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Wall time for timestamps, monotonic time for durations."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The machine's clocks."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """Starts at a fixed instant and advances one millisecond each time it is read."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)):
        self._start = start
        self._ticks = 0

    def now(self) -> datetime:
        self._ticks += 1
        return self._start + timedelta(milliseconds=self._ticks)

    def monotonic(self) -> float:
        self._ticks += 1
        return self._ticks / 1000.0
