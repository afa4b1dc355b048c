"""Ctrl-C or SIGTERM in the middle of a matrix: the run in progress stops at its next event, every finished
trace line stays valid, the interrupted run gets an ``interrupted`` summary and the manifest says so."""

from __future__ import annotations

import json
import signal

import pytest

from tests.helpers.bench import bench_child, wait_for


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_matrix_stops_at_the_next_event_and_leaves_every_line_valid(tmp_path, signum, code):
    out = tmp_path / "run"
    traces = out / "traces.jsonl"
    with bench_child(
        "run",
        "--mode",
        "all",
        "--scenario",
        "blog_brief_approval",
        "--model",
        "scripted:random",
        "--trials",
        "100000",
        "--out",
        str(out),
    ) as process:
        wait_for(lambda: traces.exists() and traces.stat().st_size > 200_000, what="trace lines", process=process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    events = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(events) > 100
    # Every run that started has exactly one summary: the one in flight got an interrupted one (never judged).
    started = [e["run_id"] for e in events if e["kind"] == "run_start"]
    summaries = [e for e in events if e["kind"] == "summary"]
    assert sorted(e["run_id"] for e in summaries) == sorted(started)
    for summary in summaries:
        if summary["outcome"]["status"] == "interrupted":
            assert summary["outcome"]["stop_verdict"] == "infrastructure"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["end_time"] is not None
    finished = sum(e["kind"] == "summary" and e["outcome"]["status"] != "interrupted" for e in events)
    assert manifest["runs"] == finished
