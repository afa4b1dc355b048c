"""The run matrix: scenario x mode x trial, each cell an isolated run, under bounded concurrency."""

from __future__ import annotations

import asyncio
import hashlib
import random
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy
from harness.core.approvals import ApproverSpec, Gatekeeper, RejectedByHuman, Suspended, nobody_decides
from harness.core.clock import Clock, SystemClock, run_clock
from harness.core.context import RunContext, RunInfo, RunTrace
from harness.core.gateway import Gateway
from harness.core.model_port import Model, ModelSource
from harness.core.outcome import ModeResult, judge
from harness.core.signals import RunInterrupted, StopRequest
from harness.core.store import VirtualStore
from harness.errors import AgentError, ModelError, ResumeMismatch, WriteFailed
from harness.matrix.cell.restore import CachedModel, ResumeGatekeeper, store_snapshot
from harness.matrix.cell.runtime_resume import rebuilt_gateway, restore_trace, resume_framework, runtime_state
from harness.matrix.cell.units import Cell, UnitLines, UnitSink, unit_id
from harness.models.recording import request_hash
from harness.records.checkpoint import (
    Checkpoint,
    CheckpointStore,
    HumanDecision,
    RecordedAttempt,
    RecordedReply,
    RuntimeState,
    content_digest,
)
from harness.records.folder import RUNTIME_DIR
from harness.records.trace import ErrorInfo, RunOutcome, TraceEvent
from harness.records.write_faults import reached
from harness.scenario.model import Scenario
from modes import Mode, get_mode
from modes.runtimes.base import RuntimeMode, quiet_frameworks


@dataclass(frozen=True)
class MatrixConfig:
    """How every cell of a matrix is run."""

    model: ModelSource
    seed: int = 0
    concurrency: int = 1
    gateway_policy: GatewayPolicy = DEFAULT_GATEWAY_POLICY
    clock: Clock = field(default_factory=SystemClock)
    new_run_id: Callable[[], str] | None = None  # None: the run id is the work unit's (harness.matrix.cell.units)
    stop: StopRequest = field(default_factory=StopRequest)  # set by SIGINT/SIGTERM: runs end at their next event
    approver: Callable[[int], Gatekeeper] = nobody_decides  # makes each run's gatekeeper, seeded by the run's seed
    checkpoints: CheckpointStore | None = None  # where suspended runs are checkpointed (a run folder's database)
    model_choice: str = ""  # the --model value the matrix runs with, for checkpoints (resume asks it again)
    approver_label: str = ""  # the --approver value ("" for none): part of every work unit's id


def matrix_config(
    model: ModelSource,
    folder: Path,
    *,
    seed: int,
    concurrency: int,
    gateway_policy: GatewayPolicy,
    stop: StopRequest,
    approver: ApproverSpec | None,
    model_choice: str,
) -> MatrixConfig:
    """How a matrix's cells run in one process, the driver's or a worker's: checkpoints in ``folder``, each run's
    gatekeeper from ``approver`` (None: runs suspend at gates), and the unit ids' parts."""
    return MatrixConfig(
        model=model,
        seed=seed,
        concurrency=concurrency,
        gateway_policy=gateway_policy,
        stop=stop,
        approver=nobody_decides if approver is None else approver.for_run,
        checkpoints=CheckpointStore(folder),
        model_choice=model_choice,
        approver_label="" if approver is None else str(approver),
    )


def cells_for(scenarios: Sequence[Scenario], modes: Sequence[str], trials: int) -> Iterator[Cell]:
    """The matrix in a stable order (scenario, then mode, then trial), generated lazily: memory stays flat in trials."""
    return (Cell(s, m, t) for s in scenarios for m in modes for t in range(1, trials + 1))


def run_seed(seed: int, cell: Cell) -> int:
    """A per-run seed that depends only on the matrix seed and the cell, never on scheduling."""
    digest = hashlib.sha256(f"{seed}:{cell.scenario.id}:{cell.mode}:{cell.trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


async def run_cell(cell: Cell, config: MatrixConfig, sink: Callable[[TraceEvent], None]) -> RunOutcome:
    """Runs one cell to its summary event. Model and harness errors end this run only; a stop request ends it
    with an ``interrupted`` summary and is raised on, so the matrix stops too."""
    seed = run_seed(config.seed, cell)
    return await execute_run(
        cell,
        config,
        sink,
        run_id=run_id_of(config, cell),
        seed=seed,
        model=config.model.for_run(seed),
        gatekeeper=config.approver(seed),
    )


async def execute_run(
    cell: Cell,
    config: MatrixConfig,
    sink: Callable[[TraceEvent], None],
    *,
    run_id: str,
    seed: int,
    model: Model,
    gatekeeper: Gatekeeper,
    resuming: Checkpoint | None = None,
    decision: HumanDecision | None = None,
    past: Sequence[TraceEvent] = (),
) -> RunOutcome:
    """One run, from its start or, ``resuming`` a checkpoint, replayed silently to its stop and continued.

    A resumed run goes through the very same code: the gatekeeper unmutes its trace at the stop the
    checkpoint names (``harness.matrix.cell.restore``); a run that ends before it gets there raises ResumeMismatch and
    nothing has been written. ``resuming`` is the claimed checkpoint (status deciding, ``decision`` its claim):
    where the run stops next, or its end, replaces the claim; an interrupted one leaves it for the next resume.
    A framework-run mode is not replayed: its gateway is rebuilt from the checkpoint and its framework goes on from
    its own state (``harness.matrix.cell.runtime_resume``; ``past``: the lines a killed resume of it wrote already).
    """
    scenario = cell.scenario
    info = RunInfo(run_id=run_id, scenario=scenario.id, mode=cell.mode, model=model.label, trial=cell.trial)
    clock = run_clock(config.clock, model)  # a replay counts its recorded model time
    trace = RunTrace(sink, info, clock, config.stop)
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), config.gateway_policy)
    mode = get_mode(cell.mode)
    framework = isinstance(mode, RuntimeMode)
    if framework:
        quiet_frameworks()  # before the mode imports its framework
    resumed_framework = framework and resuming is not None and decision is not None
    if resumed_framework:  # the framework's own state says where it stands; the model is the run's real one
        assert resuming is not None
        gateway = rebuilt_gateway(scenario, resuming, gateway)
        restore_trace(trace, resuming)
    elif resuming is not None and decision is not None:
        trace.muted = True
        model, gatekeeper = CachedModel(resuming, model, trace), ResumeGatekeeper(resuming, decision, trace, gateway)
    ctx = RunContext(
        scenario=scenario,
        model=model,
        gateway=gateway,
        trace=trace,
        clock=clock,
        rng=random.Random(seed),
        limits=scenario.limits,
        gatekeeper=gatekeeper,
        state_dir=state_dir_of(config, run_id),
    )
    if resuming is None and ctx.state_dir is not None and ctx.state_dir.exists():
        shutil.rmtree(ctx.state_dir)  # a killed attempt of this unit left its framework's state; this run starts anew
    started = clock.monotonic()
    interrupted: BaseException | None = None
    ended_by: str | None = None  # the kind of the error that ended the run: infrastructure runs are not judged
    if not resumed_framework:  # a replayed run writes it muted; a framework's resume goes on after its stop
        emit_start(trace, scenario, mode, seed, config.gateway_policy)
    try:
        if resumed_framework:
            assert isinstance(mode, RuntimeMode) and resuming is not None and decision is not None
            result, ended_by = await resume_framework(mode, ctx, resuming, decision, past)
        else:
            result = await mode.run(ctx)
    except Suspended as stop:
        result = ModeResult("suspended", suspended_at=stop.gate)
    except RejectedByHuman as rejection:
        result = ModeResult("rejected_by_human", suspended_at=rejection.gate)
    except ModelError as exc:
        # A failed request names its step; an answer the mode could not use belongs to the step just traced.
        trace.emit(
            step=exc.step if exc.step is not None else trace.last_step,
            decision_maker="runtime",
            kind="error",
            result="run_error",
            error=ErrorInfo(kind=exc.kind, message=str(exc)),
        )
        result, ended_by = ModeResult("error"), exc.kind
    except AgentError as exc:  # the user's own agent failed: judged (agent_error), not bench's plumbing
        trace.emit(
            step=trace.last_step,
            decision_maker="framework",
            kind="error",
            result="run_error",
            error=ErrorInfo(kind="agent", message=str(exc)),
        )
        result, ended_by = ModeResult("error"), "agent"
    except (RunInterrupted, asyncio.CancelledError) as exc:
        interrupted, result = exc, ModeResult("interrupted")
    except (ResumeMismatch, WriteFailed):  # not this run's fault: the matrix stops, with the file named
        raise
    except Exception as exc:  # a bug in a mode must not take the matrix down; the trace keeps it
        trace.emit(
            step=0,
            decision_maker="runtime",
            kind="error",
            result="run_error",
            error=ErrorInfo(kind="internal", message=f"{type(exc).__name__}: {exc}"),
        )
        result, ended_by = ModeResult("error"), "internal"
    if trace.muted and interrupted is None:
        raise ResumeMismatch(
            f"run {run_id} ended ({result.status}) before it reached the stop its checkpoint "
            "names: the mode or its prompts changed since it suspended"
        )
    if interrupted is not None and resuming is not None:
        raise interrupted  # its decision stays claimed: the next bench resume carries it out from the checkpoint
    wall_ms = (clock.monotonic() - started) * 1000.0 + (resuming.wall_ms if resuming is not None else 0.0)
    runtime = runtime_state(gateway, trace) if framework else None  # before the summary: the stop's own step
    outcome = emit_summary(trace, scenario, gateway, result, wall_ms=wall_ms, ended_by=ended_by)
    earlier = resuming.replies if resumed_framework and resuming is not None else ()
    if config.checkpoints is not None and resuming is not None:  # where the run now stands replaces the claim
        config.checkpoints.settle(resuming, checkpoint_of(ctx, cell, config, seed, result, wall_ms, runtime, earlier))
        reached("resume settled")  # test-only: BENCH_KILL_AT may signal this process once the decision is applied
    elif config.checkpoints is not None and result.status == "suspended":
        config.checkpoints.save(checkpoint_of(ctx, cell, config, seed, result, wall_ms, runtime))
    if interrupted is not None:
        raise interrupted
    return outcome


def emit_start(trace: RunTrace, scenario: Scenario, mode: Mode, seed: int, gateway_policy: str) -> None:
    """A run's first line: its seed, gateway policy, limits, the mode's parameters and the agent's role."""
    trace.emit(
        step=0,
        decision_maker="runtime",
        kind="run_start",
        detail={
            "seed": seed,
            "gateway_policy": gateway_policy,
            "limits": scenario.limits.model_dump(),
            "parameters": mode.parameters(),
            "agent_role": scenario.agent_role,
        },
    )


def emit_summary(
    trace: RunTrace,
    scenario: Scenario,
    gateway: Gateway,
    result: ModeResult,
    *,
    wall_ms: float,
    ended_by: str | None,
) -> RunOutcome:
    """A run's last line: its outcome, judged by the runtime from what the gateway recorded."""
    outcome = judge(
        scenario,
        gateway,
        result,
        llm_calls=trace.llm_calls,
        usage=trace.usage,
        wall_ms=wall_ms,
        errors=dict(trace.errors),
        ended_by=ended_by,
    )
    trace.emit(
        step=outcome.steps,
        decision_maker="runtime",
        kind="summary",
        result=outcome.status,
        usage=outcome.usage,
        latency_ms=outcome.wall_ms,
        outcome=outcome,
        final=True,
    )
    return outcome


def run_id_of(config: MatrixConfig, cell: Cell) -> str:
    """The cell's run id: its work unit's id, the same from every executor and on every --resume."""
    if config.new_run_id is not None:
        return config.new_run_id()
    return unit_id(config.seed, cell, config.model_choice, config.gateway_policy, config.approver_label)


def state_dir_of(config: MatrixConfig, run_id: str) -> Path | None:
    """Where a run's framework keeps its own state: runtime/<run id>/ in the run folder (made by whoever writes
    there first); None without a run folder."""
    return None if config.checkpoints is None else config.checkpoints.folder / RUNTIME_DIR / run_id


def checkpoint_of(
    ctx: RunContext,
    cell: Cell,
    config: MatrixConfig,
    seed: int,
    result: ModeResult,
    wall_ms: float,
    runtime: RuntimeState | None = None,
    earlier: Sequence[RecordedReply] = (),
) -> Checkpoint:
    """What a run needs to go on in another process (a suspension), or the record that it was decided.

    A framework-run mode also keeps the gateway's state as its stop left it (``runtime``), and its replies so far:
    ``earlier`` (those before its last resume, which its framework did not ask again) then this process's."""
    gateway, trace = ctx.gateway, ctx.trace
    replies = [*earlier] + [
        RecordedReply(
            request_hash=request_hash(request),
            proposal=reply.proposal,
            text=reply.text,
            usage=reply.usage,
            latency_ms=reply.latency_ms,
            attempts=[
                RecordedAttempt(kind=a.kind, message=a.message, latency_ms=a.latency_ms, wait_s=a.wait_s)
                for a in reply.failed_attempts
            ],
        )
        for request, reply in ctx.transcript
    ]
    suspended = result.status == "suspended"
    return Checkpoint(
        run_id=trace.info.run_id,
        scenario=cell.scenario.id,
        scenario_digest=scenario_digest(cell.scenario),
        mode=cell.mode,
        model=config.model_choice,
        model_label=trace.info.model,
        trial=cell.trial,
        seed=seed,
        gateway_policy=config.gateway_policy,
        status="suspended" if suspended else "rejected" if result.status == "rejected_by_human" else "continued",
        pending_gate=result.suspended_at if suspended else None,
        replies=replies,
        decisions=[d.decision for d in gateway.decisions],
        store=store_snapshot(gateway),
        records=len(gateway.records),
        next_seq=trace.seq,
        wall_ms=wall_ms,
        runtime=runtime,
    )


def scenario_digest(scenario: Scenario) -> str:
    """A digest of what the scenario says (its parsed content): an edit that changes behaviour changes it."""
    return content_digest(scenario.model_dump(mode="json"))


async def run_matrix(
    cells: Iterable[Cell],
    config: MatrixConfig,
    sink: Callable[[TraceEvent], None] | None,
    on_done: Callable[[Cell, RunOutcome], None] | None = None,
    *,
    units: UnitSink | None = None,
) -> int:
    """Runs every cell with ``config.concurrency`` workers; returns how many runs ended.

    Workers pull cells one at a time from a lazy iterator, so neither the cells nor their outcomes
    are ever all in memory: a matrix of a million runs costs what ``concurrency`` runs cost. Each event goes
    to ``sink`` as it is written or, given ``units`` instead, each run's lines go there together once its summary is
    written (a work unit's result: ``harness.matrix.cell.units``).
    """
    if (sink is None) == (units is None):
        raise ValueError("run_matrix writes to a sink or to units, one of them")
    pending = iter(cells)
    finished = 0

    def run_sink() -> Callable[[TraceEvent], None]:
        if units is not None:
            return UnitLines(units)
        assert sink is not None
        return sink

    async def worker() -> None:
        nonlocal finished
        for cell in pending:
            outcome = await run_cell(cell, config, run_sink())
            finished += 1
            if on_done is not None:
                on_done(cell, outcome)
            await asyncio.sleep(0)  # lets a cancellation (a stop request) land between runs

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, config.concurrency))]
    try:
        await asyncio.gather(*workers)
    finally:
        await _end_every_run(workers)
    return finished


async def _end_every_run(workers: Sequence[asyncio.Future[None]]) -> None:
    """However the matrix ends (a stop request, a cancellation, one worker's error), every other run in flight
    ends too, with its summary written, before the matrix returns: nothing writes after the trace is closed."""
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
