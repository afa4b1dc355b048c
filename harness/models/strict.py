"""The strict subset of JSON Schema that OpenAI's strict Structured Outputs accept, made from any response schema.

Strict mode wants ``additionalProperties: false`` on every object, every property listed in
``required`` (an optional one becomes nullable and the model answers ``null`` for "absent"), a
bounded depth, and none of the keywords it does not support. Keywords that only narrow a value
(``minLength``, ``uniqueItems``, ``default`` ...) are moved into the description, where the model
still reads them; the gateway checks the real constraint later anyway. What cannot be expressed
(a free-form map, a value of any type, ``allOf``, ``not``, ``if``, ``patternProperties`` ...) is
reported, and such a request goes non-strict instead (``LiveModel`` does this).

A strict reply is read back with ``drop_nulls``: a ``null`` the strict schema asked for where the
original schema had an optional property is taken as "absent", so modes see what they always saw.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator

MAX_DEPTH = 10  # OpenAI: up to 10 levels of nesting
MAX_PROPERTIES = 5000  # OpenAI: up to 5000 object properties in all
# Narrowing keywords strict mode does not take; their meaning is kept as text in the description.
TO_DESCRIPTION = (
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
    "examples",
    "contentEncoding",
    "contentMediaType",
    "minContains",
    "maxContains",
)
# Keywords whose meaning strict mode cannot express at all.
INEXPRESSIBLE = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "prefixItems",
    "additionalItems",
)
SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}


def make_strict(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The strict form of ``schema`` and the problems that keep it from being strict (empty: it is strict)."""
    problems: list[str] = []
    counter = [0]
    result = _strict(copy.deepcopy(schema), "", problems, depth=1, counter=counter)
    if counter[0] > MAX_PROPERTIES:
        problems.append(f"(top level): {counter[0]} properties, more than strict mode's {MAX_PROPERTIES}")
    return result, problems


def _strict(node: Any, where: str, problems: list[str], *, depth: int, counter: list[int]) -> Any:
    here = where or "(top level)"
    if not isinstance(node, dict):
        if node is True:
            problems.append(f"{here}: a schema of 'true' accepts any value; strict mode needs a type")
        elif node is False:
            problems.append(f"{here}: a schema of 'false' accepts no value; strict mode cannot say so")
        return node
    if depth > MAX_DEPTH:
        problems.append(f"{here}: nested deeper than strict mode's {MAX_DEPTH} levels")
    for keyword in INEXPRESSIBLE:
        if keyword in node:
            problems.append(f"{here}: '{keyword}' cannot be expressed in strict mode")
    moved = {k: node.pop(k) for k in TO_DESCRIPTION if k in node}
    if moved:
        note = "; ".join(f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in moved.items())
        node["description"] = (
            node.get("description", "").rstrip(". ") + ". " if node.get("description") else ""
        ) + f"Constraints: {note}"
    if "oneOf" in node:  # the branches of our schemas never overlap, so anyOf means the same here
        node["anyOf"] = node.pop("oneOf")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            node[key] = {
                name: _strict(sub, f"{where}.{key}.{name}".lstrip("."), problems, depth=depth, counter=counter)
                for name, sub in node[key].items()
            }
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [
            _strict(sub, f"{where}.anyOf[{i}]".lstrip("."), problems, depth=depth, counter=counter)
            for i, sub in enumerate(node["anyOf"])
        ]
    kinds = _types(node)
    if not kinds and not any(k in node for k in ("anyOf", "enum", "$ref")):
        problems.append(f"{here}: no type (any value); strict mode needs a type")
    if "object" in kinds or "properties" in node:
        _strict_object(node, where, problems, depth=depth, counter=counter)
    if "array" in kinds or "items" in node:
        items = node.get("items")
        if items is None or items is True:
            problems.append(f"{where}.items".lstrip(".") + ": array items of any type; strict mode needs a type")
        else:
            node["items"] = _strict(items, f"{where}.items".lstrip("."), problems, depth=depth + 1, counter=counter)
    return node


def _strict_object(node: dict[str, Any], where: str, problems: list[str], *, depth: int, counter: list[int]) -> None:
    extra = node.get("additionalProperties", False)
    if extra is not False:
        problems.append(
            f"{where or '(top level)'}: additionalProperties {json.dumps(extra)[:60]} (a free-form map) "
            "cannot be strict"
        )
    properties = node.get("properties") or {}
    required = set(node.get("required") or [])
    strict_props = {}
    for name, sub in properties.items():
        counter[0] += 1
        path = f"{where}.properties.{name}".lstrip(".")
        converted = _strict(sub, path, problems, depth=depth + 1, counter=counter)
        strict_props[name] = converted if name in required else nullable(converted)
    node["properties"] = strict_props
    node["required"] = list(strict_props)
    node["additionalProperties"] = False


def nullable(schema: Any) -> Any:
    """``schema`` that also accepts ``null``: how strict mode spells an optional property."""
    if not isinstance(schema, dict):
        return schema
    if _accepts_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    result = dict(schema)
    if "enum" in result:
        result["enum"] = [*result["enum"], None]
    kind = result.get("type")
    if isinstance(kind, str):
        result["type"] = [kind, "null"]
    elif isinstance(kind, list):
        result["type"] = [*kind, "null"]
    return result


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _accepts_null(schema: dict[str, Any]) -> bool:
    if "null" in _types(schema) or None in (schema.get("enum") or []):
        return True
    return any(isinstance(b, dict) and _accepts_null(b) for b in schema.get("anyOf") or [])


def drop_nulls(value: Any, schema: Any) -> Any:
    """``value`` with the ``null`` of every optional property that ``schema`` (the original) does not allow removed."""
    if not isinstance(schema, dict):
        return value
    if isinstance(schema.get("anyOf"), list) or isinstance(schema.get("oneOf"), list):
        branches: list[Any] = schema.get("anyOf") or schema.get("oneOf") or []
        for branch in branches:
            candidate = drop_nulls(value, branch)
            if isinstance(branch, dict) and _valid(candidate, branch):
                return candidate
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        properties, required = schema["properties"], set(schema.get("required") or [])
        result = {}
        for key, item in value.items():
            sub = properties.get(key)
            if item is None and key not in required and isinstance(sub, dict) and not _accepts_null(sub):
                continue
            result[key] = drop_nulls(item, sub) if sub is not None else item
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [drop_nulls(item, schema["items"]) for item in value]
    return value


def _valid(value: Any, schema: dict[str, Any]) -> bool:
    try:
        return Draft202012Validator(schema).is_valid(value)
    except Exception:  # a schema jsonschema cannot use is no match
        return False


def argument_problems(actions: Iterable[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """One line per scenario argument that cannot be made strict: (scenario, action, args schema) in, problems out."""
    lines = []
    for scenario, action, args in actions:
        _, problems = make_strict(args)
        for problem in problems:
            lines.append(
                f"scenario {scenario}, action {action}: args {problem.replace('(top level)', '').lstrip(': ')}"
                if problem.startswith("(top level)")
                else f"scenario {scenario}, action {action}: args.{problem}"
            )
    return lines


def scenario_problems(scenarios: Iterable[Any]) -> list[str]:
    """``argument_problems`` for every action of the given scenarios (``harness.scenario.model.Scenario``)."""
    return argument_problems((s.id, a.name, a.args) for s in scenarios for a in s.actions)
