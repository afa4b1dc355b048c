"""The worker-process executor: a matrix's units run in N local processes, the driver writes every line.

Each worker is a fresh interpreter (``spawn``) with two pipes of its own. The driver sends it the setup (scenarios
included, hundreds of kilobytes: from a thread, so workers start in parallel and the driver never waits on one),
then batches of unit keys, ``AHEAD`` at a time, and at the end an end mark or a stop; the worker runs each batch
under asyncio with its share of ``--concurrency`` and sends back finished units whole, serialised already, several
a message (``Outbox``), its notes and, last, what it learnt. Every message is a frame (``frames``), and the driver
reads its workers' pipes without blocking, so a message half-sent by a worker that died is never waited for: the
pipe's end of file, or the worker's exit code, says at once that it is gone. The units it had in flight and had
not sent back go to a new worker, up to ``MAX_ATTEMPTS`` sends, after which they are written as infrastructure
runs (``lost_unit``, as the Ray executor does); the driver keeps one result per unit (``UnitLedger``, the Ray
driver's). A live model's workers all ask the endpoint the driver checked once, and each unit brings its recorded
exchanges. The driver (the calling process) is the only writer of ``traces.jsonl`` and ``recording.jsonl``: one
write per unit and file, so what a kill leaves is what ``--resume`` already handles.

A stop request (SIGINT, SIGTERM) is a message to every worker: each ends its runs in flight with their
``interrupted`` summaries and exits. The driver looks at the request between polls of at most ``POLL_S``, so the
first Ctrl-C always takes effect, and waits ``STOP_WAIT_S`` at most for the workers before it kills them (a second
Ctrl-C kills them at once). Workers ignore the signals themselves, so a terminal's Ctrl-C sent to the whole group is
decided once, by the driver. A worker whose driver dies is killed with it (Linux: the parent-death signal;
elsewhere, or if the signal came too late, its command pipe's end of file ends it).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError, WriteFailed
from harness.lifetime import die_with
from harness.matrix.cell.units import Cell
from harness.matrix.executors import frames
from harness.matrix.executors.base import EXECUTORS, MatrixRun
from harness.matrix.executors.driver_side import driver_writes, shared_endpoint_of, worker_setup
from harness.matrix.executors.unit_batch import (
    UnitDone,
    UnitHooks,
    UnitKey,
    WorkerExited,
    WorkerSetup,
    unit_session,
)
from harness.matrix.executors.unit_ledger import MAX_ATTEMPTS, UnitLedger, lost_unit
from harness.records.manifest import ManifestLedger

if TYPE_CHECKING:
    from harness.models.live import LiveConfig
from harness.models.choice import OpenSource

POLL_S = 0.2  # the longest the driver waits for a message before it looks at a stop request and its workers again
BATCH_PER_SLOT = 8  # units per batch for each run a worker keeps in flight: few messages, little tail
OFFLINE_BATCH = 64  # units a batch at least for a scripted or replayed model (CPU-bound: runs in flight do not matter)
TAIL_BATCHES = 4  # batches each worker gets at least, so the last ones end together
SEND_UNITS = 32  # finished units a worker sends in one message at most
SEND_AFTER_S = 0.05  # how long a finished unit waits at most for others to share its message
STOP_WAIT_S = 10.0  # after a stop, how long the workers get to end their runs in flight before they are killed
STOP, END = "stop", "end"  # the driver's commands besides a batch


@dataclass(frozen=True)
class WorkerFailed:
    """A worker could not go on: the error's kind and line (a file bench could not write names its path)."""

    kind: str
    message: str
    path: str | None = None


@dataclass(frozen=True)
class WorkerNote:
    """A line for the user from a worker (a live client's step down)."""

    line: str


def worker_share(concurrency: int, workers: int, index: int) -> int:
    """Worker ``index``'s share of the global bound on runs (and model requests) in flight; at least one."""
    return max(1, concurrency // workers + (1 if index < concurrency % workers else 0))


def batch_size(job: MatrixRun, offline: bool) -> int:
    """Units a batch: ``BATCH_PER_SLOT`` for each run a worker keeps in flight (a live model: ``OFFLINE_BATCH`` at
    least for a scripted or replayed one, whose runs are CPU-bound: each batch costs a queue round trip), fewer when
    the matrix (``job.runs`` cells a model) is too small to give every worker a batch that big (a live matrix of a
    few dozen runs still spreads over every worker) or, offline, ``TAIL_BATCHES`` batches."""
    size = BATCH_PER_SLOT * max(1, job.concurrency // job.workers)
    if offline:
        size = max(size, OFFLINE_BATCH)
    return min(size, max(1, -(-job.runs // (job.workers * (TAIL_BATCHES if offline else 1)))))


def batches(cells: Iterable[Cell], size: int) -> Iterator[list[UnitKey]]:
    """The cells as batches of unit keys, lazily: memory stays flat in the matrix's size."""
    keys = ((c.scenario.id, c.mode, c.trial) for c in cells)
    while batch := list(islice(keys, size)):
        yield batch


@dataclass
class _Worker:
    """One worker process as the driver sees it: its pipes, and the units it was sent and has not sent back."""

    index: int
    process: Any
    commands: Any  # the driver's end of the command pipe (a Connection; frames are written to its fd)
    results: frames.FrameReader
    keep: list[Any]  # the Connections whose fds the driver uses, kept open as long as the worker is
    sender: threading.Thread  # sends the setup; batches follow once it is done
    batches: dict[int, set[UnitKey]] = field(default_factory=dict)  # batch number -> its units not back yet
    exited: WorkerExited | None = None
    told_end: bool = False
    gone: bool = False

    def tell(self, command: object) -> bool:
        """Sends a command (a batch, END or STOP); False when the worker is gone (its pipe has no reader). A command
        waits for the setup to be sent whole: two writers on one pipe would interleave their frames (a stop right
        after a worker was started read as its setup)."""
        self.sender.join(STOP_WAIT_S)
        if self.sender.is_alive():  # a worker that does not read its setup: a stop kills it after STOP_WAIT_S
            return True
        try:
            frames.send(self.commands.fileno(), command)
        except OSError:
            return False
        return True

    def close(self) -> None:
        for connection in self.keep:
            with contextlib.suppress(OSError):
                connection.close()


@dataclass
class _Pool:
    """The driver's side of the pool: how a worker starts, the units' ledger and writer, and each batch's sends."""

    context: Any  # multiprocessing's spawn context
    setup: WorkerSetup
    on_unit: Callable[[UnitDone], None]
    ledger: UnitLedger = field(default_factory=UnitLedger)
    sends: dict[int, int] = field(default_factory=dict)  # batch number -> times sent, while it has units out

    def start(self, index: int, share: int) -> _Worker:
        """Starts worker ``index`` with its share of the runs in flight; its setup is sent from a thread."""
        command_reader, command_writer = self.context.Pipe(duplex=False)
        result_reader, result_writer = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=worker_main, args=(command_reader, result_writer, index), name=f"bench-worker-{index}", daemon=True
        )
        # The worker starts with a terminal's Ctrl-C blocked: one sent to the whole group while it still imports
        # would end it with a traceback; it ignores both signals for good once it runs (worker_main), the driver
        # decides.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        command_reader.close()  # the worker's ends: its death is then this side's end of file, or a refused send
        result_writer.close()
        setup = replace(self.setup, concurrency=share)
        sender = threading.Thread(
            target=_send_quietly, args=(command_writer.fileno(), setup), name=f"bench-setup-{index}", daemon=True
        )
        sender.start()
        results = frames.FrameReader(result_reader.fileno())
        return _Worker(index, process, command_writer, results, [command_writer, result_reader], sender)

    def written(self, worker: _Worker, unit: UnitDone) -> None:
        """A unit back from ``worker``: written once (the ledger), and struck off its batch; a batch all back is
        done."""
        number = next((n for n, keys in worker.batches.items() if unit.key in keys), None)
        if number is None:
            return  # not one this worker was sent (cannot happen): nothing to strike off, nothing to write twice
        if self.ledger.first(number, unit.run_id):
            self.on_unit(unit)
        keys = worker.batches[number]
        keys.discard(unit.key)
        if not keys:
            del worker.batches[number]
            self.ledger.settled(number)
            self.sends.pop(number, None)


@EXECUTORS.register("workers")
class WorkerProcesses:
    """The cells in ``job.workers`` local processes; this process writes every line (a live model's recording too),
    and checks a live model's endpoint once for all of them."""

    def run(self, job: MatrixRun, manifest: ManifestLedger) -> None:
        with shared_endpoint_of(job, manifest) as shared:
            shared.reports += run_in_workers(job, shared.endpoint)


def run_in_workers(job: MatrixRun, endpoint: LiveConfig | None) -> list[WorkerExited]:
    """Runs the job's cells in its worker processes, asking ``endpoint`` (a live model's, checked once); the
    driver's writer sees every finished unit once (its recording lines, then its trace lines), and the job's
    ``notify`` every worker's note and each worker that died. Returns what each worker said as it exited (a live
    client's learnt facts).

    Returns once every unit is written (a worker that dies is replaced, its units sent again), or once a stop
    request ended the runs in flight. A worker's own error (a file it could not write) raises here after the others
    are stopped; so do workers that keep dying (``MAX_ATTEMPTS`` deaths per worker slot).
    """
    setup = worker_setup(job, endpoint)
    with driver_writes(job, recording=endpoint is not None) as write:
        return _run_processes(job, setup, write)


def _run_processes(job: MatrixRun, setup: WorkerSetup, on_unit: Callable[[UnitDone], None]) -> list[WorkerExited]:
    """The pool's loop: batches down each worker's pipe, finished units to ``on_unit``, dead workers replaced."""
    workers, concurrency, stop = job.workers, job.concurrency, job.stop

    def notify(line: str) -> None:
        job.notify(f"note: {line}")

    stop.polled()
    offline = setup.endpoint is None and not setup.model.live
    ahead = 2 if offline else 1  # batches a worker holds: one running, one waiting (a live matrix: just one)
    numbered = enumerate(batches(job.streak.cells(job.cells), batch_size(job, offline)))
    again: deque[tuple[int, list[UnitKey]]] = deque()
    driver = _Pool(multiprocessing.get_context("spawn"), setup, on_unit)
    ledger, sends = driver.ledger, driver.sends
    pool = [driver.start(i, worker_share(concurrency, workers, i)) for i in range(workers)]
    reports: list[WorkerExited] = []
    failure: WorkerFailed | None = None
    deaths, ended, stopping_since = 0, False, None
    try:
        while True:
            if (stop.requested or failure is not None) and stopping_since is None:
                stopping_since = time.monotonic()
                for worker in pool:
                    if not worker.gone:
                        worker.tell(STOP)
            live = [w for w in pool if not w.gone]
            if not live:
                break
            if stopping_since is None:
                for worker in live:
                    if worker.sender.is_alive():
                        continue  # its setup is still on the way: nothing else may go down its pipe yet
                    while len(worker.batches) < ahead:
                        if again:
                            number, keys = again.popleft()
                        elif (taken := next(numbered, None)) is not None:
                            number, keys = taken
                        else:
                            ended = True
                            break
                        sends[number] = sends.get(number, 0) + 1
                        ledger.sent(number)
                        worker.batches[number] = set(keys)
                        worker.tell(keys)
                    if ended and not worker.batches and not worker.told_end and not again:
                        worker.tell(END)
                        worker.told_end = True
            elif time.monotonic() - stopping_since > STOP_WAIT_S:
                for worker in live:
                    _kill(worker)
                break
            wait([w.results.fd for w in live] + [w.process.sentinel for w in live], timeout=POLL_S)
            for worker in live:
                exited = worker.process.exitcode is not None
                for message in worker.results.read(drain=exited):
                    if isinstance(message, list):
                        for unit in message:
                            driver.written(worker, unit)
                    elif isinstance(message, WorkerExited):
                        worker.exited = message
                        reports.append(message)
                    elif isinstance(message, WorkerNote):
                        notify(message.line)
                    elif isinstance(message, WorkerFailed):
                        failure = failure or message
                if not (worker.results.ended or exited):
                    continue
                _kill(worker)  # a worker that closed its pipe but lives on is of no more use
                worker.close()
                if worker.exited is not None and not worker.batches:
                    continue  # done, or stopped with everything it had written
                if stopping_since is not None:
                    continue  # a stop: what it did not send back is not written, and --resume runs it
                deaths += 1
                lost = sum(len(keys) for keys in worker.batches.values())
                notify(
                    f"worker process {worker.index} {_how(worker.process.exitcode)} with {lost} runs in "
                    f"flight; they are sent to another worker"
                )
                how = _how(worker.process.exitcode)
                for number, left in worker.batches.items():
                    ledger.settled(number)
                    if sends[number] < MAX_ATTEMPTS:
                        again.append((number, sorted(left)))
                        continue
                    why = f"the worker processes running this unit died {sends[number]} times (the last {how})"
                    for key in sorted(left):
                        on_unit(lost_unit(setup, key, why))
                    sends.pop(number)
                worker.batches = {}
                if deaths >= MAX_ATTEMPTS * workers:
                    failure = failure or WorkerFailed(
                        "worker",
                        f"worker processes died {deaths} times; the matrix stopped (bench run --resume continues it)",
                    )
                elif again or not ended:
                    pool.append(driver.start(len(pool), worker_share(concurrency, workers, worker.index)))
    finally:
        for worker in pool:
            if not worker.gone:
                _kill(worker)
                worker.close()
    if failure is not None:
        raise _raised(failure)
    return reports


def _send_quietly(fd: int, message: object) -> None:
    with contextlib.suppress(OSError):  # a worker dead already is found by the driver's loop
        frames.send(fd, message)


def _kill(worker: _Worker) -> None:
    worker.process.kill()
    worker.process.join()
    worker.gone = True


def _how(code: int | None) -> str:
    if code is None:
        return "closed its pipe"
    return f"was killed by signal {-code}" if code < 0 else f"ended with exit status {code}"


def _raised(failure: WorkerFailed) -> BaseException:
    if failure.path is not None:
        return WriteFailed(Path(failure.path), failure.message)
    if failure.kind in ("UserInputError", "worker"):
        return UserInputError(failure.message)
    return RuntimeError(f"{failure.kind}: {failure.message}")


def worker_main(commands: Any, results: Any, index: int) -> None:
    """A worker process: runs the batches it is sent until the end mark or a stop, then says it exited."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # the driver decides on a stop, once, for every worker
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})  # blocked while it started (_start)
    inbox, outbox_fd = commands.fileno(), results.fileno()
    try:
        setup = frames.receive(inbox)
    except EOFError:  # the driver died before it sent the setup: nothing was started, nothing to say
        return
    if not isinstance(setup, WorkerSetup):  # stopped before it began (the driver sends the setup first)
        return
    die_with(setup.driver_pid)
    lock = threading.Lock()

    def send(message: object) -> None:
        with lock:
            try:
                frames.send(outbox_fd, message)
            except OSError:  # the driver is gone: nothing is left to tell
                os._exit(1)

    learnt: dict[str, Any] = {}
    try:
        asyncio.run(_work(setup, _WorkerEnds(inbox, send, learnt)))
    except WriteFailed as exc:
        send(WorkerFailed("WriteFailed", exc.reason, str(exc.path)))
    except BaseException as exc:  # anything else ends this worker; the driver stops the matrix with its line
        send(WorkerFailed(type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""))
    finally:
        send(WorkerExited(index, learnt.get("facts"), learnt.get("last_error")))


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


@dataclass(frozen=True)
class _WorkerEnds:
    """A worker's side of its pipes: the driver's commands come in on ``inbox``, ``send`` answers, and ``learnt``
    keeps what a live endpoint taught its client, sent last."""

    inbox: int
    send: Callable[[object], None]
    learnt: dict[str, Any]


async def _work(setup: WorkerSetup, ends: _WorkerEnds) -> None:
    send = ends.send
    stop = StopRequest()
    task = asyncio.current_task()
    assert task is not None
    stop.attach(task)
    waiting: queue.Queue[list[UnitKey] | None] = queue.Queue()
    threading.Thread(target=_listen, args=(ends.inbox, waiting, stop), daemon=True).start()
    outbox = Outbox(send)

    def closing(opened: OpenSource) -> None:
        ends.learnt.update(facts=opened.facts(), last_error=opened.last_error())

    hooks = UnitHooks(outbox.add, notify=lambda line: send(WorkerNote(line)), closing=closing)
    try:
        async with unit_session(setup, stop, hooks) as run:
            try:
                while not stop.requested:
                    batch = await asyncio.to_thread(waiting.get)
                    if batch is None:
                        break
                    await run(batch)
                    outbox.flush()
            finally:
                outbox.flush()  # the interrupted summaries of a stop, too
    except (asyncio.CancelledError, RunInterrupted):
        if not stop.requested:
            raise


def _listen(inbox: int, waiting: queue.Queue[list[UnitKey] | None], stop: StopRequest) -> None:
    """The driver's commands, in order: batches to run, then END; STOP (or the driver gone) ends the runs in flight."""
    while True:
        try:
            command = frames.receive(inbox)
        except (EOFError, OSError):
            command = STOP
        if command == END:
            waiting.put(None)
            return
        if command == STOP:
            waiting.put(None)
            if not stop.requested:
                with contextlib.suppress(KeyboardInterrupt):
                    stop.request(signal.SIGTERM)
            return
        waiting.put(command)
