"""A dead endpoint is found out at once: a URL where nothing listens, or that serves a web page, stops ``bench run
--model live`` and ``bench probe`` before any run with one line (exit 3) naming the URL and what came back; a
matrix whose runs keep failing alike stops after ``--stop-after-failures`` of them, says why in the manifest,
and ``--resume`` continues it once the endpoint answers."""

from __future__ import annotations

import json
import socket

import pytest

from harness.models.dead_endpoint import DEFAULT_STOP_AFTER
from harness.records.trace import TraceEvent
from tests.helpers.bench import bench_in_process as bench
from tests.helpers.fault_server import FaultServer
from tests.helpers.hostile_server import HostileServer

KEY = "sk-dead-endpoint-test-0000"
NOT_AN_ENDPOINT = "does not look like an OpenAI-compatible endpoint"
PAGE = b"<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body><h1>It works</h1></body></html>"


def closed_port() -> int:
    """A port nothing listens on: every connection is refused at once."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        return taken.getsockname()[1]


def live_env(url: str) -> dict[str, str]:
    return {"LLM_API_URL": url, "LLM_MODEL": "m", "LLM_API_KEY": KEY}


def test_a_live_matrix_against_a_port_where_nothing_listens_exits_3_before_any_run(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = tmp_path / "run"
    result = bench("run", "--model", "live", "--mode", "all", "--scenario", "all", "--out", str(out), env=live_env(url))
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {url}/chat/completions {NOT_AN_ENDPOINT}: no connection (ConnectError"), line
    assert KEY not in line and "Traceback" not in result.stderr
    assert not out.exists()  # no run started, so nothing is left behind


@pytest.mark.slow
def test_a_url_that_serves_a_web_page_is_named_once_with_its_title(tmp_path):
    with HostileServer([PAGE], content_type="text/html", answers_preflight=True) as server:
        run = bench("run", "--model", "live", "--out", str(tmp_path / "run"), env=live_env(server.base_url))
        probe = bench("probe", env=live_env(server.base_url))
    for result in (run, probe):
        assert result.returncode == 3, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert NOT_AN_ENDPOINT in line and "HTTP 200, not JSON: text/html" in line, line
        assert "a web page titled 'Welcome to nginx!'" in line and "<html>" not in line, line
    assert probe.stdout.count("Welcome to nginx") == 0 and probe.stderr.count("Welcome to nginx") == 1
    assert not (tmp_path / "run").exists()


def test_a_404_on_the_chat_path_is_no_endpoint_whatever_its_body():
    with HostileServer([json.dumps({"detail": "Not Found"}).encode()], status=404, answers_preflight=True) as server:
        result = bench("probe", env=live_env(server.base_url))
    assert result.returncode == 3 and "HTTP 404, application/json" in result.stderr, result.stderr


def summaries(out) -> list[TraceEvent]:
    lines = (out / "traces.jsonl").read_text().splitlines()
    return [e for e in (TraceEvent.model_validate_json(line) for line in lines) if e.kind == "summary"]


@pytest.mark.slow
def test_runs_failing_alike_stop_the_matrix_after_k_and_resume_continues_it(tmp_path):
    out = tmp_path / "run"
    args = ("--mode", "all", "--scenario", "blog_brief_approval", "--trials", "2", "--retries", "0")
    with FaultServer(["503"]) as server:  # answers the preflight, then fails every request
        stopped = bench(
            "run",
            "--model",
            "live",
            *args,
            "--stop-after-failures",
            "3",
            "--out",
            str(out),
            env=live_env(server.base_url),
        )
        assert server.served["503"] == 3  # at concurrency 1, no request after the third failed run
    assert stopped.returncode == 3, stopped.stderr
    (line,) = [x for x in stopped.stderr.splitlines() if x.startswith("error: ")]
    assert line.startswith("error: stopped after 3 runs in a row ended in http_5xx (the last: HTTP 503"), line
    assert f"bench run --resume {out} continues it" in line
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["runs"] == 3
    assert manifest["stopped_because"].startswith("stopped after 3 runs in a row ended in http_5xx")
    assert [s.outcome.errors for s in summaries(out)] == [{"http_5xx": 1}] * 3

    with FaultServer(["ok"]) as server:
        resumed = bench("run", "--resume", str(out), env=live_env(server.base_url))
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "stopped_because" not in manifest
    assert len(summaries(out)) == manifest["runs"] == 2 * len(manifest["modes"])


def test_a_streak_broken_by_a_run_that_ends_otherwise_does_not_stop_the_matrix(tmp_path):
    out = tmp_path / "run"
    # Two runs fail at the endpoint, the third on the model's own answer (an action nobody offered), and again.
    with FaultServer(["503", "503", "unknown_action"]) as server:
        result = bench(
            "run", "--model", "live", "--mode", "react", "--scenario", "blog_brief_approval", "--trials", "9",
            "--retries", "0", "--stop-after-failures", "3", "--out", str(out), env=live_env(server.base_url),
        )  # fmt: skip
    assert "stopped after" not in result.stderr, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["runs"] == 9
    assert [sorted(s.outcome.errors) for s in summaries(out)] == [["http_5xx"], ["http_5xx"], ["schema"]] * 3


def test_the_default_stop_is_documented_and_the_flag_is_in_the_help():
    assert DEFAULT_STOP_AFTER == 10
    help_text = bench("run", "--help").stdout
    assert "--stop-after-failures" in help_text and "default 10; 0 never" in " ".join(help_text.split())


@pytest.mark.slow
def test_a_silent_endpoint_is_named_in_one_line_before_any_run(tmp_path):
    out = tmp_path / "run"
    with FaultServer(["ok"], preflight=["silent"] * 3) as server:  # accepts every connection, never answers
        result = bench(
            "run", "--model", "live", "--mode", "all", "--scenario", "all", "--timeout", "1", "--retries", "1",
            "--backoff", "0", "--out", str(out), env=live_env(server.base_url),
        )  # fmt: skip
        assert server.preflights["silent"] == 2  # the first try and one retry
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "accepted the connection but did not answer a one-token request within 1s, 2 times" in line, line
    assert not out.exists()


def test_an_endpoint_that_answers_503_twice_and_then_works_runs_the_matrix(tmp_path):
    out = tmp_path / "run"
    with FaultServer(["ok"], preflight=["503_page", "503_page"]) as server:
        result = bench(
            "run", "--model", "live", "--mode", "workflow,react", "--scenario", "blog_brief_approval",
            "--backoff", "0", "--out", str(out), env=live_env(server.base_url),
        )  # fmt: skip
        assert server.preflights == {"503_page": 2, "ok": 1}
    assert result.returncode == 0, result.stderr
    assert len(summaries(out)) == 2 and json.loads((out / "manifest.json").read_text())["status"] == "complete"
