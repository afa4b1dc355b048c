"""One run from spec to closed folder: plan the matrix, take the folder, start and always stop the model
source, run the cells, write the manifest, close. The CLI and Python callers go through ``run`` alike.

>>> from harness import RunSpec, run
>>> result = run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:eager"))
>>> result.folder / "traces.jsonl"
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy
from harness.core.approvals import nobody_decides, parse_approver
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError, WriteFailed
from harness.matrix.cell_runner import Cell, MatrixConfig, cells_for, run_matrix
from harness.matrix.exit_status import INFRASTRUCTURE, RunEnds
from harness.matrix.frameworks import framework_versions, ready_modes
from harness.matrix.spec import RunSpec, project_dirs
from harness.models.choice import choose, model_label, open_source
from harness.models.config import LiveOptions
from harness.models.dead_endpoint import FailureStreak
from harness.records.checkpoint import CheckpointStore
from harness.records.folder import TRACE_FILE, RunFolder
from harness.records.manifest import MANIFEST_FILE, Manifest, read_manifest
from harness.records.trace import RunOutcome, TraceEvent, TraceWriter
from harness.scenario.load import load_all, select_scenarios
from harness.scenario.model import Scenario
from harness.version import __version__
from modes import MODES

__all__ = ["Matrix", "RunResult", "plan", "run", "versions"]

OnDone = Callable[[Cell, RunOutcome], None]
OnEvent = Callable[[TraceEvent], None]  # every trace event as it is written (the CLI's progress bar)
Notify = Callable[[str], None]


@dataclass(frozen=True)
class Matrix:
    """What a run covers; a replay's defaults come from the recording."""

    modes: list[str]
    scenarios: list[Scenario]
    trials: int
    seed: int
    gateway_policy: GatewayPolicy
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.modes) * len(self.scenarios) * self.trials


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
    """Modes, scenarios, trials and seed; every name is checked before anything starts."""
    choice = spec.model
    if choice.folder is None:  # not a replay: the spec's matrix, with the defaults for what it leaves out
        return Matrix(
            ready_modes(spec.modes),
            select_scenarios(scenarios_dir, list(spec.scenarios)),
            spec.trials or 1,
            spec.seed or 0,
            spec.gateway or DEFAULT_GATEWAY_POLICY,
        )
    recorded = read_manifest(choice.folder)
    if spec.seed is not None and spec.seed != recorded.seed:
        raise UserInputError(
            f"--seed {spec.seed}: the recording was sampled with seed {recorded.seed}; a replay keeps its seed"
        )
    notes = []
    modes = list(spec.modes) or [name for name in recorded.modes if name in MODES]
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
    )


def run(
    spec: RunSpec,
    *,
    on_done: OnDone | None = None,
    notify: Notify = lambda line: None,
    on_plan: Callable[[Matrix], None] | None = None,
    on_event: OnEvent | None = None,
) -> RunResult:
    """Runs the matrix ``spec`` describes into its folder; returns once the folder is closed.

    ``on_event`` sees every trace event right after it is written (None: nothing extra is called per event).

    SIGINT and SIGTERM stop the runs in flight at their next event; the manifest then says
    ``interrupted`` (``result.stop.exit_code`` is 130 or 143) and a ``--replace`` run leaves the old
    run in place. A local model server is always stopped. ``spec.resume`` continues a matrix that was
    cut short: only its cells without a final summary run.
    """
    if spec.resume is not None:
        return _continue(spec, on_done, notify, on_plan, on_event)
    scenarios_dir, results_root = project_dirs(spec.scenarios_dir)
    choice = spec.model
    matrix = plan(spec, scenarios_dir)
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
        model=model_label(choice, spec.endpoint),
        model_source=choice.recorded_as,
        model_choice=choice.describe(),
        trials=matrix.trials,
        seed=matrix.seed,
        gateway_policy=matrix.gateway_policy,
        concurrency=spec.concurrency,
        start_time=_now(),
        versions=versions(matrix.modes),
        replay_of=str(choice.folder) if choice.folder is not None else None,
        approver=None if spec.approver is None else str(spec.approver),
        live_options=spec.live_options.model_dump(exclude_defaults=True),
        notes=matrix.notes,
    )
    streak = FailureStreak.for_run(choice.live, spec.live_options.stop_after_failures)
    try:
        with stop.installed():
            cells = cells_for(matrix.scenarios, matrix.modes, matrix.trials)
            manifest = _run_cells(
                folder.path, manifest, cells, spec, matrix, stop, on_done, notify, ends, on_event, streak=streak
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
) -> RunResult:
    """A matrix that was cut short (killed, interrupted) goes on in its own folder: partial runs are dropped
    cleanly, and only the cells without a final summary run, so the folder ends with every cell exactly once."""
    from harness.matrix.unfinished import keep_finished_runs

    assert spec.resume is not None
    given = sorted(
        spec.model_fields_set
        & {"modes", "scenarios", "model", "trials", "seed", "gateway", "approver", "out", "replace", "live", "label"}
    )
    if given:
        raise UserInputError(
            f"--resume continues the matrix as it was started; --{given[0].replace('_', '-')} cannot change it"
        )
    held = RunFolder.attach(spec.resume)
    try:
        manifest = read_manifest(spec.resume)
        if manifest.status == "complete":
            raise UserInputError(f"--resume {spec.resume}: the matrix is complete; nothing to continue")
        scenarios_dir, _ = project_dirs(spec.scenarios_dir)
        choice = choose(manifest.model_choice or _old_choice(manifest))
        matrix = Matrix(
            ready_modes(manifest.modes),
            select_scenarios(scenarios_dir, manifest.scenarios),
            manifest.trials,
            manifest.seed,
            manifest.gateway_policy,
            list(manifest.notes),
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
        cells = (
            c
            for c in cells_for(matrix.scenarios, matrix.modes, matrix.trials)
            if (c.scenario.id, c.mode, c.trial) not in kept.finished
        )
        run_spec = spec.model_copy(
            update={
                "model": choice,
                "approver": None if manifest.approver is None else parse_approver(manifest.approver),
                "live": LiveOptions(**manifest.live_options),
            }
        )
        stop = StopRequest()
        ends = RunEnds()
        for outcome in kept.outcomes:  # the kept runs are runs of this matrix too
            ends.add_outcome(outcome)
        streak = FailureStreak.for_run(choice.live, run_spec.live_options.stop_after_failures)
        with stop.installed():
            manifest = _run_cells(
                spec.resume,
                manifest,
                cells,
                run_spec,
                matrix,
                stop,
                on_done,
                notify,
                ends,
                on_event,
                already=len(kept.finished),
                streak=streak,
            )
    finally:
        held.release()
    return RunResult(spec.resume, manifest, matrix.notes, stop, ends, streak.line())


def _old_choice(manifest: Manifest) -> str:
    """The --model value of a manifest written before model_choice was kept."""
    if manifest.model_source == "replay" and manifest.replay_of:
        return f"replay:{manifest.replay_of}"
    if manifest.model_source == "scripted":
        return manifest.model
    return "local" if manifest.live is not None and manifest.live.local_model else "live"


def _run_cells(
    folder: Path,
    manifest: Manifest,
    cells: Iterable[Cell],
    spec: RunSpec,
    matrix: Matrix,
    stop: StopRequest,
    on_done: OnDone | None,
    notify: Notify,
    ends: RunEnds,
    on_event: OnEvent | None = None,
    already: int = 0,
    streak: FailureStreak | None = None,
) -> Manifest:
    """Writes the manifest first (so even a run stopped while its model server starts says so), then runs.

    ``streak`` stops taking new cells once runs in a row keep failing alike (a dead endpoint).
    """
    manifest.write(folder)
    finished = already
    streak = streak or FailureStreak()

    def done(cell: Cell, outcome: RunOutcome) -> None:
        nonlocal finished
        finished += 1
        ends.add_outcome(outcome)
        streak.add(outcome)
        if on_done is not None:
            on_done(cell, outcome)

    status, failure = "interrupted", None
    try:
        with open_source(
            spec.model,
            endpoint=spec.endpoint,
            options=spec.live_options,
            concurrency=spec.concurrency,
            run_folder=folder,
            scenarios=matrix.scenarios,
            notify=notify,
        ) as opened:
            if opened.live is not None:
                manifest = manifest.model_copy(update={"live": opened.live})
                manifest.write(folder)
            streak.last_error = opened.last_error
            config = MatrixConfig(
                model=opened.source,
                seed=matrix.seed,
                concurrency=spec.concurrency,
                gateway_policy=matrix.gateway_policy,
                stop=stop,
                approver=nobody_decides if spec.approver is None else spec.approver.for_run,
                checkpoints=CheckpointStore(folder),
                model_choice=spec.model.describe(),
            )
            try:
                with TraceWriter(folder / TRACE_FILE) as writer:
                    sink = writer.write if on_event is None else _and_then(writer.write, on_event)
                    run_async(_matrix(streak.cells(cells), config, sink, done, stop))
            finally:
                learnt = opened.facts()  # what a live endpoint forced the client to adapt
                if learnt and manifest.live is not None:
                    live = manifest.live.model_copy(update=learnt)
                    manifest = manifest.model_copy(update={"live": live})
        status = "interrupted" if stop.requested or streak.cut else "complete"
    except KeyboardInterrupt:  # a signal before the matrix started (a model server starting), or a second one
        stop.signum = stop.signum or 2
    except BaseException as exc:  # raised again below, once the manifest says why the matrix stopped
        status, failure = "failed", exc
    stop.detach()
    why = streak.line() if failure is None else _one_line(failure)
    manifest = manifest.model_copy(
        update={"status": status, "end_time": _now(), "runs": finished, "stopped_because": why}
    )
    _close(manifest, folder, failure)
    return manifest


def _close(manifest: Manifest, folder: Path, failure: BaseException | None) -> None:
    """Writes the final manifest, then raises what stopped the matrix, if anything. A file that could not be
    written is named in one line that also says whether the manifest recorded it and how to go on."""
    go_on = f"bench run --resume {folder} continues the matrix once it can be written"
    try:
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


def _and_then(write: Callable[[TraceEvent], None], on_event: OnEvent) -> Callable[[TraceEvent], None]:
    """A trace sink that writes each event, then hands it to ``on_event``."""

    def sink(event: TraceEvent) -> None:
        write(event)
        on_event(event)

    return sink


async def _matrix(cells: Any, config: MatrixConfig, sink: Any, on_done: OnDone, stop: StopRequest) -> None:
    """The matrix as one task a stop request can cancel; the model source is closed in the same loop."""
    task = asyncio.current_task()
    assert task is not None
    stop.attach(task)
    try:
        await run_matrix(cells, config, sink, on_done)
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
    for package in ("pydantic", "httpx", "jsonschema"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found | framework_versions(modes)


def _now() -> str:
    return datetime.now(UTC).isoformat()
