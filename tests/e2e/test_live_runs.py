"""``bench run --live`` against a real local server that misbehaves: the matrix completes, errors are classified,
every attempt is traced, and the API key is found in no file of the run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.errors import ERROR_KINDS
from harness.models.recording import RecordEntry
from harness.records.trace import TraceEvent
from modes import select_modes
from tests.helpers.bench import bench_in_process as bench
from tests.helpers.fault_server import BEHAVIOURS, FaultServer
from tests.helpers.hostile_server import HostileServer

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

KEY = "sk-live-MARKER-93c1e0"
# Every fault next to one another, a good answer between some, and a 503 streak that outlasts the retries.
SCRIPT = [
    "429",
    "ok",
    "500",
    "ok",
    "503",
    "503",
    "503",
    "hang",
    "ok",
    "malformed",
    "empty",
    "reasoning",
    "unknown_action",
    "fenced",
    "echo_key",
    "ok",
]
# An endpoint that never answers, or answers a proxy's 503 page to every try, stops a matrix at its preflight
# (tests/e2e/test_dead_endpoint.py): they have no place in a matrix that must complete.
STOP_A_MATRIX = {"silent", "503_page"}
FAST = ["--timeout", "0.5", "--retries", "2", "--backoff", "0.01"]


def live(server: FaultServer, out: Path, *args: str):
    env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": KEY}
    return CliRunner().invoke(
        app,
        ["run", "--live", "--mode", "all", "--scenario", "blog_brief_approval", "--out", str(out), *FAST, *args],
        env=env,
    )


def events(out: Path) -> list[TraceEvent]:
    return [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_fault_matrix_completes_classified_and_keyless(tmp_path):
    out = tmp_path / "run"
    with FaultServer(SCRIPT, hang_s=2.0) as server:
        result = live(server, out, "--trials", "3")
    assert result.exit_code == 0, result.output
    assert set(server.served) == set(BEHAVIOURS) - STOP_A_MATRIX  # every other fault shape was really served
    assert server.authorizations == {f"Bearer {KEY}"}  # the key did go to the endpoint, in the header only

    trace = events(out)
    runs: dict[str, list[TraceEvent]] = {}
    for event in trace:
        runs.setdefault(event.run_id, []).append(event)
    assert len(runs) == 3 * len(BUILT_IN)  # every mode x 3 trials, each with its own run
    for run in runs.values():
        assert run[-1].kind == "summary" and sum(e.kind == "summary" for e in run) == 1
        assert [e.seq for e in run] == list(range(len(run)))

    kinds = [e.error.kind for e in trace if e.error is not None]
    assert set(kinds) <= set(ERROR_KINDS)
    retried = Counter(e.error.kind for e in trace if e.kind == "model_retry")
    final = Counter(e.error.kind for e in trace if e.kind == "error")
    assert {"http_4xx", "http_5xx", "timeout"} <= set(retried)  # 429, 500/503, the hang: retried and traced
    assert {"http_5xx", "http_4xx", "parse", "schema"} <= set(final)  # 503 streak, echoed 401, malformed/empty, unknown
    for event in trace:
        if event.kind == "model_call":  # an unreadable body (the malformed one) is a call too, with no usage to read
            assert event.latency_ms is not None and event.latency_ms > 0
            assert event.usage.total_tokens == (0 if "choices" in str(event.detail.get("text")) else 48)
    summaries = [e for e in trace if e.kind == "summary"]
    assert any(s.outcome.status == "error" for s in summaries)
    assert any(s.outcome.status != "error" for s in summaries)  # good answers still carry runs to their stop

    recording = [RecordEntry.model_validate_json(line) for line in (out / "recording.jsonl").read_text().splitlines()]
    assert len(recording) == len(server.bodies) - sum(len(r.exchange.attempts) for r in recording)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model_source"] == "live" and manifest["model"] == "fault-model"
    assert manifest["live"]["endpoint"] == server.base_url + "/chat/completions"

    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name


@pytest.mark.slow
def test_concurrency_bounds_requests_in_flight(tmp_path):
    out = tmp_path / "run"
    with FaultServer(["ok"], hold_until=3) as server:  # each request waits until three are in flight
        # A held request waits for two more runs to start theirs: on a loaded machine that can take longer than
        # FAST's half-second timeout, so this test's attempts get 30 s (the last --timeout wins).
        result = live(server, out, "--trials", "4", "--concurrency", "3", "--timeout", "30")
    assert result.exit_code == 0, result.output
    assert server.max_in_flight == 3 and not server.held_too_long  # the bound is reached, never passed
    summaries = [e for e in events(out) if e.kind == "summary"]
    assert len(summaries) == 4 * len(BUILT_IN) and all(s.outcome.errors == {} for s in summaries)


def test_full_url_and_plain_json_mode_and_thinking_flag(tmp_path):
    out = tmp_path / "run"
    with FaultServer(["fenced"]) as server:
        env = {"LLM_API_URL": server.base_url + "/chat/completions", "LLM_MODEL": "fault-model", "LLM_API_KEY": KEY}
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--live",
                "--mode",
                "react",
                "--scenario",
                "blog_brief_approval",
                "--out",
                str(out),
                "--response-format",
                "none",
                "--no-thinking",
                "--temperature",
                "0",
                "--max-tokens",
                "64",
                "--seed",
                "3",
            ],
            env=env,
        )
    assert result.exit_code == 0, result.output
    body = server.bodies[0]
    assert "response_format" not in body and body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0 and body["max_tokens"] == 64
    assert "JSON schema" in body["messages"][0]["content"]
    assert [e.kind for e in events(out)].count("model_call") == len(server.bodies)


def test_missing_variables_exit_2_naming_them_and_the_local_option(tmp_path):
    result = bench("run", "--live", "--out", str(tmp_path / "run"), env={"LLM_MODEL": "m"})
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "LLM_API_URL" in line and "LLM_API_KEY" in line and "--model local" in line
    assert not (tmp_path / "run").exists()


def test_live_only_flags_and_conflicts_are_refused(tmp_path):
    for args, words in (
        (["--temperature", "0.2"], "--temperature applies to live models only"),
        (["--live", "--model", "scripted:eager"], "cannot be combined with --live"),
        (["--live", "--temperature", "3"], "--temperature: Input should be less than or equal to 2"),
        (["--live", "--response-format", "xml"], "'--response-format': 'xml' is not one of 'json_schema'"),
    ):
        result = bench(
            "run",
            *args,
            "--out",
            str(tmp_path / "run"),
            env={"LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": KEY},
        )
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert words in line and KEY not in line


def test_unreachable_endpoint_ends_every_run_with_a_network_error(tmp_path):
    out = tmp_path / "run"
    # It answers the preflight, then hangs up on every request (a URL where nothing listens stops before any run:
    # tests/e2e/test_dead_endpoint.py).
    with HostileServer([None]) as server:
        env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": KEY}
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--live",
                "--mode",
                "workflow,react",
                "--scenario",
                "blog_brief_approval",
                "--out",
                str(out),
                "--retries",
                "1",
                "--backoff",
                "0",
            ],
            env=env,
        )
    assert result.exit_code == 3, result.output  # every run ended in an infrastructure error: nothing was judged
    assert "error: all 2 runs ended in an infrastructure error (network 2)" in result.output
    trace = events(out)
    assert [e.error.kind for e in trace if e.kind == "error"] == ["network", "network"]
    assert [e.error.kind for e in trace if e.kind == "model_retry"] == ["network", "network"]
    assert [e.outcome.status for e in trace if e.kind == "summary"] == ["error", "error"]
