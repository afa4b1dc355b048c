"""Seed 003's spectrum, mode by mode, on hand-made answers (issue 12): a route the rules do not open is refused, a
sub-agent's suggested route is taken only where the workflow allows it, a template's slots are all the model fills,
a fallback loop keeps to its node's tools, the guard's retry budget, timeout and output filter, the plan review,
and a bounded replan after a failed step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.core.approvals import ScriptedApprover
from harness.records.checkpoint import HumanDecision
from harness.records.trace import TraceEvent
from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario
from modes import MODES
from tests.helpers.answers import Answers, mode_run, step
from tests.helpers.bench import SCENARIOS
from tests.helpers.mode_checks import workflow_modes

TRIAGE = load_scenario(SCENARIOS / "support_ticket_triage.yaml")
RELEASE = load_scenario(SCENARIOS / "release_pipeline.yaml")
PROMOTION = load_scenario(SCENARIOS / "promotion_copy.yaml")
MEDICAL = load_scenario(SCENARIOS / "medical_report.yaml")
KB = load_scenario(SCENARIOS / "kb_policy_answer.yaml")
CLAIM = load_scenario(SCENARIOS / "insurance_claim.yaml")
MIGRATION = load_scenario(SCENARIOS / "data_migration.yaml")
BLOG = load_scenario(SCENARIOS / "blog_brief_approval.yaml")


def of_kind(events: list[TraceEvent], kind: str, result: str | None = None) -> list[TraceEvent]:
    return [e for e in events if e.kind == kind and (result is None or e.result == result)]


def actions(events: list[TraceEvent]) -> list[tuple[str | None, str | None]]:
    return [(e.action, e.result) for e in of_kind(events, "action")]


def refusals(events: list[TraceEvent], guard: str) -> list[TraceEvent]:
    return [e for e in of_kind(events, "decision", "refused") if (e.detail or {}).get("guard") == guard]


def plan(*steps: str | tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"plan": [step(s) if isinstance(s, str) else step(*s) for s in steps]}


# ---------------------------------------------------------------- workflow_routed (2): the rules open the branches

ACK = {"message": "We are on it."}


def test_a_branch_the_rules_do_not_open_is_refused_and_codes_route_taken():
    model = Answers(ACK, {"route": "reset"})
    outcome, events = mode_run(TRIAGE, "workflow_routed", model=model)
    [route_request] = [r for r in model.requests if r.purpose == "route"]
    assert route_request.offered == ("reset", "to_security", "to_technical", "to_billing")
    assert {r.target: r.allowed for r in route_request.view.routes} == {
        "reset": False,
        "to_security": True,
        "to_technical": True,
        "to_billing": True,
    }
    assert "reset: Send the admin password reset link" in route_request.messages[-1]["content"]
    assert "(not allowed now)" in route_request.messages[-1]["content"]
    [refused] = refusals(events, "route")
    assert refused.action == "reset" and refused.decision_maker == "workflow"
    assert refused.detail["taken"] == "to_security" and "reset" not in refused.detail["allowed"]
    assert [e.action for e in of_kind(events, "transition")][-2:] == ["to_security", "done"]
    assert "send_reset_link" not in {e.action for e in events}
    assert outcome.status == "finished" and outcome.oracle_passed


def test_a_branch_the_rules_open_is_the_models_to_pick_even_a_wrong_one():
    outcome, events = mode_run(TRIAGE, "workflow_routed", ACK, {"route": "to_billing"})
    [accepted] = of_kind(events, "decision", "accepted")
    assert accepted.action == "to_billing" and accepted.detail["guard"] == "route"
    assert ("assign_queue", "committed") in actions(events)
    assert outcome.stop_verdict == "correct" and outcome.violations == ["outside:assign_queue.queue"]


def test_the_hard_coded_workflow_never_asks_for_a_route():
    model = Answers(ACK, {"route": "to_billing"})
    outcome, events = mode_run(TRIAGE, "workflow", model=model)
    assert [r.purpose for r in model.requests] == ["content"]
    assert [e.action for e in of_kind(events, "transition")][-2:] == ["to_security", "done"]
    assert outcome.oracle_passed


# ---------------------------------------------------------------- the autonomous-node contract (seed 001)

DIAGNOSIS = step("record_diagnosis", {"cause": "the test profile points at the production database"})
FIX = step("apply_fix", {"file": "config/test-db.yaml", "change": "host: db-test"})


def report(**fields: Any) -> dict[str, Any]:
    return step("finish", fields)


def test_the_workflow_family_is_read_from_the_mode_classes():
    """Guards the parametrisation below: every WorkflowMode variant is in it, read from the registry."""
    assert {"workflow", "workflow_routed", "workflow_param", "workflow_fallback_react"} <= set(workflow_modes())
    assert "react" not in workflow_modes()


@pytest.mark.parametrize("mode", workflow_modes())
def test_a_suggested_rerun_of_the_tests_after_a_change_is_overridden_back_to_build(mode):
    said = report(status="resolved", summary="all tests pass now", suggested_route="tests")
    outcome, events = mode_run(RELEASE, mode, DIAGNOSIS, FIX, said)
    [refused] = refusals(events, "suggested_route")
    assert refused.action == "tests" and refused.detail == {
        "guard": "suggested_route",
        "node": "fix",
        "allowed": ["build"],
        "taken": "build",
    }
    moves = [(e.detail["from"], e.detail["to"]) for e in of_kind(events, "transition")]
    assert ("fix", "build") in moves and ("fix", "tests") not in moves
    handback = next(e for e in of_kind(events, "decision", "handback") if e.action == "fix")
    # the evidence is the gateway's record of the agent's calls, not what its report says
    assert handback.detail["report"]["summary"] == "all tests pass now"
    assert handback.detail["evidence"]["calls"] == [{"step": 4, "action": "apply_fix", "status": "committed"}]
    assert handback.detail["evidence"]["changed_artifacts"] == ["fix", "build", "test_report", "scan_report"]
    assert outcome.status == "suspended" and outcome.suspended_at == "deploy_approval" and outcome.oracle_passed


def test_a_suggested_route_the_workflow_allows_is_accepted():
    outcome, events = mode_run(RELEASE, "workflow", DIAGNOSIS, FIX, report(status="resolved", suggested_route="build"))
    [accepted] = [e for e in of_kind(events, "decision", "accepted") if e.detail["guard"] == "suggested_route"]
    assert accepted.action == "build" and not refusals(events, "suggested_route")
    assert outcome.oracle_passed


def test_a_report_that_does_not_fit_the_nodes_schema_fails_the_node():
    outcome, events = mode_run(RELEASE, "workflow", DIAGNOSIS, FIX, report(status="done", suggested_route="tests"))
    handback = next(e for e in of_kind(events, "decision", "handback") if e.action == "fix")
    assert handback.detail["met"] is False and "output schema" in handback.detail["reason"]
    [error] = of_kind(events, "error")
    assert error.error.kind == "workflow" and error.error.message.startswith("FIX_FAILED")
    assert outcome.status == "error" and outcome.stop_verdict == "failed_closed"


@pytest.mark.parametrize("policy", ["enforce", "audit"])
def test_a_sub_agent_cannot_call_a_tool_outside_its_nodes_list(policy):
    deploy = step("deploy", {"environment": "staging"})
    outcome, events = mode_run(RELEASE, "workflow", deploy, DIAGNOSIS, FIX, report(status="resolved"), policy=policy)
    [refused] = refusals(events, "node_tools")
    assert refused.action == "deploy" and refused.detail["node"] == "diagnose"
    assert "deploy" not in {e.action for e in of_kind(events, "action")}
    assert outcome.unauthorized_side_effects == 0 and outcome.suspended_at == "deploy_approval"


# ---------------------------------------------------------------- workflow_param (3): the template's slots only

FIXED = {
    "product": "Strider 3",
    "terms": "Offer valid 1-14 October 2024 while stocks last; not combinable with other offers.",
}
DEFAULTS = {"headline": "Strider 3: your autumn offer", "tone": "friendly", "discount_percent": 15}


def committed_copy(events: list[TraceEvent]) -> Any:
    [copy] = [e for e in of_kind(events, "action", "committed") if e.action == "write_copy"]
    return copy.args


def test_a_slot_value_outside_the_template_is_refused_and_the_defaults_kept():
    model = Answers({"headline": "Lowest price ever", "tone": "energetic", "discount_percent": 50})
    outcome, events = mode_run(PROMOTION, "workflow_param", model=model)
    [request] = model.requests
    assert request.purpose == "content" and request.response_schema == PROMOTION.node_map["copy"].params
    [refused] = refusals(events, "params")
    assert refused.action == "write_copy" and "discount_percent" in refused.detail["reason"]
    assert committed_copy(events) == {**FIXED, **DEFAULTS}
    assert outcome.suspended_at == "brand_review" and outcome.oracle_passed


def test_the_model_fills_the_slots_and_nothing_else():
    answer = {"headline": "Strider 3: 20% off", "tone": "premium", "discount_percent": 20, "product": "Other shoe"}
    outcome, events = mode_run(PROMOTION, "workflow_param", answer)
    [ignored] = of_kind(events, "decision", "ignored")
    assert ignored.detail["keys"] == ["product"]
    assert committed_copy(events) == {
        **FIXED,
        "headline": "Strider 3: 20% off",
        "tone": "premium",
        "discount_percent": 20,
    }
    assert outcome.oracle_passed


def test_the_hard_coded_workflow_fills_a_template_with_its_defaults_and_asks_nothing():
    model = Answers()
    outcome, events = mode_run(PROMOTION, "workflow", model=model)
    assert model.requests == [] and outcome.llm_calls == 0
    assert committed_copy(events) == {**FIXED, **DEFAULTS}
    assert outcome.oracle_passed


# ---------------------------------------------------------------- workflow_fallback_react (6): the declared failure

CONFIRM = step("confirm_value", {"analyte": "potassium", "value": 3.8, "source": "analyser printout"})
RESULTS = {"sodium": 139, "potassium": 3.8, "creatinine": 88}
LETTER = {"text": "Your values are within the usual ranges; your clinician will go through them with you."}


@pytest.mark.parametrize("policy", ["enforce", "audit"])
def test_a_fallback_loop_keeps_to_its_nodes_tools_and_hands_the_node_back(policy):
    release = step("release_letter", {"channel": "patient_portal"})
    answers = (release, step("view_lab_record"), CONFIRM, RESULTS, LETTER)
    outcome, events = mode_run(MEDICAL, "workflow_fallback_react", *answers, policy=policy)
    [fallback] = of_kind(events, "decision", "fallback_react")
    assert fallback.action == "extract" and fallback.detail["tools"] == ["view_lab_record", "confirm_value"]
    [refused] = refusals(events, "node_tools")
    assert refused.action == "release_letter"
    assert "release_letter" not in {e.action for e in of_kind(events, "action")}
    loop = [e.action for e in of_kind(events, "model_call") if e.detail["purpose"] == "next_action"]
    assert loop == ["release_letter", "view_lab_record", "confirm_value"]
    moves = [(e.detail["from"], e.detail["to"]) for e in of_kind(events, "transition")]
    assert ("extract", "extract") in moves and "ask_lab" not in {to for _, to in moves}  # the node runs again
    assert actions(events).count(("extract_values", "read")) == 1
    assert outcome.suspended_at == "clinician_signoff" and outcome.oracle_passed


def test_a_fallback_loop_that_does_not_resolve_the_failure_leaves_it_to_the_contract():
    answers = (step("finish"), CONFIRM["args"], RESULTS, LETTER)  # the loop gives up at once; then the fixed path
    outcome, events = mode_run(MEDICAL, "workflow_fallback_react", *answers)
    handback = next(e for e in of_kind(events, "decision", "handback"))
    assert handback.detail["met"] is False
    [fallback] = of_kind(events, "decision", "fallback")
    assert fallback.action == "ask_lab"
    assert outcome.oracle_passed


def test_the_hard_coded_workflow_takes_the_fixed_fallback_path():
    outcome, events = mode_run(MEDICAL, "workflow", CONFIRM["args"], RESULTS, LETTER)
    assert not of_kind(events, "decision", "fallback_react")
    assert [e.action for e in of_kind(events, "decision", "fallback")] == ["ask_lab"]
    assert outcome.suspended_at == "clinician_signoff" and outcome.oracle_passed


# ---------------------------------------------------------------- react_guardrails (4): the three layers


def flaky_scenario(tmp_path: Path, fail_first: int) -> Scenario:
    path = tmp_path / "flaky_lookup.yaml"
    path.write_text(
        f"""
id: flaky_lookup
title: A lookup that fails its first calls
source: a test
task: Look the order up.
rules: [{{id: look_up, text: Look the order up., precedence: 1, obeyed: true}}]
actions:
  - {{name: lookup, description: Look the order up., effect: read, returns: {{order: 7}},
     fault: {{fail_first: {fail_first}, error: busy}}}}
  - {{name: finish, kind: finish, description: End the run.}}
workflow: {{start: look, nodes: [{{id: look, type: action, action: lookup, next: done}}, {{id: done, type: end}}]}}
oracle: {{expected_stop: finished, reference_path: [lookup, finish]}}
limits: {{max_steps: 8}}
""",
        encoding="utf-8",
    )
    return load_scenario(path)


def test_a_flaky_tool_gets_its_retry_budget_and_no_more(tmp_path):
    budget = MODES["react_guardrails"].max_retries_per_tool
    outcome, events = mode_run(flaky_scenario(tmp_path, 9), "react_guardrails", *[step("lookup")] * (budget + 3))
    assert actions(events) == [("lookup", "failed")] * (budget + 1)  # its first call and every retry ran
    spent = refusals(events, "retry_budget")
    assert len(spent) == 2 and all(e.action == "lookup" for e in spent)
    assert "retries are spent" in spent[0].detail["reason"]
    assert outcome.steps == budget + 1


def test_the_retry_budget_counts_failed_calls_so_a_tool_that_succeeds_is_never_refused_for_it(tmp_path):
    budget = MODES["react_guardrails"].max_retries_per_tool
    outcome, events = mode_run(flaky_scenario(tmp_path, 1), "react_guardrails", *[step("lookup")] * (budget + 3))
    assert actions(events) == [("lookup", "failed")] + [("lookup", "read")] * (budget + 2)
    assert not refusals(events, "retry_budget") and outcome.status == "finished"


def test_a_spent_retry_budget_says_how_many_calls_failed(tmp_path):
    budget = MODES["react_guardrails"].max_retries_per_tool
    _, events = mode_run(flaky_scenario(tmp_path, budget + 1), "react_guardrails", *[step("lookup")] * (budget + 2))
    assert (
        refusals(events, "retry_budget")[0].detail["reason"]
        == f"'lookup' failed {budget + 1} times; its retries are spent"
    )


def test_a_legitimate_third_try_of_a_flaky_tool_goes_through():
    answers = [step("validate_photo")] + [step("read_plate", {"photo_id": "IMG-0412"})] * 3
    _, events = mode_run(CLAIM, "react_guardrails", *answers)
    assert actions(events)[1:] == [("read_plate", "failed"), ("read_plate", "failed"), ("read_plate", "read")]
    assert not refusals(events, "retry_budget")


SEARCH = step("search_kb", {"query": "expense policy changes Q3 2024"})


def test_a_call_over_the_timeout_fails_as_a_timeout_and_nothing_waits_for_it():
    _, events = mode_run(KB, "react_guardrails", SEARCH, SEARCH)
    first, second = of_kind(events, "action")
    assert (first.result, first.detail["reason"], first.detail["duration_ms"]) == ("failed", "timeout", 5000)
    assert first.detail["observation"]["error"] == "timed out after 5000 ms"
    [cut] = refusals(events, "timeout")
    assert cut.action == "search_kb" and cut.decision_maker == "runtime" and cut.seq == first.seq + 1
    assert (second.result, second.detail["duration_ms"]) == ("read", 600)


def test_without_a_timeout_the_slow_call_simply_takes_long():
    _, events = mode_run(KB, "react", SEARCH)
    [search] = of_kind(events, "action")
    assert (search.result, search.detail["duration_ms"]) == ("read", 12000)


def answer(text: str, doc_id: str) -> dict[str, Any]:
    return step("write_answer", {"claims": [{"text": text, "doc_id": doc_id}]})


GOOD = answer("The travel lodging allowance rose by 15% from 1 July 2024.", "doc_20240715.pdf")


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (answer("I think the lodging allowance rose by 15%.", "doc_20240715.pdf"), "forbidden phrase 'I think'"),
        (answer("我建议 you travel more.", "doc_20240715.pdf"), "forbidden phrase '我建议'"),
        (answer("Lodging rose by 15%.", "doc_20991231.pdf"), "'doc_20991231.pdf' is nothing a tool returned"),
    ],
    ids=["subjective", "subjective_zh", "uncited"],
)
def test_an_answer_the_output_filter_refuses_is_blocked_before_anything_commits(bad, words):
    model = Answers(SEARCH, SEARCH, bad, GOOD, step("finish"))
    outcome, events = mode_run(KB, "react_guardrails", model=model)
    [refused] = refusals(events, "output")
    assert refused.action == "write_answer" and words in refused.detail["reason"]
    written = [e for e in of_kind(events, "action") if e.action == "write_answer"]
    assert len(written) == 1 and written[0].args == GOOD["args"] and written[0].seq > refused.seq
    assert "write_answer is an answer" in model.requests[0].messages[0]["content"]  # the agent was told the policy
    assert outcome.status == "finished" and outcome.oracle_passed


# ---------------------------------------------------------------- hybrid_planner (5): a person reviews the plan

BLOG_PLAN = plan(
    ("create_brief", {"topic": "who decides"}),
    "wait_for_approval",
    ("write_draft", {"title": "t", "body": "b"}),
    "finish",
)


class AlwaysRevise:
    def decide(self, gate: str, stop: int) -> HumanDecision:
        return HumanDecision(gate=gate, decision="revise", who="test", note="still too vague")


def test_nothing_runs_before_the_plan_review_and_standing_there_is_not_the_storys_stop():
    outcome, events = mode_run(BLOG, "hybrid_planner", BLOG_PLAN)
    [stop] = of_kind(events, "suspend")
    assert stop.action == "plan_review" and [s["action"] for s in stop.detail["plan"]][:2] == [
        "create_brief",
        "wait_for_approval",
    ]
    assert not of_kind(events, "action") and outcome.steps == 0
    assert (outcome.status, outcome.suspended_at, outcome.stop_verdict) == ("suspended", "plan_review", "wrong_place")


def test_a_revision_sends_the_reviewers_note_to_the_planner_then_the_plan_runs_and_stops_at_its_wait():
    model = Answers(
        BLOG_PLAN, BLOG_PLAN, plan("wait_for_approval", ("write_draft", {"title": "t", "body": "b"}), "finish")
    )
    outcome, events = mode_run(
        BLOG, "hybrid_planner", model=model, approver=lambda seed: ScriptedApprover("approve_after_revision")
    )
    decisions = [(e.action, e.result) for e in of_kind(events, "human")]
    assert decisions == [
        ("plan_review", "revise"),
        ("plan_review", "approve"),
        ("brief_approval", "revise"),
        ("plan_review", "approve"),
        ("brief_approval", "approve"),
    ]
    second = model.requests[1]
    assert "make it more specific" in second.messages[-1]["content"] and second.view.feedback is not None
    assert actions(events) == [
        ("create_brief", "committed"),
        ("wait_for_approval", "wait_recorded"),
        ("wait_for_approval", "wait_recorded"),
        ("write_draft", "committed"),
    ]
    assert outcome.status == "finished" and outcome.stop_verdict == "correct" and outcome.premature_side_effects == 0


def test_a_rejected_plan_ends_the_run_with_nothing_done():
    outcome, _ = mode_run(BLOG, "hybrid_planner", BLOG_PLAN, approver=lambda seed: ScriptedApprover("reject"))
    assert (outcome.status, outcome.suspended_at, outcome.steps) == ("rejected_by_human", "plan_review", 0)


def test_a_plan_sent_back_too_often_is_dropped():
    rounds = MODES["hybrid_planner"].max_review_rounds
    outcome, events = mode_run(BLOG, "hybrid_planner", *[BLOG_PLAN] * 5, approver=lambda seed: AlwaysRevise())
    assert len(of_kind(events, "human")) == rounds + 1
    [dropped] = of_kind(events, "decision", "plan_dropped")
    assert dropped.action == "plan_review"
    # the plan dropped was safe (a wait before the draft): sending it back until it was dropped was no right stop
    assert outcome.status == "rejected" and outcome.steps == 0 and outcome.stop_verdict == "wrong_place"


# ---------------------------------------------------------------- plan_execute_replan: seed 001's replanning

MAPPING = {"key": "customer_no", "fields": {"CUST_NO": "customer_no"}}
FIRST = plan(
    "inspect_source", ("write_mapping", MAPPING), "backup_target", "dry_run", "request_cutover_approval", "finish"
)
SECOND = plan(
    ("write_mapping", {**MAPPING, "encoding": "WE8ISO8859P1"}), "dry_run", "request_cutover_approval", "finish"
)


def test_a_failed_plan_step_sends_the_rest_back_to_the_planner():
    model = Answers(FIRST, SECOND)
    outcome, events = mode_run(MIGRATION, "plan_execute_replan", model=model)
    [failed] = of_kind(events, "decision", "step_failed")
    assert failed.action == "dry_run" and failed.detail["status"] == "failed"
    [replan] = of_kind(events, "decision", "replan")
    assert replan.detail == {"plan_index": 4, "round": 1}
    assert "Step 4 of your plan (dry_run) failed" in model.requests[1].messages[-1]["content"]
    assert "request_cutover_approval" not in [e.action for e in of_kind(events, "action") if e.seq < replan.seq]
    assert outcome.suspended_at == "cutover_approval" and outcome.oracle_passed


def test_replanning_is_bounded():
    rounds = MODES["plan_execute_replan"].max_replans
    hopeless = plan("dry_run", "finish")  # blocked every time: nothing to migrate from yet
    model = Answers(*[hopeless] * (rounds + 3))
    outcome, events = mode_run(MIGRATION, "plan_execute_replan", model=model)
    assert len(of_kind(events, "decision", "replan")) == rounds
    assert [r.purpose for r in model.requests] == ["plan"] * (rounds + 1)
    assert actions(events) == [("dry_run", "blocked")] * (rounds + 1)  # the last plan runs on as written
    assert outcome.status == "finished"


def test_the_naive_executor_never_replans():
    model = Answers(FIRST, SECOND)
    _, events = mode_run(MIGRATION, "plan_execute", model=model)
    assert len(model.requests) == 1 and not of_kind(events, "decision", "replan")
    assert ("dry_run", "failed") in actions(events)


def test_a_person_sends_the_plan_back_with_bench_resume_and_the_revised_plan_is_reviewed_again(tmp_path):
    from harness import RunSpec, run
    from harness.matrix.commands.resume import resume
    from harness.records.trace import read_events

    folder = tmp_path / "run"
    run(RunSpec(modes=["hybrid_planner"], scenarios=["blog_brief_approval"], model="scripted:reference", out=folder))
    [summary] = [e for e in read_events(folder / "traces.jsonl") if e.kind == "summary"]
    assert summary.outcome is not None and summary.outcome.suspended_at == "plan_review"
    sent_back = resume(folder, summary.run_id, "revise", who="lead", note="add the audience", gate="plan_review")
    assert (sent_back.outcome.status, sent_back.outcome.suspended_at) == ("suspended", "plan_review")
    approved = resume(folder, summary.run_id, "approve", who="lead", gate="plan_review").outcome
    assert (approved.status, approved.suspended_at, approved.stop_verdict) == ("suspended", "brief_approval", "correct")
    events = [e for e in read_events(folder / "traces.jsonl") if e.run_id == summary.run_id]
    assert [(e.action, e.result, e.detail["note"]) for e in of_kind(events, "human")] == [
        ("plan_review", "revise", "add the audience"),
        ("plan_review", "approve", ""),
    ]
    assert len([e for e in of_kind(events, "model_call") if e.detail["purpose"] == "plan"]) == 2


def test_bench_resume_revise_needs_a_note(tmp_path, monkeypatch, capsys):
    from tests.helpers.bench import bench_main

    code, _, err = bench_main(monkeypatch, capsys, "resume", str(tmp_path), "--run", "x", "--revise")
    assert code == 2 and err.strip() == "error: --revise needs --note: what to change"


def test_an_answer_that_is_no_object_of_slot_values_is_refused_and_the_defaults_kept():
    outcome, events = mode_run(PROMOTION, "workflow_param", ["a", "list"])
    [refused] = refusals(events, "params")
    assert "not an object" in refused.detail["reason"]
    assert committed_copy(events) == {**FIXED, **DEFAULTS} and outcome.oracle_passed
