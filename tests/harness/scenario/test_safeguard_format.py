"""The safeguard fields of the scenario format fail closed at load time, one line naming the file and the field: a
cache on an action with a side effect, terminate beside another way out, a step timeout where nothing runs, a
scanner naming an action that is no task, a cache key that is no argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.scenario.load import load_scenario
from tests.helpers.bench import SCENARIOS

STORY = SCENARIOS / "claim_desk_safeguards.yaml"


def edited(tmp_path: Path, edit: Any) -> Path:
    raw = yaml.safe_load(STORY.read_text(encoding="utf-8"))
    edit(raw)
    path = tmp_path / STORY.name
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


def action(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in raw["actions"] if a["name"] == name)


def node(raw: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in raw["workflow"]["nodes"] if n["id"] == node_id)


CASES = {
    "cache on a write": (
        lambda raw: action(raw, "send_status").update(cache={"ttl_ms": 10}),
        "actions[4].cache",
        "only a read-only action is cached",
    ),
    "cache key not an argument": (
        lambda raw: action(raw, "get_user_policy")["cache"].update(key=["account"]),
        "actions[0].cache.key[0]",
        "'account' is not an argument of 'get_user_policy'",
    ),
    "terminate with fallback": (
        lambda raw: node(raw, "policy")["on_failure"].update(fallback="plate"),
        "workflow.nodes[0].on_failure",
        "terminate ends the run: it cannot go with fallback",
    ),
    "timeout on an end node": (
        lambda raw: node(raw, "done").update(timeout_ms=10),
        "workflow.nodes[6].timeout_ms",
        "'timeout_ms' means nothing on a 'end' node",
    ),
    "scanner names no task": (
        lambda raw: raw["scanner"].update(actions=["finish"]),
        "scanner.actions[0]",
        "unknown task action 'finish'",
    ),
    "scanner action unknown": (
        lambda raw: raw["scanner"].update(action="quarantine"),
        "scanner.action",
        "'block' or 'redact'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_safeguard_field_is_refused_naming_it(case, tmp_path):
    edit, field, words = CASES[case]
    with pytest.raises(ScenarioError) as refused:
        load_scenario(edited(tmp_path, edit))
    message = str(refused.value)
    assert "\n" not in message and field in message and words in message


def test_the_library_story_loads_with_every_safeguard():
    s = load_scenario(STORY)
    assert s.scanner is not None and s.action_map["get_user_policy"].cache is not None
    assert s.node_map["plate"].timeout_ms == 800 and s.node_map["policy"].on_failure.terminate == "POLICY_SERVICE_DOWN"
