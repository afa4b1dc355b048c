"""One run from spec to closed folder: plan the matrix, take the folder, start and always stop the model
source, run the cells, write the manifest, close. The CLI and Python callers go through ``run`` alike.

>>> from harness import RunSpec, run
>>> result = run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:eager"))
>>> result.folder / "traces.jsonl"
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy
from harness.core.approvals import parse_approver
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError, WriteFailed
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, matrix_config, run_matrix
from harness.matrix.cell.frameworks import framework_versions, ready_modes
from harness.matrix.cell.own_agent_files import agent_files, load_recorded
from harness.matrix.cell.provenance import KEY_LIBRARIES, prompt_hash, scenario_hashes
from harness.matrix.cell.units import Cell, UnitSink
from harness.matrix.executors.unit_batch import UnitDone, WorkerSetup
from harness.matrix.executors.workers import WorkerExited, run_in_workers
from harness.matrix.pipeline.exit_status import INFRASTRUCTURE, RunEnds
from harness.matrix.pipeline.spec import RunSpec, manifest_choices, project_dirs
from harness.models.choice import choose, model_label, open_source
from harness.models.config import LiveOptions
from harness.models.dead_endpoint import FailureStreak
from harness.models.record_through import with_counts
from harness.models.recording import RECORDING_FILE
from harness.records.folder import TRACE_FILE, RunFolder
from harness.records.manifest import MANIFEST_FILE, LiveManifest, Manifest, ManifestModel, read_manifest
from harness.records.trace import RunOutcome, TraceEvent, TraceWriter
from harness.scenario.load import load_all, select_scenarios
from harness.scenario.model import Scenario
from harness.version import __version__, bench_commit
from modes.runtimes.own_agent import is_agent_spec

if TYPE_CHECKING:
    from harness.matrix.executors.ray_model_servers import NodeServers
    from harness.models.live import LiveConfig

__all__ = ["Matrix", "RunResult", "plan", "run", "versions"]

OnDone = Callable[[Cell, RunOutcome], None]
OnEvent = Callable[[TraceEvent], None]  # every trace event as it is written (the CLI's progress bar)
Notify = Callable[[str], None]
OnModel = Callable[[str], None]  # a model's label, as its runs start (a matrix of several models runs them in turn)


@dataclass(frozen=True)
class Matrix:
    """What a run covers; a replay's defaults come from the recording."""

    modes: list[str]
    scenarios: list[Scenario]
    trials: int
    seed: int
    gateway_policy: GatewayPolicy
    notes: list[str] = field(default_factory=list)
    labels: tuple[str, ...] = ()  # each model's label, in the order the models run (the matrix runs once per model)

    @property
    def cells(self) -> int:
        """Runs per model."""
        return len(self.modes) * len(self.scenarios) * self.trials

    @property
    def size(self) -> int:
        """Runs in all: every model runs every cell."""
        return self.cells * max(1, len(self.labels))


@dataclass(frozen=True)
class RunResult:
    """Where the run is, what its manifest says, and whether a signal cut it short."""

    folder: Path
    manifest: Manifest
    notes: list[str]
    stop: StopRequest
    ends: RunEnds = field(default_factory=RunEnds)  # finished runs, and those an infrastructure error ended
    halted: str | None = None  # why the matrix stopped itself: runs in a row failing alike (FailureStreak)

    @property
    def interrupted(self) -> bool:
        return self.manifest.status == "interrupted"

    def exit_status(self) -> tuple[int, str] | None:
        """The exit code and its one line when the runs' end decides it (a signal, or nothing judged), else None."""
        if self.halted is not None and not self.stop.requested:
            return INFRASTRUCTURE, f"error: {self.halted}; bench run --resume {self.folder} continues it"
        if self.interrupted:
            return self.stop.exit_code, "interrupted; finished trace lines are kept and the manifest says interrupted"
        return self.ends.verdict()

    @property
    def traces(self) -> Path:
        return self.folder / TRACE_FILE


def plan(spec: RunSpec, scenarios_dir: Path) -> Matrix:
    """Modes, scenarios, trials and seed, and each model's label; every name is checked before anything starts.

    A replay that is the only model defaults the matrix to the recording's; among several models the matrix is the
    spec's (with the defaults for what it leaves out), and its seed is the recordings' when replays are among them.
    """
    labels = _labels(spec)
    recordings = {choice.describe(): _recording(choice.folder) for choice in spec.models if choice.folder is not None}
    for recorded in recordings.values():
        if spec.seed is not None and spec.seed != recorded.seed:
            raise UserInputError(
                f"--seed {spec.seed}: the recording was sampled with seed {recorded.seed}; a replay keeps its seed"
            )
    if len(spec.models) > 1 or not recordings:  # the spec's matrix, with the defaults for what it leaves out
        seeds = sorted({recorded.seed for recorded in recordings.values()})
        if len(seeds) > 1:
            raise UserInputError(
                f"--model {' and --model '.join(recordings)}: recorded with seeds {seeds}; a matrix has one seed, "
                "and a replay keeps its recording's"
            )
        return Matrix(
            ready_modes(spec.modes),
            select_scenarios(scenarios_dir, list(spec.scenarios)),
            spec.trials or 1,
            spec.seed if spec.seed is not None else next(iter(seeds), 0),
            spec.gateway or DEFAULT_GATEWAY_POLICY,
            labels=labels,
        )
    (recorded,) = recordings.values()
    notes = []
    modes = list(spec.modes) or load_recorded(recorded.modes, recorded.agents)
    scenarios = list(spec.scenarios)
    if not scenarios:
        available = set(load_all(scenarios_dir))
        scenarios = [name for name in recorded.scenarios if name in available]
        left_out = sorted(available - set(recorded.scenarios))
        if left_out:
            notes.append(
                f"the recording does not cover {', '.join(left_out)}; re-record to include them "
                "(docs/live-models.md: recording and replay)"
            )
    return Matrix(
        ready_modes(modes),
        select_scenarios(scenarios_dir, scenarios),
        spec.trials or recorded.trials,
        recorded.seed,
        spec.gateway or recorded.gateway_policy,
        notes,
        labels,
    )


def _recording(folder: Path) -> Manifest:
    """A recording's manifest; a folder of several models is refused: a replay answers as one model."""
    recorded = read_manifest(folder)
    if len(recorded.models) > 1:
        raise UserInputError(
            f"--model replay:{folder}: a matrix of {len(recorded.models)} models; a replay answers as one model "
            "(record each model into its own folder)"
        )
    return recorded


def _labels(spec: RunSpec) -> tuple[str, ...]:
    """Each model's label; two models under one label could not be told apart in a trace or a report, so a replay
    whose recorded label another model has (the bundled model beside its recording) is ``LABEL (replay)``."""
    labels = tuple(model_label(choice, spec.endpoint_for(choice)) for choice in spec.models)
    labels = tuple(
        f"{label} (replay)" if choice.folder is not None and labels.count(label) > 1 else label
        for choice, label in zip(spec.models, labels, strict=True)
    )
    for index, label in enumerate(labels):
        if label in labels[:index]:
            first = spec.models[labels.index(label)].describe()
            raise UserInputError(
                f"--model {first} and --model {spec.models[index].describe()} both run as {label!r}; "
                "reports could not tell their runs apart"
            )
    return labels


def run(
    spec: RunSpec,
    *,
    on_done: OnDone | None = None,
    notify: Notify = lambda line: None,
    on_plan: Callable[[Matrix], None] | None = None,
    on_event: OnEvent | None = None,
    on_model: OnModel | None = None,
) -> RunResult:
    """Runs the matrix ``spec`` describes into its folder; returns once the folder is closed.

    ``on_event`` sees every trace event right after it is written (None: nothing extra is called per event).
    Several models run the matrix one after another into the one folder; ``on_model`` hears each one's label as
    its runs start.

    SIGINT and SIGTERM stop the runs in flight at their next event; the manifest then says
    ``interrupted`` (``result.stop.exit_code`` is 130 or 143) and a ``--replace`` run leaves the old
    run in place. A local model server is always stopped. ``spec.resume`` continues a matrix that was
    cut short: only its cells without a final summary run.
    """
    if spec.resume is not None:
        return _continue(spec, on_done, notify, on_plan, on_event, on_model)
    scenarios_dir, results_root = project_dirs(spec.scenarios_dir)
    choice = spec.model
    matrix = plan(spec, scenarios_dir)
    models = [
        ManifestModel(choice=one.describe(), label=label, source=one.recorded_as)
        for one, label in zip(spec.models, matrix.labels, strict=True)
    ]
    for note in matrix.notes:
        notify(f"note: {note}")
    if on_plan is not None:
        on_plan(matrix)
    stop = StopRequest()
    ends = RunEnds()
    folder = RunFolder.take(spec.out, spec.replace, results_root, datetime.now(UTC))
    manifest = Manifest(
        command=list(spec.command),
        label=spec.label,
        modes=matrix.modes,
        scenarios=[s.id for s in matrix.scenarios],
        model=matrix.labels[0],
        model_source=choice.recorded_as,
        model_choice=choice.describe(),
        models=models,
        trials=matrix.trials,
        seed=matrix.seed,
        gateway_policy=matrix.gateway_policy,
        concurrency=spec.concurrency,
        start_time=_now(),
        versions=versions(matrix.modes),
        agents=agent_files(matrix.modes),
        bench_commit=bench_commit(),
        scenario_hashes=scenario_hashes(scenarios_dir, [s.id for s in matrix.scenarios]),
        prompt_hash=prompt_hash(),
        replay_of=str(choice.folder) if choice.folder is not None else None,
        approver=None if spec.approver is None else str(spec.approver),
        live_options=spec.live_options.model_dump(exclude_defaults=True),
        notes=matrix.notes,
    )
    streak = FailureStreak()
    try:
        with stop.installed():
            manifest, streak = _run_cells(
                folder.path,
                manifest,
                lambda _: _all_cells(matrix),
                spec,
                matrix,
                stop,
                on_done,
                notify,
                ends,
                on_event,
                on_model=on_model,
            )
    except WriteFailed:
        if not (folder.path / MANIFEST_FILE).exists():  # else the manifest says why, and --resume goes on from it
            folder.discard()
        raise
    except BaseException:
        folder.discard()  # only a folder in which no run has written anything
        raise
    finally:
        folder.release()
    where = folder.finish(manifest.status == "complete")
    return RunResult(where, manifest, matrix.notes, stop, ends, streak.line())


def _continue(
    spec: RunSpec,
    on_done: OnDone | None,
    notify: Notify,
    on_plan: Callable[[Matrix], None] | None,
    on_event: OnEvent | None = None,
    on_model: OnModel | None = None,
) -> RunResult:
    """A matrix that was cut short (killed, interrupted) goes on in its own folder: partial runs are dropped
    cleanly, and only the cells without a final summary run, so the folder ends with every cell exactly once."""
    from harness.matrix.pipeline.unfinished import keep_finished_runs

    assert spec.resume is not None
    given = sorted(
        spec.model_fields_set
        & {"modes", "scenarios", "models", "trials", "seed", "gateway", "approver", "out", "replace", "live", "label"}
    )
    if given:
        raise UserInputError(
            f"--resume continues the matrix as it was started; --{given[0].removesuffix('s').replace('_', '-')} "
            "cannot change it"
        )
    held = RunFolder.attach(spec.resume)
    try:
        manifest = read_manifest(spec.resume)
        if manifest.status == "complete":
            raise UserInputError(f"--resume {spec.resume}: the matrix is complete; nothing to continue")
        scenarios_dir, _ = project_dirs(spec.scenarios_dir)
        choices = tuple(choose(value) for value in manifest_choices(manifest))
        labels = tuple(entry.label for entry in manifest.models) or (manifest.model,)
        matrix = Matrix(
            ready_modes(manifest.modes),
            select_scenarios(scenarios_dir, manifest.scenarios),
            manifest.trials,
            manifest.seed,
            manifest.gateway_policy,
            list(manifest.notes),
            labels,
        )
        kept = keep_finished_runs(spec.resume)
        if on_plan is not None:
            on_plan(matrix)
        notify(f"note: {len(kept.finished)} runs kept, {len(kept.dropped)} partial runs dropped; continuing")
        manifest = manifest.model_copy(
            update={
                "status": "running",
                "stopped_because": None,
                "continued": manifest.continued + 1,
                "dropped_runs": [*manifest.dropped_runs, *kept.dropped],
            }
        )

        def missing(label: str) -> Iterable[Cell]:
            """The model's cells without a finished run (a folder of one model: whatever label its lines carry)."""
            done = {key[1:] for key in kept.finished if len(labels) == 1 or key[0] == label}
            return (c for c in _all_cells(matrix) if (c.scenario.id, c.mode, c.trial) not in done)

        run_spec = spec.model_copy(
            update={
                "models": choices,
                "approver": None if manifest.approver is None else parse_approver(manifest.approver),
                "live": LiveOptions(**manifest.live_options),
            }
        )
        stop = StopRequest()
        ends = RunEnds()
        for outcome in kept.outcomes:  # the kept runs are runs of this matrix too
            ends.add_outcome(outcome)
        streak = FailureStreak()
        with stop.installed():
            manifest, streak = _run_cells(
                spec.resume,
                manifest,
                missing,
                run_spec,
                matrix,
                stop,
                on_done,
                notify,
                ends,
                on_event,
                already=len(kept.finished),
                on_model=on_model,
            )
    finally:
        held.release()
    return RunResult(spec.resume, manifest, matrix.notes, stop, ends, streak.line())


def _all_cells(matrix: Matrix) -> Iterable[Cell]:
    return cells_for(matrix.scenarios, matrix.modes, matrix.trials)


def _run_cells(
    folder: Path,
    manifest: Manifest,
    cells_of: Callable[[str], Iterable[Cell]],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    on_done: OnDone | None,
    notify: Notify,
    ends: RunEnds,
    on_event: OnEvent | None = None,
    already: int = 0,
    on_model: OnModel | None = None,
) -> tuple[Manifest, FailureStreak]:
    """Writes the manifest first (so even a run stopped while its model server starts says so), then runs the
    matrix once per model, one model after another, each with its own source: ``cells_of(label)`` are the model's
    cells to run. Returns the closed manifest and the last model's failure streak.

    A model's streak stops taking new cells once its runs in a row keep failing alike (a dead endpoint); the matrix
    then stops there, resumable, as it does on a signal.
    """
    manifest.write(folder)
    finished = already
    streak = FailureStreak()

    def done(cell: Cell, outcome: RunOutcome) -> None:
        nonlocal finished
        finished += 1
        ends.add_outcome(outcome)
        streak.add(outcome)
        if on_done is not None:
            on_done(cell, outcome)

    status, failure = "interrupted", None
    most_workers = 1
    try:
        for index, (choice, label) in enumerate(zip(spec.models, matrix.labels, strict=True)):
            status, one = "interrupted", spec.for_model(choice)  # until this model's cells have all run
            streak = FailureStreak.for_run(choice.live, spec.live_options.stop_after_failures)
            if len(spec.models) > 1:
                notify(f"note: model {index + 1} of {len(spec.models)}: {label} ({choice.describe()})")
            if on_model is not None:
                on_model(label)
            workers = one.workers_for(matrix.cells) if one.executor == "local" else 1
            most_workers = max(most_workers, workers)
            if one.executor == "ray":
                manifest = _run_in_ray(
                    folder, manifest, cells_of(label), one, matrix, stop, done, on_event, streak, notify, index, label
                )
            elif workers > 1:
                manifest = _run_in_workers(
                    folder,
                    manifest,
                    cells_of(label),
                    one,
                    matrix,
                    stop,
                    done,
                    workers,
                    on_event,
                    streak,
                    notify,
                    index,
                    label,
                )
            else:
                manifest = _run_in_process(
                    folder, manifest, cells_of(label), one, matrix, stop, done, on_event, streak, notify, index, label
                )
            status = "interrupted" if stop.requested or streak.cut else "complete"
            if status != "complete":
                break
    except KeyboardInterrupt:  # a signal before the matrix started (a model server starting), or a second one
        stop.signum = stop.signum or 2
    except BaseException as exc:  # raised again below, once the manifest says why the matrix stopped
        status, failure = "failed", exc
    stop.detach()
    why = streak.line() if failure is None else _one_line(failure)
    manifest = manifest.model_copy(
        update={
            "status": status,
            "end_time": _now(),
            "runs": finished,
            "stopped_because": why,
            "workers": max(manifest.workers, most_workers),
        }
    )
    _close(manifest, folder, failure)
    return manifest, streak


def _run_in_workers(
    folder: Path,
    manifest: Manifest,
    cells: Iterable[Cell],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    done: OnDone,
    workers: int,
    on_event: OnEvent | None,
    streak: FailureStreak,
    notify: Notify,
    index: int,
    label: str,
) -> Manifest:
    """The matrix in ``workers`` local processes (``harness.matrix.executors.workers``); this process writes every
    line (a live model's recording too), and checks a live model's endpoint once (``_on_shared_endpoint``)."""
    return _on_shared_endpoint(
        folder,
        manifest,
        spec,
        matrix,
        streak,
        notify,
        index,
        lambda endpoint: _work_in_processes(
            folder, endpoint, cells, spec, matrix, stop, done, workers, on_event, streak, notify, label
        ),
    )


def _on_shared_endpoint(
    folder: Path,
    manifest: Manifest,
    spec: RunSpec,
    matrix: Matrix,
    streak: FailureStreak,
    notify: Notify,
    index: int,
    work: Callable[[LiveConfig | None], list[WorkerExited]],
    servers: NodeServers | None = None,
) -> Manifest:
    """Runs ``work`` (an executor's matrix) with the endpoint its workers ask: None for a model that is not live.
    A live model's endpoint is checked here, once, and every worker asks it (a local model: the one server started
    here, or with ``servers`` the one on each Ray node, checked there); the manifest says what it says for one
    process, with what the workers' clients learnt merged in."""
    if not spec.model.live:
        work(None)
        return manifest
    from harness.models.shared_endpoint import merged_facts, shared_endpoint

    with shared_endpoint(
        spec.model,
        endpoint=spec.endpoint,
        options=spec.live_options,
        concurrency=spec.concurrency,
        run_folder=folder,
        scenarios=matrix.scenarios,
        notify=notify,
        checked=servers.config if servers is not None else None,
    ) as shared:
        live = shared.live if servers is None else shared.live.model_copy(update=servers.manifest_facts())
        manifest = _with_live(manifest, index, live)
        manifest.write(folder)
        reports: list[WorkerExited] = []
        streak.last_error = lambda: next((r.last_error for r in reversed(reports) if r.last_error), None)
        try:
            reports += work(shared.config)
        finally:
            learnt = merged_facts([r.facts for r in reports if r.facts])
            if learnt:
                manifest = _with_live(manifest, index, live.model_copy(update=learnt))
    return manifest


def _work_in_processes(
    folder: Path,
    endpoint: LiveConfig | None,
    cells: Iterable[Cell],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    done: OnDone,
    workers: int,
    on_event: OnEvent | None,
    streak: FailureStreak,
    notify: Notify,
    label: str,
) -> list[WorkerExited]:
    """Runs the cells in the workers, writing each unit's recording lines (a live model), then its trace lines."""
    setup = _worker_setup(folder, spec, matrix, on_event, label, endpoint)
    with _driver_writes(folder, matrix, on_event, done, recording=endpoint is not None) as write:
        return run_in_workers(
            streak.cells(cells),
            setup,
            workers,
            spec.concurrency,
            write,
            stop,
            lambda line: notify(f"note: {line}"),
            runs=matrix.cells,
        )


def _run_in_ray(
    folder: Path,
    manifest: Manifest,
    cells: Iterable[Cell],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    done: OnDone,
    on_event: OnEvent | None,
    streak: FailureStreak,
    notify: Notify,
    index: int,
    label: str,
) -> Manifest:
    """The matrix as batches of Ray tasks (``harness.matrix.executors.ray_executor``); this process writes every
    line (a live model's recording too) and checks a live model's endpoint once, as for worker processes. The
    manifest says so, and counts the late duplicate results the driver dropped."""
    from harness.matrix.executors.ray_executor import RayStats, connected, run_in_ray
    from harness.matrix.executors.ray_model_servers import node_model_servers

    stats = RayStats()
    with contextlib.ExitStack() as stack:
        servers = None
        if spec.model.kind == "local":  # a llama.cpp server on each node, owned by an actor there
            ray = stack.enter_context(connected(spec.ray_address))
            notify("starting the bundled model server (SmolLM2-135M, llama.cpp) on each Ray node ...")
            servers = stack.enter_context(node_model_servers(ray, spec.live_options, spec.concurrency))

        def work(endpoint: LiveConfig | None) -> list[WorkerExited]:
            nonlocal stats
            setup = _worker_setup(folder, spec, matrix, on_event, label, endpoint)
            with _driver_writes(folder, matrix, on_event, done, recording=endpoint is not None) as write:
                stats = run_in_ray(streak.cells(cells), setup, write, stop, address=spec.ray_address, servers=servers)
            return [WorkerExited(0, stats.facts or None, stats.last_error)]

        manifest = _on_shared_endpoint(folder, manifest, spec, matrix, streak, notify, index, work, servers)
    duplicates = manifest.duplicate_units + stats.duplicates
    return manifest.model_copy(update={"executor": "ray", "duplicate_units": duplicates})


def _worker_setup(
    folder: Path,
    spec: RunSpec,
    matrix: Matrix,
    on_event: OnEvent | None,
    label: str,
    endpoint: LiveConfig | None = None,
) -> WorkerSetup:
    """What every worker of any executor is given once."""
    return WorkerSetup(
        folder=folder,
        model=spec.model,
        options=spec.live_options,
        concurrency=spec.concurrency,
        seed=matrix.seed,
        gateway_policy=matrix.gateway_policy,
        approver=spec.approver,
        scenarios=tuple(matrix.scenarios),
        with_events=on_event is not None,
        driver_pid=os.getpid(),
        label=label,
        endpoint=endpoint,
        agents=tuple(name for name in matrix.modes if is_agent_spec(name)),
        workdir=Path.cwd(),
    )


@contextlib.contextmanager
def _driver_writes(
    folder: Path, matrix: Matrix, on_event: OnEvent | None, done: OnDone, *, recording: bool
) -> Iterator[Callable[[UnitDone], None]]:
    """The driver's one write path for a finished unit, whatever executor ran it: its recording lines first (a live
    model: a unit in the trace has its exchanges recorded), then its trace lines, then its events and outcome."""
    by_id = {s.id: s for s in matrix.scenarios}
    with contextlib.ExitStack() as files:
        writer = files.enter_context(TraceWriter(folder / TRACE_FILE))
        recorder = files.enter_context(TraceWriter(folder / RECORDING_FILE)) if recording else None

        def write(unit: UnitDone) -> None:
            if recorder is not None and unit.recording:
                recorder.write_serialized(unit.recording)
            writer.write_serialized(unit.lines)
            for event in unit.events:
                on_event(event)  # type: ignore[misc]  # events are sent only when on_event is given
            if unit.outcome.status != "interrupted":
                scenario, mode, trial = unit.key
                done(Cell(by_id[scenario], mode, trial), unit.outcome)

        yield write


def _run_in_process(
    folder: Path,
    manifest: Manifest,
    cells: Iterable[Cell],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    done: OnDone,
    on_event: OnEvent | None,
    streak: FailureStreak,
    notify: Notify,
    index: int,
    label: str,
) -> Manifest:
    """The matrix as asyncio tasks in this process, with the model source opened here; the manifest learns what a
    live endpoint taught the client (``index``: which of the manifest's models this is)."""
    with open_source(
        spec.model,
        endpoint=spec.endpoint,
        options=spec.live_options,
        concurrency=spec.concurrency,
        run_folder=folder,
        scenarios=matrix.scenarios,
        notify=notify,
        label=label,
    ) as opened:
        if opened.live is not None:
            manifest = _with_live(manifest, index, opened.live)
            manifest.write(folder)
        streak.last_error = opened.last_error
        config = matrix_config(
            opened.source,
            folder,
            seed=matrix.seed,
            concurrency=spec.concurrency,
            gateway_policy=matrix.gateway_policy,
            stop=stop,
            approver=spec.approver,
            model_choice=spec.model.describe(),
        )
        try:
            with TraceWriter(folder / TRACE_FILE) as writer:
                run_async(_matrix(streak.cells(cells), config, _unit_writer(writer, on_event), done, stop))
        finally:
            assert config.checkpoints is not None
            config.checkpoints.close()  # folds SQLite's log into checkpoints.db before the folder is closed or moved
            learnt = opened.facts()  # what a live endpoint forced the client to adapt
            if learnt and opened.live is not None:
                manifest = _with_live(manifest, index, opened.live.model_copy(update=learnt))
    return manifest


def _with_live(manifest: Manifest, index: int, live: LiveManifest) -> Manifest:
    """The manifest with model ``index``'s live facts (the first model's are also the top-level ``live``)."""
    models = list(manifest.models)
    if index < len(models):
        models[index] = models[index].model_copy(update={"live": live})
    update: dict[str, Any] = {"models": models}
    if index == 0:
        update["live"] = live
    return manifest.model_copy(update=update)


def _close(manifest: Manifest, folder: Path, failure: BaseException | None) -> None:
    """Writes the final manifest, then raises what stopped the matrix, if anything. A file that could not be
    written is named in one line that also says whether the manifest recorded it and how to go on."""
    go_on = f"bench run --resume {folder} continues the matrix once it can be written"
    try:
        manifest = with_counts(manifest, folder)  # --record-through: exchanges served and asked, per model
        manifest.write(folder)
    except WriteFailed as unwritten:
        if not isinstance(failure, WriteFailed):
            raise
        raise WriteFailed(
            failure.path, f"{failure.reason}; {unwritten.path} could not record it either ({unwritten.reason}); {go_on}"
        ) from None
    if isinstance(failure, WriteFailed):
        raise WriteFailed(failure.path, f"{failure.reason}; the manifest says so; {go_on}") from None
    if failure is not None:
        raise failure


def _one_line(error: BaseException) -> str:
    """What stopped a matrix, for its manifest: the error's own line (a file bench could not write names it)."""
    if isinstance(error, WriteFailed):
        return str(error)
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _unit_writer(writer: TraceWriter, on_event: OnEvent | None) -> UnitSink:
    """Writes each finished run's lines in one write, then hands its events to ``on_event``."""

    def sink(events: Sequence[TraceEvent]) -> None:
        writer.write_many(events)
        if on_event is not None:
            for event in events:
                on_event(event)

    return sink


async def _matrix(cells: Any, config: MatrixConfig, units: UnitSink, on_done: OnDone, stop: StopRequest) -> None:
    """The matrix as one task a stop request can cancel; the model source is closed in the same loop."""
    task = asyncio.current_task()
    assert task is not None
    stop.attach(task)
    try:
        await run_matrix(cells, config, None, on_done, units=units)
    except (asyncio.CancelledError, RunInterrupted):  # which one arrives first depends on where the signal landed
        if not stop.requested:
            raise
    finally:
        await config.model.aclose()


T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, or, where a loop already runs in this thread (a notebook), the same on a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=work, name="bench-matrix")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def versions(modes: Iterable[str] = ()) -> dict[str, str]:
    """Versions that could change a result: bench, Python, the platform, key libraries, and the frameworks the
    runtime adapters among ``modes`` run on."""
    found = {"bench": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for package in KEY_LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found | framework_versions(modes)


def _now() -> str:
    return datetime.now(UTC).isoformat()
