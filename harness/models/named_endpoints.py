"""``bench.toml`` in the working folder: a live model named on the command line (``live:NAME``) with its own endpoint.

    [models.NAME]                       # quote a NAME with dots or slashes: [models."openai/gpt-4o"]
    url = "https://api.example.com/v1"  # required: an OpenAI-compatible base URL
    api_key_env = "EXAMPLE_API_KEY"     # the variable holding its key (default LLM_API_KEY); never the key itself
    model = "the-id-sent"               # default: NAME

A ``live:NAME`` without a table here asks the endpoint in LLM_API_URL and LLM_API_KEY for model NAME. A key pasted
where a name belongs (``api_key_env``, a key name of the table) is refused without being repeated.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import UserInputError
from harness.files import Unreadable, read_text
from harness.models.config import Endpoint
from harness.models.scrub import looks_like_key

SETTINGS_FILE = "bench.toml"
MAX_SETTINGS_BYTES = 1024 * 1024
_KEYS = {"url", "api_key_env", "model"}
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NOT_SHOWN = "a name that looks like a key (not shown)"


def named_endpoints(folder: Path, names: Iterable[str], env: Mapping[str, str] | None) -> dict[str, Endpoint]:
    """The endpoints ``folder/bench.toml`` sets for ``names`` (a name it does not set is left out)."""
    wanted = list(names)
    path = folder / SETTINGS_FILE
    if not wanted or not path.exists():
        return {}
    tables = _model_tables(path)
    return {name: _endpoint(path, name, tables[name], env or {}) for name in wanted if name in tables}


def _model_tables(path: Path) -> dict[str, Any]:
    try:
        settings = tomllib.loads(read_text(path, MAX_SETTINGS_BYTES))
    except Unreadable as exc:
        raise UserInputError(f"{path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"{path}: {exc}") from None
    models = settings.get("models", {})
    if not isinstance(models, dict):
        raise UserInputError(f"{path}: models: must be a table of [models.NAME] tables")
    return models


def _endpoint(path: Path, name: str, table: object, env: Mapping[str, str]) -> Endpoint:
    where = f"{path}: models.{NOT_SHOWN if looks_like_key(name) else name}"
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: must be a table (url, api_key_env, model)")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        said = NOT_SHOWN if looks_like_key(unknown[0]) else repr(unknown[0])
        raise UserInputError(f"{where}: unknown key {said}; known: {', '.join(sorted(_KEYS))}")
    values = {key: table.get(key, default) for key, default in (("url", ""), ("api_key_env", "LLM_API_KEY"))}
    values["model"] = table.get("model", name)
    bad = next((key for key, value in values.items() if not isinstance(value, str) or not value.strip()), None)
    if bad is not None:
        raise UserInputError(f"{where}: {bad}: must be a non-empty string")
    variable = values["api_key_env"].strip()
    if looks_like_key(variable):
        raise UserInputError(
            f"{where}: api_key_env must name an environment variable; the value given looks like a key and is not shown"
        )
    if not _VARIABLE.fullmatch(variable):
        raise UserInputError(f"{where}: api_key_env must name an environment variable (letters, digits and _)")
    key = env.get(variable, "").strip()
    if not key:
        raise UserInputError(f"{where}: {variable} (api_key_env) is not set in the environment or .env")
    return Endpoint(url=values["url"].strip(), model=values["model"].strip(), api_key=key)
