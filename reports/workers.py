"""A report's independent work (each figure at each print size, the run pages) in forked worker processes.

A pool of one worker per core the process may use for the figures: workers are forked, so they start with
everything the parent imported and computed, and the parent writes tables meanwhile. The run pages get a worker of
their own (``beside``), forked first, before the report has imported pandas or matplotlib or loaded anything: they
read the traces themselves, on the core the parent leaves idle while it imports and loads. On one core nothing is
forked: each job runs in the calling process when its result is asked for.

Before its first fork a pool freezes the garbage collector's view of every object the parent holds (``gc.freeze``)
until the pool ends: a worker's collections then never walk the objects it inherited, so the pages holding them stay
shared rather than each copied into the worker (about a third fewer page faults in the workers of the recording's
report).

Every worker dies with the report that forked it (harness.lifetime: PR_SET_PDEATHSIG on Linux): a report killed
mid-way leaves no worker writing on, nor an idle one waiting on its queue for ever.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from types import TracebackType
from typing import Any, TypeVar

from harness.lifetime import die_with

T = TypeVar("T")
BESIDE_NICE = 5  # how much lower the priority of a job beside the caller is (os.nice; docs/development.md)


class Workers:
    """``submit`` a job, get back the call that waits for its result; ``with`` ends the pool (its workers joined)."""

    def __init__(self, count: int | None = None) -> None:
        """``count`` workers (default: one per core); below two, none: the jobs run in the caller."""
        count = count if count is not None else cores()
        self._pool: Executor | None = _forked(count) if count > 1 else None
        self._frozen = False

    @classmethod
    def beside(cls) -> Workers:
        """One worker for one long job the caller goes on beside, where there is a second core; else none. Its job
        is the one with time to spare (the run pages, wanted at the end), so it runs at a lower priority (nice
        BESIDE_NICE): on a busy machine the parent, on whose work everything else waits, goes first."""
        workers = cls(1)
        if cores() > 1:
            workers._pool = _forked(1, BESIDE_NICE)
        return workers

    def submit(self, job: Callable[..., T], *args: Any) -> Callable[[], T]:
        if self._pool is None:
            return partial(job, *args)
        if not self._frozen:  # the first submit forks the workers
            gc.freeze()
            self._frozen = True
        return self._pool.submit(job, *args).result

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=error is not None)
        if self._frozen:
            gc.unfreeze()  # the parent's own collections see every object again


def _forked(count: int, nice: int = 0) -> Executor:
    return ProcessPoolExecutor(count, mp_context=get_context("fork"), initializer=_start, initargs=(os.getpid(), nice))


def _start(parent: int, nice: int) -> None:
    """A worker ends with the report that forked it (a report killed mid-way leaves no worker writing on), at the
    priority asked for."""
    die_with(parent)
    os.nice(nice)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))
