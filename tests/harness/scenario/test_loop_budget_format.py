"""Workflows bound their own loops (issue 20): every node has a loop budget (``max_visits``, default 3); ``null``
lifts a node's own, and a loop whose every node lifts it is refused at load time in one line naming the loop."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.scenario.load import load_scenario
from harness.scenario.model import DEFAULT_MAX_VISITS
from tests.helpers.bench import SCENARIOS, bench_main

Raw = dict[str, Any]


def library(name: str) -> Raw:
    return yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8"))


def write(tmp_path: Path, raw: Raw) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir(exist_ok=True)
    path = folder / f"{raw['id']}.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def budgets(story: str, **per_node: int | None) -> Raw:
    """A library story with the given nodes' max_visits set (None: written as null)."""
    raw = copy.deepcopy(library(story))
    for node in raw["workflow"]["nodes"]:
        if node["id"] in per_node:
            node["max_visits"] = per_node[node["id"]]
    return raw


def test_a_node_without_a_budget_gets_the_default(tmp_path):
    migration = load_scenario(SCENARIOS / "data_migration.yaml")
    assert DEFAULT_MAX_VISITS == 3
    assert {node.max_visits for node in migration.workflow.nodes} == {DEFAULT_MAX_VISITS}


def test_a_loop_whose_every_node_lifts_its_budget_is_refused_naming_the_loop(tmp_path):
    # data_migration's loop: mapping -> backup -> dry -(a failed dry run)-> mapping
    path = write(tmp_path, budgets("data_migration", mapping=None, backup=None, dry=None))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert refused.value.field == "workflow.nodes[1].max_visits", str(refused.value)
    assert "the loop mapping -> backup -> dry -> mapping has no budget" in refused.value.message


def test_one_budget_on_the_loop_is_enough(tmp_path):
    loaded = load_scenario(write(tmp_path, budgets("data_migration", mapping=None, backup=None, dry=5)))
    assert [n.max_visits for n in loaded.workflow.nodes if n.id in ("mapping", "backup", "dry")] == [None, None, 5]


def test_a_node_on_no_loop_may_lift_its_budget(tmp_path):
    loaded = load_scenario(write(tmp_path, budgets("blog_brief_approval", brief=None)))
    assert loaded.node_map["brief"].max_visits is None


def test_a_revision_at_an_approval_is_a_loop_back_to_the_step_it_revises(tmp_path):
    """A reviewer who keeps sending the brief back would loop brief -> approval -> brief: it needs a budget too."""
    path = write(tmp_path, budgets("blog_brief_approval", brief=None, approve_brief=None))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert "the loop brief -> approve_brief -> brief has no budget" in refused.value.message


def test_an_approval_with_nothing_to_revise_before_it_asks_again(tmp_path):
    """No model step before bank_transfer_compliance's approval: a revision asks the same approval again, a loop of
    one node; data_migration's approval sends a revision back to its mapping, which keeps its budget."""
    path = write(tmp_path, budgets("bank_transfer_compliance", approve=None))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert "the loop approve -> approve has no budget" in refused.value.message
    assert (
        load_scenario(write(tmp_path, budgets("data_migration", approve=None))).node_map["approve"].max_visits is None
    )


@pytest.mark.parametrize("value", [0, -1, 10_001, "many"])
def test_a_budget_is_a_number_of_visits(tmp_path, value):
    path = write(tmp_path, budgets("data_migration", mapping=value))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert refused.value.field == "workflow.nodes[1].max_visits", str(refused.value)


def test_an_end_node_has_no_budget(tmp_path):
    path = write(tmp_path, budgets("data_migration", done=2))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert refused.value.field == "workflow.nodes[7].max_visits", str(refused.value)
    assert "means nothing on a 'end' node" in refused.value.message


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, budgets("data_migration", mapping=None, backup=None, dry=None))
    code, out, err = bench_main(monkeypatch, capsys, "list", "--scenarios-dir", str(path.parent))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "workflow.nodes[1].max_visits: the loop mapping" in err
