"""One pass over a trace for the run pages: bounded by the most runs asked for, so a huge trace is never held."""

from __future__ import annotations

import json
from pathlib import Path

from harness.records.timeline import scan


def trace(path: Path, runs: list[str]) -> Path:
    lines = [
        {"schema_version": 5, "run_id": run, "scenario": "s", "mode": "react", "seq": seq, "kind": "step"}
        for run in runs
        for seq in range(3)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_scan_asked_for_at_most_n_runs_stops_at_the_first_event_of_a_run_past_them(tmp_path):
    path = trace(tmp_path / "traces.jsonl", ["r1", "r2", "r3"])
    within = scan(path, most=3)
    assert not within.over
    assert [(run, len(events)) for run, events in within.runs.items()] == [("r1", 3), ("r2", 3), ("r3", 3)]
    past = scan(path, most=2)
    assert past.over
    assert [(run, len(events)) for run, events in past.runs.items()] == [("r1", 3), ("r2", 3)]
    assert past.lines == 7  # read no further than the third run's first line
    assert not scan(path).over
