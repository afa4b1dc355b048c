"""The scenario format's additions for the spectrum (issue 12) fail closed: each bad edit of a library story is one
line naming file and field (exit 2); a scenario written before them still loads."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.scenario.load import load_scenario
from tests.helpers.bench import SCENARIOS, bench_main

Raw = dict[str, Any]


def library(name: str) -> Raw:
    return yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8"))


def node(raw: Raw, node_id: str) -> Raw:
    return next(n for n in raw["workflow"]["nodes"] if n["id"] == node_id)


def action(raw: Raw, name: str) -> Raw:
    return next(a for a in raw["actions"] if a["name"] == name)


def slots(raw: Raw) -> Raw:
    return node(raw, "copy")["params"]["properties"]


def loop(raw: Raw) -> Raw:
    return node(raw, "extract")["on_failure"]["react"]


CASES: list[tuple[str, str, Callable[[Raw], Any], str, str]] = [
    # (case, story, edit, field, words)
    (
        "slot_without_default",
        "promotion_copy",
        lambda r: slots(r)["tone"].pop("default"),
        "workflow.nodes[1].params.properties.tone",
        "needs a default",
    ),
    (
        "slot_not_an_argument",
        "promotion_copy",
        lambda r: slots(r).update(colour={"type": "string", "default": "red"}),
        "workflow.nodes[1].params.properties.colour",
        "'colour' is not an argument of 'write_copy'",
    ),
    (
        "default_outside_its_slot",
        "promotion_copy",
        lambda r: slots(r)["discount_percent"].update(default=30),
        "workflow.nodes[1].params.default.discount_percent",
        "30 is greater than the maximum of 20",
    ),
    (
        "slot_and_fixed_argument",
        "promotion_copy",
        lambda r: node(r, "copy")["args"].update(tone="friendly"),
        "workflow.nodes[1].params.properties.tone",
        "both a fixed argument and a slot",
    ),
    (
        "template_missing_a_required_argument",
        "promotion_copy",
        lambda r: node(r, "copy")["args"].pop("terms"),
        "workflow.nodes[1].args",
        "'terms' is a required property",
    ),
    (
        "fixed_args_without_a_template",
        "promotion_copy",
        lambda r: node(r, "copy").pop("params"),
        "workflow.nodes[1].args",
        "declare params",
    ),
    (
        "route_by_model_without_branches",
        "support_ticket_triage",
        lambda r: node(r, "ack").update(route_by="model"),
        "workflow.nodes[2].route_by",
        "needs branches",
    ),
    (
        "route_by_on_an_end_node",
        "support_ticket_triage",
        lambda r: node(r, "done").update(route_by="model"),
        "workflow.nodes[8].route_by",
        "means nothing on a 'end' node",
    ),
    (
        "route_by_unknown_value",
        "support_ticket_triage",
        lambda r: node(r, "verify").update(route_by="llm"),
        "workflow.nodes[3].route_by",
        "'code' or 'model'",
    ),
    (
        # the model may pick any branch that holds: one after the default that reaches a gated step is a way around
        "model_route_around_an_approval",
        "support_ticket_triage",
        lambda r: node(r, "verify")["branches"].append({"goto": "reset"}),
        "workflow.nodes[4].action",
        "'send_reset_link' needs approval 'security_approval'",
    ),
    (
        "suggested_route_to_no_node",
        "release_pipeline",
        lambda r: node(r, "fix")["output"]["properties"]["suggested_route"].update(enum=["rerun_tests"]),
        "workflow.nodes[3].output.properties.suggested_route.enum[0]",
        "unknown node 'rerun_tests'",
    ),
    (
        "output_not_an_object",
        "release_pipeline",
        lambda r: node(r, "fix").update(output={"type": "string"}),
        "workflow.nodes[3].output",
        "type 'object'",
    ),
    (
        "output_on_an_action_node",
        "release_pipeline",
        lambda r: node(r, "build").update(output={"type": "object"}),
        "workflow.nodes[0].output",
        "means nothing on a 'action' node",
    ),
    (
        "fallback_tool_unknown",
        "medical_report",
        lambda r: loop(r)["tools"].append("call_the_lab"),
        "workflow.nodes[1].on_failure.react.tools[2]",
        "unknown task action 'call_the_lab'",
    ),
    (
        "fallback_tool_a_wait",
        "medical_report",
        lambda r: loop(r)["tools"].append("request_signoff"),
        "workflow.nodes[1].on_failure.react.tools[2]",
        "unknown task action 'request_signoff'",
    ),
    (
        "fallback_until_reaching_nothing",
        "medical_report",
        lambda r: loop(r).update(until={"exists": "confirmation.valeu"}),
        "workflow.nodes[1].on_failure.react.until.exists",
        "'confirmation.valeu' reaches nothing",
    ),
    (
        "fallback_without_until",
        "medical_report",
        lambda r: loop(r).pop("until"),
        "workflow.nodes[1].on_failure.react.until",
        "Field required",
    ),
    (
        "fallback_tool_behind_no_approval",
        "medical_report",
        lambda r: loop(r)["tools"].append("release_letter"),
        "workflow.nodes[1].on_failure.react.tools[2]",
        "'release_letter' needs approval 'clinician_signoff'",
    ),
    (
        "answer_on_a_read",
        "kb_policy_answer",
        lambda r: action(r, "search_kb").update(answer={"phrases": ["maybe"]}),
        "actions[0].answer",
        "only an action with effect write or irreversible",
    ),
    (
        "answer_citations_not_an_argument",
        "kb_policy_answer",
        lambda r: action(r, "write_answer")["answer"].update(citations="claims[].source"),
        "actions[1].answer.citations",
        "not an argument of 'write_answer'",
    ),
    (
        "answer_field_with_field_names",
        "kb_policy_answer",
        lambda r: action(r, "write_answer")["answer"].update(match="field_names"),
        "actions[1].answer.field",
        "only with match: field_values",
    ),
    (
        "negative_latency",
        "kb_policy_answer",
        lambda r: action(r, "search_kb").update(latency_ms=[-5]),
        "actions[0].latency_ms",
        "between 0 and",
    ),
    (
        "latency_on_a_wait",
        "medical_report",
        lambda r: action(r, "request_signoff").update(latency_ms=100),
        "actions[6].latency_ms",
        "a wait action cannot have latency_ms",
    ),
    (
        "gate_named_like_the_plan_review",
        "data_migration",
        lambda r: (
            r["gates"][0].update(name="plan_review"),
            action(r, "request_cutover_approval").update(gate="plan_review"),
            action(r, "run_migration").update(gate="plan_review"),
            node(r, "approve").update(gate="plan_review"),
        ),
        "gates[0].name",
        "reserved for a mode's own review point",
    ),
    (
        "within_check_not_a_schema",
        "promotion_copy",
        lambda r: r["oracle"]["checks"][0].update(args={"type": "percentage"}),
        "oracle.checks[0].args",
        "not a valid JSON Schema",
    ),
    (
        "within_check_of_an_unknown_action",
        "promotion_copy",
        lambda r: r["oracle"]["checks"][0].update(action="write_cpy"),
        "oracle.checks[0].action",
        "unknown task action 'write_cpy'",
    ),
]


def write(tmp_path: Path, story: str, edit: Callable[[Raw], Any]) -> Path:
    raw = copy.deepcopy(library(story))
    edit(raw)
    folder = tmp_path / "scenarios"
    folder.mkdir(exist_ok=True)
    path = folder / f"{story}.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(("case", "story", "edit", "field", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_spectrum_declaration_is_refused_naming_its_field(tmp_path, case, story, edit, field, words):
    path = write(tmp_path, story, edit)
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert refused.value.field == field, str(refused.value)
    assert words in refused.value.message, str(refused.value)


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, "promotion_copy", lambda r: slots(r)["tone"].pop("default"))
    code, out, err = bench_main(monkeypatch, capsys, "list", "--scenarios-dir", str(path.parent))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "params.properties.tone: a slot needs a default" in err


def test_code_routing_never_takes_a_branch_after_the_default_so_that_one_loads(tmp_path):
    def edit(raw: Raw) -> None:
        verify = node(raw, "verify")
        verify.pop("route_by")
        verify["branches"].append({"goto": "reset"})

    load_scenario(write(tmp_path, "support_ticket_triage", edit))  # model_route_around_an_approval, routed by code


def test_a_scenario_from_before_the_spectrum_loads_and_its_workflow_runs_the_same_in_every_workflow_mode():
    """No new field is required: blog_brief_approval declares none, and the workflow modes walk it alike."""
    from tests.helpers.answers import mode_run
    from tests.helpers.mode_checks import workflow_modes

    blog = load_scenario(SCENARIOS / "blog_brief_approval.yaml")
    walks = {}
    for mode in workflow_modes():
        outcome, events = mode_run(blog, mode, {"topic": "who decides"})
        walks[mode] = [(e.kind, e.action, e.result) for e in events if e.kind != "run_start"]
        assert outcome.suspended_at == "brief_approval" and outcome.oracle_passed
    assert len({tuple(w) for w in walks.values()}) == 1
