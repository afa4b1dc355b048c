"""One run from spec to closed folder: plan the matrix, take the folder, start and always stop the model
source, run the cells, write the manifest, close. The CLI and Python callers go through ``run`` alike.

>>> from harness import RunSpec, run
>>> result = run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:eager"))
>>> result.folder / "traces.jsonl"
"""

from __future__ import annotations

import asyncio
import platform
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from harness import __version__
from harness.errors import UserInputError
from harness.folder import TRACE_FILE, RunFolder
from harness.manifest import Manifest
from harness.models import ModelChoice, choose, endpoint_from_env, model_label, open_source
from harness.replay_check import Divergence, compare_traces
from harness.runner import Cell, MatrixConfig, cells_for, run_matrix
from harness.scenario import Scenario, load_all, select_scenarios
from harness.signals import StopRequest
from harness.spec import GATEWAY_POLICIES, Endpoint, GatewayPolicy, LiveOptions, RunSpec, project_dirs
from harness.trace import RunOutcome, TraceWriter, read_events
from modes import MODES, select_modes

__all__ = ["Endpoint", "LiveOptions", "Matrix", "ReplayCheck", "RunResult", "RunSpec", "StopRequest", "catalog",
           "check_scenarios", "model_server", "probe_endpoint", "replay", "run", "scenario_schema_text"]

OnDone = Callable[[Cell, RunOutcome], None]
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

    @property
    def interrupted(self) -> bool:
        return self.manifest.status == "interrupted"

    @property
    def traces(self) -> Path:
        return self.folder / TRACE_FILE


def plan(spec: RunSpec, choice: ModelChoice, scenarios_dir: Path) -> Matrix:
    """Modes, scenarios, trials and seed; every name is checked before anything starts."""
    if choice.kind != "replay":
        return Matrix(select_modes(list(spec.modes)), select_scenarios(scenarios_dir, list(spec.scenarios)),
                      spec.trials or 1, spec.seed or 0, spec.gateway or "enforce")
    from harness.manifest import read_manifest

    assert choice.folder is not None
    recorded = read_manifest(choice.folder)
    if spec.seed is not None and spec.seed != recorded.seed:
        raise UserInputError(f"--seed {spec.seed}: the recording was sampled with seed {recorded.seed}; "
                             "a replay keeps its seed")
    notes = []
    modes = list(spec.modes) or [name for name in recorded.modes if name in MODES]
    scenarios = list(spec.scenarios)
    if not scenarios:
        available = set(load_all(scenarios_dir))
        scenarios = [name for name in recorded.scenarios if name in available]
        left_out = sorted(available - set(recorded.scenarios))
        if left_out:
            notes.append(f"the recording does not cover {', '.join(left_out)}; re-record to include them "
                         "(README: recording and replay)")
    policy = spec.gateway or recorded.gateway_policy
    if policy not in GATEWAY_POLICIES:
        raise UserInputError(f"{choice.folder}: manifest.json: gateway_policy '{policy}' is not one of "
                             f"{', '.join(GATEWAY_POLICIES)}")
    return Matrix(select_modes(modes), select_scenarios(scenarios_dir, scenarios), spec.trials or recorded.trials,
                  recorded.seed, policy, notes)  # type: ignore[arg-type]


def run(spec: RunSpec, *, on_done: OnDone | None = None, notify: Notify = lambda line: None,
        on_plan: Callable[[Matrix], None] | None = None) -> RunResult:
    """Runs the matrix ``spec`` describes into its folder; returns once the folder is closed.

    SIGINT and SIGTERM stop the runs in flight at their next event; the manifest then says
    ``interrupted`` (``result.stop.exit_code`` is 130 or 143) and a ``--replace`` run leaves the old
    run in place. A local model server is always stopped.
    """
    scenarios_dir, results_root = project_dirs(spec.scenarios_dir)
    choice = choose(spec.model)
    matrix = plan(spec, choice, scenarios_dir)
    for note in matrix.notes:
        notify(f"note: {note}")
    if on_plan is not None:
        on_plan(matrix)
    stop = StopRequest()
    folder = RunFolder.take(spec.out, spec.replace, results_root, datetime.now(UTC))
    try:
        with stop.installed():
            manifest = _run_into(folder, spec, choice, matrix, stop, on_done, notify)
    except BaseException:
        folder.discard()  # only a folder in which no run has written anything
        raise
    finally:
        folder.release()
    where = folder.finish(manifest.status == "complete")
    return RunResult(where, manifest, matrix.notes, stop)


def _run_into(folder: RunFolder, spec: RunSpec, choice: ModelChoice, matrix: Matrix, stop: StopRequest,
              on_done: OnDone | None, notify: Notify) -> Manifest:
    """Writes the manifest first (so even a run stopped while its model server starts says so), then runs."""
    manifest = Manifest(
        command=list(spec.command), modes=matrix.modes, scenarios=[s.id for s in matrix.scenarios],
        model=model_label(choice, spec.endpoint), model_source=choice.kind or "live", trials=matrix.trials,
        seed=matrix.seed, gateway_policy=matrix.gateway, concurrency=spec.concurrency, start_time=_now(),
        versions=versions(), replay_of=str(choice.folder) if choice.kind == "replay" else None, notes=matrix.notes)
    manifest.write(folder.path)
    finished = 0

    def done(cell: Cell, outcome: RunOutcome) -> None:
        nonlocal finished
        finished += 1
        if on_done is not None:
            on_done(cell, outcome)

    status = "interrupted"
    try:
        with open_source(choice, endpoint=spec.endpoint, options=spec.live_options, concurrency=spec.concurrency,
                         run_folder=folder.path, scenarios=matrix.scenarios, notify=notify) as opened:
            if opened.live is not None:
                manifest = manifest.model_copy(update={"live": opened.live})
                manifest.write(folder.path)
            config = MatrixConfig(model=opened.source, seed=matrix.seed, concurrency=spec.concurrency,
                                  gateway_policy=matrix.gateway, stop=stop)
            try:
                with TraceWriter(folder.path / TRACE_FILE) as writer:
                    cells = cells_for(matrix.scenarios, matrix.modes, matrix.trials)
                    _run_async(_matrix(cells, config, writer.write, done, stop))
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
        manifest.write(folder.path)
    return manifest


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
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
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


def replay(recording: Path, *, scenarios_dir: Path | None = None, out: Path | None = None,
           on_done: OnDone | None = None, notify: Notify = lambda line: None,
           on_plan: Callable[[Matrix], None] | None = None) -> ReplayCheck:
    """Re-runs the recorded matrix on the recorded answers and compares the two traces run by run."""
    from harness.manifest import read_manifest

    choose(f"replay:{recording}")  # a folder without a recording fails here, naming it
    recorded_trace = recording / TRACE_FILE
    if not recorded_trace.is_file():
        raise UserInputError(f"{recording}: no {TRACE_FILE} to compare with")
    recorded = read_manifest(recording)
    folder_of_scenarios, _ = project_dirs(scenarios_dir)
    available = load_all(folder_of_scenarios)
    notes = [f"recorded {kind} '{name}' no longer exists; its runs cannot be replayed"
             for kind, names, known in (("scenario", recorded.scenarios, available), ("mode", recorded.modes, MODES))
             for name in names if name not in known]
    spec = RunSpec(modes=tuple(m for m in recorded.modes if m in MODES),
                   scenarios=tuple(s for s in recorded.scenarios if s in available),
                   scenarios_dir=folder_of_scenarios, model=f"replay:{recording}", out=out, command=tuple(sys.argv))
    result = run(spec, on_done=on_done, notify=notify, on_plan=on_plan)
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


def probe_endpoint(model: str, *, env: Mapping[str, str], provider: str | None, timeout_s: float,
                   notify: Notify = lambda line: None) -> tuple[str, list[Any]]:
    """One tiny request per capability to the live endpoint (or the bundled model): a description and the rows."""
    from contextlib import ExitStack

    from harness.models.probe import describe, probe
    from harness.models.setup import endpoint_config, local_endpoint

    if model not in ("live", "local"):
        raise UserInputError(f"--model {model}: bench probe asks a live endpoint (live) or the bundled model (local)")
    options = RunSpec.build(live={"provider": provider or "auto", "timeout_s": timeout_s, "retries": 0},
                            model=model, env=env).live_options
    with ExitStack() as stack:
        if model == "local":
            notify("starting the bundled model server (SmolLM2-135M, llama.cpp) ...")
            server = stack.enter_context(model_server())  # started here, always stopped
            config = local_endpoint(server.base_url, server.model, options)
        else:
            endpoint = endpoint_from_env(env)
            config = endpoint_config(endpoint.url, endpoint.model, endpoint.api_key, options)
        return describe(config), probe(config)
