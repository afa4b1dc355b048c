"""A full disk (or any refused write) stops bench with one line naming the file and exit 2: every finished trace line
stays valid, no temporary file is left, the manifest says why the matrix stopped (or the line says it could not),
and ``bench run --resume`` completes the matrix once there is room again.

A real small filesystem (a tmpfs, when the tests run as root and may mount) and, everywhere, a fault-injecting
file that takes a few more bytes and then refuses with ENOSPC, as a full disk does.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness.records.manifest as manifest_module
import harness.records.trace as trace_module
from harness.errors import WriteFailed
from harness.records.checkpoint import CheckpointStore
from harness.records.trace import TraceEvent
from tests.helpers.bench import bench_main, bench_process

# Every scenario and mode once, decided at every gate: about a megabyte of trace and no checkpoint database.
MATRIX = ("--mode", "all", "--scenario", "all", "--model", "scripted:eager", "--approver", "scripted:approve")
SMALL = ("--mode", "workflow,react", "--scenario", "blog_brief_approval", "--model", "scripted:eager", "--trials", "3")
FULL = os.strerror(errno.ENOSPC)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs, unmounted after the test; skipped where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the fault-injecting tests below cover the same paths")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount refused ({mounted.stderr.decode().strip()}); the fault-injecting tests cover it")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """A ballast file that leaves about ``leave`` bytes free on ``disk``; deleting it frees the space."""
    ballast = disk / "ballast"
    stats = os.statvfs(disk)
    ballast.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - leave))
    return ballast


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


def check_lines_and_leftovers(out: Path) -> list[TraceEvent]:
    """Every line of the trace is a whole event, and no temporary file is left in the folder."""
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    return [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]


def check_completed(out: Path) -> None:
    """The matrix is whole: one final summary per cell, the manifest complete and no longer saying why it stopped."""
    events = check_lines_and_leftovers(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "stopped_because" not in manifest
    cells = Counter((e.scenario, e.mode, e.trial) for e in events if e.kind == "summary")
    assert set(cells.values()) == {1}
    assert len(cells) == len(manifest["modes"]) * len(manifest["scenarios"]) * manifest["trials"] == manifest["runs"]


@pytest.mark.slow
def test_a_run_on_a_full_small_filesystem_names_the_file_and_resume_completes_it_once_space_is_freed(small_disk):
    out = small_disk / "run"
    ballast = fill(small_disk, leave=200_000)
    stopped = bench_process("run", *MATRIX, "--concurrency", "4", "--out", str(out))
    assert stopped.returncode == 2, stopped.stderr
    line = one_error_line(stopped.stderr)
    assert f"{out / 'traces.jsonl'}: cannot write: {FULL}" in line and f"bench run --resume {out}" in line
    events = check_lines_and_leftovers(out)
    assert events  # the runs that fitted are kept, whole
    manifest = json.loads((out / "manifest.json").read_text())
    if manifest["status"] == "failed":  # there was room for the manifest to say why
        assert manifest["stopped_because"].startswith(f"{out / 'traces.jsonl'}: cannot write")
    else:  # there was not: the one line says so
        assert manifest["status"] == "running" and f"{out / 'manifest.json'} could not record it either" in line

    ballast.unlink()
    resumed = bench_process("run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    check_completed(out)


@pytest.mark.slow
def test_a_report_on_a_full_small_filesystem_names_the_file_and_leaves_no_partial_file(small_disk, tmp_path):
    run = tmp_path / "run"
    assert bench_process("run", *SMALL, "--out", str(run)).returncode == 0
    fill(small_disk, leave=64_000)
    report = small_disk / "report"
    result = bench_process("report", str(run), "--out", str(report))
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr)
    assert line.startswith(f"error: {report}/") and f"cannot write: {FULL}" in line
    written = [p for p in report.rglob("*") if p.is_file()]
    assert not [p.name for p in written if p.name.endswith(".tmp")]


class FillsUp:
    """An unbuffered file that takes ``room`` more bytes and then refuses with ENOSPC (a short write first)."""

    def __init__(self, path: Any, mode: str, room: int):
        self._raw = open(path, mode, buffering=0)
        self.room = room

    def write(self, data: Any) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, FULL)
        took = self._raw.write(bytes(data[: self.room]))
        self.room -= took
        return took

    def fileno(self) -> int:
        return self._raw.fileno()

    @property
    def closed(self) -> bool:
        return self._raw.closed

    def close(self) -> None:
        self._raw.close()


def disk_fills_up(monkeypatch: pytest.MonkeyPatch, name: str, room: int) -> None:
    """The trace writer's file ``name`` takes ``room`` more bytes, then the disk is full for it."""

    def fake_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if Path(path).name == name:
            return FillsUp(path, mode, room)
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(trace_module, "open", fake_open, raising=False)


def manifest_cannot_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the manifest's temporary copy takes a few bytes, then the disk is full."""
    real_open = open

    def fake_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(path, mode, *args, **kwargs)
        handle.write("{")
        handle.flush()

        def refuse(text: str) -> int:
            raise OSError(errno.ENOSPC, FULL)

        handle.write = refuse  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(manifest_module, "open", fake_open, raising=False)


def test_a_trace_write_refused_mid_line_stops_the_matrix_with_the_manifest_saying_why(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    disk_fills_up(monkeypatch, "traces.jsonl", room=20_000)  # a few runs' lines, then half of one
    code, _, stderr = bench_main(monkeypatch, capsys, "run", *SMALL, "--concurrency", "4", "--out", str(out))
    assert code == 2
    line = one_error_line(stderr)
    assert line == (
        f"error: {out / 'traces.jsonl'}: cannot write: {FULL}; the manifest says so; "
        f"bench run --resume {out} continues the matrix once it can be written"
    )
    events = check_lines_and_leftovers(out)  # the half line was cut off
    assert events and (out / "traces.jsonl").read_bytes().endswith(b"\n")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["stopped_because"] == f"{out / 'traces.jsonl'}: cannot write: {FULL}"

    monkeypatch.undo()
    code, _, stderr = bench_main(monkeypatch, capsys, "run", "--resume", str(out))
    assert code == 0, stderr
    check_completed(out)


def test_when_even_the_manifest_cannot_be_written_the_one_line_says_so(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    disk_fills_up(monkeypatch, "traces.jsonl", room=20_000)
    real_write = trace_module.TraceWriter.write_many  # how the matrix writes each finished run's lines

    def write_then_fill(self: Any, events: Any) -> None:  # once the trace is refused, so is the manifest
        try:
            real_write(self, events)
        except WriteFailed:
            manifest_cannot_be_written(monkeypatch)
            raise

    monkeypatch.setattr(trace_module.TraceWriter, "write_many", write_then_fill)
    code, _, stderr = bench_main(monkeypatch, capsys, "run", *SMALL, "--out", str(out))
    assert code == 2
    line = one_error_line(stderr)
    assert f"{out / 'traces.jsonl'}: cannot write: {FULL}" in line
    assert f"{out / 'manifest.json'} could not record it either ({FULL})" in line
    check_lines_and_leftovers(out)  # no manifest.json.tmp either
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"  # the old manifest, whole

    monkeypatch.undo()
    code, _, stderr = bench_main(monkeypatch, capsys, "run", "--resume", str(out))
    assert code == 0, stderr
    check_completed(out)


def test_a_checkpoint_database_that_cannot_be_written_stops_the_matrix_like_any_other_file(
    tmp_path, monkeypatch, capsys
):
    out = tmp_path / "run"
    database = out / "checkpoints.db"

    def refuse(self: CheckpointStore, checkpoint: Any) -> None:
        raise WriteFailed(database, FULL)

    monkeypatch.setattr(CheckpointStore, "save", refuse)
    code, _, stderr = bench_main(monkeypatch, capsys, "run", *SMALL, "--concurrency", "4", "--out", str(out))
    assert code == 2
    assert one_error_line(stderr).startswith(f"error: {database}: cannot write: {FULL}; the manifest says so")
    check_lines_and_leftovers(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["stopped_because"] == f"{database}: cannot write: {FULL}"


@pytest.mark.slow
def test_resume_twice_in_a_row_on_a_full_disk_is_one_line_each_and_completes_once_space_is_freed(small_disk):
    out = small_disk / "run"
    suspending = ("--mode", "all", "--scenario", "all", "--model", "scripted:eager")  # checkpoints at every gate
    ballast = fill(small_disk, leave=200_000)
    stopped = bench_process("run", *suspending, "--concurrency", "4", "--out", str(out))
    assert stopped.returncode == 2, stopped.stderr
    one_error_line(stopped.stderr)
    for _ in range(2):  # still full: each resume is one line, never a traceback (a database without its table)
        again = bench_process("run", "--resume", str(out))
        assert again.returncode == 2, again.stderr
        assert "no such table" not in one_error_line(again.stderr)
    ballast.unlink()
    resumed = bench_process("run", "--resume", str(out))
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    check_completed(out)


@pytest.mark.slow
def test_a_checkpoint_database_without_its_table_is_made_whole_when_runs_are_dropped(tmp_path):
    from harness.matrix.pipeline.unfinished import keep_finished_runs

    made = bench_process("run", *SMALL, "--out", str(tmp_path / "run"))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "run"
    (folder / "checkpoints.db").write_bytes(b"")  # a full disk's leftover: a database file without a page
    with (folder / "traces.jsonl").open("a") as trace:  # a run cut short: started, never summarised
        trace.write(json.dumps({"run_id": "cut-short", "kind": "run_start", "scenario": "s", "mode": "m"}) + "\n")
    kept = keep_finished_runs(folder)
    assert "cut-short" in kept.dropped  # and the suspended runs, whose checkpoints the empty file lost
    assert CheckpointStore(folder).run_ids() == []  # the table is there now: bench's own database again
