"""The Ray executor: a matrix's units run as batches of Ray tasks on a cluster, the driver writes every line.

The worker-side setup (scenarios included) goes into Ray's object store once; each task gets its reference and a
batch of unit keys, checks that it runs the driver's bench and scenarios (``Fingerprint``), runs the batch with the
path every executor shares (``unit_batch.run_batch_blocking``) and returns its units whole. The driver (the calling
process) is the only writer of ``traces.jsonl`` and keeps exactly one result per unit id (``UnitLedger``, shared with
the worker processes). It owns
retries: Ray's are off (``max_retries=0``), and a batch whose task was lost with its worker or node goes back in the
queue up to ``MAX_ATTEMPTS`` times, after which its units are written as infrastructure errors (``lost_unit``). A live
model's endpoint, checked once by the driver, comes with the setup: each task asks it with its share of
``--concurrency`` (at most that many tasks at once), and its exchanges come back with their units. A stop request
(SIGINT, SIGTERM) cancels the tasks in flight: their units are not written, and ``--resume`` runs them.
Ray is imported only here, only when ``--executor ray`` is asked for (the ``bench[ray]`` extra).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from harness.errors import UserInputError, WriteFailed
from harness.matrix.cell.cell_runner import scenario_digest
from harness.matrix.cell.provenance import prompt_hash
from harness.matrix.executors.base import EXECUTORS, MatrixRun
from harness.matrix.executors.driver_side import driver_writes, shared_endpoint_of, worker_setup
from harness.matrix.executors.ray_model_servers import NodeServers
from harness.matrix.executors.unit_batch import UnitDone, UnitKey, WorkerExited, WorkerSetup, run_batch_blocking
from harness.matrix.executors.unit_ledger import MAX_ATTEMPTS, UnitLedger, lost_unit
from harness.matrix.executors.workers import batches, worker_share
from harness.models.choice import OpenSource
from harness.models.shared_endpoint import merged_facts
from harness.records.manifest import ManifestLedger
from harness.version import __version__, bench_commit

BATCH_UNITS = 32  # units per task: few tasks (each costs the scheduler about a millisecond), little lost with a node
TASKS_PER_CPU = 2  # tasks in flight per cluster CPU: one running, one queued behind it; the rest wait in the driver
POLL_S = 0.2  # how often the driver looks at a stop request while it waits for results
CANCEL_WAIT_S = 5.0  # how long a stop waits for the cancelled tasks to end before the driver lets go of them
INSTALL_HINT = "pip install 'bench[ray]'"


@dataclass(frozen=True)
class Fingerprint:
    """What must be the same on the driver and a worker for their runs to be one matrix's: bench's version, its
    commit (None outside a git checkout), the hash of the modes' code (which writes the prompts), and each
    scenario's digest as the worker reads it."""

    version: str
    commit: str | None
    prompt_hash: str | None
    scenarios: tuple[tuple[str, str], ...]

    def mismatch(self, worker: Fingerprint) -> str | None:
        """What differs, in a few words (the driver's value first), or None. An unknown commit is not compared."""
        if self.version != worker.version:
            return f"bench {self.version} on the driver, {worker.version} on the worker"
        if self.commit and worker.commit and self.commit != worker.commit:
            return f"bench commit {self.commit[:12]} on the driver, {worker.commit[:12]} on the worker"
        if self.prompt_hash != worker.prompt_hash:
            return f"modes' code {self.prompt_hash} on the driver, {worker.prompt_hash} on the worker"
        theirs = dict(worker.scenarios)
        for scenario_id, digest in self.scenarios:
            if theirs.get(scenario_id) != digest:
                return f"scenario {scenario_id} differs between the driver and the worker"
        return None


def fingerprint(setup: WorkerSetup) -> Fingerprint:
    """This process's fingerprint for ``setup``'s scenarios."""
    version, commit, prompts = _code_fingerprint()
    return Fingerprint(version, commit, prompts, tuple((s.id, scenario_digest(s)) for s in setup.scenarios))


@cache
def _code_fingerprint() -> tuple[str, str | None, str | None]:
    """bench's version, commit and modes hash, once per process (a Ray worker process runs many tasks)."""
    return __version__, bench_commit(), prompt_hash()


@dataclass(frozen=True)
class Refused:
    """A task that would not run its batch: the one line saying why."""

    line: str


@dataclass(frozen=True)
class BatchDone:
    """A task's finished units, and what a live endpoint taught the task's client (its steps down, its last error)."""

    units: list[UnitDone]
    facts: dict[str, Any] | None = None
    last_error: str | None = None


_SETUPS: dict[str, WorkerSetup] = {}  # a worker process's setups by object id: unpickled once, not once a task


@dataclass(frozen=True)
class TaskOrder:
    """What a Ray task is handed besides its batch: the setup's object reference (inside this object, so Ray hands
    over the reference and the worker process fetches and unpickles the setup once for all its tasks), the driver's
    fingerprint, the task's runs (a live model: requests) in flight, and with ``--model local`` the chat URL of the
    model server on the task's node (``ray_model_servers``)."""

    setup: Any  # a Ray ObjectRef of the WorkerSetup
    expected: Fingerprint
    concurrency: int
    url: str | None = None


def run_ray_batch(order: TaskOrder, keys: Sequence[UnitKey]) -> BatchDone | Refused:
    """A Ray task: checks it runs the driver's bench and scenarios, then runs its batch to the end as ``order``
    says."""
    import ray

    reference, expected, concurrency, url = order.setup, order.expected, order.concurrency, order.url
    setup = _SETUPS.get(reference.hex())
    if setup is None:
        setup = _SETUPS[reference.hex()] = ray.get(reference)
    node = ray.get_runtime_context().get_node_id()[:12]
    if not setup.folder.is_dir():
        return Refused(
            f"--executor ray: the run folder {setup.folder} is not on node {node}; workers write checkpoints into it, "
            "so it must be on storage every node mounts at the same path (docs/scale.md#ray)"
        )
    differs = expected.mismatch(fingerprint(setup))
    if differs is not None:
        return Refused(f"--executor ray: node {node} runs another version ({differs}); install the same bench there")
    learnt: dict[str, Any] = {}

    def closing(opened: OpenSource) -> None:
        learnt.update(facts=opened.facts(), last_error=opened.last_error())

    if url is not None and setup.endpoint is not None:
        setup = replace(setup, endpoint=replace(setup.endpoint, url=url))
    units = run_batch_blocking(replace(setup, concurrency=concurrency), keys, closing=closing)
    return BatchDone(units, learnt.get("facts") or None, learnt.get("last_error"))


@dataclass
class RayStats:
    """What the driver saw, for the manifest and the closing line."""

    duplicates: int = 0
    resent: int = 0  # batches sent again after their task was lost
    lost_units: int = 0  # units written as infrastructure errors after MAX_ATTEMPTS lost tasks
    facts: dict[str, Any] = field(default_factory=dict)  # what a live endpoint taught the tasks' clients, merged
    last_error: str | None = None  # a live endpoint's last failed request a task saw

    def learnt(self, answer: BatchDone) -> None:
        """Keeps what a task's client learnt: each step down once (``merged_facts``), and its last error."""
        if answer.facts:
            self.facts = merged_facts([self.facts, answer.facts] if self.facts else [answer.facts])
        if answer.last_error:
            self.last_error = answer.last_error


@dataclass
class _Batch:
    number: int
    keys: list[UnitKey]
    attempts: int = 0
    last_error: str = ""
    node: str | None = None  # the node it was pinned to (a model server's), while it is in flight


@dataclass(frozen=True)
class _Tasks:
    """The driver's side of one model's matrix on Ray: the ray module, the job, the setup its tasks share, the
    nodes' model servers (``--model local``) and the writer every unit goes to once."""

    ray: Any
    job: MatrixRun
    setup: WorkerSetup
    servers: NodeServers | None
    on_unit: Callable[[UnitDone], None]


@EXECUTORS.register("ray")
class RayTasks:
    """The cells as batches of Ray tasks; this process writes every line (a live model's recording too) and checks
    a live model's endpoint once, as for worker processes. The manifest says so, and counts the late duplicate
    results the driver dropped."""

    def run(self, job: MatrixRun, manifest: ManifestLedger) -> None:
        from harness.matrix.executors.ray_model_servers import node_model_servers

        stats = RayStats()
        with contextlib.ExitStack() as stack:
            servers = None
            if job.model.kind == "local":  # a llama.cpp server on each node, owned by an actor there
                ray = stack.enter_context(connected(job.ray_address))
                job.notify("starting the bundled model server (SmolLM2-135M, llama.cpp) on each Ray node ...")
                servers = stack.enter_context(node_model_servers(ray, job.options, job.concurrency))
            with shared_endpoint_of(job, manifest, servers) as shared:
                stats = run_in_ray(job, worker_setup(job, shared.endpoint), servers)
                shared.reports.append(WorkerExited(0, stats.facts or None, stats.last_error))
        duplicates = manifest.current.duplicate_units + stats.duplicates
        manifest.amend({"executor": "ray", "duplicate_units": duplicates})


def run_in_ray(job: MatrixRun, setup: WorkerSetup, servers: NodeServers | None) -> RayStats:
    """Runs the job's cells as Ray tasks given ``setup``; the driver's writer sees every unit once.

    Joins the cluster at ``job.ray_address`` (None: Ray reads RAY_ADDRESS, else starts a Ray instance here), or
    uses the connection this process has already. Returns when every unit is written, or when a stop request ended the
    matrix; a task's own error (a bug, a file it could not write) or a worker that refuses raises here, after the
    tasks in flight are cancelled.

    A live model (``setup.endpoint``) runs in at most ``setup.concurrency`` tasks at once, each holding its share of
    it (``worker_share`` of its slot), so ``--concurrency`` bounds the requests in flight across the cluster. With
    ``servers`` (``--model local``: a model server on each node) every batch is pinned to the node with a server and
    the fewest tasks, and asks that server; a lost batch goes again to the nodes whose server is still there.
    """
    with driver_writes(job, recording=setup.endpoint is not None) as on_unit:
        job.stop.polled()  # a signal only sets the request: the loop sees it between results and cancels the tasks
        # a worker's working directory is Ray's, not ours
        resolved = replace(setup, folder=Path(setup.folder).resolve())
        return _run_tasks(_Tasks(_ray(), job, resolved, servers, on_unit))


def _run_tasks(tasks: _Tasks) -> RayStats:
    """The driver's loop: batches sent to free slots, answers written once, lost batches sent again."""
    ray, job, setup, servers, on_unit = tasks.ray, tasks.job, tasks.setup, tasks.servers, tasks.on_unit
    stop = job.stop
    stats = RayStats()
    ledger = UnitLedger()
    with _connected(ray, job.ray_address):
        remote = ray.remote(max_retries=0, num_cpus=1)(run_ray_batch)
        every = TaskOrder(ray.put(setup), fingerprint(setup), setup.concurrency)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        live = setup.endpoint is not None
        limit = max(1, min(cpus, setup.concurrency)) if live else TASKS_PER_CPU * cpus
        free = deque(range(limit))  # the slots a task in flight holds (a live model: its share of --concurrency)
        numbered = (_Batch(n, keys) for n, keys in enumerate(batches(job.streak.cells(job.cells), BATCH_UNITS)))
        again: deque[_Batch] = deque()
        in_flight: dict[Any, tuple[_Batch, int]] = {}
        try:
            while not stop.requested:
                for batch in _next_batches(again, numbered, len(free)):
                    slot = free.popleft()
                    share = worker_share(setup.concurrency, limit, slot) if live else setup.concurrency
                    batch.attempts += 1
                    ledger.sent(batch.number)
                    order = _placed(servers, batch, replace(every, concurrency=share))
                    in_flight[_send(remote, batch, order)] = (batch, slot)
                if not in_flight:
                    break
                for reference in _finished(ray, list(in_flight)):
                    batch, slot = in_flight.pop(reference)
                    free.append(slot)
                    answer = _answer(ray, reference, batch)
                    ledger.settled(batch.number)
                    if servers is not None and batch.node is not None:
                        servers.busy[batch.node] -= 1
                        if answer is None:
                            servers.forget_dead(ray)
                    if isinstance(answer, Refused):
                        raise UserInputError(answer.line)
                    if answer is None and batch.attempts < MAX_ATTEMPTS:
                        stats.resent += 1
                        again.append(batch)
                    elif answer is None:
                        stats.lost_units += len(batch.keys)
                        for key in batch.keys:
                            on_unit(
                                lost_unit(
                                    setup,
                                    key,
                                    f"Ray lost this unit's task {batch.attempts} times; last: {batch.last_error}",
                                )
                            )
                    else:
                        stats.learnt(answer)
                        for unit in answer.units:
                            if ledger.first(batch.number, unit.run_id):
                                on_unit(unit)
        finally:
            _cancel(ray, list(in_flight))
    stats.duplicates = ledger.duplicates
    return stats


def _placed(servers: NodeServers | None, batch: _Batch, order: TaskOrder) -> TaskOrder:
    """``order`` for ``batch``: as it is, or (``--model local``) with the URL of the model server on the node with the
    fewest tasks, where the batch is pinned."""
    if servers is None:
        return order
    batch.node = node = servers.pick()
    servers.busy[node] += 1
    return replace(order, url=servers.chat_url(node))


def _send(remote: Any, batch: _Batch, order: TaskOrder) -> Any:
    """Starts ``batch``'s task: anywhere, or pinned to the node ``_placed`` chose."""
    if batch.node is None:
        return remote.remote(order, batch.keys)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    pinned = remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(batch.node, soft=False))
    return pinned.remote(order, batch.keys)


def _finished(ray: Any, references: list[Any]) -> list[Any]:
    """The tasks that have ended: waits up to POLL_S for the first, then takes whichever others are done too."""
    ready, rest = ray.wait(references, num_returns=1, timeout=POLL_S)
    if ready and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        ready += more
    return list(ready)


def _next_batches(again: deque[_Batch], numbered: Iterator[_Batch], room: int) -> Iterator[_Batch]:
    """Up to ``room`` batches to send: those sent again first, then new ones (taken lazily: memory stays flat)."""
    for _ in range(room):
        if again:
            yield again.popleft()
        elif (batch := next(numbered, None)) is not None:
            yield batch
        else:
            return


def _answer(ray: Any, reference: Any, batch: _Batch) -> BatchDone | Refused | None:
    """A finished task's units or refusal; None when its worker, node or result was lost (the batch goes again).
    A task that raised raises here: a file it could not write as WriteFailed, anything else with its line."""
    exceptions = ray.exceptions
    lost = (
        exceptions.WorkerCrashedError,
        exceptions.NodeDiedError,
        exceptions.LocalRayletDiedError,
        exceptions.ObjectLostError,
        exceptions.OutOfMemoryError,
        exceptions.TaskUnschedulableError,  # pinned to a node (its model server's) that has left
    )
    try:
        answer: BatchDone | Refused = ray.get(reference)
    except lost as exc:
        batch.last_error = f"{type(exc).__name__}: {_first_line(exc)}"
        return None
    except exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else None
        if isinstance(cause, WriteFailed):
            raise WriteFailed(cause.path, cause.reason) from None
        if isinstance(cause, UserInputError):
            raise UserInputError(str(cause)) from None
        named = cause if cause is not None else exc
        raise RuntimeError(f"Ray task {type(named).__name__}: {_first_line(named)}") from None
    return answer


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""


def _cancel(ray: Any, references: list[Any]) -> None:
    """Cancels the tasks in flight and waits a little for them to end: none writes into the folder afterwards."""
    if not references:
        return
    for reference in references:
        with contextlib.suppress(Exception):
            ray.cancel(reference, force=True)
    with contextlib.suppress(Exception):
        ray.wait(references, num_returns=len(references), timeout=CANCEL_WAIT_S)


def _ray() -> Any:
    """The ray module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UserInputError(f"--executor ray: Ray is not installed ({INSTALL_HINT})") from None
    return ray


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[Any]:
    """The ray module, connected for the block (``run_in_ray`` inside it uses the same connection)."""
    ray = _ray()
    with _connected(ray, address):
        yield ray


@contextlib.contextmanager
def _connected(ray: Any, address: str | None) -> Iterator[None]:
    """A connection to the cluster for the matrix: the one this process has, or a new one closed at the end."""
    if ray.is_initialized():
        yield
        return
    started = time.monotonic()
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, include_dashboard=False)
    except ConnectionError as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "a local Ray"
        raise UserInputError(f"--executor ray: cannot reach {where}: {_first_line(exc)}") from None
    logging.getLogger(__name__).debug("joined Ray in %.1f s", time.monotonic() - started)
    try:
        yield
    finally:
        ray.shutdown()
