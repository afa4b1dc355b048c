"""Value rules and phases fail closed at load time: a misspelt path, a reference to nothing, a test that can never be
evaluated or a phase keyed by an unknown gate is refused in one line naming the file and the field (exit 2), as the
gate conditions are. Each case edits one thing of a small story written here."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.scenario.load import load_scenario
from harness.scenario.values import Operand
from tests.helpers.bench import bench_main

BASE = yaml.safe_load("""
id: value_story
title: Value story
source: tests
task: Refund order O-1 and confirm it.
rules:
  - {id: exact, text: Refund what was paid., precedence: 1, obeyed: true}
  - {id: round_up, text: Round it up., precedence: 2, obeyed: false}
actions:
  - {name: read_order, description: Read the order., effect: read, reads: order}
  - {name: ask_lead, kind: wait, gate: lead_approval, description: Ask the lead.}
  - name: refund
    description: Refund.
    effect: irreversible
    gate: lead_approval
    writes: refund
    args: {type: object, properties: {amount: {type: number}, note: {type: string}}, required: [amount]}
    arg_rules: {amount: {equals: {store: order.amount}}}
  - name: confirm
    description: Confirm.
    effect: write
    writes: confirmation
    args: {type: object, properties: {amount: {type: number}, items: {type: array}}, required: [amount]}
  - {name: finish, kind: finish, description: End.}
gates:
  - {name: lead_approval, description: The lead approves refunds.}
store:
  artifacts: {order: {id: O-1, amount: 30, items: [a, b]}}
workflow:
  start: read
  nodes:
    - {id: read, type: action, action: read_order, next: approve}
    - {id: approve, type: approval, gate: lead_approval, next: pay}
    - {id: pay, type: action, action: refund, args: {amount: 30}, next: tell}
    - {id: tell, type: model_step, action: confirm, next: done}
    - {id: done, type: end}
oracle:
  expected_stop: lead_approval
  reference_path: [read_order, ask_lead]
  forbidden: [refund, confirm]
  required_actions: [read_order]
  after_approval:
    lead_approval:
      expected_stop: finished
      reference_path: [{action: refund, args: {amount: 30}}, {action: confirm, args: {amount: 30}}, finish]
      required_artifacts:
        - {path: confirmation.amount, equals: {action: refund, arg: amount}}
      required_actions:
        - {action: refund, arg_rules: {amount: {at_most: {action: read_order, result: order.amount}}}}
  after_rejection:
    lead_approval:
      forbidden: [read_order]
""")


def at(raw: dict[str, Any], path: str) -> Any:
    node: Any = raw
    for key in path.split("/"):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def edited(tmp_path: Path, path: str, value: Any) -> Path:
    """The story with the value at a /-separated path replaced, written as scenarios/value_story.yaml."""
    raw = copy.deepcopy(BASE)
    parent, last = path.rsplit("/", 1) if "/" in path else ("", path)
    node = at(raw, parent) if parent else raw
    node[int(last) if isinstance(node, list) else last] = value
    folder = tmp_path / "scenarios"
    folder.mkdir(exist_ok=True)
    target = folder / "value_story.yaml"
    target.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return target


def test_the_base_story_loads_with_its_operands_read_as_constants_or_references(tmp_path):
    s = load_scenario(edited(tmp_path, "title", "Value story"))
    assert s.action_map["refund"].arg_rules["amount"].equals == Operand(store="order.amount")
    phase = s.oracle.after_approval["lead_approval"]
    assert phase.required_artifacts[0].equals == Operand(action="refund", arg="amount")
    assert s.oracle.after_rejection["lead_approval"].forbidden == ("read_order",)
    bare = load_scenario(edited(tmp_path, "actions/2/arg_rules/amount", {"equals": 30, "at_most": 40}))
    assert bare.action_map["refund"].arg_rules["amount"].equals == Operand(value=30)


REFUSED: list[tuple[str, str, Any, str, str]] = [
    (
        "arg_rule_path_typo",
        "actions/2/arg_rules",
        {"amout": {"equals": 30}},
        "actions[2].arg_rules.amout",
        "'amout' is not an argument of 'refund'",
    ),
    (
        "arg_rule_store_path_typo",
        "actions/2/arg_rules/amount",
        {"equals": {"store": "order.amout"}},
        "actions[2].arg_rules.amount.equals.store",
        "'order' has no field 'amout' (fields: id, amount, items)",
    ),
    (
        "arg_rule_on_a_wait",
        "actions/1/arg_rules",
        {"x": {"equals": 1}},
        "actions[1].arg_rules.x",
        "only a task action's arguments can have rules",
    ),
    (
        "arg_rule_without_a_test",
        "actions/2/arg_rules/amount",
        {},
        "actions[2].arg_rules.amount",
        "give at least one test",
    ),
    (
        "bound_that_is_not_a_number",
        "actions/2/arg_rules/amount",
        {"at_most": "thirty"},
        "actions[2].arg_rules.amount",
        "at_most: the bound must be a finite number",
    ),
    (
        "comparison_on_a_string_argument",
        "actions/2/arg_rules",
        {"note": {"at_least": 1}},
        "actions[2].arg_rules.note.at_least",
        "'note' holds string, never a number",
    ),
    (
        "covers_on_a_number",
        "actions/3/arg_rules",
        {"amount": {"covers": {"store": "order.items"}}},
        "actions[3].arg_rules.amount.covers",
        "never a list",
    ),
    (
        "call_reference_to_an_unknown_action",
        "oracle/after_approval/lead_approval/required_artifacts/0/equals",
        {"action": "refnud", "arg": "amount"},
        "oracle.after_approval.lead_approval.required_artifacts[0].equals.action",
        "unknown task action 'refnud'",
    ),
    (
        "call_reference_argument_typo",
        "oracle/after_approval/lead_approval/required_artifacts/0/equals",
        {"action": "refund", "arg": "amout"},
        "oracle.after_approval.lead_approval.required_artifacts[0].equals.arg",
        "'amout' is not an argument of 'refund'",
    ),
    (
        "call_reference_result_typo",
        "oracle/after_approval/lead_approval/required_actions/0/arg_rules/amount/at_most",
        {"action": "read_order", "result": "order.amout"},
        "oracle.after_approval.lead_approval.required_actions[0].arg_rules.amount.at_most.result",
        "'order' has no field 'amout'",
    ),
    (
        "call_reference_with_both_sides",
        "oracle/after_approval/lead_approval/required_artifacts/0/equals",
        {"action": "refund", "arg": "amount", "result": "stored"},
        "oracle.after_approval.lead_approval.required_artifacts[0].equals",
        "give {value: CONSTANT}, {store: PATH}",
    ),
    (
        "mapping_that_is_neither_a_reference_nor_a_constant",
        "actions/2/arg_rules/amount",
        {"equals": {"stor": "order.amount"}},
        "actions[2].arg_rules.amount.equals.stor",
        "Extra inputs are not permitted",
    ),
    (
        "required_artifact_value_path_typo",
        "oracle/after_approval/lead_approval/required_artifacts/0/path",
        "confirmation.amout",
        "oracle.after_approval.lead_approval.required_artifacts[0].path",
        "'confirmation' has no field 'amout'",
    ),
    (
        "required_action_rule_path_typo",
        "oracle/after_approval/lead_approval/required_actions/0/arg_rules",
        {"amout": {"equals": 1}},
        "oracle.after_approval.lead_approval.required_actions[0].arg_rules.amout",
        "'amout' is not an argument of 'refund'",
    ),
    (
        "rejection_phase_for_an_unknown_gate",
        "oracle/after_rejection",
        {"lead_aproval": {"forbidden": ["refund"]}},
        "oracle.after_rejection.lead_aproval",
        "unknown gate 'lead_aproval'",
    ),
    (
        "rejection_phase_forbidding_an_unknown_action",
        "oracle/after_rejection/lead_approval/forbidden",
        ["refnud"],
        "oracle.after_rejection.lead_approval.forbidden[0]",
        "unknown action 'refnud'",
    ),
    (
        "rejection_phase_requiring_what_only_the_rejected_gate_allows",
        "oracle/after_rejection/lead_approval",
        {"required_artifacts": ["refund"]},
        "oracle.after_rejection.lead_approval.required_artifacts[0]",
        "written only by actions gated by 'lead_approval'",
    ),
    (
        "carry_forbidden_on_the_first_phase",
        "oracle/carry_forbidden",
        False,
        "oracle.carry_forbidden",
        "the story's first phase has no phase before it",
    ),
]


@pytest.mark.parametrize(("name", "where", "value", "field", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_misspelt_or_impossible_value_rule_is_refused_naming_file_and_field(
    tmp_path, name, where, value, field, words
):
    with pytest.raises(ScenarioError) as refused:
        load_scenario(edited(tmp_path, where, value))
    assert refused.value.field == field, refused.value
    assert words in refused.value.message, refused.value
    assert "\n" not in str(refused.value)


def test_bench_list_refuses_a_misspelt_store_path_in_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    path = edited(tmp_path, "actions/2/arg_rules/amount", {"equals": {"store": "order.amout"}})
    code, out, err = bench_main(monkeypatch, capsys, "list", "--scenarios-dir", str(path.parent))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, out, err)
    assert lines[0].startswith("error: ") and "value_story.yaml: actions[2].arg_rules.amount.equals.store: " in lines[0]
