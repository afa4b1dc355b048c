"""One worker of ``bench run --workers 2`` killed at a random instant, and what the driver made of it.

``kill_one_worker`` starts the matrix as a child (its own process group), waits until a random share of its trace is
written, SIGKILLs one of its worker processes (a child running multiprocessing's ``spawn_main``, not its resource
tracker), and waits for the driver with a bound: no hang, no traceback, and the matrix completed in the same command
(or stopped in one line, then ``--resume`` completes it), every cell exactly once. Used by the test suite (one kill,
or ``BENCH_WORKER_KILLS`` of them) and by ``scripts/worker_kills.py`` (20 by default).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.bench import bench_child, bench_process, wait_for

ARGS = ("--mode", "all", "--scenario", "all", "--model", "scripted:random", "--trials", "2", "--seed", "7")
ARGS += ("--concurrency", "4", "--workers", "2")
HANG_S = 120.0  # a driver still running this long after the kill is hung (the matrix takes seconds)


@dataclass(frozen=True)
class KillResult:
    """What one kill showed; ``problems`` is empty when the driver survived it as it must."""

    share: float  # of the trace's lines written when the worker was killed
    returncode: int
    resumed: bool  # the matrix stopped in one line and --resume completed it
    noted: bool  # the driver said which worker died
    problems: tuple[str, ...]


def workers_of(pid: int) -> list[int]:
    """The worker processes of the driver ``pid`` (Linux /proc): multiprocessing's spawned children."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in map(int, children):
            try:
                command = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in command and b"resource_tracker" not in command:
                found.append(child)
    return found


def cells_once(folder: Path) -> list[str]:
    """What is wrong with the folder's matrix: a cell missing or written twice, a manifest not complete."""
    manifest = json.loads((folder / "manifest.json").read_text())
    summaries = Counter(
        (e["scenario"], e["mode"], e["trial"])
        for e in map(json.loads, (folder / "traces.jsonl").read_text().splitlines())
        if e["kind"] == "summary"
    )
    problems = []
    if manifest["status"] != "complete":
        problems.append(f"manifest status {manifest['status']}")
    twice = [cell for cell, n in summaries.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} cells written twice, e.g. {twice[0]}")
    if len(summaries) != manifest["runs"]:
        problems.append(f"{len(summaries)} cells written of {manifest['runs']}")
    return problems


def kill_one_worker(
    folder: Path, rng: random.Random, lines: int, args: tuple[str, ...] = ARGS, hang_s: float = HANG_S
) -> KillResult:
    """Runs the matrix ``args`` into ``folder`` and kills one worker once a random share of its ``lines`` are written;
    ``hang_s`` bounds each wait (a loaded machine's caller sets it from how long the matrix took whole)."""
    share = rng.uniform(0.05, 0.9)
    traces = folder / "traces.jsonl"
    problems: list[str] = []
    with bench_child("run", *args, "--out", str(folder)) as child:
        wait_for(
            lambda: traces.exists() and traces.read_bytes().count(b"\n") >= share * lines,
            timeout_s=hang_s,
            what=f"{share:.0%} of the trace",
            process=child,
        )
        victims = workers_of(child.pid)
        if victims:
            os.kill(rng.choice(victims), signal.SIGKILL)
        else:
            problems.append("no worker process found to kill")
        try:
            _, stderr = child.communicate(timeout=hang_s)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)
            try:
                child.communicate(timeout=10)
                problems.append(f"hung for {hang_s:g} s after the kill; the first Ctrl-C ended it")
            except subprocess.TimeoutExpired:
                problems.append(f"hung for {hang_s:g} s after the kill; the first Ctrl-C did not end it")
            return KillResult(share, -1, False, False, tuple(problems))
    if "Traceback" in stderr:
        problems.append("a traceback: " + stderr.strip().splitlines()[-1])
    resumed = False
    if child.returncode != 0:
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        if len(errors) != 1:
            problems.append(f"exit {child.returncode} without one error line: {stderr.strip()[-300:]}")
        again = bench_process("run", "--resume", str(folder), "--workers", "2")
        resumed = True
        if again.returncode != 0:
            problems.append(f"--resume exited {again.returncode}: {again.stderr.strip()[-300:]}")
    problems += cells_once(folder)
    noted = "note: worker process" in stderr
    return KillResult(share, child.returncode, resumed, noted, tuple(problems))
