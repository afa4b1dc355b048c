"""``bench resume --stop ID`` decides exactly the stop ``bench runs`` and ``bench show`` printed: retyped after its run
moved on (to the next gate, or back to the same gate after a revision) it says "already decided" and decides nothing;
an id the run never had, or a --gate that is not the stop's, is one line and changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.records.checkpoint import CheckpointStore, stop_id
from tests.helpers.bench import bench_in_process

ARGS = ("--mode", "workflow", "--scenario", "blog_layered", "--model", "scripted:eager", "--trials", "2")


@pytest.fixture()
def suspended(tmp_path: Path) -> tuple[Path, str]:
    """A run folder whose two runs wait at the first of their story's two gates, and one of their ids."""
    out = tmp_path / "run"
    assert bench_in_process("run", *ARGS, "--out", str(out)).returncode == 0
    return out, CheckpointStore(out).run_ids()[0]


def standing(folder: Path, run_id: str) -> tuple[str | None, int, str]:
    """The gate the run waits at, how many decisions it was given, and its stop's id."""
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None
    return checkpoint.pending_gate, len(checkpoint.decisions), checkpoint.stop_id


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".bench.lock"}


def one_error(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    return line


def test_the_stop_id_bench_runs_and_bench_show_print_is_the_one_resume_decides(suspended):
    folder, run_id = suspended
    first = stop_id(run_id, 0, "brief_approval")
    assert re.fullmatch(r"[0-9a-f]{8}", first)

    listing = bench_in_process("runs", str(folder))
    waiting = listing.stdout.split("waiting run", 1)[1]
    assert re.search(rf"{run_id}\s+blog_layered\s+workflow\s+\d\s+brief_approval\s+{first}\n", waiting), waiting
    assert "--stop STOP --approve" in waiting
    shown = bench_in_process("show", str(folder))
    assert re.search(rf"{run_id} .* suspended .* {first}\n", shown.stdout), shown.stdout
    timeline = bench_in_process("show", str(folder), "--run", run_id).stdout
    assert f"it waits at 'brief_approval', stop {first}: bench resume" in timeline
    assert f"--run {run_id} --stop {first} --approve" in timeline

    decided = bench_in_process("resume", str(folder), "--run", run_id, "--stop", first, "--approve")
    assert decided.returncode == 0, decided.stderr
    gate, decisions, second = standing(folder, run_id)
    assert (gate, decisions) == ("synopsis_approval", 1) and second == stop_id(run_id, 1, "synopsis_approval")
    assert second in bench_in_process("runs", str(folder)).stdout.split("waiting run", 1)[1]
    before = files_of(folder)

    retyped = one_error(bench_in_process("resume", str(folder), "--run", run_id, "--stop", first, "--approve"))
    assert retyped == (
        f"error: run {run_id}: 'brief_approval' was already decided (approve, by {decided_by(folder, run_id)}); "
        "it waits now at 'synopsis_approval'"
    )
    assert files_of(folder) == before  # the gate nobody saw is still undecided, nothing written


def test_a_revision_retyped_by_its_stop_id_is_already_decided_though_the_run_waits_at_the_same_gate(suspended):
    folder, run_id = suspended
    first = standing(folder, run_id)[2]
    command = ("resume", str(folder), "--run", run_id, "--stop", first, "--revise", "--note", "shorter")
    assert bench_in_process(*command).returncode == 0
    gate, decisions, again = standing(folder, run_id)
    assert (gate, decisions) == ("brief_approval", 1) and again != first  # the same gate, a new stop
    before = files_of(folder)

    line = one_error(bench_in_process(*command))
    assert "'brief_approval' was already decided (revise, by " in line and "it waits now at 'brief_approval'" in line
    assert files_of(folder) == before


def test_a_stop_id_the_run_never_had_is_refused_naming_the_stop_that_waits(suspended):
    folder, run_id = suspended
    first, before = standing(folder, run_id)[2], files_of(folder)
    line = one_error(bench_in_process("resume", str(folder), "--run", run_id, "--stop", "0000abcd", "--approve"))
    assert line == (
        f"error: --stop 0000abcd: run {run_id} has no such stop (it waits at 'brief_approval', stop {first}; "
        "bench runs DIR lists the stops waiting)"
    )
    line = one_error(
        bench_in_process(
            "resume", str(folder), "--run", run_id, "--stop", first, "--gate", "synopsis_approval", "--approve"
        )
    )
    assert line == f"error: run {run_id}: stop {first} is at 'brief_approval', not at 'synopsis_approval'"
    assert files_of(folder) == before


def test_a_decision_without_gate_or_stop_on_a_two_gate_story_is_refused_naming_both(suspended):
    folder, run_id = suspended
    first, before = standing(folder, run_id)[2], files_of(folder)
    line = one_error(bench_in_process("resume", str(folder), "--run", run_id, "--approve"))
    assert "can stop at 2 gates, 'brief_approval' and 'synopsis_approval': name the one you decide" in line, line
    assert f"--gate brief_approval or --stop {first}" in line, line
    assert files_of(folder) == before


def decided_by(folder: Path, run_id: str) -> str:
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None
    return checkpoint.decisions[0].who
