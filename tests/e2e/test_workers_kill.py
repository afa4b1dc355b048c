"""A worker-process matrix whose driver is killed: its workers die with it, and --resume (in one process or in
several) ends with every cell exactly once, the same runs as a matrix never killed."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from harness.matrix.commands.trace_diff import compare_traces
from harness.records.trace import TraceEvent, read_events
from tests.helpers.bench import bench_child, bench_process, wait_for

ARGS = ("--model", "scripted:random", "--mode", "all", "--scenario", "all", "--trials", "3")


def children(pid: int) -> set[int]:
    """The processes ``pid`` started (Linux /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found |= {int(p) for p in text.split()}
    return found


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


@pytest.mark.slow
def test_a_killed_driver_takes_its_workers_with_it_and_resume_runs_every_cell_once(tmp_path):
    whole = tmp_path / "whole"
    assert bench_process("run", *ARGS, "--workers", "1", "--out", str(whole)).returncode == 0
    expected = list(read_events(whole / "traces.jsonl"))
    folder = tmp_path / "killed"
    traces = folder / "traces.jsonl"
    with bench_child("run", *ARGS, "--workers", "2", "--out", str(folder)) as child:
        wait_for(
            lambda: traces.exists() and traces.read_bytes().count(b"\n") >= len(expected) // 4,
            what="a quarter of the matrix",
            process=child,
        )
        workers = children(child.pid)
        assert len(workers) >= 2  # the two workers (and multiprocessing's resource tracker)
        os.kill(child.pid, signal.SIGKILL)  # the driver only: its workers must not outlive it
        child.communicate(timeout=30)
        wait_for(lambda: not any(alive(p) for p in workers), timeout_s=30, what="the workers to die")
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    continued = bench_process("run", "--resume", str(folder), "--workers", "2")
    assert continued.returncode == 0, continued.stderr
    got = [TraceEvent.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert compare_traces(expected, got) == []  # the same runs, event for event
    runs = Counter((e.scenario, e.mode, e.trial) for e in got if e.kind == "summary")
    assert set(runs.values()) == {1} and len(runs) == len({(e.scenario, e.mode, e.trial) for e in expected})
