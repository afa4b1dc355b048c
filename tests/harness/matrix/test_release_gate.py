"""The release gate's pieces: an injection read from NODE=ERROR, the route checks against a node's contract, and
the sampled audit of a run folder's gateway records (hashes present and recomputed from the recorded line)."""

from __future__ import annotations

import json

import pytest

from harness.errors import UserInputError
from harness.matrix.commands.release_gate import Injection, audit_log, gate_check
from harness.records.folder import TRACE_FILE


def test_an_injection_reads_a_bare_code_as_an_http_error():
    assert Injection.parse("plate=404") == Injection("plate", "HTTP 404: injected by bench gate-check")
    assert Injection.parse(" plate = reader offline ").error == "reader offline"
    for bad in ("plate", "=404", "plate="):
        with pytest.raises(UserInputError, match="NODE=ERROR"):
            Injection.parse(bad)


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate") / "run"
    return gate_check("claim_desk_safeguards", Injection.parse("policy=404"), out=out, sample=50, seed=1)


def test_an_injected_error_takes_the_declared_retry_then_terminate_route(gate_run):
    assert gate_run.passed, [c.line() for c in gate_run.checks]
    names = [c.name for c in gate_run.checks]
    assert names[:3] == ["injected error reached the step", "retry: 1", "terminate: POLICY_SERVICE_DOWN"]


def test_the_audit_finds_a_record_whose_result_was_changed_after_the_run(gate_run, tmp_path):
    lines = (gate_run.folder / TRACE_FILE).read_text(encoding="utf-8").splitlines()
    tampered = []
    for line in lines:
        event = json.loads(line)
        if event["kind"] == "action":
            event["detail"]["observation"] = {"error": "edited"}
        tampered.append(json.dumps(event))
    (tmp_path / TRACE_FILE).write_text("\n".join(tampered) + "\n", encoding="utf-8")
    checks = audit_log(tmp_path, sample=50)
    assert not checks[0].passed
    assert {c.seen for c in checks[1:]} == {"output_hash is not the hash of the recorded result"}


def test_the_audit_finds_a_record_without_hashes(gate_run, tmp_path):
    lines = [json.loads(line) for line in (gate_run.folder / TRACE_FILE).read_text(encoding="utf-8").splitlines()]
    for event in lines:
        if event["kind"] == "action":
            del event["detail"]["input_hash"]
    (tmp_path / TRACE_FILE).write_text("\n".join(json.dumps(e) for e in lines) + "\n", encoding="utf-8")
    assert {c.seen for c in audit_log(tmp_path)[1:]} == {"input_hash missing"}


def test_the_sample_is_seeded_and_bounded(gate_run):
    first, again = audit_log(gate_run.folder, sample=1, seed=4), audit_log(gate_run.folder, sample=1, seed=4)
    assert first == again and first[0].seen.startswith("1 of ")
