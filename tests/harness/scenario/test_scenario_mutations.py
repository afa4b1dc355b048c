"""A thousand random mutations of the shipped scenarios: each file either loads and then runs under every mode with
the scripted policies without one ``internal`` error, or is refused at load with one line naming the file.

A mutation deletes or renames a key, drops or duplicates a list item, swaps a value for another type, a boolean,
null, a huge number, an odd string, deep nesting, another value of the same file, or (inside a JSON Schema)
a boolean sub-schema or a bound no value can meet. About a quarter of them still load; each of those runs every mode
once, in memory, under one scripted policy and gateway policy drawn with it. Examples are derandomized and no example
database is kept, so CI sees the same thousand files every time (about half a minute on one core); the quick suite
draws 200, the same 200 every time (tests/helpers/sweeps.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import UserInputError
from harness.models.scripted import POLICIES
from harness.scenario.load import load_scenario
from modes import select_modes
from tests.helpers.bench import SCENARIOS, run_offline
from tests.helpers.sweeps import scaled

FILES = sorted(p for p in SCENARIOS.glob("*.yaml") if p.name != "sanity.yaml")
RAW = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in FILES}
MODES = select_modes(["all"])
SCHEMA_KEYS = frozenset({"args", "params", "output"})  # where a scenario holds JSON Schemas


def _deep(levels: int, leaf: Any) -> Any:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"x": value}
    return value


ODD_VALUES: list[Any] = [
    True,
    False,
    None,
    0,
    -1,
    2**63,
    10**30,
    -(10**30),
    1e308,
    float("inf"),
    float("nan"),
    0.5,
    "",
    " ",
    "x" * 5000,
    "\x00",
    "\u202e\u00fc\u20ac\U0001d11e",
    "$ref",
    "a.b[].c",
    "all",
    "finished",
    "plan_review",
    [],
    {},
    [None],
    {"type": "object"},
    {"type": "object", "properties": {"x": True}},
    {"type": "array", "items": False},
    _deep(40, "deep"),
    _deep(300, 1),
]

Place = tuple[Any, Any, tuple[Any, ...]]  # (container, key or index, the path from the top)


def _places(node: Any, path: tuple[Any, ...] = ()) -> list[Place]:
    """Every value's place in the raw file, depth first."""
    found: list[Place] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found.append((node, key, (*path, key)))
        found.extend(_places(value, (*path, key)))
    return found


def _in_schema(path: tuple[Any, ...]) -> bool:
    return any(key in SCHEMA_KEYS for key in path[:-1])


OPERATIONS = ["delete", "replace", "retype", "sibling", "duplicate", "rename"]


def _retyped(value: Any) -> Any:
    """The same content as another JSON type."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): item for i, item in enumerate(value)}
    if isinstance(value, str):
        return len(value)
    return str(value)


def _nudged(value: Any, strings: list[str], draw: st.DrawFn) -> Any:
    """A value of the same type that may still load: another number, another string of the file, one list item
    fewer or twice, one key fewer."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return draw(st.sampled_from([0, 1, -1, 3, 0.5, value * 1000, 10**9, 2**62, 10**30, -(2**63)]))
    if isinstance(value, str):
        return draw(st.sampled_from(strings))
    if isinstance(value, list) and value:
        index = draw(st.integers(0, len(value) - 1))
        return value[:index] + value[index + 1 :] if draw(st.booleans()) else [*value, copy.deepcopy(value[index])]
    if isinstance(value, dict) and value:
        dropped = draw(st.sampled_from(sorted(value)))
        return {k: v for k, v in value.items() if k != dropped}
    return draw(st.sampled_from(ODD_VALUES))


def _mutate_schema(place: Place, draw: st.DrawFn) -> str:
    """A sub-schema becomes true or false, gains a boolean one, or a bound no example can meet; says which."""
    container, key, _ = place
    keyword = draw(st.sampled_from(["", "properties", "items", "additionalProperties", "anyOf", "bound"]))
    flag = draw(st.booleans())
    if not keyword:
        container[key] = flag
    elif keyword == "properties":
        container[key].setdefault("properties", {})["channel"] = flag
    elif keyword == "anyOf":
        container[key]["anyOf"] = [flag, {"type": "string"}]
    elif keyword == "bound":
        keyword = draw(st.sampled_from(["minLength", "minItems", "minimum"]))
        container[key][keyword] = draw(st.sampled_from([10**9, 2**62, 2.5] if keyword == "minimum" else [10**9, 2**62]))
    else:
        container[key][keyword] = flag
    return keyword


def _mutate(operation: str, place: Place, places: list[Place], draw: st.DrawFn) -> None:
    container, key, _ = place
    value = container[key]
    if operation == "delete":
        del container[key]
    elif operation == "nudge":
        strings = sorted({v for c, k, _ in places if isinstance(v := c[k], str)})
        container[key] = _nudged(value, strings, draw)
    elif operation == "retype":
        container[key] = _retyped(value)
    elif operation == "sibling":  # another value of the same file: a plausible name in the wrong place
        other, other_key, _ = draw(st.sampled_from(places))
        container[key] = copy.deepcopy(other[other_key])
    elif operation == "duplicate" and isinstance(container, list):
        container.insert(key, copy.deepcopy(value))
    elif operation == "rename" and isinstance(container, dict):
        container[draw(st.sampled_from([f"{key}_x", "", "type", "$ref", "properties"]))] = container.pop(key)
    else:
        container[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))


@st.composite
def mutated_files(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[str]]:
    """(scenario name, its raw data with one to three mutations, what was done)."""
    name = draw(st.sampled_from(sorted(RAW)))
    raw = copy.deepcopy(RAW[name])
    done: list[str] = []
    for _ in range(1 + draw(st.integers(0, 9)) // 7):  # mostly one mutation, so that more files still load
        places = _places(raw)
        schemas = [p for p in places if _in_schema(p[2]) and isinstance(p[0][p[1]], dict)]
        operation = draw(st.sampled_from([*OPERATIONS, "nudge", "nudge", "sub_schema", "sub_schema"]))
        if operation == "sub_schema" and schemas:
            place = draw(st.sampled_from(schemas))
            done.append(f"{operation} {'.'.join(map(str, place[2]))} {_mutate_schema(place, draw)}")
        else:
            place = draw(st.sampled_from(places))
            _mutate(operation, place, places, draw)
            done.append(f"{operation} {'.'.join(map(str, place[2]))}")
    return name, raw, done


@pytest.mark.slow
@settings(
    max_examples=scaled(1000, 200),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated=mutated_files(), policy=st.sampled_from(sorted(POLICIES)), gateway=st.sampled_from(["enforce", "audit"]))
def test_a_mutated_scenario_runs_every_mode_without_internal_errors_or_is_refused_in_one_line(
    tmp_path_factory, mutated, policy, gateway
):
    name, raw, done = mutated
    path: Path = tmp_path_factory.mktemp("mutated") / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    try:
        scenario = load_scenario(path)
    except UserInputError as refused:  # ScenarioError included
        message = str(refused)
        assert "\n" not in message and path.name in message, (done, message)
        return
    events, outcomes = run_offline(scenario, MODES, policy, gateway=gateway)
    internal = [(e.mode, e.error.message) for e in events if e.error is not None and e.error.kind == "internal"]
    assert len(outcomes) == len(MODES)
    assert not internal and not any("internal" in o.errors for o in outcomes), (done, policy, internal[:1])
