"""The run matrix: scenario x mode x trial, each cell an isolated run, under bounded concurrency."""

from __future__ import annotations

import asyncio
import hashlib
import platform
import random
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from harness import __version__
from harness.clock import Clock, SystemClock
from harness.context import RunContext, RunInfo, RunTrace
from harness.errors import ModelError, UserInputError
from harness.gateway import Gateway, GatewayPolicy
from harness.models.base import ModelSource
from harness.outcome import ModeResult, judge
from harness.scenario import Scenario
from harness.store import VirtualStore
from harness.trace import ErrorInfo, RunOutcome, TraceEvent, TraceWriter, write_json_atomic
from modes import get_mode


@dataclass(frozen=True)
class Cell:
    """One run of the matrix."""

    scenario: Scenario
    mode: str
    trial: int


@dataclass(frozen=True)
class MatrixConfig:
    """How every cell of a matrix is run."""

    model: ModelSource
    seed: int = 0
    concurrency: int = 1
    gateway_policy: GatewayPolicy = "enforce"
    clock: Clock = field(default_factory=SystemClock)
    new_run_id: Callable[[], str] = field(default=lambda: uuid.uuid4().hex[:16])


def cells_for(scenarios: list[Scenario], modes: list[str], trials: int) -> list[Cell]:
    """The matrix in a stable order: scenario, then mode, then trial."""
    return [Cell(s, m, t) for s in scenarios for m in modes for t in range(1, trials + 1)]


def run_seed(seed: int, cell: Cell) -> int:
    """A per-run seed that depends only on the matrix seed and the cell, never on scheduling."""
    digest = hashlib.sha256(f"{seed}:{cell.scenario.id}:{cell.mode}:{cell.trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


async def run_cell(cell: Cell, config: MatrixConfig, sink: Callable[[TraceEvent], None]) -> RunOutcome:
    """Runs one cell to its summary event. Model and harness errors end this run only."""
    seed = run_seed(config.seed, cell)
    scenario = cell.scenario
    model = config.model.for_run(seed)
    info = RunInfo(run_id=config.new_run_id(), scenario=scenario.id, mode=cell.mode, model=model.label, trial=cell.trial)
    clock = config.clock
    trace = RunTrace(sink, info, clock)
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), config.gateway_policy)
    ctx = RunContext(scenario=scenario, model=model, gateway=gateway, trace=trace, clock=clock,
                     rng=random.Random(seed), limits=scenario.limits)
    started = clock.monotonic()
    ended_by: str | None = None  # the kind of the error that ended the run: infrastructure runs are not judged
    trace.emit(step=0, decision_maker="runtime", kind="run_start",
               detail={"seed": seed, "gateway_policy": config.gateway_policy,
                       "limits": scenario.limits.model_dump(), "agent_role": scenario.agent_role})
    try:
        result = await get_mode(cell.mode).run(ctx)
    except ModelError as exc:
        # A failed request names its step; an answer the mode could not use belongs to the step just traced.
        trace.emit(step=exc.step if exc.step is not None else trace.last_step, decision_maker="runtime",
                   kind="error", result="run_error", error=ErrorInfo(kind=exc.kind, message=str(exc)))
        result, ended_by = ModeResult("error"), exc.kind
    except Exception as exc:  # a bug in a mode must not take the matrix down; the trace keeps it
        trace.emit(step=0, decision_maker="runtime", kind="error", result="run_error",
                   error=ErrorInfo(kind="internal", message=f"{type(exc).__name__}: {exc}"))
        result, ended_by = ModeResult("error"), "internal"
    wall_ms = (clock.monotonic() - started) * 1000.0
    outcome = judge(scenario, gateway, result, llm_calls=trace.llm_calls, usage=trace.usage,
                    wall_ms=wall_ms, errors=dict(trace.errors), ended_by=ended_by)
    trace.emit(step=outcome.steps, decision_maker="runtime", kind="summary", result=outcome.status,
               usage=outcome.usage, latency_ms=outcome.wall_ms, outcome=outcome)
    return outcome


async def run_matrix(cells: list[Cell], config: MatrixConfig, sink: Callable[[TraceEvent], None],
                     on_done: Callable[[Cell, RunOutcome], None] | None = None) -> list[RunOutcome]:
    """Runs every cell with ``config.concurrency`` workers; results come back in cell order.

    Workers pull cells one at a time, so a large matrix never holds more than ``concurrency`` runs in memory.
    """
    outcomes: list[RunOutcome | None] = [None] * len(cells)
    pending = iter(enumerate(cells))

    async def worker() -> None:
        for index, cell in pending:
            outcomes[index] = outcome = await run_cell(cell, config, sink)
            if on_done is not None:
                on_done(cell, outcome)
            await asyncio.sleep(0)  # a scripted run never suspends; this lets Ctrl-C cancel between runs

    await asyncio.gather(*(worker() for _ in range(max(1, min(config.concurrency, len(cells))))))
    return [outcome for outcome in outcomes if outcome is not None]


# ---------------------------------------------------------------- a run folder


def prepare_out_dir(out: Path | None, results_root: Path, clock: Clock) -> Path:
    """The folder a run writes to: the one given (which must not hold a trace yet) or a new one."""
    if out is None:
        stamp = clock.now().strftime("%Y%m%d-%H%M%S")
        out = results_root / f"{stamp}-{uuid.uuid4().hex[:6]}"
    if (out / "traces.jsonl").exists():
        raise UserInputError(f"--out {out}: already holds traces.jsonl; choose a new folder")
    if out.exists() and not out.is_dir():
        raise UserInputError(f"--out {out}: exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def versions() -> dict[str, str]:
    """Versions that could change a result: bench, Python, the platform, key libraries."""
    found = {"bench": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("pydantic", "httpx", "jsonschema"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


class RunFolder:
    """A run's folder: ``traces.jsonl`` written as it goes, ``manifest.json`` at start and at the end."""

    def __init__(self, path: Path, manifest: dict[str, Any], clock: Clock):
        self.path, self._clock = path, clock
        self.manifest = dict(manifest, start_time=clock.now().isoformat(), end_time=None, status="running",
                             versions=versions())
        write_json_atomic(path / "manifest.json", self.manifest)
        self.writer = TraceWriter(path / "traces.jsonl")

    def close(self, status: str, outcomes: list[RunOutcome]) -> None:
        self.writer.close()
        self.manifest.update(end_time=self._clock.now().isoformat(), status=status, runs=len(outcomes))
        write_json_atomic(self.path / "manifest.json", self.manifest)
