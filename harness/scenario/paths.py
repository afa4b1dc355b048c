"""Dotted paths into store artifacts and action arguments: the one small language conditions and oracle checks share.

``order.amount`` walks mapping keys (a digit walks a list index); a segment ending in ``[]``
(``claims[].doc_id``) fans out over every item of a list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PATH_PATTERN = r"^[A-Za-z0-9_-]+(\[\])?(\.[A-Za-z0-9_-]+(\[\])?)*$"
_PATH = re.compile(PATH_PATTERN)


class Missing:
    """What a path yields where the data has nothing: distinct from a stored ``None``."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


def valid_path(path: str) -> bool:
    return bool(_PATH.match(path))


def head(path: str) -> str:
    """The first key of a path: the artifact or the top-level argument it starts from."""
    return path.split(".", 1)[0].removesuffix("[]")


def lookup(data: Any, path: str) -> Any:
    """The single value at a path without fan-out, or ``MISSING``."""
    values = list(collect(data, path.replace("[]", "")))
    return values[0] if values else MISSING


def collect(data: Any, path: str) -> Iterator[Any]:
    """Every value a path reaches; ``MISSING`` marks each place where a step found nothing."""
    yield from _walk(data, path.split("."))


def _walk(data: Any, segments: list[str]) -> Iterator[Any]:
    if not segments:
        yield data
        return
    segment, rest = segments[0], segments[1:]
    fan_out = segment.endswith("[]")
    value = _step(data, segment.removesuffix("[]"))
    if value is MISSING:
        yield MISSING
    elif fan_out:
        if not isinstance(value, list):
            yield MISSING
            return
        if not value:
            return
        for item in value:
            yield from _walk(item, rest)
    else:
        yield from _walk(value, rest)


def _step(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        return data.get(key, MISSING)
    if isinstance(data, list) and key.isdigit() and int(key) < len(data):
        return data[int(key)]
    return MISSING


def field_names(data: Any) -> Iterator[str]:
    """Every mapping key anywhere in a JSON-like value, depth first, in order."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from field_names(value)
    elif isinstance(data, list):
        for item in data:
            yield from field_names(item)


def field_values(data: Any, name: str) -> Iterator[Any]:
    """Every value stored under the key ``name`` anywhere in a JSON-like value, depth first, in order."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == name:
                yield value
            yield from field_values(value, name)
    elif isinstance(data, list):
        for item in data:
            yield from field_values(item, name)


# ---------------------------------------------------------------- what a path can reach, checked at load time

NUMBER_TYPES = frozenset({"number", "integer"})
_STRUCTURE = (
    "type",
    "properties",
    "patternProperties",
    "additionalProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
)


@dataclass(frozen=True)
class Reach:
    """What a path reaches in declared data: a problem (nothing, ever), or the JSON types it may hold (None: open)."""

    problem: str | None = None
    types: frozenset[str] | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def segments(path: str) -> list[tuple[str, bool]]:
    """(key, fans out) of each step of a path: ``claims[].doc_id`` -> [("claims", True), ("doc_id", False)]."""
    return [(part.removesuffix("[]"), part.endswith("[]")) for part in path.split(".")]


def reach_value(data: Any, path: str, name: str) -> Reach:
    """Whether a path reaches something in a concrete JSON value (an initial store artifact called ``name``)."""
    return _reach_value(data, segments(path), name)


def reach_schema(schema: Any, path: str, name: str) -> Reach:
    """Whether a path can reach something in a value that fits a JSON Schema (declared ``properties``, ``items``).

    An object schema with declared ``properties`` admits only those keys (or ``patternProperties``, or an
    ``additionalProperties`` schema); one that declares none, a ``$ref`` or an empty schema is open: anything goes.
    """
    return _reach_schema(schema, segments(path), name)


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "object"


def _reach_value(data: Any, steps: list[tuple[str, bool]], where: str) -> Reach:
    if not steps:
        return Reach(types=frozenset({json_type(data)}))
    (key, fan_out), rest = steps[0], steps[1:]
    here = f"{where}.{key}" if where else key
    if isinstance(data, dict):
        if key not in data:
            return Reach(f"'{where}' has no field '{key}' (fields: {', '.join(map(str, data)) or 'none'})")
        value = data[key]
    elif isinstance(data, list) and key.isdigit():
        if int(key) >= len(data):
            return Reach(f"'{where}' holds {len(data)} items, so index {key} reaches nothing")
        value = data[int(key)]
    else:
        return Reach(f"'{where}' is {_a(json_type(data))}, so '{key}' reaches nothing in it")
    if not fan_out:
        return _reach_value(value, rest, here)
    if not isinstance(value, list):
        return Reach(f"'{here}' is {_a(json_type(value))}, not a list to fan out over ([])")
    if not value:
        return Reach()  # an empty list: nothing to check the rest against
    return _first_reaching([_reach_value(item, rest, f"{here}[]") for item in value])


def _reach_schema(schema: Any, steps: list[tuple[str, bool]], where: str) -> Reach:
    if schema is False:
        return Reach(f"'{where}' admits no value")
    if not isinstance(schema, dict) or "$ref" in schema:
        return Reach()  # open: cannot be checked
    branches = [b for key in ("anyOf", "oneOf", "allOf") for b in schema.get(key, [])]
    structured = any(key in schema for key in _STRUCTURE)
    if branches:
        own = (
            [_reach_schema({k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "allOf")}, steps, where)]
            if structured
            else []
        )
        return _first_reaching(own + [_reach_schema(b, steps, where) for b in branches])
    if not steps:
        return Reach(types=_schema_types(schema))
    (key, fan_out), rest = steps[0], steps[1:]
    here = f"{where}.{key}" if where else key
    types = _schema_types(schema)
    sub: Any
    if key.isdigit() and (types is None or "array" in types) and ("items" in schema or "prefixItems" in schema):
        prefix = schema.get("prefixItems", [])
        sub = prefix[int(key)] if int(key) < len(prefix) else schema.get("items", True)
    elif types is not None and "object" not in types:
        return Reach(f"'{where}' is {' or '.join(_a(t) for t in sorted(types))}, so '{key}' reaches nothing in it")
    else:
        declared = schema.get("properties")
        patterns = [s for p, s in schema.get("patternProperties", {}).items() if _matches(p, key)]
        extra = schema.get("additionalProperties")
        if isinstance(declared, dict) and key in declared:
            sub = declared[key]
        elif patterns:
            sub = patterns[0]
        elif isinstance(extra, dict) or extra is True:
            sub = extra
        elif declared is None and extra is None and not schema.get("patternProperties"):
            return Reach()  # a free-form object: whatever it holds cannot be checked
        else:
            return Reach(f"'{where}' has no field '{key}' (fields: {', '.join(declared or {}) or 'none'})")
    if not fan_out:
        return _reach_schema(sub, rest, here)
    if sub is False:
        return Reach(f"'{here}' admits no value")
    if isinstance(sub, dict) and (sub_types := _schema_types(sub)) is not None and "array" not in sub_types:
        return Reach(f"'{here}' is {' or '.join(_a(t) for t in sorted(sub_types))}, not a list to fan out over ([])")
    items = sub.get("items", True) if isinstance(sub, dict) else True
    return _reach_schema(items, rest, f"{here}[]")


def _schema_types(schema: dict[str, Any]) -> frozenset[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(str(t) for t in declared)
    if "const" in schema:
        return frozenset({json_type(schema["const"])})
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return frozenset(json_type(v) for v in schema["enum"])
    if "properties" in schema or "patternProperties" in schema or "additionalProperties" in schema:
        return frozenset({"object"})
    if "items" in schema or "prefixItems" in schema:
        return frozenset({"array"})
    return None


def _first_reaching(found: list[Reach]) -> Reach:
    """Merges alternatives: it reaches something if any alternative does; the types are the union."""
    reaching = [r for r in found if r.ok]
    if not reaching:
        return found[0] if found else Reach()
    if any(r.types is None for r in reaching):
        return Reach()
    return Reach(types=frozenset().union(*(r.types or frozenset() for r in reaching)))


def _matches(pattern: str, key: str) -> bool:
    try:
        return re.search(pattern, key) is not None
    except re.error:
        return True  # a pattern Python cannot read: leave the key open


def _a(type_name: str) -> str:
    return f"an {type_name}" if type_name[0] in "aeiou" else f"a {type_name}"
