"""The scenario format: the shipped JSON Schema matches the models, every field is documented, and the
new pieces of the format (paths, thresholds, conditional gates, faults, reference steps) mean what they say."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from harness.core.gateway import Gateway
from harness.core.store import VirtualStore
from harness.models.scripted import example_args
from harness.scenario.load import load_scenario, scenario_files, scenario_schema_text
from harness.scenario.model import Condition, Fault, ReferenceStep
from harness.scenario.paths import MISSING, collect, lookup
from tests.helpers.bench import SCENARIOS

SCHEMA_FILE = SCENARIOS / "schema" / "scenario.schema.json"


def test_shipped_schema_is_in_sync_with_the_models():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == scenario_schema_text(), (
        "regenerate with: .venv/bin/bench schema > scenarios/schema/scenario.schema.json"
    )


def _properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = [("Scenario." + name, prop) for name, prop in schema["properties"].items()]
    for model, definition in schema["$defs"].items():
        for branch in definition.get("anyOf", [definition]):
            found += [(f"{model}.{name}", prop) for name, prop in branch.get("properties", {}).items()]
    return found


def test_every_field_is_documented():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    undocumented = [name for name, prop in _properties(schema) if not prop.get("description")]
    assert undocumented == []
    assert all(definition.get("description") for definition in schema["$defs"].values())


@pytest.mark.parametrize("path", scenario_files(SCENARIOS), ids=lambda p: p.stem)
def test_shipped_scenarios_validate_against_the_json_schema(path):
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_the_json_schema_rejects_what_the_loader_rejects():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    raw = yaml.safe_load((SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8"))
    raw["actions"][0]["efect"] = "write"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(raw)


def test_the_schema_folder_is_not_loaded_as_scenarios():
    assert all(path.parent == SCENARIOS for path in scenario_files(SCENARIOS))


# ---------------------------------------------------------------- paths and conditions

DATA = {"order": {"amount": 186000, "lines": [{"sku": "a"}, {"sku": "b"}]}, "flag": None, "ok": True}


def test_paths():
    assert lookup(DATA, "order.amount") == 186000
    assert lookup(DATA, "order.lines.1.sku") == "b"
    assert lookup(DATA, "flag") is None
    assert lookup(DATA, "order.currency") is MISSING and lookup(DATA, "nothing.at.all") is MISSING
    assert list(collect(DATA, "order.lines[].sku")) == ["a", "b"]
    assert list(collect({"claims": [{"id": 1}, {}]}, "claims[].id")) == [1, MISSING]
    assert list(collect({"claims": "not a list"}, "claims[].id")) == [MISSING]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"greater_than": {"order.amount": 100000}}, True),
        ({"greater_than": {"order.amount": 186000}}, False),
        ({"at_least": {"order.amount": 186000}}, True),
        ({"less_than": {"order.amount": 100000}}, False),
        ({"at_most": {"order.amount": 186000}}, True),
        ({"greater_than": {"order.missing": 0}}, False),  # nothing there: no comparison holds
        ({"greater_than": {"ok": 0}}, False),  # a boolean is not a number
        ({"exists": "order.lines.0"}, True),
        ({"exists": "flag"}, True),  # a stored None is still a value
        ({"missing": "order.currency"}, True),
        ({"equals": {"order.lines.0.sku": "a"}}, True),
        (
            {"equals": {"order.lines.0.sku": "a"}, "greater_than": {"order.amount": 200000}},
            False,
        ),  # every test must hold
    ],
)
def test_conditions(condition, expected):
    assert Condition.model_validate(condition).holds(DATA) is expected


@pytest.mark.parametrize(
    ("condition", "value", "why"),
    [
        ({"greater_than": {"order.missing": 0}}, None, "order.missing reaches nothing"),
        ({"greater_than": {"ok": 0}}, None, "ok holds True, not a number"),
        ({"equals": {"order.currency": "EUR"}}, None, "order.currency reaches nothing"),
        ({"equals": {"flag": None}}, True, None),
        ({"exists": "order.currency"}, False, "exists order.currency"),  # exists and missing always have an answer
        (
            {"greater_than": {"order.missing": 0}, "less_than": {"order.amount": 5}},
            False,
            "order.amount = 186000, not less than 5.0",
        ),
        (
            {"greater_than": {"order.missing": 0}, "less_than": {"order.amount": 500000}},
            None,
            "order.missing reaches nothing",
        ),
    ],
)
def test_a_condition_that_cannot_be_evaluated_says_why(condition, value, why):
    """Unknown unless a test is certainly false; holds() counts unknown as not holding."""
    truth = Condition.model_validate(condition).evaluate(DATA)
    assert (truth.value, truth.why) == (value, why)
    assert Condition.model_validate(condition).holds(DATA) is (value is True)


def test_an_empty_condition_is_refused():
    with pytest.raises(ValueError, match="at least one test"):
        Condition.model_validate({})


def test_faults():
    flaky = Fault(fail_first=2, error="glare")
    assert [flaky.fails(call, {}) for call in (1, 2, 3)] == [True, True, False]
    broken = Fault(until="fix", error="timeout")
    assert broken.fails(5, {}) and not broken.fails(1, {"fix": {}})
    with pytest.raises(ValueError, match="fail_first, until"):
        Fault(error="never")


def test_reference_steps_take_a_name_or_an_object():
    assert ReferenceStep.model_validate("build") == ReferenceStep(action="build")
    assert ReferenceStep.model_validate({"action": "build", "args": {"target": "x"}}).args == {"target": "x"}


# ---------------------------------------------------------------- the gateway with the new pieces


def test_conditional_gate_follows_the_store():
    scenario = load_scenario(SCENARIOS / "procurement_approval.yaml")
    store = VirtualStore.for_scenario(scenario)
    assert not store.approved("legal_countersign")  # 186,000 is over the threshold
    store.artifacts["order"]["amount"] = 99000
    assert store.approved("legal_countersign")
    store.artifacts["order"]["amount"] = 150000
    store.approvals.add("legal_countersign")
    assert store.approved("legal_countersign")


def test_tests_fail_until_the_fix_and_a_fix_sends_the_run_back_to_build():
    scenario = load_scenario(SCENARIOS / "release_pipeline.yaml")
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario))
    everything = [a.name for a in scenario.actions]

    def act(name: str, args: Any = None) -> str:
        spec = scenario.action_map[name]
        record = gateway.execute(name, args if args is not None else example_args(spec), allowed=everything, step=0)
        return record.status if record.status != "blocked" else f"blocked:{record.reason}"

    assert act("run_tests") == "blocked:precondition"  # no build yet
    assert act("build") == "committed"
    assert [act("run_tests") for _ in range(3)] == ["failed"] * 3  # retrying does not fix a broken config
    assert act("record_diagnosis", {"cause": "wrong host"}) == "committed"
    assert act("apply_fix", {"file": "config/test-db.yaml", "change": "host: db-test"}) == "committed"
    assert act("run_tests") == "blocked:precondition"  # the fix invalidated the build
    assert act("build") == "committed" and act("run_tests") == "committed" and act("security_scan") == "committed"
    assert act("deploy") == "blocked:gate_closed"
