"""A decision names what it decides: on a story with more than one gate, ``bench resume`` without ``--gate`` refuses in
one line (off a terminal) and decides nothing, and retyping a finished ``--gate`` command says "already decided"."""

from __future__ import annotations

import json

from harness.records.checkpoint import CheckpointStore
from tests.helpers.bench import bench_process

ARGS = ("--mode", "workflow", "--scenario", "blog_layered", "--model", "scripted:eager")


def waiting(folder) -> tuple[str, str | None, int]:
    """The one run's id, the gate it waits at, and how many decisions it was given."""
    (run_id,) = CheckpointStore(folder).run_ids()
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None
    return run_id, checkpoint.pending_gate, len(checkpoint.decisions)


def test_retyping_a_decided_resume_says_already_decided_and_decides_nothing_else(tmp_path):
    out = tmp_path / "run"
    assert bench_process("run", *ARGS, "--out", str(out)).returncode == 0
    run_id, gate, decided = waiting(out)
    assert (gate, decided) == ("brief_approval", 0)

    unnamed = bench_process("resume", str(out), "--run", run_id, "--approve")
    assert unnamed.returncode == 2
    (line,) = unnamed.stderr.strip().splitlines()
    assert "can stop at 2 gates: name the one you decide, --gate brief_approval" in line, line
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
