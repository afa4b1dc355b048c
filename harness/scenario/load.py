"""Loading scenario files: YAML read safely, validated, cross-checked, and every problem named by file and field
on one line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ValidationError,
)

from harness.errors import ScenarioError, UnknownNameError, UserInputError
from harness.scenario.load_checks import check_references
from harness.scenario.model import Scenario
from harness.scenario.safe_yaml import read_yaml


def load_scenario(path: Path) -> Scenario:
    """Loads and validates one scenario file; any problem raises ``ScenarioError(file, field)`` on one line."""
    scenario = load_yaml_model(path, Scenario)
    try:
        problem = check_references(scenario)
    except RecursionError:
        raise _error(display_path(path), "", "nested too deeply to check") from None
    if problem:
        raise _error(display_path(path), *problem)
    if scenario.id != path.stem:
        raise _error(display_path(path), "id", f"'{scenario.id}' must match the file name '{path.stem}'")
    return scenario


Model = TypeVar("Model", bound=BaseModel)


def load_yaml_model(path: Path, model: type[Model]) -> Model:
    """Reads a YAML mapping into a pydantic model; any problem raises ``ScenarioError(file, field)`` on one line."""
    shown = display_path(path)
    raw = read_yaml(path, shown)  # bounded: size, UTF-8, alias expansion, depth; JSON-like values only
    if not isinstance(raw, dict):
        raise _error(shown, "", "must be a YAML mapping at the top level")
    try:
        return model.model_validate(raw)
    except RecursionError:
        raise _error(shown, "", "nested too deeply to validate") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _error(shown, _field_path(first["loc"], raw), _clean(first["msg"])) from None


def scenario_json_schema() -> dict[str, Any]:
    """The scenario format as a JSON Schema, generated from the models (shipped in scenarios/schema/)."""
    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def scenario_schema_text() -> str:
    """The JSON Schema as the text of the shipped file (``bench schema`` prints it)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


SANITY_TABLE = (
    "sanity.yaml"  # in a scenario folder: the sanity table (harness/matrix/commands/sanity.py), not a scenario
)


def scenario_files(folder: Path) -> list[Path]:
    """The scenario files of a folder, sorted by name (its sanity table is not one); one line when there are none."""
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except FileNotFoundError:
        raise UserInputError(f"--scenarios-dir {folder}: no such folder") from None
    except NotADirectoryError:
        raise UserInputError(f"--scenarios-dir {folder}: not a folder") from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise UserInputError(f"--scenarios-dir {folder}: cannot read it ({why})") from None
    found = sorted(n for n in names if n.endswith(".yaml") and not n.startswith(".") and n != SANITY_TABLE)
    if not found:
        raise UserInputError(f"--scenarios-dir {folder}: holds no scenario files (*.yaml)")
    return [folder / name for name in found]


def load_all(folder: Path) -> dict[str, Scenario]:
    """Loads every scenario in a folder; the first bad file stops with its error."""
    return {path.stem: load_scenario(path) for path in scenario_files(folder)}


def select_scenarios(folder: Path, names: list[str]) -> list[Scenario]:
    """Resolves ``all`` or a list of names to loaded scenarios, failing on unknown names."""
    files = {path.stem: path for path in scenario_files(folder)}
    wanted = list(files) if names in ([], ["all"]) else names
    for name in wanted:
        if name not in files:
            raise UnknownNameError("scenario", name, list(files))
    return [load_scenario(files[name]) for name in wanted]


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):  # outside the cwd, a symlink loop, a cwd that was removed
        return str(path)


def _field_path(loc: tuple[Any, ...], raw: Any) -> str:
    """A pydantic error location as ``actions[2].gate``, walking the raw data to drop union tags."""
    parts: list[str] = []
    node = raw
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
            continue
        key = str(item)
        if key.startswith("function-"):
            continue
        if isinstance(node, dict) and key not in node and node.get("type") == key:
            continue  # the tag of a discriminated union (an oracle check's type), not a field
        parts.append(("." if parts else "") + key)
        node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _clean(message: str) -> str:
    # YAML has lists, not tuples: say what the author wrote.
    return message.removeprefix("Value error, ").replace("a valid tuple", "a valid list")


def _error(shown: str, field: str, message: str) -> ScenarioError:
    # One line whatever the source of the message (YAML marks and JSON Schema messages can span lines).
    return ScenarioError(shown, field, " ".join(message.split()))
