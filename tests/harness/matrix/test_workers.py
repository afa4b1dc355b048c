"""Worker processes: the same matrix gives the same traces and run ids from one process and from several, the
driver writes each unit whole, and a live model runs in workers only when asked."""

from __future__ import annotations

import json
import os
import pickle
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import RunSpec, run
from harness.matrix.cell.units import Cell, unit_id
from harness.matrix.executors.unit_batch import WorkerSetup, run_batch_blocking
from harness.matrix.executors.workers import batch_size, batches, worker_share
from harness.models.choice import choose
from harness.models.config import LiveOptions
from harness.models.shared_endpoint import merged_facts
from harness.scenario.load import load_all
from tests.helpers.bench import SCENARIOS, without_time

MATRIX = {"modes": ("react", "workflow", "plan_execute"), "scenarios": ("blog_brief_approval", "refund_amount")}


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


def test_a_live_model_runs_in_one_process_unless_asked_and_never_in_more_workers_than_requests_in_flight():
    env = {"LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": "k"}
    assert RunSpec.build(model="live", concurrency=8, env=env).workers_for(100_000) == 1
    assert RunSpec.build(model="live", workers=2, concurrency=8, env=env).workers_for(10) == 2
    assert RunSpec.build(model="live", workers=4, concurrency=3, env=env).workers_for(10) == 3


def test_the_workers_learnt_facts_name_each_step_down_once():
    def step(what: str, trial: int) -> dict[str, object]:
        return {"what": what, "before": "a", "after": "b", "because": "400", "trial": trial}

    merged = merged_facts(
        [
            {"adaptations": [step("temperature", 1)], "wire_settings": "one"},
            {"adaptations": [step("temperature", 2), step("token_param", 2)], "wire_settings": "both"},
        ]
    )
    assert [a["what"] for a in merged["adaptations"]] == ["temperature", "token_param"]
    assert merged["adaptations"][0]["trial"] == 1 and merged["wire_settings"] == "both"


def _sized(concurrency: int, workers: int, runs: int) -> Any:
    """The three numbers of a ``MatrixRun`` that ``batch_size`` reads."""
    return SimpleNamespace(concurrency=concurrency, workers=workers, runs=runs)


def test_a_small_matrix_is_batched_so_that_every_worker_gets_some():
    assert batch_size(_sized(4, 2, 8), False) == 4
    assert batch_size(_sized(4, 2, 10_000), False) == 16
    assert batch_size(_sized(1, 4, 2), False) == 1


def test_an_offline_matrix_goes_in_big_batches_that_still_leave_every_worker_several():
    assert batch_size(_sized(1, 2, 10_000_000), True) == 64  # a live one: 8 (one run in flight)
    assert batch_size(_sized(1, 2, 25_000), True) == 64
    assert batch_size(_sized(1, 2, 200), True) == 25  # 4 batches a worker
    assert batch_size(_sized(64, 2, 10_000_000), True) == 256  # never below the live size


def test_a_unit_crosses_the_process_boundary_equal_with_its_events_outcome_and_recording(tmp_path):
    scenario = load_all(SCENARIOS)["refund_amount"]
    setup = WorkerSetup(
        folder=tmp_path,
        model=choose("scripted:random"),
        options=LiveOptions(),
        concurrency=1,
        seed=0,
        gateway_policy="enforce",
        approver=None,
        scenarios=(scenario,),
        with_events=True,
        driver_pid=os.getpid(),
    )
    (unit,) = run_batch_blocking(setup, [("refund_amount", "react", 1)])
    unit = replace(unit, recording=b'{"recorded": 1}\n')
    again = pickle.loads(pickle.dumps(unit))
    assert again == unit and again.events and again.events[-1].outcome == unit.outcome
