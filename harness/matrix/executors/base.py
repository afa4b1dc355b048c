"""What every executor is handed and the one method it runs: an ``Executor`` runs one model's cells of a matrix.

The pipeline builds one frozen ``MatrixRun`` per model (httpx's transport shape: one object in, one method) and
picks the executor by name from ``EXECUTORS``; each executor module registers its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness.registry import Registry

if TYPE_CHECKING:
    from harness.choices import GatewayPolicy
    from harness.core.approvals import ApproverSpec
    from harness.core.signals import StopRequest
    from harness.matrix.cell.units import Cell
    from harness.models.choice import ModelChoice
    from harness.models.config import Endpoint, LiveOptions
    from harness.models.dead_endpoint import FailureStreak
    from harness.records.manifest import ManifestLedger
    from harness.records.trace import RunOutcome, TraceEvent
    from harness.scenario.model import Scenario

OnDone = Callable[["Cell", "RunOutcome"], None]
OnEvent = Callable[["TraceEvent"], None]  # every trace event as it is written (the CLI's progress bar)
Notify = Callable[[str], None]


@dataclass(frozen=True)
class MatrixRun:
    """One model's share of a matrix, as every executor gets it: the cells, the model and how to ask it, the
    matrix's seed and policy, and who hears of each run. Built once per model by the pipeline; never changed."""

    folder: Path
    cells: Iterable[Cell]  # this model's cells still to run, read once
    runs: int  # the matrix's cells per model (sizes batches so that every worker gets some)
    model: ModelChoice
    endpoint: Endpoint | None
    options: LiveOptions
    concurrency: int
    workers: int  # local worker processes (1: this process)
    ray_address: str | None
    approver: ApproverSpec | None
    modes: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    seed: int
    gateway_policy: GatewayPolicy
    index: int  # which of the manifest's models this is
    label: str
    stop: StopRequest
    streak: FailureStreak  # runs in a row failing alike: stops taking cells (a dead endpoint)
    done: OnDone
    on_event: OnEvent | None
    notify: Notify


class Executor(Protocol):
    """Runs a model's cells; the driver (this process) writes every line, and ``manifest`` is amended here only
    through its ledger (live facts learnt, the executor's own counts)."""

    def run(self, job: MatrixRun, manifest: ManifestLedger) -> None: ...


# in-process (asyncio here), workers (local processes), ray (tasks on a cluster): each module registers its own
EXECUTORS: Registry[type[Executor]] = Registry("executor")
