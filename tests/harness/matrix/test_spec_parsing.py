"""RunSpec reads --model, --approver and --gateway once into their types, and a run uses those values: nothing
downstream parses the strings again. An unknown value is one line naming the registered ones."""

from __future__ import annotations

import json

import pytest

import harness.matrix.pipeline.driver as pipeline
import harness.matrix.pipeline.spec as spec_module
from harness.choices import DEFAULT_GATEWAY_POLICY, GATEWAY_POLICIES
from harness.core.approvals import SCRIPTED_APPROVERS, ApproverSpec
from harness.errors import UserInputError
from harness.matrix.pipeline.driver import plan, run
from harness.matrix.pipeline.spec import RunSpec
from harness.models.choice import MODEL_SOURCES, RECORDED_MODEL, ModelChoice
from harness.models.scripted import POLICIES
from tests.helpers.bench import SCENARIOS

AUDIT_RECORDING = RECORDED_MODEL.with_name("smollm2-135m-audit")


def test_the_model_string_a_caller_gives_becomes_a_typed_choice():
    spec = RunSpec(model="scripted:eager")
    assert spec.model == ModelChoice("scripted", name="eager")
    assert spec.model.recorded_as == "scripted" and not spec.model.live


def test_no_model_is_the_committed_recording_replayed():
    spec = RunSpec()
    assert spec.model == ModelChoice("replay", folder=RECORDED_MODEL)
    assert "models" not in spec.model_fields_set  # a --resume still sees that no --model was given


def test_a_choice_already_made_is_kept_as_it_is():
    choice = ModelChoice("scripted", name="reference")
    assert RunSpec(model=choice).model is choice


def test_the_approver_string_becomes_a_typed_spec_that_makes_each_runs_approver():
    spec = RunSpec(model="scripted:eager", approver="scripted:approve_after_revision")
    assert spec.approver == ApproverSpec("approve_after_revision")
    first, second = spec.approver.for_run(1), spec.approver.for_run(1)
    assert first is not second  # a fresh approver per run: runs never share its state
    assert first.decide("g", 0).decision == "revise" and second.decide("g", 0).decision == "revise"


def test_a_spec_dumps_back_to_the_strings_it_was_given():
    dumped = RunSpec(model="scripted:eager", approver="scripted:reject", gateway="audit").model_dump(mode="json")
    assert (dumped["models"], dumped["approver"], dumped["gateway"]) == (["scripted:eager"], "scripted:reject", "audit")


def test_each_flag_is_parsed_once_for_a_whole_run(monkeypatch, tmp_path):
    parsed = {"model": 0, "approver": 0}
    scripted = MODEL_SOURCES["scripted"]
    parse_model, parse_approver = scripted.parse, spec_module.parse_approver

    def counting_model(value: str, argument: str) -> ModelChoice:
        parsed["model"] += 1
        return parse_model(value, argument)

    def counting_approver(value: str) -> ApproverSpec:
        parsed["approver"] += 1
        return parse_approver(value)

    monkeypatch.setattr(scripted, "parse", counting_model)
    monkeypatch.setattr(spec_module, "parse_approver", counting_approver)
    monkeypatch.setattr(pipeline, "parse_approver", counting_approver)
    spec = RunSpec.build(
        modes="workflow,react",
        scenarios=["blog_brief_approval"],
        scenarios_dir=SCENARIOS,
        model="scripted:compliant",
        approver="scripted:approve",
        gateway="audit",
        out=tmp_path / "run",
    )
    result = run(spec)
    assert parsed == {"model": 1, "approver": 1}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (manifest["model_choice"], manifest["approver"], manifest["gateway_policy"]) == (
        "scripted:compliant",
        "scripted:approve",
        "audit",
    )
    assert result.manifest.runs == 2


def test_no_gateway_given_is_the_one_default_and_a_replay_keeps_its_recordings():
    assert plan(RunSpec(model="scripted:eager", scenarios=["blog_brief_approval"]), SCENARIOS).gateway_policy == (
        DEFAULT_GATEWAY_POLICY
    )
    recorded_audit = RunSpec(model=f"replay:{AUDIT_RECORDING}")
    assert plan(recorded_audit, SCENARIOS).gateway_policy == "audit"
    given = RunSpec(model=f"replay:{AUDIT_RECORDING}", gateway="enforce")
    assert plan(given, SCENARIOS).gateway_policy == "enforce"


def test_an_unknown_model_names_every_registered_source_and_policy():
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(model="gpt-4o")
    message = str(caught.value)
    assert message.startswith("--model gpt-4o: unknown model")
    assert all(kind.usage() in message for kind in MODEL_SOURCES.values())
    assert f"scripted:{'|'.join(POLICIES)}" in message


def test_an_unknown_scripted_policy_names_the_known_ones():
    with pytest.raises(UserInputError) as caught:
        RunSpec(model="scripted:lazy")
    assert f"unknown scripted policy 'lazy'; known: {', '.join(sorted(POLICIES))}" in str(caught.value)


def test_an_unknown_approver_names_every_registered_one():
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(approver="boss")
    message = str(caught.value)
    assert "unknown approver 'boss'" in message
    assert all(f"scripted:{name}" in message for name in SCRIPTED_APPROVERS)


def test_an_unknown_gateway_policy_names_the_known_ones():
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(gateway="off")
    message = str(caught.value)
    assert message.startswith("--gateway:") and "'off'" in message
    assert all(f"'{policy}'" in message for policy in GATEWAY_POLICIES)


def test_a_value_of_the_wrong_type_is_one_line_naming_the_flag():
    for field, flag in (("model", "--model"), ("approver", "--approver")):
        with pytest.raises(UserInputError, match=f"^{flag}: must be an? {flag} value"):
            RunSpec.build(**{field: 42})
