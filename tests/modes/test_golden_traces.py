"""Golden traces: a mode's run on blog_brief_approval, compared after normalising ids and times.

Every mode with a golden file is held to it exactly. A mode without one is reported as skipped, not failed (a new
mode needs none to go green); the modes the committed recordings hold must have one. Set BENCH_UPDATE_GOLDEN=1 to
write them (a new mode's, or after an intended change), then review the diff.
"""

from __future__ import annotations

import pytest

from modes import MODES
from tests.helpers.bench import run_offline
from tests.helpers.mode_checks import GOLDEN, GOLDEN_POLICY, WRITE_GOLDEN, check_golden, golden_path, normalise
from tests.helpers.mode_checks import recorded_modes as recorded


def test_every_golden_trace_belongs_to_a_registered_mode_and_its_policy():
    files = sorted(path.name for path in GOLDEN.glob("*.jsonl"))
    assert files and files == sorted(golden_path(path.split(".")[1]).name for path in files)
    assert {path.split(".")[1] for path in files} <= set(MODES)
    assert set(GOLDEN_POLICY) <= set(MODES)


def test_every_recorded_mode_has_a_golden_trace():
    """The modes a committed recording holds are established: each keeps its golden trace."""
    missing = sorted(mode for mode in recorded() if not golden_path(mode).exists())
    assert not missing, f"no golden trace for {missing}: write them with {WRITE_GOLDEN}=1 and review them"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_trace_matches_golden(blog, mode):
    if not check_golden(blog, mode):
        pytest.skip(f"no golden trace for {mode}: write one with {WRITE_GOLDEN}=1 and review it")


def test_a_mode_without_a_golden_trace_is_skipped_and_the_variable_writes_one(blog, tmp_path, monkeypatch):
    monkeypatch.delenv(WRITE_GOLDEN, raising=False)
    assert check_golden(blog, "workflow", tmp_path) is False and not list(tmp_path.iterdir())
    monkeypatch.setenv(WRITE_GOLDEN, "1")
    assert check_golden(blog, "workflow", tmp_path) is True
    monkeypatch.delenv(WRITE_GOLDEN)
    assert check_golden(blog, "workflow", tmp_path) is True  # held to the file it wrote
    assert golden_path("workflow", tmp_path).read_text() == golden_path("workflow").read_text()


def test_a_changed_golden_trace_fails(blog, tmp_path, monkeypatch):
    monkeypatch.delenv(WRITE_GOLDEN, raising=False)
    changed = golden_path("react", tmp_path)
    changed.write_text(golden_path("react").read_text().replace('"create_brief"', '"write_draft"', 1))
    with pytest.raises(AssertionError):
        check_golden(blog, "react", tmp_path)


def test_normalising_hides_only_ids_and_times(blog):
    """Two runs of the same cell differ in ids and times only."""
    first, _ = run_offline(blog, ["react"], "random", seed=3)
    second, _ = run_offline(blog, ["react"], "random", seed=3)
    other_seed, _ = run_offline(blog, ["react"], "random", seed=4)
    assert normalise(first) == normalise(second)
    assert normalise(first) != normalise(other_seed)
