"""Shared fixtures: the project's scenarios."""

from __future__ import annotations

import pytest

from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario
from tests.helpers.bench import SCENARIOS


@pytest.fixture(scope="session")
def blog() -> Scenario:
    return load_scenario(SCENARIOS / "blog_brief_approval.yaml")
