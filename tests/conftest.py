"""Shared fixtures: the project's scenarios."""

from __future__ import annotations

import os
import sys

# Compiled modules are cached even where the machine sets PYTHONDONTWRITEBYTECODE (this one does): without the cache
# every xdist worker rewrites every test module's asserts and every bench child process compiles harness/ afresh.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import pytest  # noqa: E402

from harness.scenario.load import load_scenario  # noqa: E402
from harness.scenario.model import Scenario  # noqa: E402
from tests.helpers.bench import SCENARIOS  # noqa: E402
from tests.helpers.sweeps import FULL_SWEEPS, FULL_SWEEPS_VARIABLE  # noqa: E402

# bench fits its tables to COLUMNS (harness/terminal.py), and pytest's readline import exports the terminal's size
# (COLUMNS=80, LINES) to the C environment, where os.environ does not show it but every child process inherits it.
# Tests read a child's tables one line per row unless they set a width themselves (tests/e2e/test_terminal_width.py).
if "COLUMNS" not in os.environ:
    os.unsetenv("COLUMNS")
    os.unsetenv("LINES")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first, so no worker is left alone with one at the end (xdist hands out whole modules in
    this order); the quick suite skips the tests marked slow, saying where they run (CI: BENCH_FULL_SWEEPS=1)."""
    items.sort(key=lambda item: (not item.get_closest_marker("local_model"), not item.get_closest_marker("slow")))
    if FULL_SWEEPS:
        return
    skip = pytest.mark.skip(reason=f"slow: runs in CI and with {FULL_SWEEPS_VARIABLE}=1")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def blog() -> Scenario:
    return load_scenario(SCENARIOS / "blog_brief_approval.yaml")
