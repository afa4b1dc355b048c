"""RunSpec: everything one matrix run needs, as one typed value built by the CLI and by Python callers alike."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, ValidationError, field_validator

from harness.choices import GATEWAY_POLICIES as GATEWAY_POLICIES  # the CLI's choices, re-exported for callers
from harness.choices import GatewayPolicy
from harness.core.approvals import ApproverSpec, parse_approver
from harness.errors import UserInputError
from harness.models.choice import ModelChoice, choose, endpoint_from_env
from harness.models.config import Endpoint, LiveOptions
from harness.terminal import printable

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MAX_TRIALS = 100_000  # runs per cell; cells are generated lazily, so this bounds time, not memory
MAX_CONCURRENCY = 256
MAX_LABEL = 200  # characters: a label names a run in listings, it is not a description


def _model_choice(value: object) -> ModelChoice:
    """A ``--model`` value read once (an unknown one is one line listing the known ones), or a choice made already."""
    if isinstance(value, ModelChoice):
        return value
    if value is None or isinstance(value, str):
        return choose(value)
    raise ValueError("must be a --model value: scripted:NAME, replay:DIR, live or local")


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
    """One matrix run: which modes, scenarios and model, how many trials, where the folder goes.

    ``model`` is ``scripted:NAME``, ``replay:DIR``, ``live`` (``endpoint`` says where) or ``local`` (the
    bundled model), read once into a ``ModelChoice``; not given, the committed recording is replayed. A replay
    defaults trials, seed, modes, scenarios and the gateway policy to the recorded matrix when they are not given.
    ``approver`` (``scripted:NAME``) is read once into an ``ApproverSpec``, whose ``for_run`` makes each run's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # () or ("all",): bench's own modes; "runtimes": every runtime adapter; FILE.py:FACTORY: a user's agent
    modes: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()  # () or ("all",): every scenario in scenarios_dir
    scenarios_dir: Path | None = None  # None: ./scenarios when there is one, else the project's
    model: ModelField = Field(default_factory=lambda: choose(None))
    endpoint: Endpoint | None = None  # model "live": where to send requests
    live: LiveOptions | None = None  # how a live model is asked; None: the defaults
    trials: int | None = Field(None, ge=1, le=MAX_TRIALS)
    seed: int | None = None
    concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY)
    gateway: GatewayPolicy | None = None  # None: DEFAULT_GATEWAY_POLICY (a replay: the recording's policy)
    approver: ApproverField = None  # decides at every gate in-run; None: runs suspend at gates
    out: Path | None = None  # None: a new folder under results/
    resume: Path | None = None  # a matrix folder to continue: only its cells without a final summary run
    replace: bool = False  # with out: replace the bench run there once this one completes
    command: tuple[str, ...] = ()  # what the user typed, for the manifest
    label: str | None = Field(None, min_length=1, max_length=MAX_LABEL)  # a name for the run (--label)

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
    def live_options(self) -> LiveOptions:
        return self.live or LiveOptions()

    @classmethod
    def build(cls, *, env: Mapping[str, str] | None = None, **fields: object) -> RunSpec:
        """Validates ``fields`` as the CLI gives them; a bad value becomes one line naming its flag.

        ``env`` supplies the endpoint (LLM_API_URL, LLM_MODEL, LLM_API_KEY) when the model is ``live``.
        """
        try:
            spec = cls.model_validate(fields)  # an unknown model or approver raises its own one line
        except ValidationError as exc:
            raise UserInputError(_one_line(exc)) from None
        given = sorted(spec.live.model_fields_set) if spec.live is not None else []
        if given and not spec.model.live:
            raise UserInputError(f"{_flag('live.' + given[0])} applies to live models only (--model live or local)")
        if spec.replace and spec.out is None:
            raise UserInputError("--replace needs --out: the folder whose run is replaced")
        if spec.endpoint is None and (spec.model.needs_endpoint or _continues_live(spec.resume)):
            spec = spec.model_copy(update={"endpoint": endpoint_from_env(env)})
        return spec


def _continues_live(folder: Path | None) -> bool:
    """Whether --resume continues a matrix that asked a live endpoint (it needs the endpoint again)."""
    if folder is None:
        return False
    from harness.records.manifest import read_manifest

    manifest = read_manifest(folder)
    return (
        manifest.model_source == "live"
        and (manifest.model_choice or "live") == "live"
        and not (manifest.live is not None and manifest.live.local_model)
    )


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    name = ".".join(str(part) for part in first["loc"]) or "spec"
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
FLAGS = {"modes": "--mode", "scenarios": "--scenario", "live.disable_thinking": "--no-thinking"}
