"""A write the system refuses (a full disk) never leaves half a line or half a manifest: the trace writer cuts the
partial line off and takes no more, the manifest stays as it was with no temporary copy, and both raise WriteFailed
naming the file and the system's reason."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

import harness.records.manifest as manifest_module
from harness.errors import WriteFailed
from harness.records.manifest import write_json_atomic
from harness.records.trace import TraceWriter, read_events
from tests.helpers.report_fixtures import Run

FULL = os.strerror(errno.ENOSPC)


def event() -> Any:
    return Run("r1", "react", calls=[]).events()[0]


class FullAfter:
    """A file that takes ``room`` bytes, then refuses with ENOSPC."""

    def __init__(self, path: Path, room: int):
        self._raw = open(path, "ab", buffering=0)
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


def test_a_line_refused_midway_is_cut_off_and_the_writer_takes_no_more(tmp_path):
    path = tmp_path / "traces.jsonl"
    line = len(event().model_dump_json()) + 1
    writer = TraceWriter(path)
    writer._file.close()
    writer._file = FullAfter(path, room=2 * line + line // 2)  # type: ignore[assignment]
    writer.write(event())
    writer.write(event())
    with pytest.raises(WriteFailed) as refused:
        writer.write(event())  # half of it goes out, then the disk is full
    assert (refused.value.path, refused.value.reason) == (str(path), FULL)
    assert str(refused.value) == f"{path}: cannot write: {FULL}"
    assert path.stat().st_size == 2 * line  # the half line is gone: the file ends on a whole line
    writer._file.room = 10**6  # type: ignore[attr-defined]  # room again: still nothing is appended
    with pytest.raises(WriteFailed):
        writer.write(event())
    writer.close()  # a failure already raised is not raised again
    assert len(list(read_events(path))) == 2 and path.stat().st_size == 2 * line


def test_a_trace_file_that_cannot_be_opened_is_named(tmp_path):
    (tmp_path / "traces.jsonl").mkdir()
    with pytest.raises(WriteFailed) as refused:
        TraceWriter(tmp_path / "traces.jsonl")
    assert refused.value.path == str(tmp_path / "traces.jsonl")


def test_an_error_leaving_the_writer_is_not_replaced_by_a_failing_close(tmp_path, monkeypatch):
    def no_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with pytest.raises(RuntimeError), TraceWriter(tmp_path / "t.jsonl") as writer:
        monkeypatch.setattr(os, "fsync", no_fsync)
        raise RuntimeError("the first error")
    assert writer._file.closed
    other = TraceWriter(tmp_path / "u.jsonl")
    with pytest.raises(WriteFailed) as refused:
        other.close()
    assert refused.value.reason == os.strerror(errno.EIO) and other._file.closed


def test_a_manifest_that_cannot_be_written_stays_as_it_was_with_no_temporary_copy(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    write_json_atomic(path, {"status": "running"})
    real_open = open

    def half_then_full(name: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(name, mode, *args, **kwargs)
        handle.write('{"sta')
        handle.flush()

        def refuse(text: str) -> int:
            raise OSError(errno.ENOSPC, FULL)

        handle.write = refuse  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(manifest_module, "open", half_then_full, raising=False)
    with pytest.raises(WriteFailed) as refused:
        write_json_atomic(path, {"status": "failed"})
    assert str(refused.value) == f"{path}: cannot write: {FULL}"
    assert json.loads(path.read_text()) == {"status": "running"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_continuing_a_matrix_on_a_full_disk_names_the_file_and_leaves_the_old_trace_whole(tmp_path, monkeypatch):
    """``bench run --resume`` rewrites the trace down to its finished runs; a refused write keeps the old file."""
    import builtins

    from harness.matrix.pipeline import unfinished

    trace = tmp_path / "traces.jsonl"
    trace.write_bytes(b'{"run_id": "a", "kind": "summary"}\n{"run_id": "b", "kind": "model_call"}\n')
    before = trace.read_bytes()
    real_open = builtins.open

    def full_disk(file, mode="r", *args, **kwargs):
        if str(file).endswith(".continue.tmp"):
            raise OSError(28, "No space left on device", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_disk)
    with pytest.raises(WriteFailed) as refused:
        unfinished._rewrite(trace, lambda event: event.get("run_id") == "a")
    assert str(refused.value) == f"{trace}: cannot write: No space left on device"
    assert trace.read_bytes() == before and not (tmp_path / "traces.jsonl.continue.tmp").exists()
