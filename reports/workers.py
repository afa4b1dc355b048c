"""A report's independent work (each figure at each print size, the run pages) in forked worker processes.

One pool for the whole report, one worker per core the process may use: workers are forked, so they start with
everything the parent imported and computed, and the parent writes tables meanwhile. On one core nothing is forked:
each job runs in the calling process when its result is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")


class Workers:
    """``submit`` a job, get back the call that waits for its result; ``with`` ends the pool (its workers joined)."""

    def __init__(self, count: int | None = None) -> None:
        count = count if count is not None else len(os.sched_getaffinity(0))
        self._pool: Executor | None = ProcessPoolExecutor(count, mp_context=get_context("fork")) if count > 1 else None

    def submit(self, job: Callable[..., T], *args: Any) -> Callable[[], T]:
        if self._pool is None:
            return partial(job, *args)
        return self._pool.submit(job, *args).result

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=error is not None)
