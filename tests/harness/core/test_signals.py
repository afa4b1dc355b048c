"""The stop request: the first signal cancels the matrix task (or, with none yet, unwinds at once), a signal after
the matrix task ended is only noted (never an error from a closed loop), and a second signal stops at once."""

from __future__ import annotations

import asyncio
import signal

import pytest

from harness.core.signals import RunInterrupted, StopRequest


def test_the_first_signal_cancels_the_running_matrix_task():
    stop = StopRequest()

    async def matrix() -> str:
        task = asyncio.current_task()
        assert task is not None
        stop.attach(task)
        stop.request(signal.SIGTERM)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "cancelled"
        return "ran on"

    assert asyncio.run(matrix()) == "cancelled"
    assert stop.requested and stop.exit_code == 143
    with pytest.raises(RunInterrupted):
        stop.check()


def test_a_signal_after_the_matrix_task_ended_and_its_loop_closed_is_only_noted():
    stop = StopRequest()

    async def matrix() -> None:
        task = asyncio.current_task()
        assert task is not None
        stop.attach(task)

    asyncio.run(matrix())  # the folder is being closed now: the loop is gone, the stop not yet detached
    stop.request(signal.SIGINT)  # no "Event loop is closed"
    assert stop.signum == signal.SIGINT and stop.exit_code == 130
    with pytest.raises(KeyboardInterrupt):  # the second one still stops at once
        stop.request(signal.SIGINT)


def test_with_nothing_running_yet_the_first_signal_unwinds_and_after_detach_signals_are_noted():
    starting = StopRequest()
    with pytest.raises(KeyboardInterrupt):
        starting.request(signal.SIGTERM)
    assert starting.signum == signal.SIGTERM
    closing = StopRequest()
    closing.detach()
    closing.request(signal.SIGINT)
    closing.request(signal.SIGTERM)
    assert closing.signum == signal.SIGINT
