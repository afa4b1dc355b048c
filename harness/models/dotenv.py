"""A ``.env`` file in the working folder: where LLM_API_URL, LLM_MODEL and LLM_API_KEY can live between runs.

The real environment wins over the file: a variable set in the shell is never replaced. The format is the common
one: ``KEY=VALUE`` lines, ``#`` comments and blank lines, an optional ``export``, values optionally in single or
double quotes (taken as written, no escapes). A line that is none of these is one error naming the file and line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from harness.errors import UserInputError
from harness.files import Unreadable, read_text

DOTENV_FILE = ".env"
MAX_DOTENV_BYTES = 1024 * 1024  # a few settings; past this it is not a .env file
_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables a ``.env`` file sets (none when there is no file)."""
    if not path.exists():
        return {}
    try:
        text = read_text(path, MAX_DOTENV_BYTES)
    except Unreadable as exc:
        raise UserInputError(f"{path}: {exc}") from None
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        matched = _LINE.fullmatch(line)
        value = _value(matched.group(2)) if matched else None
        if matched is None or value is None:
            raise UserInputError(f"{path}: line {number}: expected KEY=VALUE (a quoted value closes its quote)")
        found[matched.group(1)] = value
    return found


def _value(raw: str) -> str | None:
    """A value as written: inside its quotes, or up to a `` #`` comment; None for an unclosed quote."""
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        if end < 0 or raw[end + 1 :].strip()[:1] not in ("", "#"):
            return None
        return raw[1:end]
    return raw.split(" #", 1)[0].strip()


def working_environment(folder: Path | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command reads its settings from: ``folder/.env`` (default: the working folder), with
    every variable the real environment sets taking precedence."""
    return read_dotenv((folder or Path.cwd()) / DOTENV_FILE) | dict(os.environ if environ is None else environ)
