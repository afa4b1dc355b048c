"""A SIGTERM that reaches ``bench resume`` after its decision was applied (the run's checkpoint settled, or the command
about to print its result) ends it with 143 and one line saying the decision was applied and where the run stands,
never silently; retyped, the command says "already decided". The signal is the boundary: a child process each."""

from __future__ import annotations

import re
import signal

import pytest

from harness.records.checkpoint import CheckpointStore
from harness.records.write_faults import KILL_AT, KILL_SIGNAL
from tests.helpers.bench import bench_process

ARGS = ("--mode", "workflow", "--scenario", "blog_layered", "--model", "scripted:eager")


@pytest.mark.slow
@pytest.mark.parametrize("point", ["resume settled", "resume returned"])
def test_a_sigterm_after_the_decision_was_applied_says_so_in_one_line(point, tmp_path):
    out = tmp_path / "run"
    assert bench_process("run", *ARGS, "--out", str(out)).returncode == 0
    (run_id,) = CheckpointStore(out).run_ids()
    first = CheckpointStore(out).load(run_id)
    assert first is not None
    command = ("resume", str(out), "--run", run_id, "--stop", first.stop_id, "--approve", "--as", "editor")

    late = bench_process(*command, env={KILL_AT: point, KILL_SIGNAL: "TERM"})
    assert late.returncode == 128 + signal.SIGTERM, late.stderr
    assert late.stderr == (
        f"stopped by SIGTERM after the decision was applied: run {run_id} is suspended at 'synopsis_approval'; "
        "nothing is left to carry out\n"
    )
    assert re.fullmatch(rf"run {run_id}: suspended at synopsis_approval; .*\n", late.stdout), late.stdout
    now = CheckpointStore(out).load(run_id)
    assert now is not None
    assert (now.status, now.pending_gate, len(now.decisions)) == ("suspended", "synopsis_approval", 1)

    retyped = bench_process(*command)
    assert retyped.returncode == 2
    assert "'brief_approval' was already decided (approve, by editor)" in retyped.stderr
    assert CheckpointStore(out).load(run_id) == now  # nothing else decided
