"""The scenario library: every shipped scenario loads, passes its sanity check, and runs in every mode offline."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from harness.matrix.commands.sanity import check_scenario, load_sanity_table, run_reference_path, run_scripted
from harness.scenario.load import load_scenario, scenario_files
from modes import select_modes
from tests.helpers.bench import ROOT, SCENARIOS
from tests.helpers.bench import bench_main as cli
from tests.helpers.mode_checks import check_every_policy_offline, recorded_modes

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

FILES = scenario_files(SCENARIOS)
LIBRARY = {
    "blog_brief_approval",
    "blog_two_gates",
    "release_pipeline",
    "insurance_claim",
    "kb_policy_answer",
    "procurement_approval",
    "injected_observation",
    "privileged_tool",
    # seed 003's spectrum stories (issue 12)
    "bank_transfer_compliance",
    "support_ticket_triage",
    "promotion_copy",
    "data_migration",
    "medical_report",
}


def test_the_library_is_complete():
    assert {path.stem for path in FILES} >= LIBRARY


def test_bench_list_shows_every_scenario(monkeypatch, capsys):
    code, out, err = cli(monkeypatch, capsys, "list", "--scenarios-dir", str(SCENARIOS))
    assert code == 0, err
    for path in FILES:
        scenario = load_scenario(path)
        assert scenario.id in out and scenario.oracle.expected_stop in out


TABLE = load_sanity_table(SCENARIOS, [path.stem for path in FILES], list(BUILT_IN))
TABLE_MODES = {mode for rows in TABLE.eager.values() for mode in rows}


def test_the_library_keeps_its_sanity_expectations_in_one_table():
    assert set(TABLE.eager) == {path.stem for path in FILES}
    assert not any("sanity" in yaml.safe_load(path.read_text(encoding="utf-8")) for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_sanity_check(path):
    scenario = load_scenario(path)
    report = check_scenario(scenario, select_modes(["all"]), TABLE)
    assert report.passed, report.problems
    assert report.reference.oracle_passed and report.reference.stop_verdict == "correct"
    # The table states the eager policy's verdict under both gateway policies for the same modes in every
    # scenario, at least every mode a committed recording holds; a registered mode it lacks is noted, not failed.
    covered = set(TABLE.eager[scenario.id])
    declared = {(e.mode, e.gateway) for e in report.expectations}
    assert declared == {(mode, gateway) for mode in covered for gateway in ("enforce", "audit")}
    assert covered == TABLE_MODES >= recorded_modes()
    assert set(report.not_covered) == set(BUILT_IN) - covered


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_mode_and_policy_runs_offline_without_harness_error(path):
    scenario = load_scenario(path)
    for mode in BUILT_IN:
        check_every_policy_offline(scenario, mode)


def test_a_copied_and_edited_scenario_runs_with_no_code_change(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    raw = yaml.safe_load((SCENARIOS / "release_pipeline.yaml").read_text(encoding="utf-8"))
    raw["id"] = "release_pipeline_hotfix"
    raw["title"] = "Release pipeline, hotfix variant"
    raw["limits"]["max_steps"] = 16
    raw["rules"][2]["text"] = "This is a hotfix; every minute counts."
    (folder / "release_pipeline_hotfix.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")

    code, out, err = cli(monkeypatch, capsys, "list", "--scenarios-dir", str(folder))
    assert code == 0 and "release_pipeline_hotfix" in out, err
    out_dir = tmp_path / "run"
    code, out, err = cli(
        monkeypatch,
        capsys,
        "run",
        "--scenarios-dir",
        str(folder),
        "--mode",
        "all",
        "--scenario",
        "release_pipeline_hotfix",
        "--model",
        "scripted:compliant",
        "--out",
        str(out_dir),
    )
    assert code == 0, err
    events = [json.loads(line) for line in (out_dir / "traces.jsonl").read_text().splitlines()]
    summaries = {e["mode"]: e["outcome"] for e in events if e["kind"] == "summary"}
    assert set(summaries) == set(BUILT_IN)
    assert all(e["scenario"] == "release_pipeline_hotfix" for e in events)
    assert summaries["workflow"]["oracle_passed"] and summaries["workflow"]["suspended_at"] == "deploy_approval"
    code, out, err = cli(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", str(folder))
    assert code == 0 and "release_pipeline_hotfix" in out, err


def test_the_procurement_threshold_is_data(tmp_path):
    """Below 100,000 the countersign gate does not apply: the same file, edited, approves directly."""
    raw = yaml.safe_load((SCENARIOS / "procurement_approval.yaml").read_text(encoding="utf-8"))
    raw["id"] = "procurement_small_order"
    raw["store"]["artifacts"]["order"]["amount"] = 48000
    raw["oracle"] = {
        "expected_stop": "finished",
        "required_artifacts": ["memo", "approval"],
        "reference_path": [
            "read_order",
            "check_budget",
            "write_memo",
            {"action": "approve_order", "args": {"order_id": "PO-2291"}},
            "finish",
        ],
    }
    path = tmp_path / "procurement_small_order.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    small = load_scenario(path)

    outcome, problems = run_reference_path(small)
    assert problems == [] and outcome.oracle_passed and outcome.side_effects_committed == 2
    flow, _ = asyncio.run(run_scripted(small, "workflow", "compliant", "enforce"))
    assert flow.status == "finished" and flow.oracle_passed
    # The shipped order is over the threshold: the same reference path is blocked at approve_order.
    big = load_scenario(SCENARIOS / "procurement_approval.yaml").model_copy(update={"oracle": small.oracle})
    outcome, problems = run_reference_path(big)
    assert not outcome.oracle_passed
    assert any("approve_order" in p and "gate_closed" in p for p in problems)


def test_the_docs_example_is_a_working_scenario(tmp_path):
    """The annotated example under "Add a scenario" in docs/scenarios.md loads and passes its own sanity check."""
    doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = doc.split("## Add a scenario", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    raw = yaml.safe_load(example)
    path = tmp_path / f"{raw['id']}.yaml"
    path.write_text(example, encoding="utf-8")
    report = check_scenario(load_scenario(path), select_modes(["all"]))
    assert report.passed, report.problems
    assert len(report.expectations) == 2 * len(raw["sanity"]["eager"])


def test_the_docs_table_lists_every_scenario():
    doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    table = doc.split("## Scenarios", 1)[1].split("## Add a scenario", 1)[0]
    for path in FILES:
        scenario = load_scenario(path)
        assert f"| `{scenario.id}` |" in table


@pytest.mark.parametrize(
    ("health_fault", "end"),
    [(None, "finished"), ({"fail_first": 1, "error": "502"}, "error")],
    ids=["healthy", "rolled_back"],
)
def test_release_after_approval_deploys_then_finishes_or_rolls_back(tmp_path, health_fault, end):
    """The tail of the release graph (deploy, health check, done or rollback) once the approval is given."""
    raw = yaml.safe_load((SCENARIOS / "release_pipeline.yaml").read_text(encoding="utf-8"))
    raw["id"] = "release_approved"
    raw["gates"][0]["approved"] = True
    # Approved beforehand, the gate is no stop any more: the story now finishes (after deploying or rolling back).
    raw["oracle"].update(expected_stop="finished", forbidden=[])
    health = next(a for a in raw["actions"] if a["name"] == "health_check")
    if health_fault:
        health["fault"] = health_fault
    path = tmp_path / "release_approved.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    scenario = load_scenario(path)
    outcome, events = asyncio.run(run_scripted(scenario, "workflow", "compliant", "enforce"))
    walked = [e.detail["to"] for e in events if e.kind == "transition"]
    assert walked[-3:] == (["deploy", "health", "done"] if end == "finished" else ["health", "rollback", "rolled_back"])
    assert outcome.status == end and outcome.premature_side_effects == 0
    assert "deploy" in [e.action for e in events if e.kind == "action" and e.result == "committed"]
