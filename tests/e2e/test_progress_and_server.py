"""The matrix progress bar, and the local model server's failures that need no model to show."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness import RunSpec, run
from harness.cli.progress import MatrixProgress
from harness.models import server as local_server
from harness.models.server import LocalModelServer, LocalModelUnavailable
from harness.records.trace import RunOutcome, TraceEvent, Usage
from tests.helpers.bench import SCENARIOS, bench_child, wait_for


def outcome(status: str) -> RunOutcome:
    return RunOutcome(
        status=status,
        suspended_at=None,
        expected_stop="finished",
        stop_verdict="early",
        stop_correct=False,
        oracle_passed=False,
        violations=[],
        side_effects_committed=0,
        side_effects_blocked=0,
        blocked_by={},
        unauthorized_side_effects=0,
        premature_side_effects=0,
        wait_marker_without_suspend=False,
        steps=0,
        llm_calls=1,
        usage=Usage(),
        wall_ms=1.0,
        errors={},
        gateway_policy="enforce",
    )


def test_progress_shows_runs_done_errors_and_elapsed_on_a_terminal():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with MatrixProgress(3, console=console) as progress:
        for status in ("finished", "error", "suspended"):
            progress.done(outcome(status))
    text = buffer.getvalue()
    assert "3/3" in text and "errors 1" in text and "0:00:0" in text
    assert progress.errors == 1


def test_progress_stays_silent_when_not_a_terminal():
    buffer = io.StringIO()
    with MatrixProgress(2, console=Console(file=buffer, force_terminal=False)) as progress:
        progress.done(outcome("error"))
    assert buffer.getvalue() == "" and progress.errors == 1


def progress_event(kind: str, step: int = 0, run: str = "r1", trial: int = 1, **fields) -> TraceEvent:
    return TraceEvent(
        run_id=run,
        scenario="blog",
        mode="react",
        model="m",
        trial=trial,
        seq=0,
        step=step,
        ts="2026-01-01T00:00:00",
        decision_maker="runtime",
        kind=kind,
        **fields,
    )


def test_progress_moves_with_every_model_call_and_step_and_names_the_cell():
    buffer = io.StringIO()
    with MatrixProgress(2, console=Console(file=buffer, force_terminal=True, width=160)) as progress:
        progress.event(progress_event("run_start", detail={"limits": {"max_steps": 4}}))
        seen = [progress.completed]
        for step in (1, 2, 3):
            progress.event(progress_event("model_call", step))
            progress.event(progress_event("action", step))
            seen.append(progress.completed)
        assert progress.calls == 3 and progress.cell == "blog / react / trial 1 · step 3"
        assert seen == sorted(seen) and len(set(seen)) == 4 and 0 < seen[-1] < 1  # moves, never a whole run early
        progress.event(progress_event("run_start", run="r2", trial=2, detail={"limits": {"max_steps": 4}}))
        assert progress.cell == "blog / react / trial 2 · step 0 (+1 in flight)"
        progress.event(progress_event("summary", 3))
        progress.done(outcome("finished"))
        assert progress.completed == 1 and progress.cell == "blog / react / trial 2 · step 0"
    text = buffer.getvalue()
    assert "calls 3" in text and "1/2" in text  # the last frame; frames in between depend on the refresh clock


def test_progress_has_no_listener_when_stderr_is_not_a_terminal():
    progress = MatrixProgress(console=Console(file=io.StringIO(), force_terminal=False))
    assert progress.listener is None  # nothing is called per event: a logged run pays nothing for progress


def test_the_run_pipeline_hands_every_written_event_to_the_listener(tmp_path):
    seen: list[TraceEvent] = []
    spec = RunSpec(
        modes=["react", "workflow"],
        scenarios=["blog_brief_approval"],
        scenarios_dir=SCENARIOS,
        model="scripted:eager",
        trials=2,
        out=tmp_path / "out",
    )
    result = run(spec, on_event=seen.append)
    written = result.traces.read_text().splitlines()
    assert [e.model_dump_json() for e in seen] == written and len(written) > 8


def test_missing_local_extra_names_the_install_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == local_server.MODEL_PACKAGE else real(name, *a)
    )
    with pytest.raises(LocalModelUnavailable) as caught:
        LocalModelServer().start()
    message = str(caught.value)
    assert "[local] extra" in message and "-DGGML_NATIVE=OFF" in message and "\n" not in message


@pytest.mark.local_model  # start() looks for the [local] extra before it tries the port
def test_a_taken_port_is_refused_before_anything_starts():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = LocalModelServer(port)
        with pytest.raises(LocalModelUnavailable) as caught:
            server.start()
    assert f"--port {port}" in str(caught.value) and not server.running()


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.local_model
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_local_server_dies_with_bench_when_bench_is_killed_with_sigkill():
    port = local_server.free_port()
    with bench_child("serve-model", "--port", str(port)) as bench:
        wait_for(lambda: local_server._port_taken(port), 180, "the server to listen", process=bench)
        (server,) = _children(bench.pid)  # in its own session: the signal to bench's group does not reach it
        try:
            os.kill(bench.pid, signal.SIGKILL)  # no handler runs: only the kernel can stop the server now
            wait_for(lambda: not _running(server), 30, "the server to die with bench")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)
