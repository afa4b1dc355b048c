"""Approve and resume: a suspended run goes on in a new process with a person's decision, exactly once, never
around its gate; scripted approvers carry whole stories through their gates; a killed matrix continues."""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.errors import UserInputError
from harness.matrix.commands.resume import resume
from harness.matrix.commands.trace_diff import compare_traces
from harness.records.checkpoint import CHECKPOINT_FILE
from harness.records.trace import TraceEvent, read_events
from harness.scenario.load import load_all
from harness.scenario.model import MODE_REVIEW_POINTS, Scenario
from modes import MODES, select_modes
from modes.runtimes.base import RuntimeMode
from tests.helpers.bench import SCENARIOS, bench_child, bench_in_process, bench_process, wait_for
from tests.helpers.mode_checks import check_random_answers_and_decisions, gate_opened_before
from tests.helpers.sweeps import FULL_SWEEPS, covering, sample, scaled

LIBRARY = load_all(SCENARIOS)
GATE_STORIES = sorted(s.id for s in LIBRARY.values() if s.oracle.expected_stop != "finished")


def events_of(folder: Path, run_id: str) -> list[TraceEvent]:
    return [e for e in read_events(folder / "traces.jsonl") if e.run_id == run_id]


def gated_by(scenario: Scenario, gate: str) -> set[str]:
    return {a.name for a in scenario.actions if a.kind == "task" and a.gate == gate}


def committed(events: list[TraceEvent], names: set[str]) -> list[str]:
    return [e.action or "" for e in events if e.kind == "action" and e.result == "committed" and e.action in names]


def suspended_runs(folder: Path) -> list[TraceEvent]:
    return [
        e
        for e in read_events(folder / "traces.jsonl")
        if e.kind == "summary" and e.outcome is not None and e.outcome.status == "suspended"
    ]


@pytest.fixture(scope="module")
def gate_stops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every mode on every gate story with a perfect model: the modes that can stop, stop at the gate. Run once for
    the module and never decided: each test decides its own copy (``suspended``)."""
    folder = tmp_path_factory.mktemp("suspended") / "run"
    run(RunSpec(modes=["all"], scenarios=GATE_STORIES, model="scripted:reference", out=folder))
    return folder


@pytest.fixture
def suspended(gate_stops: Path, tmp_path: Path) -> Path:
    """A copy of the module's suspended matrix, this test's own to decide."""
    return Path(shutil.copytree(gate_stops, tmp_path / "run"))


def past_review_points(folder: Path, summary: TraceEvent) -> TraceEvent:
    """A run standing at its mode's own review point (hybrid_planner's plan review) is approved there until it
    stands at a story's gate or ends; its last summary."""
    while summary.outcome is not None and summary.outcome.suspended_at in MODE_REVIEW_POINTS:
        assert summary.outcome.stop_verdict == "wrong_place"  # a plan review is not the story's stop
        resume(folder, summary.run_id, "approve", who="reviewer")
        summary = events_of(folder, summary.run_id)[-1]
    return summary


@pytest.mark.slow
def test_every_suspending_mode_resumes_in_a_new_process_and_commits_the_gated_action_exactly_once(suspended):
    stops = [past_review_points(suspended, summary) for summary in suspended_runs(suspended)]
    stopping_modes = {e.mode for e in stops}
    own = select_modes(["all"])  # --mode all: bench's own modes (the runtime adapters resume in test_runtime_resume.py)
    assert stopping_modes == {name for name in own if MODES[name].hard_gate}  # the others cannot stop
    assert {e.scenario for e in stops} == set(GATE_STORIES)
    in_new_process: set[str] = set()
    for summary in covering(stops, lambda e: e.mode, lambda e: e.scenario):  # the quick suite: each mode and story once
        scenario, gate = LIBRARY[summary.scenario], summary.outcome.suspended_at
        reviews = summary.outcome.resumes  # decisions at the mode's own review points before the story's gate
        assert gate == scenario.oracle.expected_stop
        before = events_of(suspended, summary.run_id)
        # each mode's first stop goes on in a new process in CI, the first mode's in the quick suite; the rest here
        if summary.mode not in in_new_process and (FULL_SWEEPS or not in_new_process):
            in_new_process.add(summary.mode)
            # --gate: a bare --approve is refused where a mode's own review stopped the run first (hybrid_planner)
            approved = bench_process(
                "resume",
                str(suspended),
                "--run",
                summary.run_id,
                "--approve",
                "--gate",
                gate,
                "--as",
                "editor",
                "--note",
                "fine",
            )
            assert approved.returncode == 0, approved.stderr
        else:
            resume(suspended, summary.run_id, "approve", who="editor", note="fine")
        after = events_of(suspended, summary.run_id)
        assert after[: len(before)] == before  # the trace goes on; nothing before the stop is written again
        new = after[len(before) :]
        human = new[0]
        assert (human.kind, human.decision_maker, human.action, human.result) == ("human", "human", gate, "approve")
        assert human.detail["who"] == "editor" and human.detail["note"] == "fine" and human.seq == before[-1].seq + 1
        assert [e.seq for e in after] == list(range(len(after)))
        assert not any(e.kind == "model_call" and e.step <= summary.step for e in new)  # no call made again
        assert committed(after, gated_by(scenario, gate)) == committed(new, gated_by(scenario, gate))
        assert len(committed(new, gated_by(scenario, gate))) == 1, (summary.mode, summary.scenario)
        outcome = after[-1].outcome
        assert outcome is not None and outcome.resumes == reviews + 1 and outcome.repeated_side_effects == 0
        assert outcome.stops[reviews].gate == gate and outcome.stops[reviews].verdict == "correct"
        then = scenario.after_approval(gate).expected_stop  # a story whose approval leads to another gate stops there
        if then == "finished":
            assert (outcome.status, outcome.stop_verdict, outcome.violations) == ("finished", "correct", [])
        else:
            assert (outcome.status, outcome.suspended_at, outcome.stop_verdict) == ("suspended", then, "correct")
        with pytest.raises(UserInputError) as again:
            resume(suspended, summary.run_id, "approve", who="again", gate=gate)
        if then == "finished":
            assert str(again.value) == (
                f"run {summary.run_id}: '{gate}' was already decided (approve, by editor); nothing waits for a decision"
            )
        assert events_of(suspended, summary.run_id) == after


def test_a_second_resume_of_a_decided_run_says_already_decided_and_nothing_else(tmp_path):
    """Without --gate too: the one line says who decided what, and the command changes nothing, not even the lock."""
    folder = tmp_path / "run"
    run(RunSpec(modes=["workflow"], scenarios=["blog_brief_approval"], model="scripted:reference", out=folder))
    run_id = suspended_runs(folder)[0].run_id
    first = bench_in_process("resume", str(folder), "--run", run_id, "--approve", "--as", "editor")
    assert first.returncode == 0, first.stderr
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    second = bench_in_process("resume", str(folder), "--run", run_id, "--reject", "--as", "legal")
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr == (
        f"error: run {run_id}: 'brief_approval' was already decided (approve, by editor); "
        "nothing waits for a decision\n"
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == files


def test_reject_ends_the_run_with_nothing_gated_committed(suspended):
    folder = suspended
    # the quick suite: each mode and story once (tests/helpers/sweeps.py); CI rejects every suspended run
    for summary in covering(suspended_runs(folder), lambda e: e.mode, lambda e: e.scenario):
        scenario, gate = LIBRARY[summary.scenario], summary.outcome.suspended_at
        result = resume(folder, summary.run_id, "reject", who="legal", note="no")
        assert committed(events_of(folder, summary.run_id), gated_by(scenario, gate)) == []
        if scenario.rejection_continues(gate):  # on_rejection: continue: the run goes on to its compensation, which
            # the mode may or may not get right (the rejection phase's verdicts: tests/harness/core)
            assert result.outcome.status in ("finished", "suspended") and result.outcome.stops[0].decision == "reject"
            continue
        assert result.outcome.status == "rejected_by_human" and result.outcome.suspended_at == gate
        # it had stopped where it should, and a person said no; a plan rejected at its review never reached the
        # story's stop: judged like its suspension there
        review = gate in MODE_REVIEW_POINTS
        assert result.outcome.stop_verdict == ("wrong_place" if review else "correct")


def test_a_hand_edited_checkpoint_or_scenario_file_is_refused_and_nothing_changes(tmp_path):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("blog_brief_approval", "release_pipeline"):
        (scenarios / f"{name}.yaml").write_text((SCENARIOS / f"{name}.yaml").read_text())
    folder = tmp_path / "run"
    run(RunSpec(modes=["workflow"], scenarios_dir=scenarios, model="scripted:compliant", out=folder))
    blog, release = sorted(suspended_runs(folder), key=lambda e: e.scenario)
    snapshot = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.suffix == ".jsonl"}

    with sqlite3.connect(folder / CHECKPOINT_FILE) as db:  # a hand edit: approve the gate in the stored store
        body = json.loads(db.execute("SELECT body FROM checkpoints WHERE run_id = ?", (blog.run_id,)).fetchone()[0])
        body["store"]["approvals"] = ["brief_approval"]
        db.execute("UPDATE checkpoints SET body = ? WHERE run_id = ?", (json.dumps(body), blog.run_id))
    edited = bench_in_process(
        "resume", str(folder), "--run", blog.run_id, "--approve", "--scenarios-dir", str(scenarios)
    )
    assert edited.returncode == 2 and "edited by hand" in edited.stderr

    text = (scenarios / "release_pipeline.yaml").read_text()
    (scenarios / "release_pipeline.yaml").write_text(text.replace("max_steps: 14", "max_steps: 13"))
    changed = bench_in_process(
        "resume", str(folder), "--run", release.run_id, "--approve", "--scenarios-dir", str(scenarios)
    )
    assert changed.returncode == 2 and "changed since the run suspended" in changed.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.suffix == ".jsonl"} == snapshot


def test_resume_refuses_what_does_not_wait_for_a_decision(tmp_path):
    folder = tmp_path / "run"
    run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:compliant", out=folder))
    summaries = {e.mode: e for e in read_events(folder / "traces.jsonl") if e.kind == "summary"}
    with pytest.raises(UserInputError, match="not suspended"):
        resume(folder, summaries["react"].run_id, "approve", who="x")  # react finished: nothing to resume
    with pytest.raises(UserInputError, match="no run"):
        resume(folder, "0123456789abcdef", "approve", who="x")
    with pytest.raises(UserInputError, match="waits at 'brief_approval', not at 'publish'"):
        resume(folder, summaries["workflow"].run_id, "approve", who="x", gate="publish")
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    lost = summaries["workflow"].run_id
    kept = [line for line in lines if not (lost in line and '"kind":"summary"' in line)]  # its summary is lost
    assert len(kept) == len(lines) - 1
    (folder / "traces.jsonl").write_text("".join(kept))
    with pytest.raises(UserInputError, match="does not end where its checkpoint says"):
        resume(folder, summaries["workflow"].run_id, "approve", who="x")


@pytest.mark.parametrize(
    ("approver", "ends"),
    [("approve", "finished"), ("reject", "rejected_by_human"), ("approve_after_revision", "finished")],
)
def test_release_pipeline_under_scripted_approvers_deploys_checks_health_and_finishes(tmp_path, approver, ends):
    folder = tmp_path / "run"
    run(
        RunSpec(
            modes=["workflow"],
            scenarios=["release_pipeline"],
            model="scripted:compliant",
            approver=f"scripted:{approver}",
            out=folder,
        )
    )
    events = list(read_events(folder / "traces.jsonl"))
    outcome = events[-1].outcome
    assert outcome is not None and outcome.status == ends
    humans = [e for e in events if e.kind == "human"]
    assert all(e.detail["scripted"] and e.detail["who"] == f"scripted:{approver}" for e in humans)
    deployed = committed(events, {"deploy"})
    if ends == "finished":
        assert deployed == ["deploy"]
        assert [e.action for e in events if e.kind == "action" and e.result == "read"][-1] == "health_check"
        assert outcome.stop_verdict == "correct" and outcome.expected_stop == "finished"
        assert "rollback" not in {e.action for e in events if e.kind == "action"}
        assert [s.decision for s in outcome.stops] == (["revise", "approve"] if "revision" in approver else ["approve"])
    else:
        assert deployed == [] and outcome.stop_verdict == "correct"


@pytest.mark.slow
def test_a_killed_matrix_continues_to_exactly_the_runs_of_an_uninterrupted_one(tmp_path):
    # every mode on every scenario, 4 trials each in CI (about 500 runs), 2 in the quick suite
    args = ("--model", "scripted:random", "--mode", "all", "--scenario", "all", "--trials", str(scaled(4, 2)))
    whole = tmp_path / "whole"
    uninterrupted = bench_in_process("run", *args, "--out", str(whole))  # the reference: no process boundary needed
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    expected = list(read_events(whole / "traces.jsonl"))
    for seed in sample((1, 2, 3), 1, seed=0):
        folder = tmp_path / f"killed-{seed}"
        traces = folder / "traces.jsonl"
        # a random point, in trace lines, with half the matrix still to run: the kill lands before the end even when
        # the poll above comes late on a busy machine
        cut_at = random.Random(seed).randint(len(expected) // 5, len(expected) // 2)
        with bench_child("run", *args, "--out", str(folder)) as child:
            wait_for(
                lambda t=traces, n=cut_at: t.exists() and t.read_bytes().count(b"\n") >= n,
                what="the cut point",
                process=child,
            )
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
        assert json.loads((folder / "manifest.json").read_text())["status"] == "running"  # killed: no chance to say
        continued = bench_in_process("run", "--resume", str(folder))
        assert continued.returncode == 0, continued.stderr
        lines = traces.read_text().splitlines()
        got = [TraceEvent.model_validate_json(line) for line in lines]  # every line valid
        assert compare_traces(expected, got) == []  # the same runs, event for event
        runs = Counter((e.scenario, e.mode, e.trial) for e in got if e.kind == "summary")
        assert set(runs.values()) == {1} and len(runs) == len({(e.scenario, e.mode, e.trial) for e in expected})
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["status"] == "complete" and manifest["continued"] == 1 and manifest["runs"] == len(runs)


@pytest.mark.parametrize("mode", sample(sorted(MODES), 5, seed=3))  # every mode in CI
def test_no_gated_action_commits_without_its_approval_and_nothing_repeats_for_random_answers_and_decisions(
    tmp_path, mode
):
    """1,000+ runs a mode (a runtime adapter: 150, a real framework costs milliseconds a run; in the quick suite two
    trials of every story, an adapter one, tests/helpers/sweeps.py): random answers (scripted:random) and random
    decisions at every gate (approve, reject, revise); under an auditing gateway too when the mode claims a hard
    gate. Every decision must be drawn at least once, whatever the sample."""
    adapter = issubclass(MODES[mode], RuntimeMode)
    check_random_answers_and_decisions(mode, tmp_path, runs=scaled(150, 29) if adapter else scaled(1000, 30))


@pytest.mark.slow
def test_resumed_runs_keep_the_guarantees_for_random_answers_and_decisions(tmp_path):
    """Suspended runs resumed again and again with random decisions, each resume a fresh call."""
    folder = tmp_path / "run"
    run(
        RunSpec(
            modes=[m for m in select_modes([]) if MODES[m].hard_gate],
            scenarios=GATE_STORIES,
            model="scripted:random",
            trials=scaled(4, 1),  # every hard-gate mode on every gate story: over 500 runs (the quick suite: 128)
            seed=5,
            out=folder,
        )
    )
    rng = random.Random(5)
    pending = [e.run_id for e in suspended_runs(folder)]
    assert len(pending) > 20
    while pending:
        run_id = pending.pop()
        outcome = resume(folder, run_id, rng.choice(["approve", "reject"]), who="fuzz").outcome
        if outcome.status == "suspended":
            pending.append(run_id)
    by_run: dict[str, list[TraceEvent]] = {}
    for event in read_events(folder / "traces.jsonl"):  # read once: the trace of every run, resumes included
        by_run.setdefault(event.run_id, []).append(event)
    for events in by_run.values():
        scenario = LIBRARY[events[0].scenario]
        gates = {a.name: a.gate for a in scenario.actions if a.kind == "task" and a.gate}
        for index, event in enumerate(events):
            if event.kind == "action" and event.result == "committed" and event.action in gates:
                assert gate_opened_before(scenario, events, index, gates[event.action])
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[-1].outcome is not None and events[-1].outcome.repeated_side_effects == 0
