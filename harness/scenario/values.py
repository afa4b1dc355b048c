"""Value rules: what a stored artifact or an action's arguments must hold, and how a rule is evaluated.

A rule tests the values a path reaches against an operand: a constant, a path into the store (``{store:
order.amount}``), or what earlier calls of an action held (``{action: archive_partition, arg: partition}``,
``{action: read_order, result: order.amount}``). The oracle reads them in required work; the gateway enforces an
action's own ``arg_rules``. A rule that cannot be evaluated (nothing at a path, no earlier call, a value that is not
a number where one is compared) does not hold: it fails closed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.scenario.paths import MISSING, PATH_PATTERN, collect, json_type

COMPARED: dict[str, Callable[[float, float], bool]] = {
    "greater_than": operator.gt,
    "at_least": operator.ge,
    "less_than": operator.lt,
    "at_most": operator.le,
}
TESTS = ("equals", *COMPARED, "covers", "excludes")  # every value test, in the order they are checked


class _Strict(BaseModel):
    """A scenario record (as in ``harness.scenario.model``): unknown keys are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Operand(_Strict):
    """What a value is compared with, in one of four shapes: ``{value: CONSTANT}`` (written bare unless it is a
    mapping: ``equals: 120.5``), ``{store: PATH}`` (the store as it stands when the rule is checked: when the run
    stops for a required artifact, when the call is made for an action's arguments), ``{action: NAME, arg: PATH}`` or
    ``{action: NAME, result: PATH}`` (every earlier call of that task action that took effect, committed or read: the
    values its arguments, or its result as the agent saw it, held there)."""

    value: Any = Field(None, description="A constant; needed only for a mapping, anything else may be written bare.")
    store: str | None = Field(None, pattern=PATH_PATTERN, description="Path into the store, e.g. order.amount.")
    action: str | None = Field(None, description="The task action whose earlier calls count.")
    arg: str | None = Field(None, pattern=PATH_PATTERN, description="With action: path into its arguments.")
    result: str | None = Field(None, pattern=PATH_PATTERN, description="With action: path into its result.")

    @model_validator(mode="after")
    def _one_shape(self) -> Operand:
        if self.model_fields_set not in _SHAPES:
            raise ValueError(
                "give {value: CONSTANT}, {store: PATH}, {action: NAME, arg: PATH} or {action: NAME, result: PATH}"
            )
        return self

    @property
    def kind(self) -> str:
        """constant, store or call."""
        return "constant" if "value" in self.model_fields_set else "store" if self.store is not None else "call"

    @property
    def path(self) -> str:
        """The path it reads: into the store, or into the earlier calls' arguments or result."""
        return self.store or self.arg or self.result or ""


_SHAPES = ({"value"}, {"store"}, {"action", "arg"}, {"action", "result"})


def _with_bare_constant(kind: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """The JSON Schema of an operand: a reference, or the constant written bare (``equals: 120.5``)."""

    def extend(schema: dict[str, Any]) -> None:
        schema.setdefault("anyOf", []).insert(0, kind)

    return extend


_ANY = {"not": {"type": "object"}, "description": "a constant written bare (a mapping goes under value:)"}
_NUMBER = {"type": "number", "description": "a number"}
_LIST = {"type": "array", "description": "a list of constants"}


class ValueTestFields(_Strict):
    """The tests a value may be given; every test given must hold. Each operand is a constant written bare, a store
    path (``{store: order.amount}``) or what earlier calls of an action held (``{action: NAME, arg: PATH}`` or
    ``{action: NAME, result: PATH}``)."""

    equals: Operand | None = Field(
        None,
        description="Equal to the constant, to the store's value, or to the value one of the earlier calls held.",
        json_schema_extra=_with_bare_constant(_ANY),
    )
    greater_than: Operand | None = Field(
        None,
        description="A number above this bound (a reference: the latest earlier call's value).",
        json_schema_extra=_with_bare_constant(_NUMBER),
    )
    at_least: Operand | None = Field(
        None, description="A number at or above this bound.", json_schema_extra=_with_bare_constant(_NUMBER)
    )
    less_than: Operand | None = Field(
        None, description="A number under this bound.", json_schema_extra=_with_bare_constant(_NUMBER)
    )
    at_most: Operand | None = Field(
        None, description="A number at or under this bound.", json_schema_extra=_with_bare_constant(_NUMBER)
    )
    covers: Operand | None = Field(
        None,
        description="A list that holds every item of this list (a reference: every value the store path or the "
        "earlier calls held, a list's items one by one).",
        json_schema_extra=_with_bare_constant(_LIST),
    )
    excludes: Operand | None = Field(
        None,
        description="Holds none of these items: a list none of whose items is one of them, or a single value that "
        "is none of them (a reference: every value the store path or the earlier calls held). An empty list holds.",
        json_schema_extra=_with_bare_constant(_LIST),
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_constants(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        wrapped = dict(value)
        for name in TESTS:
            if name in wrapped and not isinstance(wrapped[name], dict):  # a bare constant
                wrapped[name] = {"value": wrapped[name]}
        return wrapped

    @model_validator(mode="after")
    def _constants_fit(self) -> ValueTestFields:
        for name, operand in self.tests():
            if operand.kind != "constant":
                continue
            if name in COMPARED and not _finite_number(operand.value):
                raise ValueError(f"{name}: the bound must be a finite number, not {operand.value!r}")
            if name in ("covers", "excludes") and not isinstance(operand.value, list):
                raise ValueError(f"{name}: give a list of the items, not {operand.value!r}")
        return self

    def tests(self) -> list[tuple[str, Operand]]:
        """(test, operand) of every test given, in a fixed order."""
        return [(name, getattr(self, name)) for name in TESTS if getattr(self, name) is not None]


class ValueTests(ValueTestFields):
    """What a value must hold: at least one test."""

    @model_validator(mode="after")
    def _has_a_test(self) -> ValueTests:
        if not self.tests():
            raise ValueError(f"give at least one test ({', '.join(TESTS)})")
        return self


class RequiredArtifact(ValueTestFields):
    """A path into the store that must hold a value when the run stops, and, given tests, what the value must be."""

    path: str = Field(pattern=PATH_PATTERN, description="Path into the store, e.g. refund or refund.amount.")

    @model_validator(mode="before")
    @classmethod
    def _from_path(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        as_object = handler.resolve_ref_schema(handler(core))
        described = {key: as_object.pop(key) for key in ("title", "description") if key in as_object}
        return {**described, "anyOf": [{"type": "string", "description": "a path into the store"}, dict(as_object)]}


class RequiredAction(_Strict):
    """An action that must have taken place when the run stops, and, given argument rules, with what arguments: one
    call that took place must satisfy every rule."""

    action: str = Field(description="The action (task or wait).")
    arg_rules: dict[str, ValueTests] = Field(
        default_factory=dict, description="Path into its arguments -> what the value there must be."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"action": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        as_object = handler.resolve_ref_schema(handler(core))
        described = {key: as_object.pop(key) for key in ("title", "description") if key in as_object}
        return {**described, "anyOf": [{"type": "string", "description": "an action name"}, dict(as_object)]}


class Precondition(ValueTestFields):
    """What must be true before an action: a store path that holds a value (and, given tests, the right one), or an
    action that has taken place earlier in the run (``{action: NAME}``: an order rule the gateway enforces)."""

    path: str | None = Field(None, pattern=PATH_PATTERN, description="Path into the store that must hold a value.")
    action: str | None = Field(
        None, description="An action that must have taken place (committed, read or wait_recorded) before this one."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_path(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _path_or_action(self) -> Precondition:
        if (self.path is None) == (self.action is None):
            raise ValueError("give a store path (a string, or {path: P, tests...}) or {action: NAME}")
        if self.action is not None and self.tests():
            raise ValueError("value tests go with a store path, not with {action: NAME}")
        return self

    def describe(self) -> str:
        """How a message names it: the path, or the action that must come first."""
        return self.path if self.path is not None else f"a call of {self.action}"

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        as_object = handler.resolve_ref_schema(handler(core))
        described = {key: as_object.pop(key) for key in ("title", "description") if key in as_object}
        return {**described, "anyOf": [{"type": "string", "description": "a path into the store"}, dict(as_object)]}


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Seen:
    """What a rule may read: the store as it stands for the rule, and the earlier calls that took effect, in order
    (action, arguments, result)."""

    store: Mapping[str, Any]
    calls: Sequence[tuple[str, Any, Any]] = ()


@dataclass(frozen=True)
class ValueProblem:
    """Why a value rule does not hold: the path tested, the value found there (None: nothing) and the reason."""

    path: str
    value: Any
    reason: str


def value_problem(tests: ValueTestFields, data: Any, path: str, seen: Seen) -> ValueProblem | None:
    """The first way the values ``path`` reaches in ``data`` break ``tests``, or None when every test holds.

    A path that fans out (``[]``) is tested value by value, except ``covers``, which reads the values together.
    """
    found = list(collect(data, path))
    if not found or any(v is MISSING for v in found):
        return ValueProblem(path, None, f"{path} holds nothing")
    fans_out = "[]" in path
    for name, operand in tests.tests():
        expected = resolve(operand, seen)
        if isinstance(expected, str):
            return ValueProblem(path, found[0], f"{path}: {name} cannot be evaluated: {expected}")
        if name == "excludes":
            have = found if fans_out else _items(found)
            held = [item for item in have if any(_same(item, e) for e in _items(expected))]
            if held:
                shown = found if fans_out else found[0]
                return ValueProblem(path, shown, f"{path} = {short(shown)} holds {short(held)}, which it must not")
            continue
        if name == "covers":
            have = found if fans_out else _items(found)
            lacking = [item for item in _items(expected) if not any(_same(item, h) for h in have)]
            if lacking:
                shown = found if fans_out else found[0]
                return ValueProblem(path, shown, f"{path} = {short(shown)} does not cover {short(lacking)}")
            continue
        for value in found:
            if name == "equals":
                if not any(_same(value, e) for e in expected):
                    return ValueProblem(path, value, f"{path} = {short(value)}, not {describe(operand, expected)}")
                continue
            bound = expected[-1]
            if not _number(value):
                return ValueProblem(path, value, f"{path} = {short(value)} is not a number")
            if not _number(bound):
                why = f"{describe(operand, [bound])} is not a number"
                return ValueProblem(path, value, f"{path}: {name} cannot be evaluated: {why}")
            if not COMPARED[name](value, bound):
                words = name.replace("_", " ")
                return ValueProblem(path, value, f"{path} = {short(value)}, not {words} {describe(operand, [bound])}")
    return None


def resolve(operand: Operand, seen: Seen) -> list[Any] | str:
    """The values an operand stands for, in order; a string says why there are none (the rule cannot be evaluated)."""
    if operand.kind == "constant":
        return [operand.value]
    if operand.kind == "store":
        values = list(collect(seen.store, operand.path))
        if not values or any(v is MISSING for v in values):
            return f"the store's {operand.path} holds nothing"
        return values
    found: list[Any] = []
    for action, args, result in seen.calls:
        if action == operand.action:
            data = args if operand.arg is not None else result
            found.extend(v for v in collect(data, operand.path) if v is not MISSING)
    side = "argument" if operand.arg is not None else "result"
    return found or f"no earlier call of {operand.action} held a value at {side} {operand.path}"


def describe(operand: Operand, values: list[Any]) -> str:
    """The operand in words, with the value it stood for: ``the store's order.amount (120.5)``."""
    if operand.kind == "constant":
        return short(operand.value)
    shown = short(values[0] if len(values) == 1 else values)
    if operand.kind == "store":
        return f"the store's {operand.path} ({shown})"
    side = "argument" if operand.arg is not None else "result"
    return f"{operand.action}'s earlier {side} {operand.path} ({shown})"


def _items(values: list[Any]) -> list[Any]:
    """The items the values stand for: a list's items one by one, anything else itself."""
    return [item for value in values for item in (value if isinstance(value, list) else [value])]


def _same(a: Any, b: Any) -> bool:
    """JSON equality: a boolean equals only a boolean (Python's ``True == 1`` does not count)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if json_type(a) in ("integer", "number") and json_type(b) in ("integer", "number"):
        return bool(a == b)
    return json_type(a) == json_type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite_number(value: Any) -> bool:
    return _number(value) and math.isfinite(value)


def short(value: Any) -> str:
    """A value as a violation or a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
