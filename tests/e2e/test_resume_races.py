"""A decision lands only where its command was meant: racing resumes on runs with two stops never decide the stop
after the one they saw; a stop that appeared after a command started is refused; --run takes a unique prefix; a
missing, emptied or row-less checkpoint database is one line naming it, and a refused resume writes nothing."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.errors import UserInputError
from harness.matrix.commands.resume import resume
from harness.records.checkpoint import CHECKPOINT_FILE, CheckpointStore
from harness.records.folder import LOCK_FILE
from harness.records.trace import TraceEvent, read_events
from tests.helpers.bench import ROOT, bench_in_process
from tests.helpers.sweeps import scaled

# each a fresh run, raced by four commands at once, each its own process (the race is between processes): one run a
# variant in the quick suite, all eight in CI
TRIES = {"with --stop": scaled(4, 1), "with --gate": scaled(2, 1), "mixed": scaled(2, 1)}


def events_of(folder: Path, run_id: str) -> list[TraceEvent]:
    return [e for e in read_events(folder / "traces.jsonl") if e.run_id == run_id]


def files_of(folder: Path) -> dict[str, bytes]:
    """Every data file of a folder, byte for byte: what a refused command must leave alone. The lock file is left out:
    it names whoever held the folder last (pid and since when), and a refused command held it while it looked."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != LOCK_FILE}


@pytest.fixture(scope="module")
def plan_reviews(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """hybrid_planner runs, each waiting at its plan review; once approved, each stops again at the story's gate."""
    folder = tmp_path_factory.mktemp("races") / "run"
    run(
        RunSpec(
            modes=["hybrid_planner"],
            scenarios=["blog_brief_approval"],
            model="scripted:reference",
            trials=sum(TRIES.values()) + 1,
            out=folder,
        )
    )
    runs = [e.run_id for e in read_events(folder / "traces.jsonl") if e.kind == "summary"]
    assert all(events_of(folder, r)[-1].outcome.suspended_at == "plan_review" for r in runs)
    return folder, runs


def race(folder: Path, run_id: str, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """The commands as four users type them at once: started together, each its own process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "harness", "resume", str(folder), "--run", run_id, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in commands
    ]
    done = []
    for child, args in zip(children, commands, strict=True):
        out, err = child.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(args, child.returncode, out, err))
    return done


DECISIONS = ["--approve", "--reject", "--approve", "--reject"]


NAMED_BY = {  # what each of the four racers names its stop with, per variant (None: nothing, a bare decision)
    "with --stop": ["--stop"] * 4,
    "with --gate": ["--gate"] * 4,
    "mixed": ["--gate", "--stop", "--gate", None],
}


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(TRIES))
def test_racing_decisions_never_land_on_a_gate_their_command_did_not_target(plan_reviews, variant):
    """Every command is typed while the run waits at its plan review, so plan_review is each one's target (named
    with --gate or --stop): exactly one decides it; none decides the story's gate after it, and a bare decision racing
    them decides nothing (the run can stop twice: its plan review, then the story's gate)."""
    folder, runs = plan_reviews
    variants = list(TRIES)
    offset = sum(TRIES[v] for v in variants[: variants.index(variant)])
    for run_id in runs[offset : offset + TRIES[variant]]:
        waiting = CheckpointStore(folder).load(run_id)
        assert waiting is not None
        names = {"--gate": ["--gate", "plan_review"], "--stop": ["--stop", waiting.stop_id], None: []}
        commands = [
            [decision, "--as", f"person{index}", *names[flag]]
            for index, (decision, flag) in enumerate(zip(DECISIONS, NAMED_BY[variant], strict=True))
        ]
        results = race(folder, run_id, commands)
        for result in results:
            assert "Traceback" not in result.stderr, result.stderr
        winners = [index for index, result in enumerate(results) if result.returncode == 0]
        assert len(winners) == 1, [(r.returncode, r.stderr) for r in results]
        assert NAMED_BY[variant][winners[0]] is not None  # a bare decision never decides a run with two stops
        winner = winners[0]
        decision = DECISIONS[winner].removeprefix("--")
        humans = [e for e in events_of(folder, run_id) if e.kind == "human"]
        assert [(e.action, e.result, e.detail["who"]) for e in humans] == [
            ("plan_review", decision, f"person{winner}")
        ]  # one decision, at the gate every command targeted, and nothing at the gate after it
        checkpoint = CheckpointStore(folder).load(run_id)
        assert checkpoint is not None and [d.gate for d in checkpoint.decisions] == ["plan_review"]
        if decision == "approve":
            assert (checkpoint.status, checkpoint.pending_gate) == ("suspended", "brief_approval")
            now = "it waits now at 'brief_approval'"
        else:
            assert checkpoint.status == "rejected"
            now = "nothing waits for a decision"
        said = f"({decision}, by person{winner})"
        allowed = (
            f"error: run {run_id} can stop at 2 gates, hybrid_planner's own 'plan_review' and 'brief_approval': name "
            f"the one you decide, --gate plan_review or --stop {waiting.stop_id} (it waits there now; decided before: "
            "none); a retyped command then says it was already decided",
            f"error: run {run_id}: 'plan_review' was already decided {said}; {now}",
            f"error: run {run_id}: 'plan_review' was already decided {said} after this command started; {now}",
            f"error: run {run_id}: 'plan_review' is being decided now {said} by another bench resume",
        )
        for index, result in enumerate(results):
            if index == winner:
                continue
            assert result.returncode == 2, result.stderr
            line = result.stderr.strip()
            assert "\n" not in line, line
            assert line in allowed or re.fullmatch(
                r"error: .*: locked by (bench pid \d+ .*|another bench process) .*", line
            )


def test_a_stop_that_appeared_after_the_command_started_is_not_decided_by_it(plan_reviews):
    """The rule the race relies on, shown without timing: a command that started before the plan review was
    decided does not decide the gate that came after it, even when it first reads the run afterwards."""
    folder, runs = plan_reviews
    run_id = runs[-1]
    typed = time.time()  # the second person types their command now, while the run waits at its plan review
    resume(folder, run_id, "approve", who="first")
    before = files_of(folder)
    with pytest.raises(UserInputError) as refused:
        resume(folder, run_id, "approve", who="second", started=typed)
    assert str(refused.value) == (
        f"run {run_id}: 'plan_review' was already decided (approve, by first) after this command started; "
        "it waits now at 'brief_approval'"
    )
    assert files_of(folder) == before
    resume(folder, run_id, "approve", who="second")  # typed again, having seen the gate: it decides it
    assert [e.detail["who"] for e in events_of(folder, run_id) if e.kind == "human"] == ["first", "second"]


# ------------------------------------------------------------------------------------------- --run, a unique prefix


@pytest.fixture
def waiting(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "run"
    run(RunSpec(modes=["workflow"], scenarios=["blog_brief_approval"], model="scripted:reference", out=folder))
    return folder, next(iter(read_events(folder / "traces.jsonl"))).run_id


def test_resume_takes_a_unique_prefix_of_the_run_id(waiting):
    folder, run_id = waiting
    result = bench_in_process("resume", str(folder), "--run", run_id[:6], "--approve")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"run {run_id}: finished")  # the whole id, as bench show names it


def test_an_ambiguous_prefix_is_one_line_naming_the_candidates(waiting):
    folder, _ = waiting
    with open(folder / "traces.jsonl", "a") as handle:  # two more runs whose ids start alike
        for other in ("abcd000000000001", "abcd000000000002"):
            handle.write(TraceEvent.model_validate({**_first(folder).model_dump(), "run_id": other}).model_dump_json())
            handle.write("\n")
    before = files_of(folder)
    result = bench_in_process("resume", str(folder), "--run", "abcd", "--approve")
    assert result.returncode == 2
    assert result.stderr == (
        "error: --run abcd: 2 runs start with it (abcd000000000001, abcd000000000002); give more of the id\n"
    )
    assert files_of(folder) == before


def _first(folder: Path) -> TraceEvent:
    return next(iter(read_events(folder / "traces.jsonl")))


# --------------------------------------------------------------------- a checkpoint database missing or emptied


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("deleted", "checkpoints.db: missing: run {run} ended suspended at 'brief_approval' but the checkpoint "
                    "database is gone (deleted); the run cannot be resumed"),
        ("emptied", "checkpoints.db: empty (0 bytes): the checkpoint database was emptied"),
        ("row-less", "checkpoints.db: holds no checkpoint of run {run}, though its trace ends suspended at "
                     "'brief_approval' (its rows were deleted); the run cannot be resumed"),
        ("table-less", "checkpoints.db: holds no checkpoints table: not bench's checkpoint database"),
    ],
)  # fmt: skip
def test_a_missing_or_emptied_checkpoint_database_is_one_line_and_nothing_is_written(waiting, damage, says):
    folder, run_id = waiting
    database = folder / CHECKPOINT_FILE
    if damage == "deleted":
        database.unlink()
    elif damage == "emptied":
        database.write_bytes(b"")
    else:
        with sqlite3.connect(database) as db:
            db.execute("DELETE FROM checkpoints" if damage == "row-less" else "DROP TABLE checkpoints")
        db.close()
    before = files_of(folder)
    result = bench_in_process("resume", str(folder), "--run", run_id, "--approve")
    assert result.returncode == 2
    assert result.stderr == f"error: {folder / says.format(run=run_id)}\n"
    assert files_of(folder) == before  # not even a table in the empty file, nor a database where there was none


# ------------------------------------------------------------------------------- a full disk under the claim


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1 MiB tmpfs, unmounted after the test; skipped where mounting is not allowed (not root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; tests/harness/records/test_checkpoint_store.py covers it otherwise")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount refused ({mounted.stderr.decode().strip()})")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_during_a_resume_is_one_line_naming_the_file_and_the_decision_goes_through_later(
    small_disk, waiting
):
    """The disk fills at some write of the resume (its claim, the manifest, a trace line, its new checkpoint),
    depending on the room left: one line naming the file; once there is room, the same command again finishes the
    run, the gated action committed once."""
    source, run_id = waiting
    failed = []
    for room_kib in range(32, 52, 4):  # from too little to read the database, to enough for the whole resume
        folder = small_disk / f"run-{room_kib}"
        folder.mkdir()
        for name, data in files_of(source).items():
            (folder / name).write_bytes(data)
        stats = os.statvfs(small_disk)
        ballast = small_disk / "ballast"
        ballast.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - room_kib * 1024))
        command = ("resume", str(folder), "--run", run_id, "--approve", "--as", "editor")
        result = bench_in_process(*command)
        ballast.unlink()
        if result.returncode != 0:
            assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
            named = rf"error: {re.escape(str(folder))}/([a-z.]+): cannot (write: |be read now \().+\n"
            found = re.fullmatch(named, result.stderr)
            assert found, result.stderr
            failed.append(found.group(1))
            again = bench_in_process(*command)
            assert again.returncode == 0, again.stderr
        events = events_of(folder, run_id)
        assert events[-1].outcome.status == "finished" and events[-1].outcome.repeated_side_effects == 0
        assert [e.action for e in events if e.kind == "human"] == ["brief_approval"]
        assert sum(e.kind == "action" and e.action == "write_draft" and e.result == "committed" for e in events) == 1
        assert [e.seq for e in events] == list(range(len(events)))
    assert "checkpoints.db" in failed  # the database's own refusal was among them: WriteFailed, not a traceback
