"""The driver's side of an executor that runs units elsewhere (worker processes, Ray tasks): a live endpoint
checked once and shared, the setup every worker is given, and the one write path for a finished unit."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.matrix.cell.units import Cell
from harness.matrix.executors.base import MatrixRun
from harness.matrix.executors.unit_batch import UnitDone, WorkerExited, WorkerSetup
from harness.models.recording import RECORDING_FILE
from harness.records.folder import TRACE_FILE
from harness.records.manifest import ManifestLedger
from harness.records.trace import TraceWriter
from modes.runtimes.own_agent import is_agent_spec

if TYPE_CHECKING:
    from harness.matrix.executors.ray_model_servers import NodeServers
    from harness.models.live import LiveConfig


@dataclass
class Shared:
    """The endpoint every worker asks (None: a model that is not live), and what the workers said as they exited."""

    endpoint: LiveConfig | None
    reports: list[WorkerExited] = field(default_factory=list)


@contextlib.contextmanager
def shared_endpoint_of(
    job: MatrixRun, manifest: ManifestLedger, servers: NodeServers | None = None
) -> Iterator[Shared]:
    """The endpoint an executor's workers ask, for as long as they run. A live model's endpoint is checked here,
    once, and every worker asks it (a local model: the one server started here, or with ``servers`` the one on each
    Ray node, checked there); the manifest says what it says for one process, with what the workers' clients learnt
    merged in once they are done."""
    if not job.model.live:
        yield Shared(None)
        return
    from harness.models.shared_endpoint import merged_facts, shared_endpoint

    with shared_endpoint(
        job.model,
        endpoint=job.endpoint,
        options=job.options,
        concurrency=job.concurrency,
        run_folder=job.folder,
        scenarios=job.scenarios,
        notify=job.notify,
        checked=servers.config if servers is not None else None,
    ) as opened:
        live = opened.live if servers is None else opened.live.model_copy(update=servers.manifest_facts())
        manifest.amend_live(job.index, live, write=True)
        shared = Shared(opened.config)
        job.streak.last_error = lambda: next((r.last_error for r in reversed(shared.reports) if r.last_error), None)
        try:
            yield shared
        finally:
            learnt = merged_facts([r.facts for r in shared.reports if r.facts])
            if learnt:
                manifest.amend_live(job.index, live.model_copy(update=learnt))


def worker_setup(job: MatrixRun, endpoint: LiveConfig | None) -> WorkerSetup:
    """What every worker of any executor is given once."""
    return WorkerSetup(
        folder=job.folder,
        model=job.model,
        options=job.options,
        concurrency=job.concurrency,
        seed=job.seed,
        gateway_policy=job.gateway_policy,
        approver=job.approver,
        scenarios=job.scenarios,
        with_events=job.on_event is not None,
        driver_pid=os.getpid(),
        label=job.label,
        endpoint=endpoint,
        agents=tuple(name for name in job.modes if is_agent_spec(name)),
        workdir=Path.cwd(),
    )


@contextlib.contextmanager
def driver_writes(job: MatrixRun, *, recording: bool) -> Iterator[Callable[[UnitDone], None]]:
    """The driver's one write path for a finished unit, whatever executor ran it: its recording lines first (a live
    model: a unit in the trace has its exchanges recorded), then its trace lines, then its events and outcome."""
    by_id = {s.id: s for s in job.scenarios}
    with contextlib.ExitStack() as files:
        writer = files.enter_context(TraceWriter(job.folder / TRACE_FILE))
        recorder = files.enter_context(TraceWriter(job.folder / RECORDING_FILE)) if recording else None

        def write(unit: UnitDone) -> None:
            if recorder is not None and unit.recording:
                recorder.write_serialized(unit.recording)
            writer.write_serialized(unit.lines)
            for event in unit.events:
                job.on_event(event)  # type: ignore[misc]  # events are sent only when on_event is given
            if unit.outcome.status != "interrupted":
                scenario, mode, trial = unit.key
                job.done(Cell(by_id[scenario], mode, trial), unit.outcome)

        yield write
