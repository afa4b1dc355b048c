"""Boolean sub-schemas (``true``: any value, ``false``: none) work everywhere a scenario's JSON Schema is read: loading,
path checks, the prompts, the scripted policies, strict structured output and every mode; a schema that cannot
check anything (a ``$ref`` to nothing or to a URL) is refused at load in one line, and never fetched."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.models.scripted import EXAMPLE_LIMIT, POLICIES, example_args
from harness.models.strict import make_strict
from harness.scenario.json_schema import SchemaCheck
from harness.scenario.load import load_scenario
from harness.scenario.model import ActionSpec
from modes import select_modes
from modes.prompting import describe_action
from tests.helpers.bench import SCENARIOS, run_offline

BRIEF_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "topic": {"type": "string"},
        "audience": True,
        "channel": False,
        "outline": {"type": "array", "items": False},
        "tone": {"anyOf": [False, {"type": "string"}]},
    },
    "required": ["topic"],
}


def _blog(tmp_path: Path, edit: Any = None) -> Path:
    raw = yaml.safe_load((SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8"))
    raw["actions"][0]["args"] = BRIEF_ARGS
    if edit is not None:
        edit(raw)
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _spec(args: dict[str, Any]) -> ActionSpec:
    return ActionSpec(name="create_brief", description="Create the brief.", effect="write", args=args)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_scenario_with_boolean_sub_schemas_runs_every_mode_without_an_internal_error(tmp_path, policy):
    scenario = load_scenario(_blog(tmp_path))
    modes = select_modes(["all"])
    _, outcomes = run_offline(scenario, modes, policy)
    assert len(outcomes) == len(modes)
    assert [o.errors for o in outcomes if "internal" in o.errors] == []
    assert [o.errors for o in outcomes if "schema" in o.errors] == []  # the scripted arguments fit the schema


@pytest.mark.parametrize("rng", [None, random.Random(7)], ids=["fixed", "random"])
def test_example_arguments_leave_out_a_false_property_and_fit_the_schema(rng):
    args = example_args(_spec(BRIEF_ARGS), rng)
    assert "channel" not in args
    assert SchemaCheck(BRIEF_ARGS).problem(args) is None
    if rng is None:
        assert args["outline"] == [] and isinstance(args["audience"], str)


def test_example_arguments_stay_small_and_whole_whatever_the_bounds_say():
    huge = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 10**9},
            "items": {"type": "array", "minItems": 2**40, "items": {"type": "integer", "minimum": 0.5}},
            "none": {"enum": []},
        },
    }
    for rng in (None, random.Random(1)):
        args = example_args(_spec(huge), rng)
        assert len(args["text"]) == EXAMPLE_LIMIT and len(args["items"]) == EXAMPLE_LIMIT
        assert all(isinstance(n, int) and n >= 1 for n in args["items"])
        assert args.get("none") is None


def test_the_prompt_names_a_true_property_any_and_a_false_one_not_allowed():
    line = describe_action(_spec(BRIEF_ARGS))
    assert "audience: any" in line and "channel: not allowed" in line and "topic: string" in line


def test_strict_output_refuses_a_boolean_sub_schema_so_the_request_goes_non_strict():
    _, problems = make_strict(BRIEF_ARGS)
    assert any("properties.audience" in p and "'true'" in p for p in problems), problems
    assert any("properties.channel" in p and "'false'" in p for p in problems), problems
    assert any("outline.items" in p and "'false'" in p for p in problems), problems


def test_a_path_into_a_property_whose_schema_is_false_is_refused_at_load(tmp_path):
    def requires_channel(raw: dict[str, Any]) -> None:
        raw["actions"][2]["requires"] = ["brief.channel"]

    path = _blog(tmp_path, requires_channel)
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert str(refused.value) == (
        f"{path}: actions[2].requires[0]: 'brief.channel' reaches nothing the scenario declares: "
        "in what create_brief writes, 'brief.channel' admits no value"
    )


def test_a_path_into_a_true_property_is_open(tmp_path):
    def requires_audience(raw: dict[str, Any]) -> None:
        raw["actions"][2]["requires"] = ["brief.audience.name"]

    assert load_scenario(_blog(tmp_path, requires_audience)).action_map["write_draft"].required_paths == (
        "brief.audience.name",
    )


@pytest.mark.parametrize(
    ("ref", "word"),
    [
        ("string", "'string'"),
        ("#/$defs/missing", "'/$defs/missing' does not exist"),
        ("http://127.0.0.1:9/topic.json", "Retrieval is disabled"),
        ("file:///etc/passwd", "Retrieval is disabled"),
    ],
)
def test_a_schema_whose_ref_resolves_to_nothing_here_is_refused_at_load_in_one_line(tmp_path, ref, word):
    def point_topic(raw: dict[str, Any]) -> None:
        raw["actions"][0]["args"]["properties"]["topic"] = {"$ref": ref}

    path = _blog(tmp_path, point_topic)
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: actions[0].args: not a valid JSON Schema: cannot be used to check a value")
    assert word in message and "\n" not in message
