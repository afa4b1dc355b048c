"""Shared fixtures: the project's scenarios."""

from __future__ import annotations

import os

import pytest

from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario
from tests.helpers.bench import SCENARIOS

# bench fits its tables to COLUMNS (harness/terminal.py), and pytest's readline import exports the terminal's size
# (COLUMNS=80, LINES) to the C environment, where os.environ does not show it but every child process inherits it.
# Tests read a child's tables one line per row unless they set a width themselves (tests/e2e/test_terminal_width.py).
if "COLUMNS" not in os.environ:
    os.unsetenv("COLUMNS")
    os.unsetenv("LINES")


@pytest.fixture(scope="session")
def blog() -> Scenario:
    return load_scenario(SCENARIOS / "blog_brief_approval.yaml")
