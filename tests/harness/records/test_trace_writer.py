"""The trace writer: every line is in the file, whole, as soon as it is written (read from another handle before
close, and after the writing process is SIGKILLed), short writes are finished, and the reader skips bad lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from contextlib import suppress

from harness.records.trace import TraceReadReport, TraceWriter, Usage, read_events, read_records
from tests.helpers.bench import ROOT
from tests.helpers.report_fixtures import Run


def events(n: int):
    return Run("r1", "react", calls=[]).events()[:1] * n


def test_every_line_is_readable_from_another_handle_before_close(tmp_path):
    path = tmp_path / "deep" / "er" / "traces.jsonl"
    writer = TraceWriter(path)  # makes the folders
    assert writer.path == path
    try:
        event = events(1)[0]
        for count in range(1, 4):
            writer.write(event)
            with open(path, "rb") as other:
                lines = other.read().split(b"\n")
            assert lines[-1] == b"" and len(lines) == count + 1  # whole lines only, each ended
            assert [json.loads(line)["kind"] for line in lines[:-1]] == ["run_start"] * count
    finally:
        writer.close()


def test_a_writer_appends_to_an_existing_file(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b'{"old": 1}\n')
    with TraceWriter(path) as writer:
        writer.write(events(1)[0])
    lines = path.read_bytes().splitlines()
    assert lines[0] == b'{"old": 1}' and json.loads(lines[1])["kind"] == "run_start" and len(lines) == 2


def test_a_line_is_the_events_json_and_a_newline():
    event = events(1)[0]
    assert event.model_dump_json().encode() + b"\n" == _written(event)


def _written(event) -> bytes:
    chunks: list[bytes] = []

    class File:
        closed = False

        def write(self, data) -> int:
            chunks.append(bytes(data))
            return len(data)

    writer = TraceWriter.__new__(TraceWriter)
    writer._file = File()  # type: ignore[assignment]
    writer.write(event)
    assert len(chunks) == 1  # one write call per line
    return chunks[0]


def test_a_short_write_is_finished_and_a_write_that_took_nothing_is_tried_again():
    chunks: list[bytes] = []
    answers = iter([None, 5, 0, 7])

    class Slow:
        closed = False

        def write(self, data) -> int | None:
            took = next(answers, len(data))
            if took:
                chunks.append(bytes(data[:took]))
            return took

    writer = TraceWriter.__new__(TraceWriter)
    writer._file = Slow()  # type: ignore[assignment]
    event = events(1)[0]
    writer.write(event)
    assert b"".join(chunks) == event.model_dump_json().encode() + b"\n"
    assert [len(c) for c in chunks[:2]] == [5, 7]


def test_close_is_idempotent_and_the_context_manager_closes(tmp_path):
    writer = TraceWriter(tmp_path / "t.jsonl")
    writer.close()
    writer.close()
    with TraceWriter(tmp_path / "u.jsonl") as other:
        pass
    assert other._file.closed and writer._file.closed


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.records.trace import TraceWriter
    from tests.helpers.report_fixtures import Run

    event = Run("r1", "react").events()[0]
    writer = TraceWriter(Path(sys.argv[1]))
    for n in range(1, int(sys.argv[2]) + 1):
        writer.write(event)
        print(n, flush=True)  # after the write returned: the line must be in the file
    sys.stdin.read()  # hold the file open, never closed, until killed
    """
)


def test_every_line_written_before_a_sigkill_is_in_the_file_whole(tmp_path):
    path = tmp_path / "traces.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), "25"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        for expected in range(1, 26):  # wait on the child's own word, line by line: no sleep, no polling
            assert process.stdout.readline().strip() == str(expected)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    report = TraceReadReport()
    assert len(list(read_events(path, report))) == 25 and report.skipped == 0
    assert path.read_bytes().endswith(b"\n")


# ---------------------------------------------------------------- the reader


def test_the_reader_skips_and_counts_bad_lines_and_ignores_blank_ones(tmp_path):
    good = events(1)[0].model_dump_json()
    path = tmp_path / "traces.jsonl"
    path.write_bytes(
        "\n".join([good, "", '{"kind": "nope"', "   ", good, "[1]", good[:40]]).encode()
        + b"\n\xff\xfe\n"
        + good.encode()
    )
    report = TraceReadReport()
    read = list(read_events(path, report))
    assert len(read) == 3 and all(e.kind == "run_start" for e in read)
    assert (report.lines, report.skipped, report.skipped_lines) == (7, 4, [3, 6, 7, 8])


def test_read_records_reads_any_record_type_and_counts_into_a_fresh_report_by_default(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text('{"prompt_tokens": 2}\n{"prompt_tokens": "x"}\n')
    assert [u.prompt_tokens for u in read_records(path, Usage)] == [2]


def test_usage_adds_up_field_by_field():
    a = Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3, reasoning_tokens=4, cached_tokens=5)
    b = Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30, reasoning_tokens=40, cached_tokens=50)
    assert a + b == Usage(
        prompt_tokens=11, completion_tokens=22, total_tokens=33, reasoning_tokens=44, cached_tokens=55
    )
