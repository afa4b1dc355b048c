"""Golden traces: one per mode on blog_brief_approval, compared after normalising ids and times.

Set BENCH_UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.records.trace import TraceEvent
from modes import MODES
from tests.helpers.bench import run_offline

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "helpers" / "golden"
# The policy that shows a mode's characteristic behaviour, where it is not the compliant one.
POLICY_FOR = {"react": "looping", "react_guardrails": "eager"}
GOLDEN_MODES = sorted(MODES)  # every registered mode has a golden trace


def golden_path(mode: str) -> Path:
    return GOLDEN / f"blog_brief_approval.{mode}.{POLICY_FOR.get(mode, 'compliant')}.jsonl"


def normalise(events: list[TraceEvent]) -> list[dict]:
    """Drops what differs between identical runs: ids, timestamps, wall-clock durations."""
    ids: dict[str, str] = {}
    lines = []
    for event in events:
        data = json.loads(event.model_dump_json())
        data["run_id"] = ids.setdefault(data["run_id"], f"run-{len(ids) + 1}")
        data.pop("ts")
        if data["kind"] == "summary":
            data.pop("latency_ms")
            data["outcome"].pop("wall_ms")
        lines.append(data)
    return lines


def test_every_mode_has_a_golden_trace():
    missing = [mode for mode in GOLDEN_MODES if not golden_path(mode).exists()]
    assert not missing, f"no golden trace for {missing}: write them with BENCH_UPDATE_GOLDEN=1 and review them"
    assert set(POLICY_FOR) <= set(MODES)


@pytest.mark.parametrize("mode", GOLDEN_MODES)
def test_trace_matches_golden(blog, mode):
    events, _ = run_offline(blog, [mode], POLICY_FOR.get(mode, "compliant"))
    got = normalise(events)
    path = golden_path(mode)
    if os.environ.get("BENCH_UPDATE_GOLDEN"):
        path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in got))
    expected = [json.loads(line) for line in path.read_text().splitlines()]
    assert got == expected


def test_normalising_hides_only_ids_and_times(blog):
    """Two runs of the same cell differ in ids and times only."""
    first, _ = run_offline(blog, ["react"], "random", seed=3)
    second, _ = run_offline(blog, ["react"], "random", seed=3)
    other_seed, _ = run_offline(blog, ["react"], "random", seed=4)
    assert normalise(first) == normalise(second)
    assert normalise(first) != normalise(other_seed)
