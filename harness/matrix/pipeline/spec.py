"""RunSpec: everything one matrix run needs, as one typed value built by the CLI and by Python callers alike."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.choices import GATEWAY_POLICIES as GATEWAY_POLICIES  # the CLI's choices, re-exported for callers
from harness.choices import GatewayPolicy
from harness.core.approvals import ApproverSpec, parse_approver
from harness.errors import UserInputError
from harness.models.choice import ModelChoice, choose, endpoint_from_env
from harness.models.config import Endpoint, LiveOptions
from harness.records.manifest import Manifest
from harness.terminal import printable

PROJECT_ROOT = Path(__file__).resolve().parents[3]
MAX_TRIALS = 100_000  # runs per cell; cells are generated lazily, so this bounds time, not memory
MAX_CONCURRENCY = 256
MAX_WORKERS = 256
# Below this many runs a matrix stays in one process by default: starting a worker costs about a second of
# imports, which a small matrix of scripted runs (about 1 ms each) never wins back (docs/scale.md).
AUTO_WORKERS_MIN_RUNS = 2_000
MAX_LABEL = 200  # characters: a label names a run in listings, it is not a description


def _model_choice(value: object) -> ModelChoice:
    """A ``--model`` value read once (an unknown one is one line listing the known ones), or a choice made already."""
    if isinstance(value, ModelChoice):
        return value
    if value is None or isinstance(value, str):
        return choose(value)
    raise ValueError("must be a --model value: scripted:NAME, replay:DIR, live, live:NAME or local")


def _approver(value: object) -> ApproverSpec | None:
    """An ``--approver`` value read once (an unknown one is one line listing the known ones), or a parsed one."""
    if value is None or isinstance(value, ApproverSpec):
        return value
    if isinstance(value, str):
        return parse_approver(value)
    raise ValueError("must be an --approver value: scripted:NAME")


# Typed once from the strings the CLI and Python callers give; dumped back as those strings.
ModelField = Annotated[ModelChoice, PlainValidator(_model_choice), PlainSerializer(ModelChoice.describe)]
ApproverField = Annotated[
    ApproverSpec | None, PlainValidator(_approver), PlainSerializer(lambda a: None if a is None else str(a))
]


class RunSpec(BaseModel):
    """One matrix run: which modes, scenarios and models, how many trials, where the folder goes.

    ``model`` is ``scripted:NAME``, ``replay:DIR``, ``live`` (``endpoint`` says where), ``live:NAME`` (the same
    endpoint asked for model NAME) or ``local`` (the bundled model), read once into a ``ModelChoice``; a list of
    them is a matrix per model into one folder (``models``; ``model`` is the first). Not given, the committed
    recording is replayed. A replay that is the only model defaults trials, seed, modes, scenarios and the
    gateway policy to the recorded matrix when they are not given.
    ``approver`` (``scripted:NAME``) is read once into an ``ApproverSpec``, whose ``for_run`` makes each run's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # () or ("all",): bench's own modes; "runtimes": every runtime adapter; FILE.py:FACTORY: a user's agent
    modes: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()  # () or ("all",): every scenario in scenarios_dir
    scenarios_dir: Path | None = None  # None: ./scenarios when there is one, else the project's
    models: tuple[ModelField, ...] = Field(default_factory=lambda: (choose(None),), min_length=1)
    endpoint: Endpoint | None = None  # live models: where to send requests (live:NAME asks for NAME there)
    endpoints: dict[str, Endpoint] = Field(default_factory=dict)  # live:NAME with its own endpoint (bench.toml)
    live: LiveOptions | None = None  # how a live model is asked; None: the defaults
    trials: int | None = Field(None, ge=1, le=MAX_TRIALS)
    seed: int | None = None
    concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY)
    workers: int | None = Field(None, ge=1, le=MAX_WORKERS)  # local processes; None: the cores, for a big matrix
    executor: Literal["local", "ray"] = "local"  # ray: batches of units as Ray tasks (docs/scale.md#ray)
    ray_address: str | None = None  # the Ray cluster to join; None: RAY_ADDRESS, else a Ray started here
    gateway: GatewayPolicy | None = None  # None: DEFAULT_GATEWAY_POLICY (a replay: the recording's policy)
    approver: ApproverField = None  # decides at every gate in-run; None: runs suspend at gates
    out: Path | None = None  # None: a new folder under results/
    resume: Path | None = None  # a matrix folder to continue: only its cells without a final summary run
    replace: bool = False  # with out: replace the bench run there once this one completes
    command: tuple[str, ...] = ()  # what the user typed, for the manifest
    label: str | None = Field(None, min_length=1, max_length=MAX_LABEL)  # a name for the run (--label)

    @model_validator(mode="before")
    @classmethod
    def _model_or_models(cls, data: object) -> object:
        """``model`` (one value, or a list as a repeated ``--model`` gives) is read into ``models``."""
        if not isinstance(data, dict) or "model" not in data:
            return data
        if "models" in data:
            raise ValueError("give model or models, not both")
        data = dict(data)
        value = data.pop("model")
        data["models"] = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        return data

    @field_validator("models")
    @classmethod
    def _distinct_models(cls, value: tuple[ModelChoice, ...]) -> tuple[ModelChoice, ...]:
        """A model given twice would run every cell twice under one label: refused."""
        named = [choice.describe() for choice in value]
        twice = next((name for name in named if named.count(name) > 1), None)
        if twice is not None:
            raise ValueError(f"{twice} is given twice")
        return value

    @field_validator("modes", "scenarios", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        """Accepts repeated names and comma-separated lists alike; a given value that names nothing (``""``, ``",,"``:
        an unset shell variable) is refused, never read as every one. Not giving the field at all selects all."""
        if isinstance(value, str):
            value = [value]
        if isinstance(value, (list, tuple)):
            names = tuple(name.strip() for item in value for name in str(item).split(",") if name.strip())
            if value and not names:
                raise ValueError("names nothing (an empty value, or only commas); give 'all' or names")
            return names
        return value

    @field_validator("label")
    @classmethod
    def _printable_label(cls, value: str | None) -> str | None:
        """A label is shown in terminals and pages: one line, no control characters, not blank."""
        if value is not None and (printable(value, one_line=True) != value or not value.strip()):
            raise ValueError("must be one line of printable text")
        return value

    @property
    def model(self) -> ModelChoice:
        """The first model (the only one, unless ``--model`` was repeated)."""
        return self.models[0]

    @property
    def live_options(self) -> LiveOptions:
        return self.live or LiveOptions()

    def endpoint_for(self, choice: ModelChoice) -> Endpoint | None:
        """Where a live model's requests go: its own endpoint (bench.toml), or the one endpoint with NAME as the model
        for ``live:NAME``."""
        if not choice.needs_endpoint or not choice.name:
            return self.endpoint
        own = self.endpoints.get(choice.name)
        if own is not None:
            return own
        return None if self.endpoint is None else self.endpoint.model_copy(update={"model": choice.name})

    def for_model(self, choice: ModelChoice) -> RunSpec:
        """This spec for one of its models: what a matrix per model runs with."""
        return self.model_copy(update={"models": (choice,), "endpoint": self.endpoint_for(choice)})

    def workers_for(self, runs: int) -> int:
        """How many worker processes run a matrix of ``runs`` runs of the (first) model: ``workers`` when given, else
        the machine's cores for a large offline matrix (scripted or replayed) and one process otherwise. A live model
        runs in this process unless asked, and in at most ``concurrency`` workers: each keeps a request in flight,
        and --concurrency bounds them all (docs/scale.md)."""
        if self.model.live:
            return min(self.workers or 1, self.concurrency)
        if self.workers is not None:
            return self.workers
        if runs < AUTO_WORKERS_MIN_RUNS:
            return 1
        return max(1, os.cpu_count() or 1)

    @classmethod
    def build(cls, *, env: Mapping[str, str] | None = None, **fields: object) -> RunSpec:
        """Validates ``fields`` as the CLI gives them; a bad value becomes one line naming its flag.

        ``env`` supplies the endpoint (LLM_API_URL, LLM_MODEL, LLM_API_KEY) when a model is ``live`` (``live:NAME``
        needs no LLM_MODEL); a ``live:NAME`` set in ``bench.toml`` (``harness.models.named_endpoints``) has its own.
        """
        try:
            spec = cls.model_validate(fields)  # an unknown model or approver raises its own one line
        except ValidationError as exc:
            raise UserInputError(_one_line(exc)) from None
        given = sorted(spec.live.model_fields_set) if spec.live is not None else []
        if given and not any(choice.live for choice in spec.models):
            raise UserInputError(f"{_flag('live.' + given[0])} applies to live models only (--model live or local)")
        if spec.executor != "ray" and spec.ray_address is not None:
            raise UserInputError("--ray-address needs --executor ray")
        if spec.replace and spec.out is None:
            raise UserInputError("--replace needs --out: the folder whose run is replaced")
        if spec.endpoint is None:
            spec = spec.model_copy(update=_endpoints(spec, env))
        if spec.live is not None and spec.live.record_through:
            spec = _check_record_through(spec)
        return spec


def _check_record_through(spec: RunSpec) -> RunSpec:
    """Checks, before anything starts, that every ``--record-through`` folder can answer for every live model of the
    matrix; their paths are made absolute, so worker processes and a resume from another folder find them."""
    from harness.models.choice import model_label
    from harness.models.record_through import check_recording

    options = spec.live_options
    sampling = {"temperature": options.temperature, "max_tokens": options.max_tokens}
    for choice in spec.models:
        if choice.live:
            for folder in options.record_through:
                check_recording(folder, model_label(choice, spec.endpoint_for(choice)), sampling)
    absolute = options.model_copy(update={"record_through": tuple(path.resolve() for path in options.record_through)})
    return spec.model_copy(update={"live": absolute})


def _endpoints(spec: RunSpec, env: Mapping[str, str] | None) -> dict[str, object]:
    """The endpoints the spec's live models ask (a --resume: the continued matrix's): a ``live:NAME`` set in
    bench.toml has its own; every other one needs LLM_API_URL and LLM_API_KEY (plain ``live`` also LLM_MODEL)."""
    from harness.models.named_endpoints import named_endpoints

    if spec.resume is not None:
        from harness.records.manifest import read_manifest

        choices = [choose(value) for value in manifest_choices(read_manifest(spec.resume))]
    else:
        choices = list(spec.models)
    asking = [choice for choice in choices if choice.needs_endpoint]
    if not asking:
        return {}
    own = named_endpoints(Path.cwd(), [choice.name for choice in asking if choice.name], env)
    plain = [choice for choice in asking if not choice.name]
    named = [choice for choice in asking if choice.name and choice.name not in own]
    if plain:
        return {"endpoint": endpoint_from_env(env), "endpoints": own}
    if named:
        return {"endpoint": endpoint_from_env(env, model=named[0].name), "endpoints": own}
    return {"endpoints": own}


def manifest_choices(manifest: Manifest) -> list[str]:
    """The --model values of a matrix folder's models, in order (a manifest written before models were listed: its
    one model, read from the fields it had)."""
    if manifest.models:
        return [entry.choice for entry in manifest.models]
    if manifest.model_choice:
        return [manifest.model_choice]
    if manifest.model_source == "replay" and manifest.replay_of:
        return [f"replay:{manifest.replay_of}"]
    if manifest.model_source == "scripted":
        return [manifest.model]
    return ["local" if manifest.live is not None and manifest.live.local_model else "live"]


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    name = ".".join(str(part) for part in first["loc"] if not isinstance(part, int)) or "spec"  # models.1: --model
    value = first.get("input")
    shown = f", got {value!r}" if not isinstance(value, (dict, list, tuple)) else ""
    return f"{_flag(name)}: {first['msg'].removeprefix('Value error, ')}{shown}"


def _flag(field: str) -> str:
    return FLAGS.get(field, "--" + field.rsplit(".", 1)[-1].removesuffix("_s").replace("_", "-"))


def project_dirs(scenarios_dir: Path | None = None) -> tuple[Path, Path]:
    """The scenarios folder and the results root: ./scenarios and ./results when run from a project folder,
    else the installed project's own."""
    local = Path.cwd() / "scenarios"
    in_project = local.is_dir()
    default = local if in_project else PROJECT_ROOT / "scenarios"
    return scenarios_dir or default, (Path.cwd() if in_project else PROJECT_ROOT) / "results"


# Where a spec field differs from its flag's name.
FLAGS = {"models": "--model", "modes": "--mode", "scenarios": "--scenario", "live.disable_thinking": "--no-thinking"}
