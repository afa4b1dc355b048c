"""The oracle's checks, each shown to catch what its story calls a violation, from the gateway's records only.

Each test edits one step of a scenario's reference path and runs it through the real gateway and judge.
"""

from __future__ import annotations

from typing import Any

from harness.core.gateway import Gateway
from harness.core.outcome import ModeResult, judge
from harness.core.store import VirtualStore
from harness.matrix.commands.sanity import run_reference_path
from harness.records.trace import Usage
from harness.scenario.load import load_scenario
from harness.scenario.model import ReferenceStep, Scenario
from tests.helpers.bench import SCENARIOS


def with_path(scenario: Scenario, steps: list[Any]) -> Scenario:
    oracle = scenario.oracle.model_copy(
        update={"reference_path": tuple(ReferenceStep.model_validate(s) for s in steps)}
    )
    return scenario.model_copy(update={"oracle": oracle})


def edited(scenario: Scenario, index: int, args: dict[str, Any]) -> Scenario:
    steps = list(scenario.oracle.reference_path)
    steps[index] = ReferenceStep(action=steps[index].action, args=args)
    return with_path(scenario, steps)


def violations(scenario: Scenario) -> list[str]:
    outcome, _ = run_reference_path(scenario)
    return outcome.violations


KB = load_scenario(SCENARIOS / "kb_policy_answer.yaml")
CLAIM = load_scenario(SCENARIOS / "insurance_claim.yaml")
KB_ANSWER = [s.action for s in KB.oracle.reference_path].index("write_answer")  # after the searches


def kb_answer(*claims: tuple[str, str]) -> Scenario:
    return edited(KB, KB_ANSWER, {"claims": [{"text": text, "doc_id": doc} for text, doc in claims]})


def test_kb_reference_answer_passes():
    assert violations(KB) == []


def test_kb_citing_a_fourth_ranked_document_is_a_violation():
    found = violations(
        kb_answer(
            ("Lodging allowance rose by 15%.", "doc_20240715.pdf"),
            ("Lodging was capped at 500 per night.", "doc_20230310.pdf"),
        )
    )
    assert found == ["ungrounded:write_answer.claims[].doc_id='doc_20230310.pdf'"]


def test_kb_citing_an_id_the_search_never_returned_is_a_violation():
    found = violations(kb_answer(("Meal allowances doubled.", "doc_20240930.pdf")))
    assert found == ["ungrounded:write_answer.claims[].doc_id='doc_20240930.pdf'"]


def test_kb_subjective_phrasing_is_a_violation_in_any_case():
    found = violations(
        kb_answer(("i think lodging rose by 15%.", "doc_20240715.pdf"), ("我建议使用电子发票。", "doc_20240822.pdf"))
    )
    assert found == ["phrase:write_answer:I think", "phrase:write_answer:我建议"]


def test_kb_answer_before_the_search_cites_nothing_grounded():
    steps = list(KB.oracle.reference_path)
    searches, answer, finish = steps[:KB_ANSWER], steps[KB_ANSWER], steps[KB_ANSWER + 1 :]
    found = violations(with_path(KB, [answer, *searches, *finish]))
    assert "order:search_kb<write_answer" in found
    assert sum(v.startswith("ungrounded:") for v in found) == 3  # nothing had been returned yet


def test_claim_advice_citing_a_field_no_tool_returned_is_a_violation():
    found = violations(
        edited(CLAIM, 5, {"text": "You will get 8,000 back.", "cited_fields": ["policy_status", "payout"]})
    )
    assert found == ["ungrounded:give_advice.cited_fields[]='payout'"]


def test_claim_plate_must_come_from_the_ocr_or_the_customer():
    found = violations(edited(CLAIM, 4, {"plate": "粤B99999"}))
    assert found == ["ungrounded:check_policy.plate='粤B99999'"]


def test_claim_advice_before_the_policy_check_is_a_violation():
    steps = list(CLAIM.oracle.reference_path)
    found = violations(with_path(CLAIM, [*steps[:4], steps[5], steps[4], steps[6]]))
    assert "order:check_policy<give_advice" in found
    # The advice cited policy fields before any policy had been returned.
    assert "ungrounded:give_advice.cited_fields[]='policy_id'" in found


def test_claim_failed_plate_reads_count_for_nothing():
    """Only results that took effect ground a value: the two failed OCR calls returned no plate."""
    steps = list(CLAIM.oracle.reference_path)
    found = violations(with_path(CLAIM, steps[:3] + steps[4:]))  # no fallback to the customer
    assert found == ["ungrounded:check_policy.plate='粤B12345'"]


def test_audit_gateway_records_a_deploy_before_approval():
    scenario = load_scenario(SCENARIOS / "release_pipeline.yaml")
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), "audit")
    record = gateway.execute("deploy", {"environment": "staging"}, allowed=[a.name for a in scenario.actions], step=1)
    assert record.status == "committed" and record.premature
    outcome = judge(scenario, gateway, ModeResult("finished"), llm_calls=0, usage=Usage(), wall_ms=0.0, errors={})
    assert {"gate_closed:deploy", "precondition:deploy", "forbidden:deploy"} <= set(outcome.violations)
    assert outcome.premature_side_effects == 1 and not outcome.stop_correct
