"""The trace schema as the reports read it, derived from the pydantic models in harness/records/trace.py.

One source of truth: the pyarrow projection the loader parses with, the outcome columns of the runs
table, the required fields a summary must carry and the closed value sets a line is checked against
all come from ``TraceEvent`` and ``RunOutcome``. A field added to those models shows up here without
an edit; a field of a type the projection cannot hold fails at import, so nobody forgets it.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel

from harness.errors import ERROR_KINDS
from harness.records.trace import SCHEMA_VERSION, RunOutcome, TraceEvent, Usage

# The gateway's reasons for a blocked attempt (harness/core/gateway.py), with the names the tables show.
# A reason not listed here still counts: tables show it as "other" (blocked minus the listed reasons).
BLOCK_REASONS: dict[str, str] = {
    "gate_closed": "gate",
    "precondition": "precondition",
    "not_permitted": "role",
    "not_allowed": "allowlist",
    "invalid_args": "invalid args",
    "arg_rule": "argument rule",
    "unknown_action": "unknown action",
    "not_an_action": "not an action",
    "sensitive_input": "sensitive input",
}
# Keys of the outcome's count dictionaries: a dict field has no fixed columns, so its keys are named here.
DICT_KEYS: dict[str, tuple[str, ...]] = {"errors": ERROR_KINDS, "blocked_by": tuple(BLOCK_REASONS)}
# Outcome fields that became required after schema 1; a line of an older version may lack them.
# (Fields added with a default need no entry: a missing one reads as its default.)
SINCE: dict[str, int] = {"stop_verdict": 2, "blocked_by": 2, "unauthorized_side_effects": 2}
KNOWN_VERSIONS: tuple[int, ...] = tuple(range(1, SCHEMA_VERSION + 1))
# Event fields the reports never read: the parser skips them (args can be megabytes of model output).
UNREAD_EVENT_FIELDS = ("args",)
# Free-form or partly read fields: only these keys of them are parsed.
EVENT_OVERRIDES: dict[str, pa.DataType] = {
    "error": pa.struct([("kind", pa.string())]),  # the message is for people, not for metrics
    "detail": pa.struct([("purpose", pa.string()), ("gateway_policy", pa.string())]),
}


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True); anything else -> (annotation, False)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def arrow_type(annotation: Any, name: str) -> pa.DataType:
    """The pyarrow type that holds a pydantic field's JSON; ``name`` finds a dict field's keys."""
    annotation, _ = _unwrap_optional(annotation)
    origin = get_origin(annotation)
    if annotation is bool:
        return pa.bool_()
    if annotation is int:
        return pa.int64()
    if annotation is float:
        return pa.float64()
    if annotation is str or (origin is Literal and all(isinstance(a, str) for a in get_args(annotation))):
        return pa.string()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([(f, arrow_type(info.annotation, f)) for f, info in annotation.model_fields.items()])
    if origin is list:
        return pa.list_(arrow_type(get_args(annotation)[0], name))
    if origin is dict and name in DICT_KEYS:
        return pa.struct([(key, arrow_type(get_args(annotation)[1], key)) for key in DICT_KEYS[name]])
    raise TypeError(
        f"reports/trace_columns.py: no pyarrow type for field '{name}' ({annotation!r}); "
        "add it to DICT_KEYS, EVENT_OVERRIDES or UNREAD_EVENT_FIELDS"
    )


def _event_schema() -> pa.Schema:
    fields = []
    for name, info in TraceEvent.model_fields.items():
        if name in UNREAD_EVENT_FIELDS:
            continue
        fields.append((name, EVENT_OVERRIDES.get(name) or arrow_type(info.annotation, name)))
    return pa.schema(fields)


# The projection the loader parses every line with.
SCHEMA: pa.Schema = _event_schema()
# Fields a line must carry to be an event at all (the model's fields without a default).
REQUIRED_EVENT_FIELDS: tuple[str, ...] = tuple(n for n, i in TraceEvent.model_fields.items() if i.is_required())


def literal_values(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Each ``Literal`` field of a model and its allowed values (the closed sets a line is checked against)."""
    found = {}
    for name, info in model.model_fields.items():
        annotation, _ = _unwrap_optional(info.annotation)
        if get_origin(annotation) is Literal:
            found[name] = tuple(get_args(annotation))
    return found


EVENT_LITERALS = literal_values(TraceEvent)
OUTCOME_LITERALS = literal_values(RunOutcome)


@dataclass(frozen=True)
class OutcomeField:
    """A required outcome field: its name, whether JSON null is a valid value, and the version it appeared in."""

    name: str
    nullable: bool
    since: int


OUTCOME_REQUIRED: tuple[OutcomeField, ...] = tuple(
    OutcomeField(name, _unwrap_optional(info.annotation)[1], SINCE.get(name, 1))
    for name, info in RunOutcome.model_fields.items()
    if info.is_required()
)


def required_outcome_fields(version: int) -> tuple[OutcomeField, ...]:
    """What a summary of ``version`` must carry: fields added later are absent from older lines."""
    return tuple(f for f in OUTCOME_REQUIRED if f.since <= version)


# ---------------------------------------------------------------- outcome columns of the runs table


def _flat_outcome_columns() -> dict[str, str]:
    """``outcome.<path>`` -> runs-table column: scalars keep their name, nested records get flat names."""
    columns: dict[str, str] = {}
    for name, info in RunOutcome.model_fields.items():
        annotation, _ = _unwrap_optional(info.annotation)
        if annotation is Usage:
            columns.update({f"outcome.usage.{f}": f for f in Usage.model_fields})  # prompt_tokens, ...
        elif name in DICT_KEYS:
            prefix = {"blocked_by": "blocked"}.get(name, name)
            columns.update({f"outcome.{name}.{key}": f"{prefix}_{key}" for key in DICT_KEYS[name]})
        else:
            columns[f"outcome.{name}"] = name
    return columns


OUTCOME_COLUMNS: Mapping[str, str] = _flat_outcome_columns()
# Outcome fields with a default (added later, like resumes): a line without them reads as the default.
OUTCOME_DEFAULTS: dict[str, Any] = {
    name: info.default for name, info in RunOutcome.model_fields.items() if not info.is_required()
}
TOKEN_COLUMNS: tuple[str, ...] = tuple(Usage.model_fields)
