"""Running bench from tests: in memory (``run_offline``), in-process through the real entry point (``bench_main``,
``bench_in_process``), or as a child process owned by the test (``bench_process``, ``bench_child``), and following a
child by its output."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path

import pytest

from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_matrix
from harness.models.scripted import ScriptedSource
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.model import Scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def run_offline(
    scenario: Scenario, modes: list[str], policy: str, *, trials: int = 1, seed: int = 0, gateway: str = "enforce"
) -> tuple[list[TraceEvent], list[RunOutcome]]:
    """Runs a small matrix in memory with a fake clock and numbered run ids."""
    events: list[TraceEvent] = []
    counter = itertools.count(1)
    config = MatrixConfig(
        model=ScriptedSource(policy),
        seed=seed,
        gateway_policy=gateway,  # type: ignore[arg-type]
        clock=FakeClock(),
        new_run_id=lambda: f"run-{next(counter)}",
    )
    outcomes: list[RunOutcome] = []
    asyncio.run(
        run_matrix(
            cells_for([scenario], modes, trials),
            config,
            events.append,
            on_done=lambda cell, outcome: outcomes.append(outcome),
        )
    )
    return events, outcomes


def bench_process(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """``bench`` as a user runs it, in a child process, with no LLM_* variables unless given; killed at ``timeout``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=timeout,
    )


def bench_in_process(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``bench_process`` without the process: the real entry point run here, with its arguments, working folder and
    environment (no LLM_* variables unless given), its exit code, stdout and stderr returned alike. For a test whose
    proof is what a command prints and exits with, not the process boundary (signals, kills, a fresh interpreter):
    it saves the second a child takes to import bench."""
    from harness.cli.app import main

    saved_environ, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    try:
        for name in [k for k in os.environ if k.startswith("LLM_")]:
            del os.environ[name]
        os.environ.update(env or {})
        os.chdir(cwd)
        sys.argv = ["bench", *args]
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code
    finally:
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    returncode = code if isinstance(code, int) else 0 if code is None else 1
    return subprocess.CompletedProcess(["bench", *args], returncode, out.getvalue(), err.getvalue())


@contextmanager
def bench_child(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``bench`` as a child process this test owns: its whole process group is killed on any exit."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, **(env or {})},
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def wait_for(
    condition: Callable[[], bool],
    timeout_s: float = 120.0,
    what: str = "condition",
    process: subprocess.Popen | None = None,
) -> None:
    """Polls ``condition`` (a file a child writes: no event to wait on) until it holds.

    Fails the test naming ``what`` as soon as ``process`` has exited without it holding (never a wait for a dead
    child), or after ``timeout_s``: a limit for a wedged machine, never a measurement.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process is not None and process.poll() is not None:
            if condition():
                return
            raise AssertionError(f"the child exited ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def bench_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Runs the real entry point in-process: exit code, stdout, stderr."""
    from harness.cli.app import main

    monkeypatch.setattr(sys, "argv", ["bench", *args])
    with pytest.raises(SystemExit) as stopped:
        main()
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def without_time(folder: Path) -> list[str]:
    """The folder's trace lines without what differs between executors or runs of one seed (timestamps, latencies
    and wall time), sorted: what two executors of the same matrix must write alike."""
    lines = []
    with open(folder / "traces.jsonl", encoding="utf-8") as handle:
        for event in map(json.loads, handle):
            event.pop("ts", None)
            event.pop("latency_ms", None)
            if event.get("outcome"):
                event["outcome"].pop("wall_ms", None)
            lines.append(json.dumps(event, sort_keys=True))
    return sorted(lines)
