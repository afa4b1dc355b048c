"""The one model selector: ``scripted:NAME``, ``replay:DIR``, ``live[:NAME]`` or ``local``, each a registered kind.

Only this package talks to the network. ``choose`` reads a ``--model`` value once into a typed ``ModelChoice``;
``open_source`` turns a choice into a running model source (starting and always stopping the bundled model's
server, and recording a live run's every exchange) for the duration of a run. A new kind of source is one class
registered with ``@model_source("name")``: the selector, ``--help`` and the unknown-model error list it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from harness.core.model_port import ModelSource
from harness.errors import UserInputError
from harness.records.manifest import LiveManifest, Manifest, ModelSourceKind
from harness.registry import Registry

if TYPE_CHECKING:
    from harness.models.config import Endpoint, LiveOptions
    from harness.models.live import LiveConfig, LiveSource
    from harness.models.record_through import RecordThrough
    from harness.scenario.model import Scenario

# The committed recording of the bundled real model: what `bench run` replays when given no model.
RECORDED_MODEL = Path(__file__).resolve().parents[2] / "results" / "recorded" / "smollm2-135m"
OWN_ENDPOINT = (
    "for your own model: --model live with LLM_API_URL (an OpenAI-compatible base URL), LLM_MODEL and LLM_API_KEY set"
)
ENV_VARS = ("LLM_API_URL", "LLM_MODEL", "LLM_API_KEY")


@dataclass(frozen=True)
class ModelChoice:
    """A parsed ``--model`` value: its registered kind, and its name (a policy) or folder (a recording)."""

    kind: str  # a key of MODEL_SOURCES: scripted, replay, live or local
    name: str = ""
    folder: Path | None = None

    @property
    def source_kind(self) -> SourceKind:
        return MODEL_SOURCES[self.kind]

    @property
    def live(self) -> bool:
        """Whether a live model answers (the live flags apply)."""
        return self.source_kind.live

    @property
    def needs_endpoint(self) -> bool:
        """Whether the run asks the endpoint named in LLM_API_URL, LLM_MODEL and LLM_API_KEY."""
        return self.source_kind.needs_endpoint

    @property
    def recorded_as(self) -> ModelSourceKind:
        """What the manifest's model_source says (the bundled model is a live source)."""
        return self.source_kind.recorded_as

    def describe(self) -> str:
        """The ``--model`` value that names this choice again (kept in manifests and checkpoints)."""
        return self.source_kind.describe(self)


@dataclass(frozen=True)
class OpenSource:
    """A model source ready for a run, and what the run's manifest says about it."""

    source: ModelSource
    kind: ModelSourceKind
    live: LiveManifest | None = None
    recorded: Manifest | None = None  # a replay: the recording's manifest (its matrix is the default)
    replay_of: Path | None = None
    facts: Callable[[], dict[str, Any]] = lambda: {}  # learnt while running (a live endpoint's adaptations)
    last_error: Callable[[], str | None] = lambda: None  # a live endpoint's last failed request, for a stop's line


@dataclass(frozen=True)
class SourceSetup:
    """What opening a source may use: the endpoint and live options, the run's folder, scenarios and notes."""

    endpoint: Endpoint | None
    options: LiveOptions
    concurrency: int
    run_folder: Path
    scenarios: Sequence[Scenario] = ()
    notify: Callable[[str], None] = lambda line: None
    label: str | None = None  # a replay's label in a matrix where another model has the recorded one


class SourceKind(ABC):
    """A kind of ``--model`` value: how it is written and read, what the manifest calls it, how a run opens it."""

    name: ClassVar[str] = ""  # the value, or its part before ':'
    argument: ClassVar[str] = ""  # what follows 'name:' (NAME, DIR); "" when the name alone is the whole value
    argument_optional: ClassVar[bool] = False  # the name alone is a value too ('live', and 'live:NAME')
    recorded_as: ClassVar[ModelSourceKind]  # the manifest's model_source
    live: ClassVar[bool] = False
    needs_endpoint: ClassVar[bool] = False

    @abstractmethod
    def usage(self) -> str:
        """How ``--help`` and the unknown-model error show this kind."""

    def parse(self, value: str, argument: str) -> ModelChoice:
        """The choice ``value`` names (``argument``: what follows the colon); a bad one is one line."""
        return ModelChoice(self.name)

    def describe(self, choice: ModelChoice) -> str:
        return self.name

    @abstractmethod
    def label(self, choice: ModelChoice, endpoint: Endpoint | None) -> str:
        """The model label every trace line of the run carries."""

    @abstractmethod
    def open(self, choice: ModelChoice, setup: SourceSetup) -> AbstractContextManager[OpenSource]:
        """The running source for a run; whatever it starts is stopped when the run ends, whatever happens."""


MODEL_SOURCES: Registry[SourceKind] = Registry("model source", summary=lambda kind: kind.usage())
K = TypeVar("K", bound="type[SourceKind]")


def model_source(name: str) -> Callable[[K], K]:
    """Registers a kind of model source under ``name`` (the ``--model`` value, or its part before ':'): the registry
    keeps one instance of the class it decorates."""

    def register(cls: K) -> K:
        cls.name = name
        MODEL_SOURCES.add(name, cls())
        return cls

    return register


def model_choices() -> str:
    """Every registered kind as ``--help`` and errors show it: 'a, b, c or d'."""
    shown = [kind.usage() for kind in MODEL_SOURCES.values()]
    return ", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else "".join(shown)


def choose(value: str | None) -> ModelChoice:
    """Reads a ``--model`` value; an unknown one lists the choices and how to use one's own endpoint."""
    if value is None:
        return ModelChoice("replay", folder=RECORDED_MODEL)
    name, colon, argument = value.partition(":")
    kind = MODEL_SOURCES.get(name)
    if kind is not None and (bool(argument) or (kind.argument_optional and not colon) if kind.argument else not colon):
        return kind.parse(value, argument)
    raise UserInputError(f"--model {value}: unknown model; choose {model_choices()}; {OWN_ENDPOINT}")


def model_label(choice: ModelChoice, endpoint: Endpoint | None) -> str:
    """The label every trace line of the run carries: the policy, the recorded model, or the endpoint's model."""
    return choice.source_kind.label(choice, endpoint)


def endpoint_from_env(env: Mapping[str, str] | None, model: str | None = None) -> Endpoint:
    """The endpoint in ``LLM_API_URL``, ``LLM_MODEL`` and ``LLM_API_KEY``; one line naming what is missing.

    ``model`` (``live:NAME``) is the model asked for there: LLM_MODEL is then neither needed nor used.
    """
    from harness.models.config import Endpoint

    needed = ENV_VARS if model is None else tuple(name for name in ENV_VARS if name != "LLM_MODEL")
    values = {name: (env or {}).get(name, "").strip() for name in needed}
    missing = [name for name in needed if not values[name]]
    if missing:
        raise UserInputError(
            f"--model {'live' if model is None else 'live:' + model} needs {', '.join(needed[:-1])} and "
            f"{needed[-1]} in the environment or .env (missing: {', '.join(missing)}); or use --model local to run "
            "the bundled model"
        )
    return Endpoint(url=values["LLM_API_URL"], model=model or values["LLM_MODEL"], api_key=values["LLM_API_KEY"])


def open_source(
    choice: ModelChoice,
    *,
    endpoint: Endpoint | None,
    options: LiveOptions,
    concurrency: int,
    run_folder: Path,
    scenarios: Sequence[Scenario] = (),
    notify: Callable[[str], None] = lambda line: None,
    label: str | None = None,
) -> AbstractContextManager[OpenSource]:
    """The source for a run; a local server is started here and always stopped, whatever happens.

    ``label`` renames a replay's runs (a matrix that also runs the model it recorded); other sources keep theirs.
    """
    setup = SourceSetup(endpoint, options, concurrency, run_folder, scenarios, notify, label)
    return choice.source_kind.open(choice, setup)


@model_source("scripted")
class Scripted(SourceKind):
    """A scripted policy (harness/models/scripted.py): offline, deterministic, labelled as scripted."""

    argument = "NAME"
    recorded_as = "scripted"

    def usage(self) -> str:
        from harness.models.scripted import POLICIES

        return f"scripted:{'|'.join(POLICIES)}"

    def parse(self, value: str, argument: str) -> ModelChoice:
        from harness.models.scripted import POLICIES

        if argument not in POLICIES:
            raise UserInputError(f"--model {value}: {POLICIES.unknown(argument)}")
        return ModelChoice(self.name, name=argument)

    def describe(self, choice: ModelChoice) -> str:
        return f"scripted:{choice.name}"

    def label(self, choice: ModelChoice, endpoint: Endpoint | None) -> str:
        return f"scripted:{choice.name}"

    @contextmanager
    def open(self, choice: ModelChoice, setup: SourceSetup) -> Iterator[OpenSource]:
        from harness.models.scripted import ScriptedSource

        yield OpenSource(ScriptedSource(choice.name), self.recorded_as)


@model_source("replay")
class Replay(SourceKind):
    """A recorded live run answering again, offline: every request must find its recorded answer."""

    argument = "DIR"
    recorded_as = "replay"

    def usage(self) -> str:
        return "replay:DIR (a recorded run)"

    def parse(self, value: str, argument: str) -> ModelChoice:
        from harness.models.recording import RECORDING_FILE

        try:
            found = (Path(argument) / RECORDING_FILE).is_file()
        except OSError:  # a name too long for the file system: nothing can be there
            found = False
        if not found:
            raise UserInputError(f"--model {value}: no {RECORDING_FILE} there (record one with --model live)")
        return ModelChoice(self.name, folder=Path(argument))

    def describe(self, choice: ModelChoice) -> str:
        return f"replay:{choice.folder}"

    def label(self, choice: ModelChoice, endpoint: Endpoint | None) -> str:
        from harness.records.manifest import read_manifest

        assert choice.folder is not None
        return read_manifest(choice.folder).model

    @contextmanager
    def open(self, choice: ModelChoice, setup: SourceSetup) -> Iterator[OpenSource]:
        from harness.models.replay import ReplaySource

        assert choice.folder is not None
        replay = ReplaySource(choice.folder)
        replay.label = setup.label or replay.label
        yield OpenSource(replay, self.recorded_as, recorded=replay.manifest, replay_of=choice.folder)


@model_source("live")
class Live(SourceKind):
    """Your own OpenAI-compatible endpoint; every exchange is recorded, so the run can be replayed offline."""

    argument = "NAME"
    argument_optional = True
    recorded_as = "live"
    live = True
    needs_endpoint = True
    local: ClassVar[bool] = False  # the bundled model (the manifest says so)

    def usage(self) -> str:
        return "live or live:NAME (your own endpoint; NAME: the model asked for there)"

    def parse(self, value: str, argument: str) -> ModelChoice:
        return ModelChoice(self.name, name=argument)

    def describe(self, choice: ModelChoice) -> str:
        return f"live:{choice.name}" if choice.name else "live"

    def label(self, choice: ModelChoice, endpoint: Endpoint | None) -> str:
        return endpoint.model if endpoint is not None else choice.name or "live"

    def endpoint(self, stack: ExitStack, setup: SourceSetup) -> LiveConfig:
        """The endpoint's client configuration; anything started for it is stopped by ``stack``."""
        from harness.models.setup import endpoint_config

        endpoint = setup.endpoint
        if endpoint is None:
            raise UserInputError(f"--model live needs an endpoint: {OWN_ENDPOINT}")
        return endpoint_config(
            endpoint.url, endpoint.model, endpoint.api_key, setup.options, concurrency=setup.concurrency
        )

    def prepare(
        self, stack: ExitStack, setup: SourceSetup, checked: LiveConfig | None = None
    ) -> tuple[LiveConfig, LiveManifest]:
        """The checked endpoint and what the manifest says about it, once per matrix (worker processes share it);
        whatever it starts (the bundled model's server) is stopped by ``stack``. ``checked``: an endpoint started
        and checked already (the bundled model's servers on Ray's nodes, each asked once on its node)."""
        from harness.models.dead_endpoint import preflight
        from harness.models.setup import live_manifest

        notify = setup.notify
        config = checked or self.endpoint(stack, setup)
        note = None if checked else preflight(config)  # a URL that is no endpoint stops here, before any run or file
        if note is not None:
            notify(f"note: {note}")
        facts = live_manifest(config, local=self.local)
        if setup.options.strict_schema:
            from harness.models.strict import scenario_problems

            facts["strict_schema_problems"] = problems = scenario_problems(list(setup.scenarios))
            for line in problems:
                notify(f"note: --strict-schema: {line}; its requests go non-strict")
        return config, LiveManifest.model_validate(facts)

    @contextmanager
    def open(self, choice: ModelChoice, setup: SourceSetup) -> Iterator[OpenSource]:
        from harness.models.live import LiveSource
        from harness.models.recording import RECORDING_FILE, RecordingSource
        from harness.records.trace import TraceWriter

        with ExitStack() as stack:
            config, facts = self.prepare(stack, setup)
            recorder = stack.enter_context(TraceWriter(setup.run_folder / RECORDING_FILE))
            live = LiveSource(config, notify=lambda line: setup.notify(f"note: {line}"))
            through = through_for(setup.options, live)
            yield OpenSource(
                RecordingSource(live, recorder.write, profile=config.provider, through=through),
                self.recorded_as,
                live=facts,
                facts=live.manifest_facts,
                last_error=lambda: live.last_error,
            )


def through_for(options: LiveOptions, live: LiveSource) -> RecordThrough | None:
    """The earlier recordings ``--record-through`` names, loaded for this model (checked already: RunSpec.build)."""
    if not options.record_through:
        return None
    from harness.models.record_through import RecordThrough

    return RecordThrough.load(options.record_through, live.label)


@model_source("local")
class Local(Live):
    """The bundled SmolLM2-135M, served by llama.cpp on this machine for the run's duration: a live source."""

    argument = ""
    argument_optional = False
    needs_endpoint = False
    local = True

    def usage(self) -> str:
        return "local (the bundled SmolLM2-135M)"

    def parse(self, value: str, argument: str) -> ModelChoice:
        return ModelChoice(self.name)

    def describe(self, choice: ModelChoice) -> str:
        return self.name

    def label(self, choice: ModelChoice, endpoint: Endpoint | None) -> str:
        from harness.models.server import MODEL_ALIAS

        return MODEL_ALIAS

    def endpoint(self, stack: ExitStack, setup: SourceSetup) -> LiveConfig:
        from harness.models.server import LocalModelServer
        from harness.models.setup import local_endpoint

        setup.notify("starting the bundled model server (SmolLM2-135M, llama.cpp) ...")
        server = stack.enter_context(LocalModelServer())
        return local_endpoint(server.base_url, server.model, setup.options, concurrency=setup.concurrency)
