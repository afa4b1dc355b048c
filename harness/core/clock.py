"""Clocks: the real one for runs, a fake one so golden traces are byte-stable, a shifted one for replays."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


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


class ShiftedClock:
    """A run's clock whose model spends its time elsewhere (a replay answers at once what took seconds to record):
    the base clock's durations plus the model time so far, so the run lasts bench's own time plus the model's.
    Timestamps stay the base clock's: they say when bench wrote each line."""

    def __init__(self, base: Clock, model_ms: Callable[[], float]):
        self._base = base
        self._model_ms = model_ms

    def now(self) -> datetime:
        return self._base.now()

    def monotonic(self) -> float:
        return self._base.monotonic() + self._model_ms() / 1000.0


@runtime_checkable
class KeepsModelTime(Protocol):
    """A run's model whose answers took their time elsewhere: it gives the run the clock that counts that time."""

    def run_clock(self, base: Clock) -> Clock: ...


def run_clock(base: Clock, model: object) -> Clock:
    """The clock a run is timed on: its model's (a replay's recorded model time added), else the matrix's own."""
    return model.run_clock(base) if isinstance(model, KeepsModelTime) else base
