"""A decision names what it decides: on a run that can stop more than once (a story with more than one gate, a mode's
own plan review before a story's gate, a gate the run came back to after a revision), ``bench resume`` without
``--gate`` or ``--stop`` refuses in one line (off a terminal) and decides nothing, and retyping a finished named command
says "already decided"."""

from __future__ import annotations

import json

import pytest

from harness.errors import UserInputError
from harness.matrix.commands.resume import resume
from harness.records.checkpoint import CheckpointStore
from tests.helpers.bench import bench_in_process, bench_process

ARGS = ("--mode", "workflow", "--scenario", "blog_layered", "--model", "scripted:eager")


def refused(folder, *args: str) -> str:
    """A ``bench resume`` of the folder's run that must be refused: its one line, the folder left byte for byte."""
    before = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".bench.lock"}
    result = bench_in_process("resume", str(folder), "--run", waiting(folder)[0], *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    after = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".bench.lock"}
    assert after == before, line  # nothing written
    return line


def waiting(folder) -> tuple[str, str | None, int]:
    """The one run's id, the gate it waits at, and how many decisions it was given."""
    (run_id,) = CheckpointStore(folder).run_ids()
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None
    return run_id, checkpoint.pending_gate, len(checkpoint.decisions)


@pytest.mark.slow
def test_retyping_a_decided_resume_says_already_decided_and_decides_nothing_else(tmp_path):
    out = tmp_path / "run"
    assert bench_process("run", *ARGS, "--out", str(out)).returncode == 0
    run_id, gate, decided = waiting(out)
    assert (gate, decided) == ("brief_approval", 0)

    unnamed = bench_process("resume", str(out), "--run", run_id, "--approve")
    assert unnamed.returncode == 2
    (line,) = unnamed.stderr.strip().splitlines()
    assert "can stop at 2 gates, 'brief_approval' and 'synopsis_approval': name the one you decide" in line, line
    assert "--gate brief_approval or --stop" in line, line
    assert waiting(out) == (run_id, "brief_approval", 0)  # nothing decided

    command = ("resume", str(out), "--run", run_id, "--approve", "--gate", "brief_approval")
    first = bench_process(*command)
    assert first.returncode == 0, first.stderr
    assert waiting(out) == (run_id, "synopsis_approval", 1)
    lines_before = (out / "traces.jsonl").read_text()

    retyped = bench_process(*command)  # as after a crash between the last write and the result line
    assert retyped.returncode == 2
    (line,) = retyped.stderr.strip().splitlines()
    assert "'brief_approval' was already decided" in line and "waits now at 'synopsis_approval'" in line, line
    assert waiting(out) == (run_id, "synopsis_approval", 1)  # the gate nobody saw is still undecided
    assert (out / "traces.jsonl").read_text() == lines_before
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_a_retyped_bare_approval_never_decides_the_story_gate_after_a_plan_review(tmp_path):
    """hybrid_planner on a one-gate story stops twice, at its own plan review and then at the story's gate: a bare
    --approve is refused at both, naming the stop, so typing it again after the review was approved decides nothing."""
    out = tmp_path / "run"
    args = ("--mode", "hybrid_planner", "--scenario", "blog_brief_approval", "--model", "scripted:reference")
    assert bench_in_process("run", *args, "--out", str(out)).returncode == 0
    run_id, gate, decided = waiting(out)
    assert (gate, decided) == ("plan_review", 0)
    review = CheckpointStore(out).load(run_id)
    assert review is not None

    line = refused(out, "--approve")
    assert "can stop at 2 gates, hybrid_planner's own 'plan_review' and 'brief_approval'" in line, line
    assert f"--gate plan_review or --stop {review.stop_id} (it waits there now; decided before: none)" in line, line
    assert waiting(out) == (run_id, "plan_review", 0)

    approved = bench_in_process("resume", str(out), "--run", run_id, "--stop", review.stop_id, "--approve")
    assert approved.returncode == 0, approved.stderr
    assert waiting(out) == (run_id, "brief_approval", 1)
    story_gate = CheckpointStore(out).load(run_id)
    assert story_gate is not None

    line = refused(out, "--approve")  # the retype: the story's gate, which nobody saw, stays undecided
    assert f"--gate brief_approval or --stop {story_gate.stop_id}" in line, line
    assert "decided before: 'plan_review' (approve, by" in line, line
    assert waiting(out) == (run_id, "brief_approval", 1)
    assert "already decided" in refused(out, "--stop", review.stop_id, "--approve")  # the named retype


def test_a_retyped_bare_revision_on_a_one_gate_story_is_refused_where_the_run_came_back(tmp_path):
    """A one-gate story's run that a revision sent back stands at the same gate again, a second stop: a bare decision
    there is refused, naming the new stop's id (--gate would name the revised stop too)."""
    out = tmp_path / "run"
    args = ("--mode", "workflow", "--scenario", "blog_brief_approval", "--model", "scripted:reference")
    assert bench_in_process("run", *args, "--out", str(out)).returncode == 0
    run_id, _, _ = waiting(out)
    revise = ("resume", str(out), "--run", run_id, "--revise", "--note", "shorter")
    first = bench_in_process(*revise)  # one stop so far, one place to stop at: a bare decision is safe
    assert first.returncode == 0, first.stderr
    assert waiting(out) == (run_id, "brief_approval", 1)
    again = CheckpointStore(out).load(run_id)
    assert again is not None

    line = refused(out, "--revise", "--note", "shorter")  # the retype
    assert f"has stopped 2 times at 'brief_approval': name the one you decide, --stop {again.stop_id} (" in line, line
    assert waiting(out) == (run_id, "brief_approval", 1)


def test_on_a_terminal_a_bare_decision_at_a_plan_review_is_put_to_the_person_before_it_lands(tmp_path):
    """Where a person can answer (``confirm``), the bare decision on a run that stops at its plan review and then at
    the story's gate is asked about, naming both stops and the one it would decide; a no decides nothing."""
    out = tmp_path / "run"
    args = ("--mode", "hybrid_planner", "--scenario", "blog_brief_approval", "--model", "scripted:reference")
    assert bench_in_process("run", *args, "--out", str(out)).returncode == 0
    run_id, _, _ = waiting(out)
    review = CheckpointStore(out).load(run_id)
    assert review is not None
    asked: list[str] = []

    def no(question: str) -> bool:
        asked.append(question)
        return False

    with pytest.raises(UserInputError, match="nothing decided"):
        resume(out, run_id, "approve", who="editor", named=True, confirm=no)
    assert asked == [
        f"run {run_id} can stop at 2 gates, hybrid_planner's own 'plan_review' and 'brief_approval'; it waits now at "
        f"'plan_review', stop {review.stop_id} (decided before: none); approve 'plan_review'?"
    ]
    assert waiting(out) == (run_id, "plan_review", 0)
    resume(out, run_id, "approve", who="editor", named=True, confirm=lambda question: True)
    assert waiting(out) == (run_id, "brief_approval", 1)
