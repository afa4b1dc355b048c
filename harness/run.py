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
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from harness import __version__
from harness.approvals import NobodyYet, approver_factory
from harness.checkpoint import Checkpoint, CheckpointStore, Decision
from harness.choices import GatewayPolicy
from harness.errors import UserInputError
from harness.exit_status import RunEnds
from harness.folder import TRACE_FILE, RunFolder
from harness.manifest import Manifest, read_manifest
from harness.models import ModelChoice, choose, endpoint_from_env, model_label, open_source
from harness.replay_check import Divergence, compare_traces
from harness.runner import Cell, MatrixConfig, cells_for, run_matrix
from harness.scenario import Scenario, load_all, select_scenarios
from harness.signals import StopRequest
from harness.spec import GATEWAY_POLICIES, Endpoint, LiveOptions, RunSpec, gateway_policy, project_dirs
from harness.trace import RunOutcome, TraceEvent, TraceWriter, read_events
from modes import MODES, select_modes

__all__ = [
    "Endpoint",
    "LiveOptions",
    "Matrix",
    "ReplayCheck",
    "RunEnds",
    "RunResult",
    "RunSpec",
    "StopRequest",
    "catalog",
    "check_scenarios",
    "folders",
    "model_server",
    "probe_endpoint",
    "replay",
    "resume",
    "run",
    "scenario_schema_text",
    "show",
    "waiting",
]

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
    gateway: GatewayPolicy = "enforce"
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

    @property
    def interrupted(self) -> bool:
        return self.manifest.status == "interrupted"

    def exit_status(self) -> tuple[int, str] | None:
        """The exit code and its one line when the runs' end decides it (a signal, or nothing judged), else None."""
        if self.interrupted:
            return self.stop.exit_code, "interrupted; finished trace lines are kept and the manifest says interrupted"
        return self.ends.verdict()

    @property
    def traces(self) -> Path:
        return self.folder / TRACE_FILE


def plan(spec: RunSpec, choice: ModelChoice, scenarios_dir: Path) -> Matrix:
    """Modes, scenarios, trials and seed; every name is checked before anything starts."""
    if choice.kind != "replay":
        return Matrix(
            select_modes(list(spec.modes)),
            select_scenarios(scenarios_dir, list(spec.scenarios)),
            spec.trials or 1,
            spec.seed or 0,
            spec.gateway or "enforce",
        )
    from harness.manifest import read_manifest

    assert choice.folder is not None
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
                "(README: recording and replay)"
            )
    policy = spec.gateway or recorded.gateway_policy
    if policy not in GATEWAY_POLICIES:
        raise UserInputError(
            f"{choice.folder}: manifest.json: gateway_policy '{policy}' is not one of {', '.join(GATEWAY_POLICIES)}"
        )
    return Matrix(
        select_modes(modes),
        select_scenarios(scenarios_dir, scenarios),
        spec.trials or recorded.trials,
        recorded.seed,
        gateway_policy(policy),
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
    choice = choose(spec.model)
    matrix = plan(spec, choice, scenarios_dir)
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
        model_source=choice.kind or "live",
        model_choice=choice.describe(),
        trials=matrix.trials,
        seed=matrix.seed,
        gateway_policy=matrix.gateway,
        concurrency=spec.concurrency,
        start_time=_now(),
        versions=versions(),
        replay_of=str(choice.folder) if choice.kind == "replay" else None,
        approver=spec.approver,
        live_options=spec.live_options.model_dump(exclude_defaults=True),
        notes=matrix.notes,
    )
    try:
        with stop.installed():
            cells = cells_for(matrix.scenarios, matrix.modes, matrix.trials)
            manifest = _run_cells(
                folder.path, manifest, cells, spec, choice, matrix, stop, on_done, notify, ends, on_event
            )
    except BaseException:
        folder.discard()  # only a folder in which no run has written anything
        raise
    finally:
        folder.release()
    where = folder.finish(manifest.status == "complete")
    return RunResult(where, manifest, matrix.notes, stop, ends)


def _continue(
    spec: RunSpec,
    on_done: OnDone | None,
    notify: Notify,
    on_plan: Callable[[Matrix], None] | None,
    on_event: OnEvent | None = None,
) -> RunResult:
    """A matrix that was cut short (killed, interrupted) goes on in its own folder: partial runs are dropped
    cleanly, and only the cells without a final summary run, so the folder ends with every cell exactly once."""
    from harness.continuation import keep_finished_runs

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
            select_modes(manifest.modes),
            select_scenarios(scenarios_dir, manifest.scenarios),
            manifest.trials,
            manifest.seed,
            gateway_policy(manifest.gateway_policy),
            list(manifest.notes),
        )
        kept = keep_finished_runs(spec.resume)
        if on_plan is not None:
            on_plan(matrix)
        notify(f"note: {len(kept.finished)} runs kept, {len(kept.dropped)} partial runs dropped; continuing")
        manifest = manifest.model_copy(
            update={
                "status": "running",
                "continued": manifest.continued + 1,
                "dropped_runs": [*manifest.dropped_runs, *kept.dropped],
            }
        )
        cells = (
            c
            for c in cells_for(matrix.scenarios, matrix.modes, matrix.trials)
            if (c.scenario.id, c.mode, c.trial) not in kept.finished
        )
        run_spec = spec.model_copy(update={"approver": manifest.approver, "live": LiveOptions(**manifest.live_options)})
        stop = StopRequest()
        ends = RunEnds()
        for outcome in kept.outcomes:  # the kept runs are runs of this matrix too
            ends.add_outcome(outcome)
        with stop.installed():
            manifest = _run_cells(
                spec.resume,
                manifest,
                cells,
                run_spec,
                choice,
                matrix,
                stop,
                on_done,
                notify,
                ends,
                on_event,
                already=len(kept.finished),
            )
    finally:
        held.release()
    return RunResult(spec.resume, manifest, matrix.notes, stop, ends)


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
    choice: ModelChoice,
    matrix: Matrix,
    stop: StopRequest,
    on_done: OnDone | None,
    notify: Notify,
    ends: RunEnds,
    on_event: OnEvent | None = None,
    already: int = 0,
) -> Manifest:
    """Writes the manifest first (so even a run stopped while its model server starts says so), then runs."""
    manifest.write(folder)
    finished = already

    def done(cell: Cell, outcome: RunOutcome) -> None:
        nonlocal finished
        finished += 1
        ends.add_outcome(outcome)
        if on_done is not None:
            on_done(cell, outcome)

    status = "interrupted"
    try:
        with open_source(
            choice,
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
            config = MatrixConfig(
                model=opened.source,
                seed=matrix.seed,
                concurrency=spec.concurrency,
                gateway_policy=matrix.gateway,
                stop=stop,
                approver=approver_factory(spec.approver),
                checkpoints=CheckpointStore(folder),
                model_choice=choice.describe(),
            )
            try:
                with TraceWriter(folder / TRACE_FILE) as writer:
                    sink = writer.write if on_event is None else _and_then(writer.write, on_event)
                    _run_async(_matrix(cells, config, sink, done, stop))
            finally:
                learnt = opened.facts()  # what a live endpoint forced the client to adapt
                if learnt and manifest.live is not None:
                    live = manifest.live.model_copy(update=learnt)
                    manifest = manifest.model_copy(update={"live": live})
        status = "interrupted" if stop.requested else "complete"
    except KeyboardInterrupt:  # a signal before the matrix started (a model server starting), or a second one
        stop.signum = stop.signum or 2
    except BaseException:
        status = "failed"
        raise
    finally:
        stop.detach()
        manifest = manifest.model_copy(update={"status": status, "end_time": _now(), "runs": finished})
        manifest.write(folder)
    return manifest


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
    except asyncio.CancelledError:
        if not stop.requested:
            raise
    finally:
        await config.model.aclose()


T = TypeVar("T")


def _run_async(coroutine: Coroutine[Any, Any, T]) -> T:
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


def versions() -> dict[str, str]:
    """Versions that could change a result: bench, Python, the platform, key libraries."""
    found = {"bench": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("pydantic", "httpx", "jsonschema"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found


def _now() -> str:
    return datetime.now(UTC).isoformat()


# ---------------------------------------------------------------- checking a replay against its recording


@dataclass(frozen=True)
class ReplayCheck:
    """A recorded matrix run again offline, and how its trace differs from the recorded one."""

    result: RunResult
    divergences: list[Divergence]
    notes: list[str]


def replay(
    recording: Path,
    *,
    scenarios_dir: Path | None = None,
    out: Path | None = None,
    on_done: OnDone | None = None,
    notify: Notify = lambda line: None,
    on_plan: Callable[[Matrix], None] | None = None,
    on_event: OnEvent | None = None,
    label: str | None = None,
) -> ReplayCheck:
    """Re-runs the recorded matrix on the recorded answers and compares the two traces run by run."""
    from harness.manifest import read_manifest

    choose(f"replay:{recording}")  # a folder without a recording fails here, naming it
    recorded_trace = recording / TRACE_FILE
    if not recorded_trace.is_file():
        raise UserInputError(f"{recording}: no {TRACE_FILE} to compare with")
    recorded = read_manifest(recording)
    folder_of_scenarios, _ = project_dirs(scenarios_dir)
    available = load_all(folder_of_scenarios)
    notes = [
        f"recorded {kind} '{name}' no longer exists; its runs cannot be replayed"
        for kind, names, known in (("scenario", recorded.scenarios, available), ("mode", recorded.modes, MODES))
        for name in names
        if name not in known
    ]
    spec = RunSpec.build(
        modes=tuple(m for m in recorded.modes if m in MODES),
        scenarios=tuple(s for s in recorded.scenarios if s in available),
        scenarios_dir=folder_of_scenarios,
        model=f"replay:{recording}",
        out=out,
        command=tuple(sys.argv),
        label=label,
    )
    result = run(spec, on_done=on_done, notify=notify, on_plan=on_plan, on_event=on_event)
    divergences = [] if result.interrupted else compare_traces(read_events(recorded_trace), read_events(result.traces))
    return ReplayCheck(result, divergences, notes)


# ---------------------------------------------------------------- what the other commands ask of the harness


@dataclass(frozen=True)
class Catalog:
    """The registered modes (in control-spectrum order) and the scenarios of a folder."""

    modes: list[tuple[str, str, str, str]]  # name, summary, who decides the next step, who can stop the run
    scenarios: list[tuple[str, str, str]]  # id, title, the oracle's expected stop


def catalog(scenarios_dir: Path | None = None) -> Catalog:
    folder, _ = project_dirs(scenarios_dir)
    modes = [(name, MODES[name].summary, MODES[name].decides, MODES[name].stopper) for name in select_modes([])]
    scenarios = [(s.id, s.title, s.oracle.expected_stop) for s in load_all(folder).values()]
    return Catalog(modes, scenarios)


def check_scenarios(scenarios_dir: Path | None = None) -> list[Any]:
    """The sanity check of every scenario in the folder (harness.sanity.SanityReport each)."""
    from harness.sanity import check_folder

    folder, _ = project_dirs(scenarios_dir)
    return check_folder(folder, select_modes([]))


def scenario_schema_text() -> str:
    from harness.scenario import scenario_schema_text as text

    return text()


def model_server(port: int | None = None) -> Any:
    """The bundled model's llama.cpp server (a harness.models.server.LocalModelServer, not yet started)."""
    from harness.models.server import LocalModelServer

    return LocalModelServer(port)


def probe_endpoint(
    model: str, *, env: Mapping[str, str], provider: str | None, timeout_s: float, notify: Notify = lambda line: None
) -> tuple[str, list[Any]]:
    """One tiny request per capability to the live endpoint (or the bundled model): a description and the rows."""
    from contextlib import ExitStack

    from harness.models.probe import describe, probe
    from harness.models.setup import endpoint_config, local_endpoint

    if model not in ("live", "local"):
        raise UserInputError(f"--model {model}: bench probe asks a live endpoint (live) or the bundled model (local)")
    options = RunSpec.build(
        live={"provider": provider or "auto", "timeout_s": timeout_s, "retries": 0}, model=model, env=env
    ).live_options
    with ExitStack() as stack:
        if model == "local":
            notify("starting the bundled model server (SmolLM2-135M, llama.cpp) ...")
            server = stack.enter_context(model_server())  # started here, always stopped
            config = local_endpoint(server.base_url, server.model, options)
        else:
            endpoint = endpoint_from_env(env)
            config = endpoint_config(endpoint.url, endpoint.model, endpoint.api_key, options)
        return describe(config), probe(config)


# ---------------------------------------------------------------- resuming one suspended run


@dataclass(frozen=True)
class ResumeResult:
    """A resumed run's new outcome, and where its trace went on."""

    outcome: RunOutcome
    traces: Path
    stop: StopRequest

    def exit_status(self) -> tuple[int, str] | None:
        """As ``RunResult.exit_status``, for the one run that went on."""
        if self.outcome.status == "interrupted":
            return self.stop.exit_code, "interrupted; finished trace lines are kept"
        ends = RunEnds()
        ends.add_outcome(self.outcome)
        return ends.verdict()


def resume(
    folder: Path,
    run_id: str,
    decision: Decision,
    *,
    who: str,
    note: str = "",
    gate: str | None = None,
    env: Mapping[str, str] | None = None,
    scenarios_dir: Path | None = None,
    notify: Notify = lambda line: None,
) -> ResumeResult:
    """Continues one suspended run of ``folder`` with a person's decision, in this process, with the same model
    source; its trace goes on in the same file. Anything that does not fit (a finished run, a gate already
    decided, another gate, an edited checkpoint or scenario) is refused before anything is written."""
    from harness.checkpoint import HumanDecision
    from harness.runner import execute_run

    held = RunFolder.attach(folder)
    try:
        manifest = read_manifest(folder)
        checkpoint = _pending(folder, run_id, gate)
        scenario = _unchanged_scenario(checkpoint, scenarios_dir)
        _trace_ends_at(folder / TRACE_FILE, checkpoint)
        if checkpoint.mode not in MODES:
            raise UserInputError(f"run {run_id}: mode '{checkpoint.mode}' is not registered any more")
        choice = choose(checkpoint.model)
        spec = RunSpec.build(model=checkpoint.model, env=env) if choice.kind == "live" else None
        human = HumanDecision(gate=checkpoint.pending_gate or "", decision=decision, who=who, note=note)
        stop = StopRequest()
        live = manifest.live
        options = LiveOptions(
            **{k: v for k, v in (live.sampling if live else {}).items() if k in LiveOptions.model_fields}
        )
        with (
            stop.installed(),
            open_source(
                choice,
                endpoint=spec.endpoint if spec else None,
                options=options,
                concurrency=1,
                run_folder=folder,
                scenarios=[scenario],
                notify=notify,
            ) as opened,
        ):
            config = MatrixConfig(
                model=opened.source,
                gateway_policy=gateway_policy(checkpoint.gateway_policy),
                stop=stop,
                checkpoints=CheckpointStore(folder),
                model_choice=checkpoint.model,
            )
            cell = Cell(scenario, checkpoint.mode, checkpoint.trial)

            async def go() -> RunOutcome:
                task = asyncio.current_task()
                assert task is not None
                stop.attach(task)
                try:
                    return await execute_run(
                        cell,
                        config,
                        writer.write,
                        run_id=run_id,
                        seed=checkpoint.seed,
                        model=opened.source.for_run(checkpoint.seed),
                        gatekeeper=NobodyYet(),
                        resuming=checkpoint,
                        decision=human,
                    )
                finally:
                    await config.model.aclose()

            with TraceWriter(folder / TRACE_FILE) as writer:
                outcome = _run_async(go())
        manifest.model_copy(update={"resumes": manifest.resumes + 1}).write(folder)
        return ResumeResult(outcome, folder / TRACE_FILE, stop)
    finally:
        held.release()


def _pending(folder: Path, run_id: str, gate: str | None) -> Checkpoint:
    """The run's checkpoint, if it waits for a decision (at ``gate``, when one is named); else one clear line."""
    checkpoint = CheckpointStore(folder).load(run_id)
    if checkpoint is None:
        last = _last_summary(folder / TRACE_FILE, run_id)
        if last is None:
            raise UserInputError(
                f"{folder}: no run {run_id} (bench runs {folder} lists the runs waiting for a decision)"
            )
        raise UserInputError(f"run {run_id} is not suspended (it ended {last}); only a suspended run can be resumed")
    if checkpoint.status != "suspended":
        decided = checkpoint.decisions[-1] if checkpoint.decisions else None
        what = f"'{decided.gate}' was already decided ({decided.decision}, by {decided.who})" if decided else "decided"
        raise UserInputError(f"run {run_id}: {what}; nothing waits for a decision")
    if gate is not None and gate != checkpoint.pending_gate:
        raise UserInputError(f"run {run_id} waits at '{checkpoint.pending_gate}', not at '{gate}'")
    return checkpoint


def _unchanged_scenario(checkpoint: Checkpoint, scenarios_dir: Path | None) -> Scenario:
    from harness.runner import scenario_digest
    from harness.scenario import load_scenario

    folder, _ = project_dirs(scenarios_dir)
    path = folder / f"{checkpoint.scenario}.yaml"
    if not path.is_file():
        raise UserInputError(f"scenario '{checkpoint.scenario}' is not in {folder} any more; cannot resume")
    scenario = load_scenario(path)
    if scenario_digest(scenario) != checkpoint.scenario_digest:
        raise UserInputError(
            f"scenario '{checkpoint.scenario}' changed since the run suspended; refusing to resume "
            "it against a different story"
        )
    return scenario


def _last_summary(traces: Path, run_id: str) -> str | None:
    found = None
    if traces.exists():
        for event in read_events(traces):
            if event.run_id == run_id and event.kind == "summary" and event.outcome is not None:
                found = event.outcome.status
    return found


def _trace_ends_at(traces: Path, checkpoint: Checkpoint) -> None:
    """The run's last line must be the suspended summary its checkpoint follows, or the two are out of step."""
    last = None
    for event in read_events(traces):
        if event.run_id == checkpoint.run_id:
            last = event
    if (
        last is None
        or last.kind != "summary"
        or last.seq != checkpoint.next_seq - 1
        or last.outcome is None
        or last.outcome.status != "suspended"
    ):
        raise UserInputError(
            f"{traces}: run {checkpoint.run_id} does not end where its checkpoint says "
            "(a suspended summary); refusing to resume it"
        )


# ---------------------------------------------------------------- reading runs back: bench runs, bench show


def folders(root: Path | None = None) -> list[Any]:
    """The run folders at or under ``root`` (default: the results folder), oldest first
    (harness.listing.FolderRow each)."""
    from harness.listing import run_folders

    return run_folders(root if root is not None else project_dirs()[1])


def waiting(folder: Path) -> list[Any]:
    """The runs of a folder waiting for a decision (harness.listing.WaitingRun each)."""
    from harness.listing import waiting_runs

    return waiting_runs(folder)


@dataclass(frozen=True)
class Shown:
    """What ``bench show`` found: the timeline of the one run selected, or the runs to choose from."""

    timeline: Any  # harness.timeline.Timeline, or None when the selection names no single run
    matches: list[Any]  # harness.timeline.RunRef of every run the selection matched
    skipped: int  # unreadable trace lines


def show(
    folder: Path,
    *,
    run_id: str | None = None,
    scenario: str | None = None,
    mode: str | None = None,
    trial: int | None = None,
) -> Shown:
    """One run of a folder (or traces.jsonl) as a timeline when the selection names exactly one; else the
    runs it matches. A selection that matches nothing is one line naming what there is.

    A whole run id alone reads only the lines that mention it (a large trace opens fast); anything else reads
    the trace's listing first, and counts every line that is not an event.
    """
    from harness.timeline import list_runs, select, timeline

    label = None
    if folder.is_dir():
        with contextlib.suppress(UserInputError):
            label = read_manifest(folder).label
    if run_id is not None and scenario is None and mode is None and trial is None:
        found, skipped = timeline(folder, run_id, label=label)
        if found is not None:
            return Shown(found, [found.run], skipped)
    runs, skipped = list_runs(folder)
    matches = select(runs, run_id=run_id, scenario=scenario, mode=mode, trial=trial)
    if not matches:
        raise UserInputError(_nothing_matches(folder, runs, run_id, scenario, mode, trial))
    if len(matches) > 1:
        return Shown(None, matches, skipped)
    one, _ = timeline(folder, matches[0].run_id, label=label)
    return Shown(one, matches, skipped)


def _nothing_matches(
    folder: Path, runs: list[Any], run_id: str | None, scenario: str | None, mode: str | None, trial: int | None
) -> str:
    if not runs:
        return f"{folder}: the trace holds no runs"
    asked = " ".join(
        f"--{flag} {value}"
        for flag, value in (("run", run_id), ("scenario", scenario), ("mode", mode), ("trial", trial))
        if value is not None
    )
    if run_id is not None and scenario is None and mode is None and trial is None:
        hint = "bench show DIR without --run lists its runs"
    else:
        names = {
            "scenarios": sorted({r.scenario for r in runs}),
            "modes": sorted({r.mode for r in runs}),
            "trials": sorted({r.trial for r in runs if r.trial is not None}),
        }
        hint = "; ".join(f"{key}: {', '.join(str(v) for v in values)}" for key, values in names.items())
    return f"{folder}: no run matches {asked} ({hint})"
