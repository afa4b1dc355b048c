"""What any executor's worker does with a batch of work units: the one worker-side path for every executor.

A worker (a local process today, a Ray task or actor tomorrow) is given a ``WorkerSetup`` once, opens the model
source once, and runs batches of unit keys under asyncio; every finished unit comes back whole as a ``UnitDone``
(its trace lines serialised already), so the driver stays the only writer of ``traces.jsonl``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, chdir
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.choices import GatewayPolicy
from harness.core.approvals import ApproverSpec
from harness.core.signals import StopRequest
from harness.matrix.cell.cell_runner import matrix_config, run_matrix
from harness.matrix.cell.frameworks import ready_modes
from harness.matrix.cell.units import Cell
from harness.models.choice import ModelChoice, OpenSource, open_source
from harness.models.config import LiveOptions
from harness.models.shared_endpoint import UnitRecordings, worker_source
from harness.records.trace import RunOutcome, TraceEvent, serialized
from harness.scenario.model import Scenario
from modes import MODES

if TYPE_CHECKING:
    from harness.models.live import LiveConfig

UnitKey = tuple[str, str, int]  # scenario, mode, trial: what crosses the process boundary instead of a Cell


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker needs, sent once when it starts (everything here pickles)."""

    folder: Path
    model: ModelChoice
    options: LiveOptions
    concurrency: int  # this worker's share of --concurrency
    seed: int
    gateway_policy: GatewayPolicy
    approver: ApproverSpec | None
    scenarios: tuple[Scenario, ...]
    with_events: bool  # the driver shows each event (a progress bar): send the event objects too
    driver_pid: int
    label: str | None = None  # the model's label in the matrix (a replay beside the model it recorded: its own)
    endpoint: LiveConfig | None = None  # a live model: the endpoint the driver checked once, which every worker asks
    agents: tuple[str, ...] = ()  # users' own agents among the modes (FILE.py:FACTORY), loaded by every worker
    workdir: Path | None = None  # the driver's working folder: where a relative agent path or module is found


@dataclass(frozen=True)
class WorkerExited:
    """A worker is done; a live model's worker says what the endpoint taught its client, and its last error."""

    index: int
    facts: dict[str, Any] | None = None
    last_error: str | None = None


def load_agents(setup: WorkerSetup) -> None:
    """Registers the users' own agents in this worker as the driver did: a worker is a fresh interpreter (or a Ray
    worker elsewhere) whose mode registry has bench's modes only; a relative path is read from the driver's folder."""
    missing = [name for name in setup.agents if name not in MODES]
    if missing:
        with chdir(setup.workdir or Path.cwd()):
            ready_modes(missing)


@dataclass(frozen=True)
class UnitDone:
    """A finished unit: its lines as written, the outcome its summary carries, and its events when asked for.

    ``recording`` is a live model's exchanges of the run (``recording.jsonl`` lines), written by the driver too.
    Pickled, the outcome travels as its JSON and the events as a flag (both are read back from bytes): pickling the
    pydantic objects cost a worker and the driver about twice as much per unit.
    """

    key: UnitKey
    run_id: str
    lines: bytes
    outcome: RunOutcome
    events: tuple[TraceEvent, ...] = ()
    recording: bytes = b""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        outcome = self.outcome.__pydantic_serializer__.to_json(self.outcome)
        return _unit_done, ((self.key, self.run_id, self.lines, outcome, bool(self.events), self.recording),)


def _unit_done(wire: tuple[UnitKey, str, bytes, bytes, bool, bytes]) -> UnitDone:
    """A ``UnitDone`` unpickled from its key, run id, lines, outcome JSON, events flag and recording: the outcome
    validated from its JSON, the events read from the lines."""
    key, run_id, lines, outcome, with_events, recording = wire
    events = tuple(TraceEvent.model_validate_json(line) for line in lines.splitlines()) if with_events else ()
    return UnitDone(key, run_id, lines, RunOutcome.model_validate_json(outcome), events, recording)


RunBatch = Callable[[Sequence[UnitKey]], Awaitable[None]]


def _quiet(line: str) -> None:
    """A worker's notes when nobody listens for them."""


@dataclass(frozen=True)
class UnitHooks:
    """Who hears from a worker's session: ``send`` gets each finished unit whole, ``notify`` the client's notes (a
    step down), ``closing`` the model source before it closes (what the endpoint taught it)."""

    send: Callable[[UnitDone], Any]
    notify: Callable[[str], None] = _quiet
    closing: Callable[[OpenSource], None] | None = None


@asynccontextmanager
async def unit_session(setup: WorkerSetup, stop: StopRequest, hooks: UnitHooks) -> AsyncIterator[RunBatch]:
    """Opens the model source once and yields ``run(keys)``: runs those units, handing each to ``hooks.send`` whole.

    A live model asks ``setup.endpoint`` with this worker's own client; its exchanges travel with their unit.
    Closing the session closes the checkpoint store and the model's client, also when a stop ended it.
    """
    send, notify, closing = hooks.send, hooks.notify, hooks.closing
    load_agents(setup)
    scenarios = {s.id: s for s in setup.scenarios}
    recordings = UnitRecordings()
    source: AbstractContextManager[OpenSource]
    if setup.endpoint is not None:
        source = worker_source(setup.endpoint, setup.concurrency, recordings, notify, setup.options)
    else:
        source = open_source(
            setup.model,
            endpoint=None,
            options=setup.options,
            concurrency=setup.concurrency,
            run_folder=setup.folder,
            scenarios=setup.scenarios,
            label=setup.label,
        )
    with source as opened:
        config = matrix_config(
            opened.source,
            setup.folder,
            seed=setup.seed,
            concurrency=setup.concurrency,
            gateway_policy=setup.gateway_policy,
            stop=stop,
            approver=setup.approver,
            model_choice=setup.model.describe(),
        )

        def finished(events: Any) -> None:
            summary = events[-1]
            assert summary.outcome is not None
            key = (summary.scenario, summary.mode, summary.trial)
            extra = tuple(events) if setup.with_events else ()
            send(UnitDone(key, summary.run_id, serialized(events), summary.outcome, extra, recordings.take(key)))

        async def run(keys: Sequence[UnitKey]) -> None:
            cells = [Cell(scenarios[s], m, t) for s, m, t in keys]
            await run_matrix(cells, config, None, units=finished)

        try:
            yield run
        finally:
            if closing is not None:
                closing(opened)
            if config.checkpoints is not None:
                config.checkpoints.close()
            await config.model.aclose()


def run_batch_blocking(
    setup: WorkerSetup, keys: Sequence[UnitKey], *, closing: Callable[[OpenSource], None] | None = None
) -> list[UnitDone]:
    """Runs one batch to its end in a fresh event loop and returns its units (for executors without a stream);
    ``closing`` sees the model source before it closes (what a live endpoint taught this batch's client)."""
    done: list[UnitDone] = []

    async def main() -> None:
        async with unit_session(setup, StopRequest(), UnitHooks(done.append, closing=closing)) as run:
            await run(keys)

    asyncio.run(main())
    return done
