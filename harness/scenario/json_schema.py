"""JSON Schema checks on the hot path: compiled once, answered in microseconds, explained like jsonschema does.

Every proposed action's arguments and every model answer are checked against a schema. jsonschema-rs
(Rust) decides whether a value fits in well under a microsecond; only when it does not is the Python
``jsonschema`` reference implementation asked for its best error, so messages stay the familiar ones
and a value jsonschema accepts is never refused. Schemas themselves are checked at load time the same
way: jsonschema-rs against the 2020-12 meta-schema first, ``jsonschema``'s ``check_schema`` for the
message (or for any schema that names its own ``$schema``). ``jsonschema`` (a tenth of a second to
import) is only imported when something does not fit: ``bench list`` on valid files never pays for it.
"""

from __future__ import annotations

import json
from contextlib import suppress
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    import jsonschema


class SchemaCheck:
    """One schema, compiled for fast checks, with the reference implementation kept for explanations."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        # offline: a $ref is resolved inside the schema (or to a bundled meta-schema), never fetched from a URL
        self._fast = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
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
        import jsonschema

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


def object_schema_problem(schema: dict[str, Any]) -> str | None:
    """None when ``schema`` is a valid JSON Schema of type object (an action's arguments, a node's params or
    output); else the one-line reason, as scenario errors print it."""
    problem = schema_problem(schema)
    if problem is not None:
        return f"not a valid JSON Schema: {problem}"
    if schema.get("type") != "object":
        return "must be a JSON Schema of type 'object'"
    return None


def schema_problem(schema: dict[str, Any]) -> str | None:
    """None when ``schema`` is a valid Draft 2020-12 JSON Schema that checks values; else the message saying why not
    (jsonschema's, for a schema the meta-schema refuses)."""
    valid = False
    if "$schema" not in schema:
        with suppress(ValueError, TypeError, OverflowError, jsonschema_rs.ReferencingError):  # then jsonschema decides
            valid = jsonschema_rs.meta.is_valid(schema)
    if not valid:
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            return exc.message
    return _unusable(schema)


def _unusable(schema: dict[str, Any]) -> str | None:
    """None when a valid schema compiles; else why it cannot check anything (a $ref to nothing, or to a file or a
    URL, which bench never fetches; a pattern no regex engine reads): refused at load, not in the middle of a run."""
    try:
        check_for(schema)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError, TypeError, OverflowError) as exc:
        reason = str(exc).strip().splitlines()
        return f"cannot be used to check a value: {reason[0] if reason else type(exc).__name__}"
    return None
