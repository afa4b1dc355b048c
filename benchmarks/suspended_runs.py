"""What a suspended run costs next to a finished one, measured in one run.

A suspended run writes its checkpoint (``harness.records.checkpoint``) where a finished run writes nothing but
its trace lines, so the gap between the two is the checkpoint's price. Three matrices go through the library
API (``harness.run``, the CLI's own path, in one process) on the same story with the same scripted model:
``workflow`` stopping at the story's gate (no approver: it suspends and saves its checkpoint), the same mode
approved in-run by a scripted approver (it goes past the gate, so it does more work, and finishes with no
checkpoint), and ``react`` (it finishes). Rounds alternate the matrices, so the machine's load hits each; each
row is the median round.

Printed per run: wall time, SQLite connections opened and COMMITs run (counted by wrapping ``sqlite3.connect``
with a trace callback) and, when ``strace`` is installed, the ``fsync``/``fdatasync`` calls and page writes
(``pwrite64``) of one more run of each matrix in a child process under strace (the matrix's own few syncs, its
manifest and trace file at close, included). The target: a suspended run costs no more syncs than a finished
one, and about what the same mode costs when it is approved and finishes.
Run: .venv/bin/python benchmarks/suspended_runs.py [--runs N] [--rounds R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import RunSpec, run  # noqa: E402
from harness.records.trace import read_events  # noqa: E402

MODEL = "scripted:eager"  # scripted: no model at all, so the harness's own work is all that is timed
SYSCALLS = ("fsync", "fdatasync", "pwrite64")


class Matrix(NamedTuple):
    mode: str
    approver: str | None
    ends: str  # how every run of it ends (checked)


MATRICES = {
    "suspended": Matrix("workflow", None, "suspended"),
    "approved": Matrix("workflow", "scripted:approve", "finished"),
    "react": Matrix("react", None, "finished"),
}


class CommitCounter:
    """Counts the SQLite connections opened from now on and the COMMITs they run (``sqlite3.connect`` wrapped)."""

    def __init__(self) -> None:
        self.commits = 0
        self.connections = 0
        self._connect: Callable[..., sqlite3.Connection] = sqlite3.connect

    def __enter__(self) -> CommitCounter:
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection = self._connect(*args, **kwargs)
            self.connections += 1
            connection.set_trace_callback(self._seen)
            return connection

        sqlite3.connect = connect  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sqlite3.connect = self._connect  # type: ignore[assignment]

    def _seen(self, statement: str) -> None:
        if statement.lstrip().upper().startswith(("COMMIT", "END")):
            self.commits += 1


def matrix(name: str, story: str, runs: int, folder: Path) -> tuple[float, CommitCounter]:
    """Runs ``runs`` runs of one matrix into ``folder``: (wall seconds, what SQLite did); checks how they ended."""
    mode, approver, ends = MATRICES[name]
    counter = CommitCounter()
    with counter:
        started = time.perf_counter()
        # one process (workers=1), so the counter sees every connection
        spec = RunSpec(
            modes=[mode], scenarios=[story], model=MODEL, approver=approver, trials=runs, out=folder, workers=1
        )
        result = run(spec)
        seconds = time.perf_counter() - started
    seen = [str(event.result) for event in read_events(result.traces) if event.kind == "summary"]
    assert seen == [ends] * runs, f"{name} on {story}: expected {runs} {ends} runs, got {sorted(set(seen))}"
    return seconds, counter


def syscalls(name: str, story: str, runs: int, where: Path) -> dict[str, int] | None:
    """The sync and page-write calls of one matrix run in a child process under strace (None: no strace)."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    summary = where / f"strace-{name}.txt"
    folder = where / f"strace-{name}"
    child = [sys.executable, __file__, "--child", name, "--story", story, "--runs", str(runs), "--dir", str(folder)]
    subprocess.run([strace, "-f", "-c", "-o", str(summary), "-e", f"trace={','.join(SYSCALLS)}", *child], check=True)
    counts = dict.fromkeys(SYSCALLS, 0)
    for line in summary.read_text().splitlines():  # "% time seconds usecs/call calls errors syscall"
        fields = line.split()
        if fields and fields[-1] in counts and fields[3].isdigit():
            counts[fields[-1]] = int(fields[3])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="runs per matrix (default 500)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the matrices, alternating (default 3)")
    parser.add_argument("--story", default="blog_brief_approval", help="a story with a gate (default %(default)s)")
    parser.add_argument("--dir", type=Path, help="where the run folders go (default: a temporary folder)")
    parser.add_argument("--child", choices=sorted(MATRICES), help=argparse.SUPPRESS)  # one matrix, under strace
    args = parser.parse_args()
    if args.child:
        matrix(args.child, args.story, args.runs, args.dir)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        where = Path(tmp)
        timings: dict[str, list[float]] = {name: [] for name in MATRICES}
        counted: dict[str, CommitCounter] = {}
        for round_ in range(args.rounds):
            for name in MATRICES:
                seconds, counted[name] = matrix(name, args.story, args.runs, where / f"{name}-{round_}")
                timings[name].append(seconds / args.runs * 1000)
        calls = {name: syscalls(name, args.story, args.runs, where) for name in MATRICES}
        print(f"{args.runs} runs per matrix, {args.rounds} rounds, {MODEL} on {args.story}, folders in {where}")
    header = f"{'matrix':<10} {'mode':<9} {'runs end':<10} {'ms/run':>8} {'connections/run':>16} {'commits/run':>12}"
    print(header + ("" if calls["react"] is None else f" {'syncs/run':>10} {'pwrites/run':>12}"))
    ms = {name: statistics.median(timings[name]) for name in MATRICES}
    for name, (mode, _, ends) in MATRICES.items():
        sqlite, per = counted[name], args.runs
        line = f"{name:<10} {mode:<9} {ends:<10} {ms[name]:>8.3f}"
        line += f" {sqlite.connections / per:>16.2f} {sqlite.commits / per:>12.2f}"
        system = calls[name]
        if system is not None:
            line += f" {(system['fsync'] + system['fdatasync']) / per:>10.2f} {system['pwrite64'] / per:>12.2f}"
        print(line)
    print(f"suspended / approved (same mode, finished), per run: {ms['suspended'] / ms['approved']:.2f}x")
    print(f"suspended / react (finished), per run: {ms['suspended'] / ms['react']:.2f}x")
    if calls["react"] is None:
        print("syncs: not counted (no strace on this machine)")


if __name__ == "__main__":
    main()
