"""A report file goes out whole or not at all: a refused write leaves the old file as it was, no temporary copy,
and one WriteFailed naming the file (bench report, compare and the run pages all write through it)."""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

import reports.writing as writing
from harness.errors import WriteFailed
from reports.writing import write_whole


def test_a_report_file_is_written_whole_in_a_new_folder(tmp_path):
    target = tmp_path / "report" / "figures" / "stops.png"
    write_whole(target, b"\x89PNG")
    write_whole(tmp_path / "report" / "report.md", "# bench report é")
    assert target.read_bytes() == b"\x89PNG"
    assert (tmp_path / "report" / "report.md").read_text(encoding="utf-8") == "# bench report é"
    assert sorted(p.name for p in (tmp_path / "report").rglob("*")) == ["figures", "report.md", "stops.png"]


def test_a_refused_write_keeps_the_old_file_names_it_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("the old report")
    real_open = open

    def half_then_full(name: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(name, mode, *args, **kwargs)
        handle.write(b"<html>")
        handle.flush()

        def refuse(data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        handle.write = refuse  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(writing, "open", half_then_full, raising=False)
    with pytest.raises(WriteFailed) as refused:
        write_whole(target, "<html>the new report</html>")
    assert str(refused.value) == f"{target}: cannot write: {os.strerror(errno.ENOSPC)}"
    assert target.read_text() == "the old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
