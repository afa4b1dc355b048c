"""A mode declares the review points its own code stops at (``review_points``): ``bench resume`` counts them among a
run's stops when it decides whether a bare decision is safe, so a stop a mode makes outside its story's gates and does
not declare would let a retyped approval decide a stop nobody saw."""

from __future__ import annotations

from pathlib import Path

from harness import RunSpec, run
from harness.records.trace import read_events
from harness.scenario.load import load_scenario
from harness.scenario.model import MODE_REVIEW_POINTS
from modes.base import MODES
from tests.helpers.bench import ROOT

STORIES = ("blog_brief_approval", "blog_two_gates")


def test_every_stop_a_mode_makes_outside_its_story_gates_is_a_review_point_it_declares(tmp_path: Path):
    out = tmp_path / "run"
    run(RunSpec(modes=("all",), scenarios=STORIES, model="scripted:reference", out=out))
    gates = {gate.name for story in STORIES for gate in load_scenario(ROOT / "scenarios" / f"{story}.yaml").gates}
    own: dict[str, set[str]] = {}
    for event in read_events(out / "traces.jsonl"):
        if event.kind == "suspend" and event.action not in gates:
            own.setdefault(event.mode, set()).add(str(event.action))
    assert own == {"hybrid_planner": {"plan_review"}}  # the stops these runs made, outside the stories' gates
    declared = {name: set(MODES[name].review_points) for name in MODES if MODES[name].review_points}
    assert declared == own
    assert all(points <= MODE_REVIEW_POINTS for points in declared.values())  # names no story gate may take
