"""The spectrum per story: each of seed 003's modes on its own story, every mode on every story, and the article's
published figures in a table of their own, never in a column next to bench's."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from harness.matrix.pipeline.spec import project_dirs
from modes import MODES
from reports import load_traces
from reports.metrics import compute
from reports.report import build_report
from reports.spectrum import published_table, spectrum_table, story_grid_table
from tests.helpers.report_fixtures import Run, write_runs

OWN = MODES["workflow"].typical_story  # bank_transfer_compliance
OTHER = "blog_brief_approval"


def _runs() -> list[Run]:
    own = [Run(f"w{t}", "workflow", OWN, trial=t, stop_correct=t != 3, wall_ms=100.0 * t) for t in (1, 2, 3)]
    # Long runs of the same mode on another story: pooling them would move the P95 to seconds.
    other = [Run(f"o{t}", "workflow", OTHER, trial=t, stop_correct=False, wall_ms=9000.0) for t in (1, 2)]
    return [
        *own,
        *other,
        Run("r1", "react", OWN, stop_correct=True),
        Run("r2", "react", OWN, trial=2, stop_correct=False),
        Run("p1", "plan_execute", OTHER),
        Run("wr1", "workflow_routed", OTHER, stop_correct=False),  # its own story is not in these traces
    ]


@pytest.fixture
def stories(tmp_path):
    return compute(load_traces(write_runs(tmp_path / "run", _runs())), "scenario")


def test_a_seed_mode_is_measured_on_its_own_story_only(stories):
    table = spectrum_table(stories)
    row = dict(zip(table.headers, next(r for r in table.rows if r[1] == "workflow"), strict=True))
    assert row["n"] == 3 and row["stop-correct"] == pytest.approx(2 / 3)
    assert row["P95 per run (ms)"] == pytest.approx(np.percentile([100.0, 200.0, 300.0], 95))
    assert OWN in row["typical story (scenario)"]


def test_a_seed_mode_whose_story_is_missing_keeps_its_row_without_numbers(stories):
    table = spectrum_table(stories)
    rows = {r[1]: dict(zip(table.headers, r, strict=True)) for r in table.rows}
    assert rows["workflow_routed"]["n"] is None and rows["workflow_routed"]["stop-correct"] is None
    assert rows["react"]["n"] is None  # its story (research_assistant) is not in these traces
    assert "plan_execute" not in rows  # outside the seed's seven: in the grid only
    assert [r[0] for r in table.rows] == sorted(r[0] for r in table.rows)  # the seed's order


def test_the_spectrum_table_holds_no_published_figure(stories):
    headers = " ".join(spectrum_table(stories).headers + story_grid_table(stories).headers)
    assert "published" not in headers and "seed 003" not in headers


def test_every_mode_on_every_story_shows_stop_correct_of_n_and_marks_the_own_story(stories):
    table = story_grid_table(stories)
    assert table.headers[:2] == ["scenario", "policy"]
    assert table.headers[2:] == ["workflow", "workflow_routed", "react", "plan_execute"]  # spectrum order
    grid = {r[0]: dict(zip(table.headers, r, strict=True)) for r in table.rows}
    assert list(grid) == sorted([OWN, OTHER])
    assert grid[OWN]["workflow"] == "2/3*" and grid[OTHER]["workflow"] == "0/2"
    assert grid[OWN]["react"] == "1/2" and grid[OTHER]["react"] is None
    assert grid[OTHER]["plan_execute"] == "1/1" and grid[OTHER]["workflow_routed"] == "0/1"


def test_the_published_figures_are_the_seed_s_seven_captioned_as_another_system():
    table = published_table()
    assert "another system" in table.title and "not comparable" in table.title
    by_mode = {r[1]: dict(zip(table.headers, r, strict=True)) for r in table.rows}
    assert [r[0] for r in table.rows] == list(range(1, 8))
    for name, row in by_mode.items():
        assert row["published P95 (ms)"] == MODES[name].published_p95_ms
        assert row["published error rate"] == MODES[name].published_error_rate


def test_every_typical_story_is_a_library_scenario_its_story_names():
    scenarios = {path.stem for path in project_dirs()[0].glob("*.yaml")}
    staged = [cls for cls in MODES.values() if cls.typical_story is not None]
    assert len(staged) == 7  # each of the seed's seven, react's research assistant included
    for cls in staged:
        assert cls.typical_story in scenarios and f"({cls.typical_story})" in (cls.story or "")


@pytest.mark.slow
def test_the_report_writes_the_three_spectrum_tables_in_every_format_from_one_story(tmp_path):
    """One story only: the report computes the per-story metrics for the spectrum itself."""
    folder = write_runs(tmp_path / "run", [r for r in _runs() if r.scenario == OWN])
    result = build_report([folder], tmp_path / "out")
    names = ("spectrum", "spectrum_by_story", "spectrum_published")
    for name in names:
        assert (result.out / "tables" / f"{name}.csv").is_file() and (result.out / "tables" / f"{name}.tex").is_file()
        assert f'data-table="{name}"' in (result.out / "report.html").read_text()
    markdown = (result.out / "report.md").read_text()
    assert "### The control spectrum: each mode on its own story" in markdown
    assert "production figures from another system" in markdown
    with open(result.out / "tables" / "spectrum.csv") as handle:
        workflow = next(row for row in csv.DictReader(handle) if row["mode"] == "workflow")
    assert int(workflow["n"]) == 3 and math.isclose(float(workflow["stop-correct"]), 2 / 3)
    assert "2/3*" in (result.out / "tables" / "spectrum_by_story.tex").read_text()
