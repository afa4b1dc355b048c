"""Worker processes: the same matrix gives the same traces and run ids from one process and from several, the
driver writes each unit whole, and a live model is refused in one line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.errors import UserInputError
from harness.matrix.cell_runner import Cell
from harness.matrix.units import unit_id
from harness.matrix.workers import batches, worker_share
from harness.scenario.load import load_all
from tests.helpers.bench import SCENARIOS

MATRIX = {"modes": ("react", "workflow", "plan_execute"), "scenarios": ("blog_brief_approval", "refund_amount")}


def without_time(folder: Path) -> list[str]:
    """The folder's trace lines without what differs between executors (timestamps and latencies), sorted."""
    lines = []
    for line in (folder / "traces.jsonl").read_text().splitlines():
        event = json.loads(line)
        event.pop("ts")
        event.pop("latency_ms", None)
        if event.get("outcome"):
            event["outcome"].pop("wall_ms")
        lines.append(json.dumps(event, sort_keys=True))
    return sorted(lines)


def run_with(workers: int, folder: Path, **changes: object) -> Path:
    spec = RunSpec(model="scripted:random", trials=3, workers=workers, out=folder, **MATRIX | changes)  # type: ignore[arg-type]
    result = run(spec)
    assert result.manifest.status == "complete"
    return result.folder


def test_two_worker_processes_write_the_same_traces_as_one_process(tmp_path):
    one = run_with(1, tmp_path / "one")
    two = run_with(2, tmp_path / "two")
    assert without_time(one) == without_time(two)
    summaries = Counter(
        (e["scenario"], e["mode"], e["trial"])
        for e in map(json.loads, (two / "traces.jsonl").open())
        if e["kind"] == "summary"
    )
    assert len(summaries) == 2 * 3 * 3 and set(summaries.values()) == {1}


def test_each_unit_is_written_whole_so_no_two_runs_interleave(tmp_path):
    folder = run_with(2, tmp_path / "two", concurrency=4)
    run_ids = [json.loads(line)["run_id"] for line in (folder / "traces.jsonl").read_text().splitlines()]
    blocks = [run_id for i, run_id in enumerate(run_ids) if i == 0 or run_ids[i - 1] != run_id]
    assert len(blocks) == len(set(run_ids))  # every run's lines are one block


def test_run_ids_are_the_units_ids_and_change_with_the_seed(tmp_path):
    first = run_with(1, tmp_path / "a")
    again = run_with(2, tmp_path / "b")
    other_seed = run_with(1, tmp_path / "c", seed=7)

    def ids(folder: Path) -> set[str]:
        return {json.loads(line)["run_id"] for line in (folder / "traces.jsonl").read_text().splitlines()}

    assert ids(first) == ids(again)
    assert not ids(first) & ids(other_seed)
    scenario = load_all(SCENARIOS)["refund_amount"]
    expected = unit_id(0, Cell(scenario, "react", 2), "scripted:random", "enforce", "")
    assert expected in ids(first)


def test_the_unit_id_depends_on_everything_that_decides_the_run():
    scenario = load_all(SCENARIOS)["refund_amount"]
    cell = Cell(scenario, "react", 1)
    base = unit_id(0, cell, "scripted:random", "enforce", "")
    assert base == unit_id(0, cell, "scripted:random", "enforce", "")
    others = {
        unit_id(1, cell, "scripted:random", "enforce", ""),
        unit_id(0, Cell(scenario, "react", 2), "scripted:random", "enforce", ""),
        unit_id(0, Cell(scenario, "workflow", 1), "scripted:random", "enforce", ""),
        unit_id(0, cell, "scripted:eager", "enforce", ""),
        unit_id(0, cell, "scripted:random", "audit", ""),
        unit_id(0, cell, "scripted:random", "enforce", "scripted:approve"),
    }
    assert base not in others and len(others) == 6


def test_concurrency_is_shared_among_workers_and_each_gets_at_least_one():
    assert [worker_share(5, 2, i) for i in range(2)] == [3, 2]
    assert [worker_share(1, 2, i) for i in range(2)] == [1, 1]
    assert sum(worker_share(64, 3, i) for i in range(3)) == 64


def test_batches_cover_every_cell_once_in_order():
    scenario = load_all(SCENARIOS)["refund_amount"]
    cells = [Cell(scenario, "react", t) for t in range(1, 20)]
    got = list(batches(iter(cells), 8))
    assert [len(b) for b in got] == [8, 8, 3]
    assert [key for b in got for key in b] == [(c.scenario.id, c.mode, c.trial) for c in cells]


def test_worker_processes_refuse_a_live_model_in_one_line():
    with pytest.raises(UserInputError, match="--workers 2: worker processes run scripted and replayed models"):
        RunSpec.build(model="live", workers=2, env={"LLM_API_URL": "http://x", "LLM_MODEL": "m", "LLM_API_KEY": "k"})
