"""The manifest, the outcome and the checkpoint hold the gateway policy as the CLI's Literal, not a string: the files
they write are byte for byte what they were, old files read as before, and a policy bench does not know is refused
on reading, naming the field."""

from __future__ import annotations

import json

import pytest

from harness.choices import GatewayPolicy
from harness.errors import UserInputError
from harness.models.choice import RECORDED_MODEL
from harness.records.checkpoint import Checkpoint
from harness.records.manifest import MANIFEST_FILE, Manifest, read_manifest
from harness.records.trace import RunOutcome, read_events

RECORDINGS = [RECORDED_MODEL, RECORDED_MODEL.with_name("smollm2-135m-audit")]


@pytest.mark.parametrize("record", [Manifest, RunOutcome, Checkpoint])
def test_the_gateway_policy_is_the_clis_literal(record):
    assert record.model_fields["gateway_policy"].annotation == GatewayPolicy


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_a_committed_manifest_is_written_back_byte_for_byte(recording, tmp_path):
    manifest = read_manifest(recording)
    manifest.write(tmp_path)
    assert (tmp_path / MANIFEST_FILE).read_bytes() == (recording / MANIFEST_FILE).read_bytes()


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_a_committed_summary_line_is_written_back_byte_for_byte(recording):
    lines = (recording / "traces.jsonl").read_text().splitlines()
    events = read_events(recording / "traces.jsonl")
    summaries = [(line, event) for line, event in zip(lines, events, strict=True) if event.outcome is not None]
    assert summaries
    assert all(event.model_dump_json() == line for line, event in summaries[:50])


def test_a_manifest_with_a_policy_bench_does_not_know_is_one_line_naming_the_field(tmp_path):
    data = json.loads((RECORDED_MODEL / MANIFEST_FILE).read_text())
    (tmp_path / MANIFEST_FILE).write_text(json.dumps({**data, "gateway_policy": "off"}))
    with pytest.raises(UserInputError, match=r"manifest.json: gateway_policy: Input should be 'enforce' or 'audit'"):
        read_manifest(tmp_path)


def test_a_schema_1_manifest_still_reads_with_its_policy_typed(tmp_path):
    old = {
        "modes": ["react"],
        "scenarios": ["blog_brief_approval"],
        "model": "scripted:eager",
        "model_source": "scripted",
        "trials": 1,
        "seed": 0,
        "gateway_policy": "audit",
        "concurrency": 1,
        "start_time": "2024-01-01T00:00:00+00:00",
    }
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(old))
    manifest = read_manifest(tmp_path)
    assert manifest.gateway_policy == "audit" and manifest.schema_version == 1
