"""JSON Schema checks on the hot path: compiled once, answered in microseconds, explained like jsonschema does.

Every proposed action's arguments and every model answer are checked against a schema. jsonschema-rs
(Rust) decides whether a value fits in well under a microsecond; only when it does not is the Python
``jsonschema`` reference implementation asked for its best error, so messages stay the familiar ones
and a value jsonschema accepts is never refused. Schemas themselves are still checked at load time by
``jsonschema`` (``Draft202012Validator.check_schema``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema
import jsonschema_rs


class SchemaCheck:
    """One schema, compiled for fast checks, with the reference implementation kept for explanations."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        self._fast = jsonschema_rs.validator_for(schema, validate_formats=False)
        self._reference: jsonschema.protocols.Validator | None = None

    def problem(self, value: Any) -> str | None:
        """None when ``value`` fits; else the first way it does not (``path: message``), as jsonschema says."""
        found = self.first_error(value)
        if found is None:
            return None
        where, message = found
        return f"{where}: {message}" if where else message

    def first_error(self, value: Any) -> tuple[str, str] | None:
        """None when ``value`` fits; else (the path where it does not, joined by /, and the message)."""
        try:
            if self._fast.is_valid(value):
                return None
        except (ValueError, TypeError, OverflowError):
            pass  # a value the fast path cannot take (a huge integer): the reference implementation decides
        if self._reference is None:
            self._reference = jsonschema.Draft202012Validator(self.schema)
        error = jsonschema.exceptions.best_match(self._reference.iter_errors(value))
        if error is None:
            return None
        return "/".join(str(part) for part in error.absolute_path), error.message


@lru_cache(maxsize=512)
def _compiled(text: str) -> SchemaCheck:
    return SchemaCheck(json.loads(text))


def check_for(schema: dict[str, Any]) -> SchemaCheck:
    """A compiled check for a schema given as data (a mode's response schema), shared by equal schemas."""
    return _compiled(json.dumps(schema, sort_keys=True, separators=(",", ":")))
