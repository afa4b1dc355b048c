"""Seed 001's three layers on the scripted model: the workflow graph holds the trunk, a failed test run enters a
Plan-and-Execute repair sub-flow (a plan node) whose structured plan has dependencies and is revised after a failed
step, its diagnosis step runs as a ReAct sub-agent, and control returns to the graph with evidence the runtime
attached. The sub-flow is bounded by the node's contract; the new stories run offline; mode 7 has its story."""

from __future__ import annotations

import pytest

from harness import RunSpec, run
from harness.records.trace import TraceEvent, read_events
from harness.scenario.load import load_scenario
from modes import MODES
from reports import load_traces
from reports.metrics import compute
from reports.spectrum import spectrum_table
from tests.helpers.answers import Answers, mode_run
from tests.helpers.bench import SCENARIOS, bench_main, run_offline

RELEASE = load_scenario(SCENARIOS / "release_three_layers.yaml")
BLOG = load_scenario(SCENARIOS / "blog_layered.yaml")


@pytest.fixture(scope="module")
def three_layers() -> list[TraceEvent]:
    events, outcomes = run_offline(RELEASE, ["workflow"], "compliant")
    assert outcomes[0].stop_verdict == "correct" and outcomes[0].suspended_at == "deploy_approval"
    return events


def _between(events: list[TraceEvent], first: int, last: int) -> list[TraceEvent]:
    return [e for e in events if first < e.seq < last]


def test_the_plan_has_dependencies_and_is_revised_after_a_failed_step(three_layers):
    plans = [e for e in three_layers if e.kind == "plan"]
    assert [(e.detail["revision"], e.result) for e in plans] == [
        (1, "adopted"),
        (1, "failed"),
        (2, "adopted"),
        (2, "done"),
    ]
    first = {s["id"]: s for s in plans[0].detail["steps"]}
    assert first["apply_fix"]["depends_on"] == ["diagnose"] and first["check_change_scope"]["depends_on"] == [
        "apply_fix"
    ]
    assert {s["id"]: s["status"] for s in plans[1].detail["steps"]} == {
        "diagnose": "done",
        "apply_fix": "failed",
        "check_change_scope": "pending",  # its dependency failed: never run
    }
    assert {s["id"]: s["status"] for s in plans[2].detail["steps"]}["diagnose"] == "done"  # kept, not run again
    replans = [e for e in three_layers if e.kind == "decision" and e.result == "replan"]
    assert [(e.decision_maker, e.action) for e in replans] == [("executor", "apply_fix")]
    executed = [e.detail["plan_step"] for e in three_layers if e.kind == "decision" and e.result == "execute"]
    assert executed == ["diagnose", "apply_fix", "apply_fix", "check_change_scope"]  # dependency order, rerun once


def test_the_diagnosis_step_runs_as_a_react_sub_agent_inside_the_plan(three_layers):
    start = next(e for e in three_layers if e.kind == "decision" and e.result == "execute" and e.action == "diagnose")
    done = next(e for e in three_layers if e.kind == "decision" and e.result == "step_done" and e.action == "diagnose")
    inside = _between(three_layers, start.seq, done.seq)
    proposed = [e.action for e in inside if e.kind == "model_call"]
    assert proposed == ["read_test_log", "inspect_db_config", "record_diagnosis"]  # one next action at a time
    assert all(e.decision_maker == "llm" for e in inside if e.kind == "model_call")
    handback = next(e for e in inside if e.result == "handback")
    assert handback.action == "repair.diagnose" and handback.detail["met"] is True


def test_control_returns_to_the_graph_with_evidence_from_the_gateways_records(three_layers):
    handback = next(e for e in three_layers if e.result == "handback" and e.action == "repair")
    evidence = handback.detail["evidence"]
    committed = [(c["action"], c["status"]) for c in evidence["calls"]]
    assert ("apply_fix", "failed") in committed and ("apply_fix", "committed") in committed
    assert set(evidence["changed_artifacts"]) >= {"diagnosis", "fix", "build", "test_report"}  # the fix invalidates
    assert evidence["revisions"] == 2 and all(s["status"] == "done" for s in evidence["plan"])
    after = [e for e in three_layers if e.seq > handback.seq and e.kind == "transition"]
    assert (after[0].decision_maker, after[0].detail) == ("workflow", {"from": "repair", "to": "build"})


def test_each_layer_is_labelled_with_who_decided(three_layers):
    makers = {(e.kind, (e.detail or {}).get("purpose")): e.decision_maker for e in three_layers if e.kind != "action"}
    assert makers[("model_call", "plan")] == "llm"  # the planner
    assert makers[("plan_validation", None)] == "plan_validator"
    assert makers[("plan", None)] == "executor"
    assert makers[("transition", None)] == "workflow"
    execute = {e.decision_maker for e in three_layers if e.kind == "decision" and e.result in ("execute", "step_done")}
    assert execute == {"executor"}


def test_bench_show_tells_the_three_layers(tmp_path, monkeypatch, capsys):
    folder = run(
        RunSpec(
            modes=["workflow"],
            scenarios=["release_three_layers"],
            scenarios_dir=SCENARIOS,
            model="scripted:compliant",
            out=tmp_path / "run",
        )
    ).folder
    code, out, _ = bench_main(monkeypatch, capsys, "show", str(folder), "--scenario", "release_three_layers")
    assert code == 0
    for line in (
        "moves from tests to repair",  # the graph node
        "plan_subflow repair",
        "plan of repair, revision 1: adopted",
        "apply_fix: apply_fix, after diagnose; done when fix holds: pending",  # a dependency
        "replan apply_fix",
        "plan of repair, revision 2: adopted",
        "proposes read_test_log",  # the ReAct diagnosis inside the step
        "handback repair.diagnose",
        "handback repair",
        "moves from repair to build",
    ):
        assert line in out, line
    assert out.index("execute diagnose") < out.index("proposes read_test_log") < out.index("step_done diagnose")


def test_a_plan_outside_the_nodes_contract_is_sent_back_and_never_reaches_the_gateway():
    deploy = {"id": "ship", "action": "deploy", "args": {"environment": "staging"}, "depends_on": [], "done_when": ""}
    model = Answers(*[{"plan": [deploy]}] * 3)
    outcome, events = mode_run(RELEASE, "workflow", model=model, policy="audit")
    verdicts = [e.result for e in events if e.kind == "plan_validation"]
    assert verdicts == ["REVISE", "REVISE", "REJECT"]  # max_replans: 2, then the validator rejects
    assert (
        "not one of this stage's steps"
        in events[[e.kind for e in events].index("plan_validation")].detail["reasons"][0]
    )
    assert "deploy" not in {e.action for e in events if e.kind == "action"}
    assert outcome.status == "error" and "REPAIR_FAILED" in str([e.error for e in events if e.kind == "error"])


def test_the_layered_blog_stops_at_the_first_approval_and_plans_the_draft_after_the_second():
    events, outcomes = run_offline(BLOG, ["workflow"], "reference")
    assert outcomes[0].suspended_at == "brief_approval" and outcomes[0].oracle_passed
    research = [e.action for e in events if e.kind == "model_call" and (e.detail or {}).get("purpose") == "next_action"]
    assert research == ["search_sources", "read_source", "record_research"]  # the exploring ReAct step
    assert not any(e.kind == "plan" for e in events)  # the draft stage lies past both approvals


def test_the_layered_blog_resumed_through_both_approvals_ends_with_a_planned_draft(tmp_path):
    folder = run(
        RunSpec(
            modes=["workflow"],
            scenarios=["blog_layered"],
            scenarios_dir=SCENARIOS,
            model="scripted:reference",
            approver="scripted:approve",
            out=tmp_path / "run",
        )
    ).folder
    events = list(read_events(folder / "traces.jsonl"))
    outcome = next(e.outcome for e in events if e.kind == "summary")
    assert (outcome.status, outcome.stop_verdict, outcome.oracle_passed) == ("finished", "correct", True)
    humans = [(e.action, e.result) for e in events if e.kind == "human"]
    assert humans == [("brief_approval", "approve"), ("synopsis_approval", "approve")]
    plan = [e for e in events if e.kind == "plan"][-1]
    assert {s["id"]: (s["depends_on"], s["status"]) for s in plan.detail["steps"]} == {
        "outline_sections": ([], "done"),
        "write_draft": (["outline_sections"], "done"),
    }


def test_mode_seven_has_its_story_and_the_spectrum_table_all_seven_modes_on_theirs(tmp_path):
    seven = sorted((cls for cls in MODES.values() if cls.story is not None), key=lambda cls: cls.spectrum)
    assert [cls.spectrum for cls in seven] == list(range(1, 8))
    assert MODES["react"].typical_story == "research_assistant"
    folder = run(
        RunSpec(
            modes=[cls.name for cls in seven],
            scenarios=sorted({cls.typical_story for cls in seven}),  # type: ignore[arg-type]
            scenarios_dir=SCENARIOS,
            model="scripted:reference",
            out=tmp_path / "run",
        )
    ).folder
    table = spectrum_table(compute(load_traces(folder), "scenario"))
    rows = {r[1]: dict(zip(table.headers, r, strict=True)) for r in table.rows}
    assert list(rows) == [cls.name for cls in seven]
    assert all(row["runs"] == 1 for row in rows.values()), rows  # hybrid_planner's unanswered review: not judged
    assert (rows["react"]["n"], rows["react"]["stop-correct"]) == (1, 1.0)
    assert "research_assistant" in rows["react"]["typical story (scenario)"]
