"""The streaming loader: clean files, corrupt and truncated lines, chunk edges, several folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness.records.trace import TraceReadReport, read_events
from modes import select_modes
from reports import load_traces
from tests.helpers.bench import run_offline
from tests.helpers.report_fixtures import Call, Run, write_runs

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters


def _real_trace(tmp_path: Path, blog, trials: int = 6) -> Path:
    events, _ = run_offline(blog, select_modes([]), "random", trials=trials)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "traces.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    return folder


def test_loads_what_the_harness_reader_reads(tmp_path, blog):
    folder = _real_trace(tmp_path, blog)
    report = TraceReadReport()
    expected = list(read_events(folder / "traces.jsonl", report))
    traces = load_traces(folder)
    assert traces.lines == report.lines == len(expected)
    assert traces.skipped_count == 0
    assert len(traces.events) == len(expected)
    summaries = [e for e in expected if e.kind == "summary"]
    assert len(traces.runs) == len(summaries) == 6 * len(BUILT_IN)
    by_id = {e.run_id: e.outcome for e in summaries}
    for row in traces.runs.itertuples():
        outcome = by_id[row.run_id]
        assert (row.status, row.stop_correct, row.steps, row.premature_side_effects) == (
            outcome.status,
            outcome.stop_correct,
            outcome.steps,
            outcome.premature_side_effects,
        )
    calls = [e for e in expected if e.kind == "model_call"]
    assert (traces.events["kind"] == "model_call").sum() == len(calls)
    assert traces.incomplete_runs == 0


def test_truncated_last_line_and_garbage_in_the_middle_are_skipped_and_counted(tmp_path, blog):
    folder = _real_trace(tmp_path, blog)
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    total = len(lines)
    lines.insert(40, "this is not json {\n")
    lines[-1] = lines[-1][: len(lines[-1]) // 2]  # the last line cut mid-way, no newline
    (folder / "traces.jsonl").write_text("".join(lines))
    traces = load_traces(folder)
    assert traces.skipped_count == 2
    assert [s.line for s in traces.skipped] == [41, total + 1]
    assert traces.lines == total + 1
    assert len(traces.events) == total - 1
    # The cut line was the last run's summary: that run has events but is not judged.
    assert len(traces.runs) == 6 * len(BUILT_IN) - 1 and traces.incomplete_runs == 1


@pytest.mark.parametrize("chunk_bytes", [300, 4096, 1 << 20])
def test_bad_lines_of_every_shape_at_any_chunk_size(tmp_path, chunk_bytes):
    runs = [Run(f"r{i}", "react", trial=i, calls=[Call(10.0 * i, 5, 1, "create_brief")]) for i in range(1, 9)]
    folder = write_runs(tmp_path / "run", runs)
    good = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    bad = [
        '{"run_id": "x"}\n',  # valid JSON, not an event
        "[1, 2, 3]\n",  # not an object
        good[1].replace('"seq":1', '"seq":"one"'),  # a field of the wrong type
        good[1].replace('"kind":"model_call"', '"kind":"mystery"'),  # an unknown kind
        "\n",
        "   \n",
    ]  # blank lines are not lines at all
    mixed = good[:5] + bad[:2] + good[5:20] + bad[2:] + good[20:]
    (folder / "traces.jsonl").write_text("".join(mixed))
    traces = load_traces(folder, chunk_bytes=chunk_bytes)
    assert traces.skipped_count == 4
    assert len(traces.events) == len(good)
    assert traces.lines == len(good) + 4
    assert sorted(traces.runs["trial"]) == list(range(1, 9))


def test_several_folders_and_the_same_folder_twice(tmp_path):
    a = write_runs(tmp_path / "a", [Run("a1", "react"), Run("a2", "workflow")])
    b = write_runs(tmp_path / "b", [Run("b1", "react", model="other:model")])
    traces = load_traces([a, b, a, b / "traces.jsonl"])
    assert sorted(traces.runs["run_id"]) == ["a1", "a2", "b1"]
    assert set(traces.events["source"]) == {str(a), str(b)}
    assert set(traces.runs["model"]) == {"fixture:model", "other:model"}


def test_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError, match=r"no traces\.jsonl"):
        load_traces(tmp_path / "nowhere")


def test_a_line_longer_than_a_chunk_and_a_parser_block(tmp_path):
    events = []
    for run_id in ("big-1", "big-2"):
        run = Run(run_id, "react", calls=[Call(5.0, 1, 1, "create_brief")]).events()
        # A model call whose proposal is 3 MiB: larger than pyarrow's 1 MiB blocks and the 1 MiB chunk below.
        run[1] = run[1].model_copy(update={"args": {"text": "y" * (3 << 20)}})
        events += run
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "traces.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    traces = load_traces(folder, chunk_bytes=1 << 20)
    assert traces.skipped_count == 0 and len(traces.events) == len(events) and len(traces.runs) == 2
