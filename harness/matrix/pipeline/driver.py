"""One run from spec to closed folder: plan the matrix, take the folder, start and always stop the model
source, run the cells, write the manifest, close. The CLI and Python callers go through ``run`` alike.

>>> from harness import RunSpec, run
>>> result = run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:eager"))
>>> result.folder / "traces.jsonl"
"""

from __future__ import annotations

import contextlib
import platform
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy
from harness.core.approvals import parse_approver
from harness.core.signals import StopRequest
from harness.errors import UserInputError, WriteFailed
from harness.matrix.cell.cell_runner import cells_for
from harness.matrix.cell.frameworks import framework_versions, ready_modes
from harness.matrix.cell.own_agent_files import agent_files, load_recorded
from harness.matrix.cell.provenance import KEY_LIBRARIES, prompt_hash, scenario_hashes
from harness.matrix.cell.units import Cell
from harness.matrix.executors import EXECUTORS, MatrixRun
from harness.matrix.executors.base import Notify, OnDone, OnEvent
from harness.matrix.pipeline.exit_status import INFRASTRUCTURE, RunEnds
from harness.matrix.pipeline.spec import RunSpec, manifest_choices, project_dirs
from harness.models.choice import choose, model_label
from harness.models.config import LiveOptions
from harness.models.dead_endpoint import FailureStreak
from harness.models.record_through import with_counts
from harness.records.folder import TRACE_FILE, RunFolder
from harness.records.manifest import MANIFEST_FILE, Manifest, ManifestLedger, ManifestModel, read_manifest
from harness.records.trace import RunOutcome
from harness.scenario.load import load_all, select_scenarios
from harness.scenario.model import Scenario
from harness.version import __version__, bench_commit

if TYPE_CHECKING:
    pass

__all__ = ["Matrix", "Notify", "OnDone", "OnEvent", "RunResult", "plan", "run", "versions"]

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
class Listeners:
    """Who hears of a matrix as it goes: each finished run, notes, the plan, every trace event, each model's turn."""

    on_done: OnDone | None = None
    notify: Notify = lambda line: None
    on_plan: Callable[[Matrix], None] | None = None
    on_event: OnEvent | None = None
    on_model: OnModel | None = None


@dataclass(frozen=True)
class Driving:
    """One matrix being driven into its folder: what was asked, what it covers, the manifest's one owner, the stop
    request, the runs' ends so far, and who hears of them."""

    spec: RunSpec
    matrix: Matrix
    manifest: ManifestLedger
    stop: StopRequest
    ends: RunEnds
    listeners: Listeners


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
    hear = Listeners(on_done, notify, on_plan, on_event, on_model)
    if spec.resume is not None:
        return _continue(spec, hear)
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
        live_options=spec.live_options.model_dump(mode="json", exclude_defaults=True),
        notes=matrix.notes,
    )
    ledger = ManifestLedger(folder.path, manifest)
    streak = FailureStreak()
    try:
        with stop.installed():
            streak = _run_cells(Driving(spec, matrix, ledger, stop, ends, hear), lambda _: _all_cells(matrix))
    except WriteFailed:
        if not (folder.path / MANIFEST_FILE).exists():  # else the manifest says why, and --resume goes on from it
            folder.discard()
        raise
    except BaseException:
        folder.discard()  # only a folder in which no run has written anything
        raise
    finally:
        folder.release()
    where = folder.finish(ledger.current.status == "complete")
    return RunResult(where, ledger.current, matrix.notes, stop, ends, streak.line())


def _continue(spec: RunSpec, hear: Listeners) -> RunResult:
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
        if hear.on_plan is not None:
            hear.on_plan(matrix)
        hear.notify(f"note: {len(kept.finished)} runs kept, {len(kept.dropped)} partial runs dropped; continuing")
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
        ledger = ManifestLedger(spec.resume, manifest)
        with stop.installed():
            streak = _run_cells(Driving(run_spec, matrix, ledger, stop, ends, hear), missing, len(kept.finished))
    finally:
        held.release()
    return RunResult(spec.resume, ledger.current, matrix.notes, stop, ends, streak.line())


def _all_cells(matrix: Matrix) -> Iterable[Cell]:
    return cells_for(matrix.scenarios, matrix.modes, matrix.trials)


def _run_cells(drive: Driving, cells_of: Callable[[str], Iterable[Cell]], already: int = 0) -> FailureStreak:
    """Writes the manifest first (so even a run stopped while its model server starts says so), then runs the
    matrix once per model, one model after another, each with its own source and its executor (chosen by name from
    ``EXECUTORS``): ``cells_of(label)`` are the model's cells to run. Closes the manifest; returns the last model's
    failure streak.

    A model's streak stops taking new cells once its runs in a row keep failing alike (a dead endpoint); the matrix
    then stops there, resumable, as it does on a signal.
    """
    spec, matrix, stop, ledger, hear = drive.spec, drive.matrix, drive.stop, drive.manifest, drive.listeners
    ledger.write()
    finished = already
    streak = FailureStreak()

    def done(cell: Cell, outcome: RunOutcome) -> None:
        nonlocal finished
        finished += 1
        drive.ends.add_outcome(outcome)
        streak.add(outcome)
        if hear.on_done is not None:
            hear.on_done(cell, outcome)

    status, failure = "interrupted", None
    most_workers = 1
    try:
        for index, (choice, label) in enumerate(zip(spec.models, matrix.labels, strict=True)):
            status, one = "interrupted", spec.for_model(choice)  # until this model's cells have all run
            streak = FailureStreak.for_run(choice.live, spec.live_options.stop_after_failures)
            if len(spec.models) > 1:
                hear.notify(f"note: model {index + 1} of {len(spec.models)}: {label} ({choice.describe()})")
            if hear.on_model is not None:
                hear.on_model(label)
            workers = one.workers_for(matrix.cells) if one.executor == "local" else 1
            most_workers = max(most_workers, workers)
            job = MatrixRun(
                folder=ledger.folder,
                cells=cells_of(label),
                runs=matrix.cells,
                model=one.model,
                endpoint=one.endpoint,
                options=one.live_options,
                concurrency=one.concurrency,
                workers=workers,
                ray_address=one.ray_address,
                approver=one.approver,
                modes=tuple(matrix.modes),
                scenarios=tuple(matrix.scenarios),
                seed=matrix.seed,
                gateway_policy=matrix.gateway_policy,
                index=index,
                label=label,
                stop=stop,
                streak=streak,
                done=done,
                on_event=hear.on_event,
                notify=hear.notify,
            )
            EXECUTORS[executor_name(one.executor, workers)]().run(job, ledger)
            status = "interrupted" if stop.requested or streak.cut else "complete"
            if status != "complete":
                break
    except KeyboardInterrupt:  # a signal before the matrix started (a model server starting), or a second one
        stop.signum = stop.signum or 2
    except BaseException as exc:  # raised again below, once the manifest says why the matrix stopped
        status, failure = "failed", exc
    stop.detach()
    why = streak.line() if failure is None else _one_line(failure)
    update = {"status": status, "end_time": _now(), "runs": finished, "stopped_because": why}

    def finish(manifest: Manifest) -> Manifest:
        """--record-through: the exchanges served and asked, per model, counted as the manifest is closed."""
        return with_counts(manifest, ledger.folder)

    ledger.close(update | {"workers": max(ledger.current.workers, most_workers)}, failure, finish)
    return streak


def executor_name(executor: str, workers: int) -> str:
    """The registered executor a model's cells run on: ``--executor ray``, else local worker processes when there
    are several, else this process."""
    if executor == "ray":
        return "ray"
    return "workers" if workers > 1 else "in-process"


def _one_line(error: BaseException) -> str:
    """What stopped a matrix, for its manifest: the error's own line (a file bench could not write names it)."""
    if isinstance(error, WriteFailed):
        return str(error)
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


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
