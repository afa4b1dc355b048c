"""Ctrl-C or SIGTERM in the middle of a matrix, at any concurrency: every run in flight stops at its next event with
an ``interrupted`` summary, every finished trace line stays valid, bench exits 130/143 with one line and no
traceback, the manifest says ``interrupted``, and ``bench run --resume`` then completes the matrix."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from harness.records.trace import TraceEvent
from tests.helpers.bench import bench_child, bench_process, wait_for
from tests.helpers.fault_server import FaultServer
from tests.helpers.sweeps import covering

SIGNALS = [pytest.param(signal.SIGINT, 130, id="SIGINT"), pytest.param(signal.SIGTERM, 143, id="SIGTERM")]
# scripted:looping keeps every run stepping to its limit: 14 scenarios x every mode x 5 trials is a few seconds of
# work, long enough to be cut, short enough for the resume to finish it.
MATRIX = ("--mode", "all", "--scenario", "all", "--model", "scripted:looping", "--trials", "5")
LIVE_ENV = {"LLM_MODEL": "fault-model", "LLM_API_KEY": "sk-interrupt-test-0000"}


def trace_events(out: Path) -> list[TraceEvent]:
    """Every line of the trace, each of which must be a whole, valid event."""
    return [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]


def summaries(events: list[TraceEvent]) -> list[TraceEvent]:
    return [e for e in events if e.kind == "summary"]


def check_interrupted(out: Path, code: int, expected: int, stderr: str) -> None:
    """What a stopped matrix leaves: the signal's exit code, one line, valid lines, one summary per started run."""
    assert code == expected, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].startswith("interrupted"), stderr  # the one line, said once
    assert stderr.count("interrupted;") == 1, stderr
    events = trace_events(out)
    started = Counter(e.run_id for e in events if e.kind == "run_start")
    ended = Counter(e.run_id for e in summaries(events))
    assert ended == started  # a run in flight got its interrupted summary, and no run got two
    for summary in summaries(events):
        assert summary.outcome is not None
        if summary.outcome.status == "interrupted":
            assert summary.outcome.stop_verdict == "infrastructure"  # never judged
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["end_time"] is not None
    finished = sum(s.outcome is not None and s.outcome.status != "interrupted" for s in summaries(events))
    assert manifest["runs"] == finished
    assert not list(out.glob("*.tmp"))


def check_resumed(out: Path, env: dict[str, str] | None = None) -> None:
    """``bench run --resume`` finishes the matrix: every cell has exactly one final summary, none interrupted."""
    resumed = bench_process("run", "--resume", str(out), env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["continued"] == 1
    events = trace_events(out)
    final = Counter((e.scenario, e.mode, e.trial) for e in summaries(events))
    assert set(final.values()) == {1}
    assert len(final) == len(manifest["modes"]) * len(manifest["scenarios"]) * manifest["trials"] == manifest["runs"]
    assert all(s.outcome is not None and s.outcome.status != "interrupted" for s in summaries(events))


# Every signal at every concurrency in CI; the quick suite takes the first cases that show each signal and each
# concurrency once (SIGINT at 1, SIGTERM at 4, SIGINT at 16: tests/helpers/sweeps.py).
CASES = [  # (SIGINT, 1), (SIGTERM, 4), (SIGINT, 16), (SIGTERM, 1), (SIGINT, 4), (SIGTERM, 16)
    (name, concurrency) for pair in ((1, 4), (16, 1), (4, 16)) for name, concurrency in zip(SIGNALS, pair, strict=True)
]
AT_CONCURRENCY = [
    pytest.param(*signal_case.values, concurrency, id=f"{signal_case.id}-{concurrency}")
    for signal_case, concurrency in covering(CASES, lambda case: case[0].id, lambda case: case[1])
]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "concurrency"), AT_CONCURRENCY)
def test_a_signal_mid_matrix_at_any_concurrency_stops_cleanly_and_resume_completes_it(
    tmp_path, signum, code, concurrency
):
    out = tmp_path / "run"
    traces = out / "traces.jsonl"
    with bench_child("run", *MATRIX, "--concurrency", str(concurrency), "--out", str(out)) as process:
        wait_for(lambda: traces.exists() and traces.stat().st_size > 0, what="trace lines", process=process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=120)
    check_interrupted(out, process.returncode, code, stderr)
    check_resumed(out)


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_during_a_live_matrix_at_concurrency_4_stops_every_request_and_resume_completes_it(
    tmp_path, signum, code
):
    out = tmp_path / "run"
    traces = out / "traces.jsonl"
    args = ("run", "--live", "--mode", "all", "--scenario", "blog_brief_approval", "--trials", "3")
    args += ("--concurrency", "4", "--timeout", "30", "--retries", "0", "--out", str(out))

    def summaries_written() -> int:
        return traces.read_text().count('"kind":"summary"') if traces.exists() else 0

    # Every answer is good but a little slow, so four runs are always waiting on the model when the signal lands.
    with FaultServer(["ok"], delay_s=0.05) as server:
        env = {**LIVE_ENV, "LLM_API_URL": server.base_url}
        with bench_child(*args, env=env) as process:
            wait_for(lambda: summaries_written() >= 2, what="the first finished runs", process=process)
            process.send_signal(signum)
            _, stderr = process.communicate(timeout=120)
        check_interrupted(out, process.returncode, code, stderr)
        assert server.max_in_flight <= 4
        check_resumed(out, env)
