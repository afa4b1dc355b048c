"""A slice of the runtime crash sweep (scripts/runtime_crashes.py prints the whole table): ``langgraph_workflow`` on
blog_brief_approval, its ``bench resume --approve`` killed after each of its writes (bench's, the gateway's trace
lines and LangGraph's own checkpoint writes), each kill recovered by ``bench resume``.

bench's own part must hold at every kill point: the folder reads cleanly, the run settles exactly once as the
uninterrupted resume ends, the one decision is applied once and never lost. What LangGraph runs again is the
finding, pinned to the installed version: a kill after the gated action committed and before LangGraph saved its
node's writes makes it run that node again, and the second commit is counted (``repeated_side_effects``).

The sweep's first-run phase found a gap of bench's own, in every mode: a run killed between its suspended summary
and its checkpoint waited at a gate no ``bench resume`` could decide. ``bench run --resume`` now drops such a run
and runs it again (harness/matrix/pipeline/unfinished.py); the last test proves it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from importlib.metadata import version

import pytest

pytest.importorskip("langgraph")

from harness.records.folder import TRACE_FILE
from harness.records.trace import read_events
from tests.helpers.runtime_crash_sweep import (
    FRAMEWORK,
    SETTLED,
    ForkDriver,
    KillPoint,
    Sweep,
    approve,
    bench_run,
)

PINNED = "1.2.24"  # the LangGraph these findings were made on
MODE, STORY = "langgraph_workflow", "blog_brief_approval"


@pytest.fixture(scope="module")
def driver() -> Iterator[ForkDriver]:
    made = ForkDriver([MODE])
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def points(driver: ForkDriver, tmp_path_factory: pytest.TempPathFactory) -> list[KillPoint]:
    return Sweep(driver, tmp_path_factory.mktemp("sweep"), phases=("resume",)).one(MODE, STORY)


@pytest.mark.slow
def test_every_kill_point_of_an_adapter_resume_leaves_a_readable_folder_and_settles_once(points):
    assert len(points) >= 10  # the claim, the manifest, the decision, the walk's lines, LangGraph's writes, the end
    assert [p.index for p in points] == list(range(1, len(points) + 1))
    assert any(p.boundary == f"resume: {FRAMEWORK}" for p in points)  # LangGraph's own writes are kill points too
    for point in points:
        assert point.readable, point
        assert point.settled_once, point
        assert not point.ended_otherwise, point  # finished, stop verdict correct, as without the kill


@pytest.mark.slow
def test_no_kill_point_loses_the_approval_or_applies_the_decision_twice(points):
    for point in points:
        assert point.lost == 0, point  # the gated action committed after the approval, every time
        assert point.extra_decisions == 0, point  # one human event: the decision was carried out once
        assert point.twice == point.repeated, point  # each extra commit of the gated action is a counted repeat


@pytest.mark.slow
def test_what_langgraph_runs_again_after_a_kill_is_counted(points):
    installed = version("langgraph")
    if installed != PINNED:
        pytest.skip(
            f"LANGGRAPH {installed} IS INSTALLED, THIS FINDING IS PINNED TO {PINNED}: rerun "
            "scripts/runtime_crashes.py, then update PINNED here and the table in docs/findings.md"
        )
    repeating = [p.index for p in points if p.repeated]
    assert repeating  # killed inside the draft node, LangGraph runs the node again: the draft commits twice
    assert all(p.repeated in (0, 1) for p in points)
    # from the commit until LangGraph saved the draft node's writes, every kill point repeats it; none before or after
    assert repeating == list(range(repeating[0], repeating[-1] + 1))
    assert all(p.repeated == 0 for p in points[:3])  # bench's claim, manifest and decision: nothing had run yet
    assert all(p.repeated == 0 for p in points if p.boundary == f"resume: {SETTLED}")
    commit = [p for p in points if p.write.startswith("action write_draft committed")]
    assert all(p.repeated == 1 for p in commit)  # the commit the last write before the kill: always run again


@pytest.mark.slow
def test_a_first_run_killed_between_its_stop_and_its_checkpoint_can_still_be_decided(driver, tmp_path):
    whole = tmp_path / "whole"
    assert driver([bench_run("workflow", STORY, whole)], 0)[0]["code"] == 0
    folder = tmp_path / "killed"
    # its writes: the run's lines (one write: a work unit), then its checkpoint; killed between the two
    assert driver([bench_run("workflow", STORY, folder)], 1)[0]["code"] == -signal.SIGKILL
    (last,) = [e for e in read_events(folder / TRACE_FILE) if e.kind == "summary"]
    assert last.outcome is not None and last.outcome.status == "suspended"
    assert driver([["run", "--resume", str(folder)]], 0)[0]["code"] == 0  # what a person does after the kill
    (run_id,) = {e.run_id for e in read_events(folder / TRACE_FILE)}
    decided = driver([approve(folder, run_id)], 0)[0]
    assert decided["code"] == 0, decided["err"]
