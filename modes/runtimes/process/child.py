"""The agent's process: started in its own process group in the run's working folder, bounded in time and output.

Whatever ends it (its own exit, the run's time limit, a stop bench asks for, a cancelled run) leaves nothing
running: the whole group is terminated, then killed. Its output is read as it comes and only the tail is kept, so
an agent that floods stdout costs nothing but the reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TAIL_BYTES = 2_000  # the end of the agent's output kept for the trace
GRACE_S = 2.0  # from the terminate signal to the kill


@dataclass(frozen=True)
class Exit:
    """How the agent's process ended."""

    code: int | None  # its exit status; None when it never started or was stopped by bench
    timed_out: bool = False  # the run's time limit ended it
    stopped: bool = False  # bench stopped it (a rejection, a spent step budget, a failed model call)
    not_started: str = ""  # why it could not start (no such program, not executable)
    tail: str = ""  # the last of what it printed (stdout and stderr)
    output_bytes: int = 0


async def run_agent(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], time_limit_s: float, stop: asyncio.Event
) -> Exit:
    """Runs ``argv`` until it exits, ``time_limit_s`` passes or ``stop`` is set; never leaves its group running."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group: ended whole, children included
        )
    except OSError as exc:
        return Exit(code=None, not_started=f"{argv[0]}: {exc.strerror or exc}")
    tail, counted = bytearray(), [0]
    reader = asyncio.create_task(_read(process, tail, counted))
    waiter = asyncio.create_task(process.wait())
    stopper = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({waiter, stopper}, timeout=time_limit_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        await _end_group(process)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(reader, timeout=1)
        reader.cancel()
    ended_by_us = waiter not in done
    return Exit(
        code=None if ended_by_us else process.returncode,
        timed_out=not done,
        stopped=stopper in done and waiter not in done,
        tail=tail.decode("utf-8", errors="replace"),
        output_bytes=counted[0],
    )


async def _read(process: asyncio.subprocess.Process, tail: bytearray, counted: list[int]) -> None:
    assert process.stdout is not None
    while chunk := await process.stdout.read(65_536):
        counted[0] += len(chunk)
        tail.extend(chunk)
        del tail[:-TAIL_BYTES]


async def _end_group(process: asyncio.subprocess.Process) -> None:
    """Terminates the agent's process group, then kills what is left of it after a grace period."""
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), timeout=GRACE_S)
    _signal_group(process.pid, signal.SIGKILL)  # what the agent started and left behind goes too
    if process.returncode is None:
        await process.wait()


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)
