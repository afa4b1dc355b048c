"""The worker-process executor: a matrix's units run in N local processes, the driver writes every line.

Each worker is a fresh interpreter (``spawn``) given the scenarios once, through its own pipe once every worker has
started (a setup of hundreds of kilobytes sent with the process would hold the driver until that worker had imported
bench, so the workers would start one after another); it pulls batches of units
from a bounded queue, runs each batch under asyncio with its share of ``--concurrency``, and sends finished units
back whole, serialised already, several a message (``Outbox``). A live model's workers all ask the endpoint the
driver checked once, and each unit brings its recorded exchanges. The driver (the calling process) is the only
writer of ``traces.jsonl`` and ``recording.jsonl``: one write per unit and file, so what a kill leaves is what
``--resume`` already handles. A stop request (SIGINT, SIGTERM) sets a shared event: every worker ends its runs in
flight with their ``interrupted`` summaries and exits; workers ignore the signals themselves, so a terminal's Ctrl-C
sent to the whole group is decided once, by the driver. A worker whose driver dies is killed with it (Linux: the
parent-death signal; elsewhere it notices within a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError, WriteFailed
from harness.matrix.cell.units import Cell
from harness.matrix.executors.unit_batch import UnitDone, UnitKey, WorkerSetup, unit_session
from harness.models.choice import OpenSource

POLL_S = 0.2  # how often the driver looks at its workers' health and a stop request between results
BATCH_PER_SLOT = 8  # units per batch for each run a worker keeps in flight: few queue messages, little tail
OFFLINE_BATCH = 64  # units a batch at least for a scripted or replayed model (CPU-bound: runs in flight do not matter)
TAIL_BATCHES = 4  # batches each worker gets at least, so the last ones end together
SEND_UNITS = 32  # finished units a worker sends in one message at most
SEND_AFTER_S = 0.05  # how long a finished unit waits at most for others to share its message


@dataclass(frozen=True)
class WorkerFailed:
    """A worker could not go on: the error's kind and line (a file bench could not write names its path)."""

    kind: str
    message: str
    path: str | None = None


@dataclass(frozen=True)
class WorkerExited:
    """A worker is done; a live model's worker says what the endpoint taught its client, and its last error."""

    index: int
    facts: dict[str, Any] | None = None
    last_error: str | None = None


@dataclass(frozen=True)
class WorkerNote:
    """A line for the user from a worker (a live client's step down)."""

    line: str


def worker_share(concurrency: int, workers: int, index: int) -> int:
    """Worker ``index``'s share of the global bound on runs (and model requests) in flight; at least one."""
    return max(1, concurrency // workers + (1 if index < concurrency % workers else 0))


def batch_size(concurrency: int, workers: int, runs: int | None, *, offline: bool = False) -> int:
    """Units a batch: ``BATCH_PER_SLOT`` for each run a worker keeps in flight (a live model: ``OFFLINE_BATCH`` at
    least for a scripted or replayed one, whose runs are CPU-bound: each batch costs a queue round trip), fewer when
    the matrix is too small to give every worker a batch that big (a live matrix of a few dozen runs still spreads
    over every worker) or, offline, ``TAIL_BATCHES`` batches."""
    size = BATCH_PER_SLOT * max(1, concurrency // workers)
    if offline:
        size = max(size, OFFLINE_BATCH)
    if runs is not None:
        size = min(size, max(1, -(-runs // (workers * (TAIL_BATCHES if offline else 1)))))
    return size


def batches(cells: Iterable[Cell], size: int) -> Iterator[list[UnitKey]]:
    """The cells as batches of unit keys, lazily: memory stays flat in the matrix's size."""
    keys = ((c.scenario.id, c.mode, c.trial) for c in cells)
    while batch := list(islice(keys, size)):
        yield batch


def run_in_workers(
    cells: Iterable[Cell],
    setup: WorkerSetup,
    workers: int,
    concurrency: int,
    on_unit: Callable[[UnitDone], None],
    stop: StopRequest,
    notify: Callable[[str], None] = lambda line: None,
    runs: int | None = None,
) -> list[WorkerExited]:
    """Runs ``cells`` in ``workers`` processes; ``on_unit`` (the driver's writer) sees every finished unit, and
    ``notify`` every worker's note. Returns what each worker said as it exited (a live client's learnt facts).
    ``runs`` (how many cells there are at most) keeps batches small enough that every worker gets some.

    Returns once every worker has exited: all cells ran, or a stop request ended the runs in flight. A worker that
    fails or dies raises here (WriteFailed for a file it could not write) after the others are stopped.
    """
    stop.polled()
    context = multiprocessing.get_context("spawn")
    tasks: Any = context.Queue(maxsize=2 * workers)
    results: Any = context.Queue()
    halt = context.Event()
    channels = [context.Pipe(duplex=False) for _ in range(workers)]
    processes = [
        context.Process(
            target=worker_main,
            args=(reader, i, tasks, results, halt),
            name=f"bench-worker-{i}",
            daemon=True,
        )
        for i, (reader, _) in enumerate(channels)
    ]
    for process, (reader, _) in zip(processes, channels, strict=True):
        process.start()
        reader.close()  # the worker's end: a worker that dies before reading makes the send below fail, not hang
    for i, (_, writer) in enumerate(channels):
        with contextlib.suppress(OSError), writer:  # a worker dead already is found by the loop below
            writer.send_bytes(pickle.dumps(replace(setup, concurrency=worker_share(concurrency, workers, i))))
    size = batch_size(concurrency, workers, runs, offline=setup.endpoint is None and not setup.model.live)
    pending = batches(cells, size)
    waiting: list[UnitKey] | None = None  # a batch taken from the cells that the full queue did not take yet
    ended = False  # the cells ran out: what remains to send is one end marker (None) per worker
    sentinels = 0
    exited: set[int] = set()
    reports: list[WorkerExited] = []
    failure: WorkerFailed | None = None
    try:
        while len(exited) < workers:
            if stop.requested or failure is not None:
                halt.set()
            while not halt.is_set() and sentinels < workers:  # keep the queue full
                if waiting is None and not ended:
                    waiting = next(pending, None)
                    ended = waiting is None
                try:
                    tasks.put_nowait(waiting)
                except queue.Full:
                    break
                sentinels += ended
                waiting = None
            try:
                message = results.get(timeout=POLL_S)
            except queue.Empty:
                failure = failure or _dead_worker(processes, exited)
                continue
            if isinstance(message, list):
                for unit in message:
                    on_unit(unit)
            elif isinstance(message, WorkerExited):
                exited.add(message.index)
                reports.append(message)
            elif isinstance(message, WorkerNote):
                notify(message.line)
            elif isinstance(message, WorkerFailed):
                failure = failure or message
    finally:
        halt.set()
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
    if failure is not None:
        raise _raised(failure)
    return reports


def _dead_worker(processes: list[Any], exited: set[int]) -> WorkerFailed | None:
    """A worker that ended without saying so (killed, out of memory): the matrix stops, resumable."""
    for index, process in enumerate(processes):
        # exit status 0: the worker said so before it exited (WorkerExited, still in the pipe), never unannounced
        if index not in exited and process.exitcode not in (None, 0):
            exited.add(index)
            code = process.exitcode
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            return WorkerFailed("worker", f"worker process {index} ended unexpectedly ({how})")
    return None


def _raised(failure: WorkerFailed) -> BaseException:
    if failure.path is not None:
        return WriteFailed(Path(failure.path), failure.message)
    if failure.kind == "UserInputError":
        return UserInputError(failure.message)
    return RuntimeError(f"{failure.kind}: {failure.message}")


def worker_main(setup_channel: Any, index: int, tasks: Any, results: Any, halt: Any) -> None:
    """A worker process: runs batches until the end marker or a stop, then says it exited."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # the driver decides on a stop, once, for every worker
    with setup_channel:
        try:
            setup: WorkerSetup = pickle.loads(setup_channel.recv_bytes())
        except EOFError:  # the driver died before it sent the setup: nothing was started, nothing to say
            return
    _die_with(setup.driver_pid)
    learnt: dict[str, Any] = {}
    try:
        asyncio.run(_work(setup, tasks, results, halt, learnt))
    except WriteFailed as exc:
        results.put(WorkerFailed("WriteFailed", exc.reason, str(exc.path)))
    except BaseException as exc:  # anything else ends this worker; the driver stops the matrix with its line
        results.put(WorkerFailed(type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""))
    finally:
        results.put(WorkerExited(index, learnt.get("facts"), learnt.get("last_error")))
        results.close()
        results.join_thread()


class Outbox:
    """Finished units on their way to the driver, several a message: one message per unit cost the driver (and
    the worker's feeder thread) a lock, a pickle frame and system calls each. A unit waits at most
    ``SEND_AFTER_S`` for company, and whatever is held goes out when a batch ends."""

    def __init__(self, put: Callable[[list[UnitDone]], Any]):
        self._put = put
        self._units: list[UnitDone] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, unit: UnitDone) -> None:
        self._units.append(unit)
        if len(self._units) >= SEND_UNITS:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SEND_AFTER_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._units:
            units, self._units = self._units, []
            self._put(units)


async def _work(setup: WorkerSetup, tasks: Any, results: Any, halt: Any, learnt: dict[str, Any]) -> None:
    stop = StopRequest()
    task = asyncio.current_task()
    assert task is not None
    stop.attach(task)
    watcher = threading.Thread(target=_watch, args=(halt, stop), daemon=True)
    watcher.start()
    outbox = Outbox(results.put)

    def closing(opened: OpenSource) -> None:
        learnt.update(facts=opened.facts(), last_error=opened.last_error())

    try:
        async with unit_session(
            setup, stop, outbox.add, notify=lambda line: results.put(WorkerNote(line)), closing=closing
        ) as run:
            leaving = threading.Event()  # the worker ends: a batch still being fetched is not waited for

            def fetch() -> Awaitable[list[UnitKey] | None]:
                return asyncio.to_thread(_next_batch, tasks, halt, setup.driver_pid, leaving)

            # Offline (CPU-bound runs, several batches a worker), the next batch is fetched while one runs, so no
            # time is lost between them; a live matrix's few batches are taken one at a time, so each worker gets
            # some and the global --concurrency is filled.
            ahead = setup.endpoint is None and not setup.model.live
            try:
                following = asyncio.ensure_future(fetch())
                while not stop.requested:
                    batch = await following
                    if batch is None:
                        break
                    if ahead:
                        following = asyncio.ensure_future(fetch())
                    await run(batch)
                    outbox.flush()
                    if not ahead:
                        following = asyncio.ensure_future(fetch())
            finally:
                leaving.set()
                outbox.flush()  # the interrupted summaries of a stop, too
    except (asyncio.CancelledError, RunInterrupted):
        if not stop.requested:
            raise


def _next_batch(tasks: Any, halt: Any, driver_pid: int, leaving: threading.Event) -> list[UnitKey] | None:
    """The next batch, or None at the end marker, on a stop, once the driver is gone or once this worker leaves
    (a batch taken then is not run: the driver has not written its units, so ``--resume`` runs them)."""
    while not halt.is_set() and not leaving.is_set():
        try:
            batch: list[UnitKey] | None = tasks.get(timeout=POLL_S)
            return batch
        except queue.Empty:
            if os.getppid() != driver_pid:
                return None
    return None


def _watch(halt: Any, stop: StopRequest) -> None:
    """Turns the driver's stop into this worker's own stop request: its runs in flight end interrupted.

    It polls: a process that exits while blocked in ``Event.wait`` leaves the event's ``set`` waiting for it forever.
    """
    while not halt.is_set():
        time.sleep(POLL_S)
    if not stop.requested:
        with contextlib.suppress(KeyboardInterrupt):
            stop.request(signal.SIGTERM)


def _die_with(driver_pid: int) -> None:
    """Linux: this process gets SIGKILL when its driver dies, so no worker outlives a killed matrix."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != driver_pid:  # the driver died before the signal was armed
        os._exit(1)
