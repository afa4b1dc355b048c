"""A replay reports the recorded latency per run: each run lasts its recorded model time plus bench's own time.

The replays here run on a fake clock (one millisecond a read), so what is asserted is values, never timing: the
recorded model time a run adds, and the recording's own P95 per mode.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from harness.core.clock import FakeClock, ShiftedClock, run_clock
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_matrix
from harness.matrix.pipeline.spec import project_dirs
from harness.models import RECORDED_MODEL
from harness.models.replay import ReplaySource
from harness.records.trace import TraceEvent, TraceWriter
from harness.scenario.load import select_scenarios
from reports.compare import TIMING_NOISE, compare


def _replay_events(recording: Path) -> list[dict]:
    """Every trace line of a replay of ``recording`` on a fake clock, as JSON objects."""
    source = ReplaySource(recording)
    manifest = source.manifest
    scenarios = select_scenarios(project_dirs()[0], manifest.scenarios)
    config = MatrixConfig(model=source, seed=manifest.seed, gateway_policy=manifest.gateway_policy, clock=FakeClock())
    events: list[dict] = []
    cells = cells_for(scenarios, manifest.modes, manifest.trials)
    asyncio.run(run_matrix(cells, config, lambda event: events.append(event.model_dump(mode="json"))))
    return events


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _per_run(events: list[dict]) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(scenario, mode, trial) -> (the run's wall_ms, the model time its calls and retries recorded)."""
    model_ms: dict[str, float] = defaultdict(float)
    walls: dict[str, tuple[tuple[str, str, int], float]] = {}
    for e in events:
        if e["kind"] in ("model_call", "model_retry") and e["latency_ms"] is not None:
            model_ms[e["run_id"]] += e["latency_ms"] + 1000.0 * (e["detail"] or {}).get("wait_s", 0.0)
        if e["kind"] == "summary":
            walls[e["run_id"]] = ((e["scenario"], e["mode"], e["trial"]), e["latency_ms"])
    return {cell: (wall, model_ms[run]) for run, (cell, wall) in walls.items()}


@pytest.fixture(scope="module")
def replayed() -> list[dict]:
    return _replay_events(RECORDED_MODEL)


@pytest.mark.slow
def test_a_replayed_run_lasts_its_recorded_model_time_plus_bench_own_time(replayed):
    runs = _per_run(replayed)
    assert len(runs) == len(_per_run(_read(RECORDED_MODEL / "traces.jsonl")))
    assert sum(model for _, model in runs.values()) > 60_000  # the recording's calls took minutes, not milliseconds
    for cell, (wall, model) in runs.items():
        # bench's own time on the fake clock: a millisecond per read, a few hundred reads at most
        assert model <= wall <= model + 1000.0, cell


def test_the_p95_per_mode_of_a_replay_is_the_recording_s(replayed):
    recorded = _per_run(_read(RECORDED_MODEL / "traces.jsonl"))
    replay = _per_run(replayed)
    for mode in {cell[1] for cell in recorded}:
        before = np.percentile([wall for cell, (wall, _) in recorded.items() if cell[1] == mode], 95)
        after = np.percentile([wall for cell, (wall, _) in replay.items() if cell[1] == mode], 95)
        assert after == pytest.approx(before, rel=TIMING_NOISE), mode


def test_compare_of_the_recording_and_its_replay_shows_no_latency_change(replayed, tmp_path):
    with TraceWriter(tmp_path / "traces.jsonl") as writer:
        for line in replayed:
            writer.write(TraceEvent.model_validate(line))
    comparison = compare([RECORDED_MODEL], [tmp_path])
    assert not comparison.regressed
    changed = [row.metric.label for row in comparison.table().records]
    assert not [label for label in changed if "latency" in label], changed


def test_the_shifted_clock_adds_the_model_time_to_durations_not_to_timestamps():
    base, model_ms = FakeClock(), [0.0]
    clock = ShiftedClock(base, lambda: model_ms[0])
    start, stamp = clock.monotonic(), clock.now()
    model_ms[0] = 2500.0
    assert clock.monotonic() - start == pytest.approx(2.5 + 0.002)  # two base reads in between
    assert (clock.now() - stamp).total_seconds() == pytest.approx(0.002)


def test_only_a_replay_shifts_the_run_clock():
    base = FakeClock()
    replay_model = ReplaySource(RECORDED_MODEL).for_run(0)
    assert isinstance(run_clock(base, replay_model), ShiftedClock)
    assert run_clock(base, object()) is base
