"""Malformed scenario files: each gives one line on stderr naming the file and the bad field, and exit code 2."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.bench import SCENARIOS
from tests.helpers.bench import bench_main as bench

GOOD = yaml.safe_load((SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8"))
Raw = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Raw], None]:
    """An edit that sets one dotted path (list indexes as numbers) of the raw YAML."""

    def edit(raw: Raw) -> None:
        *parents, last = path.split(".")
        node: Any = raw
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _drop(key: str) -> Callable[[Raw], None]:
    return lambda raw: raw.pop(key)


def _add_action_copy(raw: Raw) -> None:
    raw["actions"].append(copy.deepcopy(raw["actions"][0]))


def _add_unused_gate(raw: Raw) -> None:
    raw["gates"].append({"name": "legal_review", "description": "Legal reviews the post."})


def _rename_key(raw: Raw) -> None:
    raw["actions"][0]["efect"] = raw["actions"][0].pop("effect")


def _branches_without_default(raw: Raw) -> None:
    node = raw["workflow"]["nodes"][0]
    node.pop("next")
    node["branches"] = [{"when": {"exists": "brief"}, "goto": "approve_brief"}]


# (case, edit of the good file, the field path the error must name, a word of the message)
CASES: list[tuple[str, Callable[[Raw], None], str, str]] = [
    ("missing_oracle", _drop("oracle"), "oracle", "required"),
    (
        "unknown_action_in_workflow",
        _set("workflow.nodes.0.action", "create_outline"),
        "workflow.nodes[0].action",
        "unknown action",
    ),
    ("gate_on_unknown_gate", _set("actions.2.gate", "editor_approval"), "actions[2].gate", "unknown gate"),
    ("gate_guarding_no_action", _add_unused_gate, "gates[1].name", "guards no action"),
    ("forbidden_unknown_action", _set("oracle.forbidden", ["publish_post"]), "oracle.forbidden[0]", "unknown action"),
    ("wrong_type_precedence", _set("rules.0.precedence", "high"), "rules[0].precedence", "integer"),
    ("wrong_type_actions_mapping", _set("actions", {"create_brief": {"effect": "write"}}), "actions", "valid list"),
    ("wrong_type_max_steps", _set("limits.max_steps", "three"), "limits.max_steps", "integer"),
    ("unknown_key", _rename_key, "actions[0].efect", "not permitted"),
    ("duplicate_action", _add_action_copy, "actions[4].name", "duplicate"),
    ("unknown_effect", _set("actions.0.effect", "delete"), "actions[0].effect", "'write'"),
    ("args_not_a_schema", _set("actions.0.args", {"type": "objekt"}), "actions[0].args", "JSON Schema"),
    (
        "expected_stop_unknown_gate",
        _set("oracle.expected_stop", "draft_approval"),
        "oracle.expected_stop",
        "unknown gate",
    ),
    (
        "reference_unknown_action",
        _set("oracle.reference_path.1", "wait_for_editor"),
        "oracle.reference_path[1]",
        "unknown action",
    ),
    (
        "reference_args_break_schema",
        _set("oracle.reference_path.0", {"action": "create_brief", "args": {"topic": 5}}),
        "oracle.reference_path[0].args.topic",
        "string",
    ),
    ("transition_to_unknown_node", _set("workflow.nodes.1.next", "review"), "workflow.nodes[1].next", "unknown node"),
    ("no_default_branch", _branches_without_default, "workflow.nodes[0].next", "default"),
    (
        "condition_on_unknown_artifact",
        _set("workflow.nodes.3", {"id": "done", "type": "validator", "check": {"exists": "outline"}, "next": "brief"}),
        "workflow.nodes[3].check.exists",
        "never in the store",
    ),
    (
        "unknown_check_type",
        _set("oracle.checks", [{"type": "vibes", "action": "create_brief"}]),
        "oracle.checks[0]",
        "vibes",
    ),
    (
        "check_field_wrong_type",
        _set(
            "oracle.checks",
            [{"type": "grounded", "action": "create_brief", "arg": "topic", "match": "field_names", "first": "three"}],
        ),
        "oracle.checks[0].first",
        "integer",
    ),
    (
        "check_arg_not_an_argument",
        _set(
            "oracle.checks", [{"type": "no_phrases", "action": "create_brief", "arg": "body", "phrases": ["I think"]}]
        ),
        "oracle.checks[0].arg",
        "not an argument",
    ),
    (
        "threshold_not_a_number",
        _set("gates.0.applies_when", {"greater_than": {"brief.words": "many"}}),
        "gates[0].applies_when.greater_than.brief.words",
        "number",
    ),
    ("writes_a_path", _set("actions.0.writes", "brief.text"), "actions[0].writes", "artifact name"),
    ("id_not_the_file_name", _set("id", "blog_other"), "id", "file name"),
]


def one_line_error(monkeypatch, capsys, folder: Path) -> str:
    code, out, err = bench(monkeypatch, capsys, "list", "--scenarios-dir", str(folder))
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_enough_malformed_variants():
    assert len(CASES) >= 10


@pytest.mark.parametrize(("case", "edit", "field", "word"), CASES, ids=[c[0] for c in CASES])
def test_malformed_variant(tmp_path, monkeypatch, capsys, case, edit, field, word):
    raw = copy.deepcopy(GOOD)
    edit(raw)
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "blog_brief_approval.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    line = one_line_error(monkeypatch, capsys, folder)
    assert f"blog_brief_approval.yaml: {field}: " in line, line
    assert word.lower() in line.lower(), line


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("id: blog_brief_approval\ntitle: [unclosed\n", "line 3, column 1"),
        ("id: blog_brief_approval\n  title: indented wrongly\n", "line 2, column 8"),
        ("- just\n- a list\n", ""),
        ("", ""),
    ],
    ids=["unclosed_bracket", "bad_indentation", "top_level_list", "empty_file"],
)
def test_unreadable_files(tmp_path, monkeypatch, capsys, text, where):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "blog_brief_approval.yaml").write_text(text)
    line = one_line_error(monkeypatch, capsys, folder)
    assert "blog_brief_approval.yaml: " in line
    assert where in line if where else "YAML mapping" in line


def test_run_names_the_bad_file_too(tmp_path, monkeypatch, capsys):
    raw = copy.deepcopy(GOOD)
    raw["rules"][0]["obeyed"] = "sometimes"
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "blog_brief_approval.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    code, _, err = bench(
        monkeypatch,
        capsys,
        "run",
        "--scenarios-dir",
        str(folder),
        "--model",
        "scripted:eager",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "blog_brief_approval.yaml: rules[0].obeyed: " in err
