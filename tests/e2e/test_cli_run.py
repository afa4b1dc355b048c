"""``bench run`` and ``bench list`` end to end, and the one-line errors of bad input."""

from __future__ import annotations

import json

import pytest

from harness.records.trace import TraceEvent
from modes import select_modes
from tests.helpers.bench import SCENARIOS
from tests.helpers.bench import bench_in_process as bench

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

REQUIRED_FIELDS = [
    "schema_version",
    "run_id",
    "scenario",
    "mode",
    "model",
    "trial",
    "seq",
    "step",
    "ts",
    "decision_maker",
    "kind",
    "action",
    "args",
    "result",
    "latency_ms",
    "usage",
    "error",
]


def test_run_writes_traces_and_manifest(tmp_path):
    out = tmp_path / "run"
    result = bench(
        "run",
        "--mode",
        "all",
        "--scenario",
        "blog_brief_approval",
        "--model",
        "scripted:looping",
        "--trials",
        "2",
        "--seed",
        "7",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    for mode in BUILT_IN:
        assert mode in result.stdout
    lines = (out / "traces.jsonl").read_text().splitlines()
    runs = set()
    for line in lines:
        raw = json.loads(line)  # every line parses on its own
        assert all(field in raw for field in REQUIRED_FIELDS), raw
        event = TraceEvent.model_validate(raw)
        runs.add(event.run_id)
        if event.kind == "model_call":
            assert event.usage is not None and event.latency_ms is not None
    summaries = [json.loads(line) for line in lines if json.loads(line)["kind"] == "summary"]
    assert len(summaries) == len(runs) == len(BUILT_IN) * 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["runs"] == len(BUILT_IN) * 2
    assert manifest["model"] == "scripted:looping" and manifest["trials"] == 2 and manifest["seed"] == 7
    assert manifest["scenarios"] == ["blog_brief_approval"] and manifest["modes"] == select_modes([])
    assert manifest["start_time"] <= manifest["end_time"] and "python" in manifest["versions"]


def test_run_without_out_makes_a_new_folder_under_results(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "blog_brief_approval.yaml").write_text(
        (SCENARIOS / "blog_brief_approval.yaml").read_text()
    )
    result = bench("run", "--mode", "workflow", "--model", "scripted:compliant", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [folder] = list((tmp_path / "results").iterdir())
    assert (folder / "traces.jsonl").exists() and (folder / "manifest.json").exists()


def test_list_shows_modes_and_scenarios():
    result = bench("list")
    assert result.returncode == 0, result.stderr
    for name in (*BUILT_IN, "blog_brief_approval"):
        assert name in result.stdout


@pytest.mark.parametrize(
    "args, names",
    [
        (["--mode", "reactt"], ["mode", "reactt", "react, react_guardrails"]),
        (["--mode", "react_guarded"], ["mode 'react_guarded' is now 'react_guardrails'", "--mode react_guardrails"]),
        (["--scenario", "nope"], ["scenario", "nope", "blog_brief_approval"]),
        (["--model", "gpt:x"], ["model", "gpt:x"]),
        (["--model", "scripted:lazy"], ["scripted policy", "lazy", "compliant, eager, looping, random"]),
        (["--trials", "-1"], ["--trials", "-1"]),
        (["--gateway", "off"], ["--gateway", "'off'", "'enforce', 'audit'"]),
        (["--bogus"], ["--bogus"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, names):
    result = bench("run", *args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for name in names:
        assert name in lines[0]
    assert not (tmp_path / "out" / "traces.jsonl").exists()


def test_malformed_scenario_names_file_and_field(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    text = (SCENARIOS / "blog_brief_approval.yaml").read_text().replace("max_steps: 4", "max_steps: three")
    (folder / "blog_brief_approval.yaml").write_text(text)
    result = bench(
        "run", "--model", "scripted:compliant", "--scenarios-dir", str(folder), "--out", str(tmp_path / "out")
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "blog_brief_approval.yaml" in line and "limits.max_steps" in line


def test_existing_trace_is_never_overwritten(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "traces.jsonl").write_text('{"kept": true}\n')
    result = bench("run", "--model", "scripted:compliant", "--out", str(out))
    assert result.returncode == 2 and "not empty" in result.stderr
    assert (out / "traces.jsonl").read_text() == '{"kept": true}\n'
