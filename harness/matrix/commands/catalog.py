"""What the other commands ask of the harness: the catalog of modes and scenarios, the scenario sanity check,
the scenario schema, the bundled model's server and an endpoint probe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import UserInputError
from harness.matrix.pipeline.spec import RunSpec, project_dirs
from harness.models import endpoint_from_env
from harness.registry import Registry
from harness.scenario.load import load_all
from modes import MODES, select_modes
from modes.base import is_runtime
from modes.runtimes.base import RuntimeMode

if TYPE_CHECKING:
    from harness.matrix.executors.base import Notify  # bench list and check-scenarios never load the run pipeline


@dataclass(frozen=True)
class Catalog:
    """The registered modes (in control-spectrum order) and the scenarios of a folder."""

    modes: list[tuple[str, str, str, str]]  # name, summary, who decides the next step, who can stop the run
    scenarios: list[tuple[str, str, str]]  # id, title, the oracle's expected stop
    # the runtime adapters (--mode runtimes): name, summary, the framework (its extra), installed or what to install
    runtimes: list[tuple[str, str, str, str]] = field(default_factory=list)
    # every other extension kind's registered names (docs/extending.md): kind, name, what it is
    extensions: list[tuple[str, str, str]] = field(default_factory=list)


def catalog(scenarios_dir: Path | None = None) -> Catalog:
    folder, _ = project_dirs(scenarios_dir)
    modes = [(name, MODES[name].summary, MODES[name].decides, MODES[name].stopper) for name in select_modes([])]
    scenarios = [(s.id, s.title, s.oracle.expected_stop) for s in load_all(folder).values()]
    return Catalog(modes, scenarios, runtime_rows(), extension_rows())


def registries() -> tuple[Registry[Any], ...]:
    """Every extension kind but the modes (listed apart, with who decides and who can stop), in the order
    ``bench list`` shows them."""
    from harness.core.approvals import SCRIPTED_APPROVERS
    from harness.models.choice import MODEL_SOURCES
    from harness.models.providers import PROFILES
    from harness.models.scripted import POLICIES

    return (MODEL_SOURCES, POLICIES, SCRIPTED_APPROVERS, PROFILES)


def extension_rows() -> list[tuple[str, str, str]]:
    """One row per registered plug-in of every kind in ``registries()``, each kind in registration order."""
    return [(registry.kind, name, summary) for registry in registries() for name, summary in registry.describe()]


def runtime_rows() -> list[tuple[str, str, str, str]]:
    """Each registered runtime adapter, with its framework and whether that is installed here."""
    rows = []
    adapters = sorted((cls for cls in MODES.values() if is_runtime(cls)), key=lambda cls: (cls.spectrum, cls.name))
    for cls in adapters:
        assert issubclass(cls, RuntimeMode)
        installed = "yes" if cls.missing() is None else f"no: pip install -e '.[{cls.extra}]'"
        framework = cls.distributions[0] if cls.distributions else cls.framework  # its package's name, as pip says
        rows.append((cls.name, cls.summary, f"{framework} (bench[{cls.extra}])", installed))
    return rows


def check_scenarios(scenarios_dir: Path | None = None) -> list[Any]:
    """The sanity check of every scenario in the folder (harness.matrix.commands.sanity.SanityReport each)."""
    from harness.matrix.commands.sanity import check_folder

    folder, _ = project_dirs(scenarios_dir)
    return check_folder(folder, select_modes([]))


def suggest_sanity_rows(mode: str, scenarios_dir: Path | None = None) -> str:
    """The sanity rows of ``mode`` for every scenario in the folder, computed, as YAML to review and paste."""
    from harness.matrix.commands.sanity import suggest

    folder, _ = project_dirs(scenarios_dir)
    return suggest(folder, mode, select_modes([]))


def scenario_schema_text() -> str:
    from harness.scenario.load import scenario_schema_text as text

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
