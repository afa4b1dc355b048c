"""The one model selector: ``scripted:NAME``, ``replay:DIR``, ``live`` or ``local``.

Only this package talks to the network. ``choose`` reads a ``--model`` value; ``open_source`` turns a
choice into a running model source (starting and always stopping the bundled model's server, and
recording a live run's every exchange) for the duration of a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.model_port import ModelSource
from harness.errors import UserInputError
from harness.records.manifest import LiveManifest, Manifest, ModelSourceKind

if TYPE_CHECKING:
    from harness.models.config import Endpoint, LiveOptions
    from harness.scenario.model import Scenario

# The committed recording of the bundled real model: what `bench run` replays when given no model.
RECORDED_MODEL = Path(__file__).resolve().parents[2] / "results" / "recorded" / "smollm2-135m"
OWN_ENDPOINT = (
    "for your own model: --model live with LLM_API_URL (an OpenAI-compatible base URL), LLM_MODEL and LLM_API_KEY set"
)
ENV_VARS = ("LLM_API_URL", "LLM_MODEL", "LLM_API_KEY")


@dataclass(frozen=True)
class ModelChoice:
    """A parsed ``--model`` value: which kind of source, and its name (a policy) or folder (a recording)."""

    kind: ModelSourceKind | None  # None: the bundled model, served locally (a live source)
    name: str = ""
    folder: Path | None = None

    @property
    def live(self) -> bool:
        return self.kind in ("live", None)

    def describe(self) -> str:
        if self.kind is None:
            return "local"
        return {"scripted": f"scripted:{self.name}", "replay": f"replay:{self.folder}", "live": "live"}[self.kind]


def choose(value: str | None) -> ModelChoice:
    """Reads a ``--model`` value; an unknown one lists the choices and how to use one's own endpoint."""
    if value is None:
        return ModelChoice("replay", folder=RECORDED_MODEL)
    kind, _colon, rest = value.partition(":")
    if kind == "scripted" and rest:
        from harness.models.scripted import POLICIES

        if rest not in POLICIES:
            raise UserInputError(
                f"--model {value}: unknown scripted policy '{rest}'; known: {', '.join(sorted(POLICIES))}"
            )
        return ModelChoice("scripted", name=rest)
    if kind == "replay" and rest:
        from harness.models.recording import RECORDING_FILE

        try:
            found = (Path(rest) / RECORDING_FILE).is_file()
        except OSError:  # a name too long for the file system: nothing can be there
            found = False
        if not found:
            raise UserInputError(f"--model {value}: no {RECORDING_FILE} there (record one with --model live)")
        return ModelChoice("replay", folder=Path(rest))
    if value == "live":
        return ModelChoice("live")
    if value == "local":
        return ModelChoice(None)
    raise UserInputError(
        f"--model {value}: unknown model; choose scripted:compliant|eager|looping|random, "
        f"replay:DIR (a recorded run), live, or local (the bundled SmolLM2-135M); {OWN_ENDPOINT}"
    )


def model_label(choice: ModelChoice, endpoint: Endpoint | None) -> str:
    """The label every trace line of the run carries: the policy, the recorded model, or the endpoint's model."""
    if choice.kind == "scripted":
        return f"scripted:{choice.name}"
    if choice.kind == "replay":
        from harness.records.manifest import read_manifest

        assert choice.folder is not None
        return read_manifest(choice.folder).model
    if choice.kind is None:
        from harness.models.server import MODEL_ALIAS

        return MODEL_ALIAS
    return endpoint.model if endpoint is not None else "live"


def endpoint_from_env(env: Mapping[str, str] | None) -> Endpoint:
    """The endpoint in ``LLM_API_URL``, ``LLM_MODEL`` and ``LLM_API_KEY``; one line naming what is missing."""
    from harness.models.config import Endpoint

    values = {name: (env or {}).get(name, "").strip() for name in ENV_VARS}
    missing = [name for name in ENV_VARS if not values[name]]
    if missing:
        raise UserInputError(
            f"--model live needs {', '.join(ENV_VARS[:-1])} and {ENV_VARS[-1]} in the environment "
            f"(missing: {', '.join(missing)}); or use --model local to run the bundled model"
        )
    return Endpoint(url=values["LLM_API_URL"], model=values["LLM_MODEL"], api_key=values["LLM_API_KEY"])


@dataclass(frozen=True)
class OpenSource:
    """A model source ready for a run, and what the run's manifest says about it."""

    source: ModelSource
    kind: ModelSourceKind
    live: LiveManifest | None = None
    recorded: Manifest | None = None  # a replay: the recording's manifest (its matrix is the default)
    replay_of: Path | None = None
    facts: Callable[[], dict[str, Any]] = lambda: {}  # learnt while running (a live endpoint's adaptations)


@contextmanager
def open_source(
    choice: ModelChoice,
    *,
    endpoint: Endpoint | None,
    options: LiveOptions,
    concurrency: int,
    run_folder: Path,
    scenarios: Sequence[Scenario] = (),
    notify: Callable[[str], None] = lambda line: None,
) -> Iterator[OpenSource]:
    """The source for a run; a local server is started here and always stopped, whatever happens."""
    if choice.kind == "scripted":
        from harness.models.scripted import ScriptedSource

        yield OpenSource(ScriptedSource(choice.name), "scripted")
        return
    if choice.kind == "replay":
        from harness.models.replay import ReplaySource

        assert choice.folder is not None
        replay = ReplaySource(choice.folder)
        yield OpenSource(replay, "replay", recorded=replay.manifest, replay_of=choice.folder)
        return
    from harness.models.live import LiveSource
    from harness.models.recording import RECORDING_FILE, RecordingSource
    from harness.models.setup import endpoint_config, live_manifest, local_endpoint
    from harness.records.trace import TraceWriter

    with ExitStack() as stack:
        if choice.kind is None:
            from harness.models.server import LocalModelServer

            notify("starting the bundled model server (SmolLM2-135M, llama.cpp) ...")
            server = stack.enter_context(LocalModelServer())
            config = local_endpoint(server.base_url, server.model, options, concurrency=concurrency)
        else:
            if endpoint is None:
                raise UserInputError(f"--model live needs an endpoint: {OWN_ENDPOINT}")
            config = endpoint_config(endpoint.url, endpoint.model, endpoint.api_key, options, concurrency=concurrency)
        facts = live_manifest(config, local=choice.kind is None)
        if options.strict_schema:
            from harness.models.strict import scenario_problems

            facts["strict_schema_problems"] = problems = scenario_problems(list(scenarios))
            for line in problems:
                notify(f"note: --strict-schema: {line}; its requests go non-strict")
        recorder = stack.enter_context(TraceWriter(run_folder / RECORDING_FILE))
        live = LiveSource(config, notify=lambda line: notify(f"note: {line}"))
        yield OpenSource(
            RecordingSource(live, recorder.write),
            "live",
            live=LiveManifest.model_validate(facts),
            facts=live.manifest_facts,
        )
