"""The matrix progress bar, and the local model server's failures that need no model to show."""

from __future__ import annotations

import importlib.util
import io
import socket

import pytest
from rich.console import Console

from harness.models import server as local_server
from harness.models.server import LocalModelServer, LocalModelUnavailable
from harness.progress import MatrixProgress
from harness.trace import RunOutcome, Usage


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


def test_missing_local_extra_names_the_install_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == local_server.MODEL_PACKAGE else real(name, *a)
    )
    with pytest.raises(LocalModelUnavailable) as caught:
        LocalModelServer().start()
    message = str(caught.value)
    assert "[local] extra" in message and "-DGGML_NATIVE=OFF" in message and "\n" not in message


def test_a_taken_port_is_refused_before_anything_starts():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = LocalModelServer(port)
        with pytest.raises(LocalModelUnavailable) as caught:
            server.start()
    assert f"--port {port}" in str(caught.value) and not server.running()
