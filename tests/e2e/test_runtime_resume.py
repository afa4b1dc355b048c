"""bench resume of a runtime adapter in a new process: the framework goes on from its own state through ``resume``
(its code is not replayed), with the gateway rebuilt as it stood at the stop; the gated action commits exactly once;
a rejection ends the run without asking the framework; a resume killed after any write is carried out by the next
from where the killed one got to; of two racing resumes exactly one decides.

The adapter is a fake with no framework (tests/helpers/fake_runtime.py), run through ``python -m
tests.helpers.fake_runtime``: bench's own entry point with the fake registered.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.matrix.commands.listing import waiting_runs
from harness.records.checkpoint import CheckpointStore
from harness.records.trace import TraceEvent, read_events
from harness.records.write_faults import KILL_AFTER_WRITES
from tests.helpers.bench import ROOT
from tests.helpers.fake_runtime import NAME, calls_of

BLOG = "blog_brief_approval"
GATED = "write_draft"  # blog_brief_approval's gated action, committed by the fake's resume once approved


def fake_bench(*args: str) -> subprocess.CompletedProcess[str]:
    """bench, in a new process, with the fake adapter registered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_") and k != KILL_AFTER_WRITES}
    return subprocess.run(
        [sys.executable, "-m", "tests.helpers.fake_runtime", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def events_of(folder: Path, run_id: str) -> list[TraceEvent]:
    return [e for e in read_events(folder / "traces.jsonl") if e.run_id == run_id]


def committed(events: list[TraceEvent]) -> list[str]:
    return [e.action or "" for e in events if e.kind == "action" and e.result == "committed"]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run of the fake adapter stopped at the brief's approval (a pristine copy each test takes)."""
    folder = tmp_path_factory.mktemp("stopped") / "run"
    # scripted:compliant, not reference: these tests prove the adapter's checkpoints across resumes; reference redoes
    # a revised step (even after the gate is then approved as it was), which the fake adapter's revision never asks.
    done = fake_bench("run", "--mode", NAME, "--scenario", BLOG, "--model", "scripted:compliant", "--out", str(folder))
    assert done.returncode == 0, done.stderr
    (run_id,) = CheckpointStore(folder).run_ids()
    return folder, run_id


@pytest.fixture
def copy(stopped: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    folder, run_id = stopped
    shutil.copytree(folder, tmp_path / "run")
    return tmp_path / "run", run_id


def check_ended_once(folder: Path, run_id: str, before: list[TraceEvent]) -> list[TraceEvent]:
    """The run went on from its stop: its lines numbered on, one human event, one final summary, the gated action
    committed once and nothing repeated; the framework was resumed once and never run again."""
    events = events_of(folder, run_id)
    assert events[: len(before)] == before  # the lines up to the stop are untouched
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(e.kind == "run_start" for e in events) == 1  # not replayed from the start
    assert [e.result for e in events if e.kind == "human"] == ["approve"]
    assert committed(events).count(GATED) == 1
    summary = events[-1].outcome
    assert summary is not None and events[-1].kind == "summary"
    assert (summary.status, summary.stop_verdict, summary.repeated_side_effects) == ("finished", "correct", 0)
    assert summary.llm_calls == sum(e.kind == "model_call" for e in events)  # the counters went on from the stop
    calls = calls_of(folder, run_id)
    assert (calls["run"], calls["resume"]) == (1, 1)
    row = CheckpointStore(folder).load(run_id)
    assert row is not None and (row.status, row.claim) == ("continued", None)
    return events


def test_an_approved_adapter_run_resumes_through_its_framework_and_commits_the_gated_action_once(copy):
    folder, run_id = copy
    before = events_of(folder, run_id)
    done = fake_bench("resume", str(folder), "--run", run_id, "--approve", "--as", "editor")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"run {run_id}: finished; stop verdict correct")
    events = check_ended_once(folder, run_id, before)
    # resume() saw the gateway as the stop left it: the brief and the wait, the brief in the store, the decision traced
    seen = calls_of(folder, run_id)["seen"]
    assert seen == [{"records": 2, "artifacts": ["brief"], "seq": before[-1].seq + 2}]
    human = next(e for e in events if e.kind == "human")
    assert human.seq == before[-1].seq + 1 and human.step == before[-2].step  # right after the stop, at its step
    assert committed(events) == ["create_brief", GATED]


def test_a_rejected_adapter_run_ends_rejected_without_asking_its_framework(copy):
    folder, run_id = copy
    done = fake_bench("resume", str(folder), "--run", run_id, "--reject", "--as", "editor")
    assert done.returncode == 0, done.stderr
    events = events_of(folder, run_id)
    assert events[-1].outcome is not None and events[-1].outcome.status == "rejected_by_human"
    assert GATED not in committed(events)
    assert calls_of(folder, run_id)["resume"] == 0
    row = CheckpointStore(folder).load(run_id)
    assert row is not None and row.status == "rejected"


@pytest.mark.slow
def test_a_revision_goes_back_to_the_framework_and_its_next_stop_is_checkpointed_and_resumed_again(copy):
    folder, run_id = copy
    revised = fake_bench("resume", str(folder), "--run", run_id, "--revise", "--note", "shorter", "--as", "editor")
    assert revised.returncode == 0, revised.stderr
    row = CheckpointStore(folder).load(run_id)
    assert row is not None and (row.status, row.pending_gate, row.stop) == ("suspended", "brief_approval", 1)
    assert row.runtime is not None and len(row.runtime.decisions) == 1  # the revision, kept for the next resume
    assert len(row.replies) == row.runtime.llm_calls  # the replies before this resume, and this one's
    again = row.stop_id  # back at the gate it was sent back from: only the stop's id names this stop
    approved = fake_bench("resume", str(folder), "--run", run_id, "--stop", again, "--approve", "--as", "editor")
    assert approved.returncode == 0, approved.stderr
    events = events_of(folder, run_id)
    assert [e.result for e in events if e.kind == "human"] == ["revise", "approve"]
    assert committed(events).count(GATED) == 1
    summary = events[-1].outcome
    assert summary is not None and (summary.resumes, summary.repeated_side_effects) == (2, 0)
    assert [stop.decision for stop in summary.stops] == ["revise", "approve"]  # the decisions, as the gateway kept them
    assert calls_of(folder, run_id)["resume"] == 2


@pytest.mark.slow
def test_of_two_racing_resumes_exactly_one_decides(copy):
    folder, run_id = copy
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_") and k != KILL_AFTER_WRITES}
    command = [sys.executable, "-m", "tests.helpers.fake_runtime", "resume", str(folder), "--run", run_id]
    racers = [
        subprocess.Popen(
            [*command, flag, "--as", who], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for flag, who in (("--approve", "alice"), ("--reject", "bob"))
    ]
    ends = [(*racer.communicate(timeout=300), racer.returncode) for racer in racers]
    assert sorted(code for _, _, code in ends) == [0, 2], ends
    events = events_of(folder, run_id)
    assert len([e for e in events if e.kind == "human"]) == 1
    assert calls_of(folder, run_id)["resume"] in (0, 1)  # the approval resumed the framework; a rejection did not
    finished = events[-1].outcome is not None and events[-1].outcome.status == "finished"
    assert committed(events).count(GATED) == (1 if finished else 0)


class Driver:
    """A kill-sweep driver (tests/helpers/kill_sweep.py) that knows the fake adapter: commands forked warm."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_") and k != KILL_AFTER_WRITES}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.fake_runtime", "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(self, commands: list[list[str]], kill_after: int) -> list[dict[str, Any]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"commands": commands, "kill_after": kill_after}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the kill-sweep driver died ({self.process.poll()})"
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture
def driver() -> Iterator[Driver]:
    made = Driver()
    try:
        yield made
    finally:
        made.close()


def test_a_resume_killed_after_any_write_is_carried_out_once_by_the_next(stopped, driver, tmp_path):
    """Kill points 1, 2, ... until a resume runs to its end: after each kill, bench resume with no decision carries
    the claimed one out from where the killed process got to (its lines are the run's, not written again), and the
    gated action is committed once in all."""
    source, run_id = stopped
    before = events_of(source, run_id)
    kill_after = 0
    while True:
        kill_after += 1
        folder = tmp_path / f"killed-{kill_after}"
        shutil.copytree(source, folder)
        first = driver.run([["resume", str(folder), "--run", run_id, "--approve", "--as", "editor"]], kill_after)[0]
        if first["code"] != -signal.SIGKILL:  # ran to its end: every write of the resume was a kill point
            assert first["code"] == 0, first
            check_ended_once(folder, run_id, before)
            break
        row = CheckpointStore(folder).load(run_id)
        assert row is not None
        if row.status == "deciding":  # claimed and cut short: listed as decided, and the next resume carries it out
            assert [w.state for w in waiting_runs(folder) if w.run_id == run_id] == ["decided"]
            again = driver.run([["resume", str(folder), "--run", run_id]], 0)[0]
            assert again["code"] == 0, (kill_after, again)
            assert again["err"].startswith(f"note: run {run_id}: carried out the decision claimed before"), again
        else:  # killed before the claim (nothing of the decision written) or after its settlement
            assert row.status in ("suspended", "continued"), (kill_after, row.status)
            if row.status == "suspended":
                assert events_of(folder, run_id) == before
                again = driver.run([["resume", str(folder), "--run", run_id, "--approve", "--as", "editor"]], 0)[0]
                assert again["code"] == 0, (kill_after, again)
        events = check_ended_once_after_kill(folder, run_id, before)
        assert events[-1].outcome is not None and events[-1].outcome.status == "finished", kill_after
        shutil.rmtree(folder)
    assert kill_after > 4  # the claim, the manifest, the decision's line, the framework's lines, the settlement


def check_ended_once_after_kill(folder: Path, run_id: str, before: list[TraceEvent]) -> list[TraceEvent]:
    """As ``check_ended_once``, except that the fake "framework" may have been resumed twice (once in the killed
    process): it is never run again from the start, and what it did twice reached the gateway and is counted."""
    events = events_of(folder, run_id)
    assert events[: len(before)] == before
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(e.kind == "run_start" for e in events) == 1
    assert [e.result for e in events if e.kind == "human"] == ["approve"]
    finals = [e for e in events if e.kind == "summary" and e.outcome is not None and e.outcome.status != "suspended"]
    assert len(finals) == 1 and finals[0] is events[-1]
    summary = events[-1].outcome
    assert summary is not None
    assert committed(events).count(GATED) == 1 + summary.repeated_side_effects  # a repeat is counted, never hidden
    assert summary.repeated_side_effects == 0  # the fake keeps its position before the commit and its model sees it
    assert summary.llm_calls == sum(e.kind == "model_call" for e in events)
    calls = calls_of(folder, run_id)
    assert calls["run"] == 1 and calls["resume"] in (1, 2)
    row = CheckpointStore(folder).load(run_id)
    assert row is not None and (row.status, row.claim) == ("continued", None)
    return events
