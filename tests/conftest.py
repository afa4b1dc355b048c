"""Shared fixtures: the project's scenarios and an in-memory way to run a matrix."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from harness.clock import FakeClock
from harness.models.scripted import ScriptedSource
from harness.runner import MatrixConfig, cells_for, run_matrix
from harness.scenario import Scenario, load_scenario
from harness.trace import RunOutcome, TraceEvent

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


def run_offline(scenario: Scenario, modes: list[str], policy: str, *, trials: int = 1, seed: int = 0,
                gateway: str = "enforce") -> tuple[list[TraceEvent], list[RunOutcome]]:
    """Runs a small matrix in memory with a fake clock and numbered run ids."""
    events: list[TraceEvent] = []
    counter = itertools.count(1)
    config = MatrixConfig(model=ScriptedSource(policy), seed=seed, gateway_policy=gateway,  # type: ignore[arg-type]
                          clock=FakeClock(), new_run_id=lambda: f"run-{next(counter)}")
    outcomes = asyncio.run(run_matrix(cells_for([scenario], modes, trials), config, events.append))
    return events, outcomes


@pytest.fixture(scope="session")
def blog() -> Scenario:
    return load_scenario(SCENARIOS / "blog_brief_approval.yaml")
