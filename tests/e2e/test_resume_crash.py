"""A decision survives any crash: a bench resume killed after any one of its writes (the claim, the manifest, a trace
line, a recording line, the new checkpoint) is carried out by the next, exactly once, ending in the very trace an
uninterrupted resume writes; bench runs never lists a decided run as waiting; an interrupted resume keeps its
decision; a trace ahead of its checkpoint (bench before claims) is carried on from the decision it holds."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness import RunSpec, run
from harness.matrix.commands.listing import waiting_runs
from harness.matrix.commands.resume import resume
from harness.matrix.commands.trace_diff import compare_runs
from harness.records.checkpoint import CHECKPOINT_FILE, CheckpointStore
from harness.records.trace import TraceEvent, read_events
from harness.records.write_faults import KILL_AFTER_WRITES
from harness.scenario.load import load_all
from modes import MODES
from modes.base import is_runtime
from tests.helpers.bench import ROOT, SCENARIOS, bench_child, bench_process, wait_for
from tests.helpers.fault_server import FaultServer
from tests.helpers.sweeps import SKIPPED_AT_THE_END, kill_points

LIBRARY = load_all(SCENARIOS)
REVISION = "tighten the synopsis"

# The smallest set of runs that covers every suspending mode of bench's own and every shape of several stops, with
# scripted:compliant: a mode's own review then the story's gates (hybrid_planner, three stops), two gates of a
# story one after the other, a rejection at the second, and the same gate again after a revision.
STORIES: dict[str, tuple[str, list[str]]] = {
    "hybrid_planner": ("blog_two_gates", ["approve", "approve", "approve"]),
    "plan_execute_replan": ("blog_two_gates", ["approve", "reject"]),
    "react_guardrails": ("blog_two_gates", ["approve", "approve"]),
    "workflow": ("blog_two_gates", ["revise", "approve"]),
    "workflow_fallback_react": ("blog_two_gates", ["approve"]),
    "workflow_param": ("blog_two_gates", ["approve"]),
    "workflow_routed": ("blog_two_gates", ["approve"]),
    "plan_validated": ("blog_brief_approval", ["approve"]),  # compliant answers take it past blog_two_gates' gate
}


def events_of(folder: Path, run_id: str) -> list[TraceEvent]:
    return [e for e in read_events(folder / "traces.jsonl") if e.run_id == run_id]


def decision_args(decision: str) -> list[str]:
    return [f"--{decision}", "--as", "editor", *(["--note", REVISION] if decision == "revise" else [])]


@dataclass
class Stop:
    """One resume of one run: the folder just before it, the gate it decides, and the decision."""

    mode: str
    run_id: str
    index: int
    gate: str
    decision: str
    before: Path
    later: list[tuple[str, str]] = field(default_factory=list)  # the run's later stops: (gate, decision)


@dataclass
class Story:
    run_id: str
    decisions: list[str]
    gates: list[str]
    reference: list[TraceEvent]  # the run's trace, every decision given by uninterrupted resumes


@pytest.fixture(scope="module")
def stories(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Story], list[Stop]]:
    """Every story run once uninterrupted, decision after decision, keeping the folder before each resume."""
    root = tmp_path_factory.mktemp("stories")
    base = root / "base"
    run(
        RunSpec(
            modes=list(STORIES),
            scenarios=sorted({scenario for scenario, _ in STORIES.values()}),
            model="scripted:compliant",
            out=base,
        )
    )
    summaries = {(e.mode, e.scenario): e for e in read_events(base / "traces.jsonl") if e.kind == "summary"}
    found: dict[str, Story] = {}
    stops: list[Stop] = []
    for mode, (scenario, decisions) in STORIES.items():
        run_id = summaries[(mode, scenario)].run_id
        work = root / f"{mode}-work"
        shutil.copytree(base, work)
        gates, mine = [], []
        for index, decision in enumerate(decisions):
            before = root / f"{mode}-{index}"
            shutil.copytree(work, before)
            gate = events_of(work, run_id)[-1].outcome.suspended_at
            gates.append(gate)
            mine.append(Stop(mode, run_id, index, gate, decision, before))
            note = REVISION if decision == "revise" else ""
            resume(work, run_id, decision, who="editor", note=note, gate=gate)  # type: ignore[arg-type]
        for stop in mine:
            stop.later = list(zip(gates[stop.index + 1 :], decisions[stop.index + 1 :], strict=True))
        stops += mine
        reference = events_of(work, run_id)
        assert reference[-1].outcome is not None and reference[-1].outcome.status != "suspended"
        found[mode] = Story(run_id, decisions, gates, reference)
    return found, stops


def test_the_sweep_covers_every_suspending_mode_and_every_shape_of_several_stops(stories):
    found, _ = stories
    # a new one joins the sweep. The runtime adapters have their own (tests/e2e/test_runtime_crashes.py, every one in
    # scripts/runtime_crashes.py): what a framework runs again after a kill is measured there, so their recovered
    # trace is not held to be the uninterrupted one's, as here.
    assert set(found) == {name for name, cls in MODES.items() if cls.hard_gate and not is_runtime(cls)}
    shapes = {mode: story.gates for mode, story in found.items()}
    assert shapes["hybrid_planner"] == ["plan_review", "synopsis_approval", "publish_approval"]
    assert shapes["plan_execute_replan"] == ["synopsis_approval", "publish_approval"]
    assert shapes["workflow"] == ["synopsis_approval", "synopsis_approval"]  # the same gate again after the revision
    assert found["plan_execute_replan"].reference[-1].outcome.status == "rejected_by_human"


class Driver:
    """A kill-sweep driver process (tests/helpers/kill_sweep.py): bench commands forked from a warm interpreter."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_") and k != KILL_AFTER_WRITES}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.kill_sweep"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(
        self, commands: list[list[str]], kill_after: int, env: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        job = {"commands": commands, "kill_after": kill_after, "env": env or {}}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the kill-sweep driver died ({self.process.poll()})"
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture
def drivers() -> Iterator[queue.Queue[Driver]]:
    """Two drivers, one a core: each takes one stop's whole sweep at a time."""
    pool: queue.Queue[Driver] = queue.Queue()
    made = [Driver(), Driver()]
    for driver in made:
        pool.put(driver)
    try:
        yield pool
    finally:
        for driver in made:
            driver.close()


CARRIED = "note: run {run}: carried out the decision claimed before ({decision}, by editor)"


def retries(stop: Stop, kill_after: int, row: Any) -> bool:
    """After a kill, what a person does next: the same command again (odd kill points), or bench resume with no
    decision, which only carries out a claimed one (even kill points, and wherever the killed resume had finished
    at the same gate again: a retry there would decide the new stop, which its command started after)."""
    return bool(kill_after % 2) and not (row.status == "suspended" and row.pending_gate == stop.gate)


def recovery_of(stop: Stop, folder: Path, retry: bool) -> list[str]:
    if retry:
        return ["resume", str(folder), "--run", stop.run_id, *decision_args(stop.decision), "--gate", stop.gate]
    return ["resume", str(folder), "--run", stop.run_id]


def expected_recovery(stop: Stop, killed_deciding: bool, retry: bool, after: Any) -> tuple[int, str]:
    """The one answer a recovery may give: the decision carried out, or (when the killed resume had finished its
    writes) why there is nothing to do."""
    if killed_deciding:
        return 0, CARRIED.format(run=stop.run_id, decision=stop.decision)
    decided = f"run {stop.run_id}: '{stop.gate}' was already decided ({stop.decision}, by editor); "
    if after.status == "suspended":
        if retry:
            return 2, f"error: {decided}it waits now at '{after.pending_gate}'"
        return 2, (
            f"error: run {stop.run_id} waits at '{after.pending_gate}' with no decision to carry out; "
            "give one of --approve, --reject and --revise"
        )
    return 2, f"error: {decided}nothing waits for a decision"


def sweep_one_stop(stop: Stop, story: Story, drivers: queue.Queue[Driver], work: Path) -> int:
    """Kills the stop's resume after its 1st, 2nd, ... write (a sample of them in the quick suite) until one runs to
    its end unkilled; after each kill, recovers and gives the run's later decisions; checks every folder. Returns
    the last kill point: the resume made at least that many writes (exactly that many when every point ran)."""
    driver = drivers.get()
    try:
        killed_after = 0
        for kill_after in kill_points(f"{stop.mode}-{stop.index}"):
            folder = work / f"{stop.mode}-{stop.index}-{kill_after}"
            shutil.copytree(stop.before, folder)
            killed = ["resume", str(folder), "--run", stop.run_id, *decision_args(stop.decision), "--gate", stop.gate]
            first = driver.run([killed], kill_after)[0]
            if first["code"] != -signal.SIGKILL:  # ran to its end: every write of this resume was a kill point
                assert first["code"] == 0 and first["err"] == "", first
                assert first["out"].startswith(f"run {stop.run_id}: "), first
                later = driver.run(later_commands(stop, folder), 0) if stop.later else []
                check_folder(stop, story, folder, later)
                return killed_after
            killed_after = kill_after
            row = CheckpointStore(folder).load(stop.run_id)
            assert row is not None
            deciding = row.status == "deciding"
            check_listed_honestly(folder, stop, deciding)
            retry = retries(stop, kill_after, row)
            recovery = driver.run([recovery_of(stop, folder, retry), *later_commands(stop, folder)], 0)
            code, line = expected_recovery(stop, deciding, retry, row)
            got = recovery[0]
            assert got["code"] == code, (kill_after, got)
            assert got["err"].rstrip("\n") == line, (kill_after, got)  # the one line, and nothing else
            if code == 0:
                assert got["out"].startswith(f"run {stop.run_id}: "), got
            check_folder(stop, story, folder, recovery[1:])
            shutil.rmtree(folder)
        raise AssertionError("kill_points() never ends")
    finally:
        drivers.put(driver)


def later_commands(stop: Stop, folder: Path) -> list[list[str]]:
    return [
        ["resume", str(folder), "--run", stop.run_id, *decision_args(decision), "--gate", gate]
        for gate, decision in stop.later
    ]


def check_listed_honestly(folder: Path, stop: Stop, deciding: bool) -> None:
    """What bench runs shows right after the kill: a decided run is never listed as waiting."""
    listed = {w.run_id: w for w in waiting_runs(folder)}
    if deciding:
        assert listed[stop.run_id].state == "decided" and listed[stop.run_id].claim.decision == stop.decision
        return
    events = events_of(folder, stop.run_id)
    if events[-1].outcome is not None and events[-1].outcome.status == "suspended":  # settled at the next stop
        assert listed[stop.run_id].state == "waiting" and listed[stop.run_id].gate == events[-1].outcome.suspended_at
    else:
        assert stop.run_id not in listed  # it ended: nothing waits


def check_folder(stop: Stop, story: Story, folder: Path, later: list[dict[str, Any]]) -> None:
    """The run ends exactly as the uninterrupted one: the same trace line for line, one final summary, every gated
    action committed once at most and as often as without the kill, nothing repeated, nothing left claimed."""
    for result in later:
        assert result["code"] == 0 and result["err"] == "", result
    events = events_of(folder, stop.run_id)
    assert compare_runs(story.reference, events, (events[0].scenario, stop.mode, 1)) is None
    assert [e.seq for e in events] == list(range(len(events)))
    finals = [e for e in events if e.kind == "summary" and e.outcome is not None and e.outcome.status != "suspended"]
    assert len(finals) == 1 and finals[0] is events[-1]
    assert all(e.outcome.repeated_side_effects == 0 for e in events if e.kind == "summary")
    scenario = LIBRARY[events[0].scenario]
    gated = {a.name for a in scenario.actions if a.kind == "task" and a.gate}
    commits = [e.action for e in events if e.kind == "action" and e.result == "committed" and e.action in gated]
    if "revise" not in story.decisions:  # a revision legitimately writes its work again, at a later step
        assert len(commits) == len(set(commits))  # each gated action at most once
    assert commits == [
        e.action for e in story.reference if e.kind == "action" and e.result == "committed" and e.action in gated
    ]
    row = CheckpointStore(folder).load(stop.run_id)
    assert row is not None and row.status in ("continued", "rejected") and row.claim is None
    assert stop.run_id not in {w.run_id for w in waiting_runs(folder)}
    assert json.loads((folder / "manifest.json").read_text())["resumes"] == len(story.decisions)


@pytest.mark.slow
def test_a_resume_killed_after_any_write_is_carried_out_once_by_the_next(stories, drivers, tmp_path, capsys):
    """Every write of every resume of every story is a kill point: 1, 2, ... until a resume runs to its end."""
    found, stops = stories
    with ThreadPoolExecutor(max_workers=2) as pool:
        tried = list(pool.map(lambda s: sweep_one_stop(s, found[s.mode], drivers, tmp_path), stops))
    # at least the claim, the manifest, the human event and the checkpoint
    assert all(last >= 4 - SKIPPED_AT_THE_END for last in tried)
    with capsys.disabled():
        print(f"\nlast kill points: {sum(tried)} writes over {len(stops)} resumes of {len(found)} modes")


# ----------------------------------------------------------------------------- a live model, killed after any write

KEY = "sk-test-key-for-resume-crashes"


def model_requests(server: FaultServer) -> int:
    """The model's requests the endpoint answered, without each command's preflight probe of it."""
    return sum(count for kind, count in server.served.items() if not kind.startswith("preflight"))


def live_env(server: FaultServer) -> dict[str, str]:
    return {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": KEY}


@pytest.mark.slow
def test_a_live_resume_killed_after_any_write_asks_the_endpoint_nothing_twice(tmp_path, drivers, capsys):
    """Kill points include the recording's lines: an answer the killed resume got (and recorded) is never asked
    for again; the recovered trace is the uninterrupted one's."""
    driver = drivers.get()
    with FaultServer(["ok"]) as server:
        env = live_env(server)
        base = tmp_path / "base"
        made = driver.run(
            [["run", "--model", "live", "--mode", "workflow", "--scenario", "blog_brief_approval", "--out", str(base)]],
            0,
            env,
        )[0]
        assert made["code"] == 0, made
        run_id = next(iter(read_events(base / "traces.jsonl"))).run_id
        whole = tmp_path / "whole"
        shutil.copytree(base, whole)
        asked = model_requests(server)
        done = driver.run([["resume", str(whole), "--run", run_id, "--approve"]], 0, env)[0]
        assert done["code"] == 0, done
        requests_after_the_gate = model_requests(server) - asked
        assert requests_after_the_gate >= 1  # the run asks the model again once approved
        reference = events_of(whole, run_id)
        killed_after = 0
        for kill_after in kill_points("live resume"):
            folder = tmp_path / f"killed-{kill_after}"
            shutil.copytree(base, folder)
            before = model_requests(server)
            killed = driver.run([["resume", str(folder), "--run", run_id, "--approve"]], kill_after, env)[0]
            if killed["code"] != -signal.SIGKILL:
                assert killed["code"] == 0, killed
                break
            killed_after = kill_after
            if CheckpointStore(folder).load(run_id).status == "deciding":
                carried = driver.run([["resume", str(folder), "--run", run_id]], 0, env)[0]
                assert carried["code"] == 0, carried
            assert model_requests(server) - before == requests_after_the_gate  # nothing asked twice
            got = events_of(folder, run_id)
            assert [normal(e) for e in got] == [normal(e) for e in reference]
            assert got[-1].outcome.status == "finished" and got[-1].outcome.repeated_side_effects == 0
    recorded = [line for line in (folder / "recording.jsonl").read_text().splitlines() if line]
    assert len(recorded) == asked + requests_after_the_gate  # every answer recorded once, none twice
    # a recording line and a trace line each request
    assert killed_after >= 3 + 2 * requests_after_the_gate - SKIPPED_AT_THE_END
    with capsys.disabled():
        print(f"\nlive resume: killed after up to {killed_after} writes and recovered")


def normal(event: TraceEvent) -> tuple[Any, ...]:
    """A live line as compared across two runs: what happened, not how long the endpoint took."""
    return (event.seq, event.kind, event.decision_maker, event.action, event.result, json.dumps(event.args))


# ------------------------------------------------------------------ interrupts, and traces ahead of their checkpoint


@pytest.mark.slow
def test_an_interrupted_resume_keeps_its_decision_and_the_next_one_carries_it_out(tmp_path):
    with FaultServer(["ok"], delay_s=0.0) as server:
        folder = tmp_path / "run"
        made = bench_process(
            "run", "--model", "live", "--mode", "workflow", "--scenario", "blog_brief_approval", "--out", str(folder),
            env=live_env(server),
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        run_id = next(iter(read_events(folder / "traces.jsonl"))).run_id
        server.delay_s = 600.0  # the model now answers only when the test ends: the resume waits on it
        asked = sum(server.served.values())
        with bench_child(
            "resume", str(folder), "--run", run_id, "--approve", "--as", "editor", env=live_env(server)
        ) as child:
            wait_for(lambda: sum(server.served.values()) > asked, what="the resumed run's first request", process=child)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=60)
        assert child.returncode == 130, err
        assert err.strip().splitlines()[-1] == (
            f"interrupted; the decision is kept: bench resume {folder} --run {run_id} carries it out"
        )
        assert "Traceback" not in err
        listed = {w.run_id: w for w in waiting_runs(folder)}
        assert listed[run_id].state == "decided" and listed[run_id].claim.who == "editor"
        events = events_of(folder, run_id)
        assert not [e for e in events if e.kind == "summary" and e.outcome.status == "interrupted"]
        server.delay_s = 0.0
        carried = bench_process("resume", str(folder), "--run", run_id, env=live_env(server))
    assert carried.returncode == 0, carried.stderr
    assert "carried out the decision claimed before (approve, by editor)" in carried.stderr
    events = events_of(folder, run_id)
    assert events[-1].outcome.status == "finished" and [e.seq for e in events] == list(range(len(events)))
    assert sum(e.kind == "human" for e in events) == 1


@pytest.mark.slow
def test_a_trace_ahead_of_its_checkpoint_goes_on_from_the_decision_it_holds(stories, tmp_path):
    """What a resume killed before this design left (its lines written, its checkpoint not): the next resume reads
    the decision from the trace and carries it out, writing only what is missing."""
    found, stops = stories
    stop = next(s for s in stops if s.mode == "hybrid_planner" and s.index == 0)
    folder = tmp_path / "run"
    shutil.copytree(stop.before, folder)
    old_database = (folder / CHECKPOINT_FILE).read_bytes()
    done = bench_process("resume", str(folder), "--run", stop.run_id, *decision_args("approve"), "--gate", stop.gate)
    assert done.returncode == 0, done.stderr
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    (folder / "traces.jsonl").write_text("".join(lines[:-3]))  # the last lines were never written
    (folder / CHECKPOINT_FILE).write_bytes(old_database)  # nor the new checkpoint: the old one still says suspended
    listed = {w.run_id: w for w in waiting_runs(folder)}
    assert listed[stop.run_id].state == "decided"  # not waiting: its trace went on
    other = bench_process("resume", str(folder), "--run", stop.run_id, "--reject", "--as", "legal")
    assert other.returncode == 2  # another decision never lands on it, nor on the stop after it
    assert other.stderr.splitlines()[-1] == (
        f"error: run {stop.run_id}: 'plan_review' was already decided (approve, by editor); "
        "it waits now at 'synopsis_approval'"
    )
    for gate, decision in stop.later:
        args = ("--run", stop.run_id, "--gate", gate, *decision_args(decision))
        assert bench_process("resume", str(folder), *args).returncode == 0
    events = events_of(folder, stop.run_id)
    assert compare_runs(found["hybrid_planner"].reference, events, (events[0].scenario, "hybrid_planner", 1)) is None


@pytest.mark.slow
def test_bench_runs_shows_a_decision_cut_short_as_decided_and_a_trace_it_would_not_write_is_refused(stories, tmp_path):
    _, stops = stories
    stop = next(s for s in stops if s.mode == "hybrid_planner" and s.index == 0)
    folder = tmp_path / "run"
    shutil.copytree(stop.before, folder)
    killed = bench_process(
        "resume",
        str(folder),
        "--run",
        stop.run_id,
        *decision_args("approve"),
        "--gate",
        stop.gate,
        env={KILL_AFTER_WRITES: "5"},
    )
    assert killed.returncode == -signal.SIGKILL
    listing = bench_process("runs", str(folder))
    assert listing.returncode == 0, listing.stderr
    assert (
        f"run {stop.run_id}: 'plan_review' decided (approve, by editor), not carried out (its resume was cut short); "
        f"bench resume {folder} --run {stop.run_id} carries it out"
    ) in listing.stdout
    waiting_table = listing.stdout.split("waiting run", 1)[1].split("decide with:", 1)[0]
    assert stop.run_id not in waiting_table  # decided: never listed as waiting
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    human = next(i for i, line in enumerate(lines) if stop.run_id in line and '"kind":"human"' in line)
    lines[human] = lines[human].replace('"who":"editor"', '"who":"somebody else"')  # the trace says otherwise
    (folder / "traces.jsonl").write_text("".join(lines))
    before = files_of(folder)
    refused = bench_process("resume", str(folder), "--run", stop.run_id)
    assert refused.returncode == 2
    assert re.fullmatch(
        rf"error: {re.escape(str(folder))}/traces.jsonl: run {stop.run_id}: carrying its claimed decision out again "
        r"does not write what the trace holds \(line \d+ differs in detail: .*\); refusing to write more\n",
        refused.stderr,
    ), refused.stderr
    assert files_of(folder) == before  # nothing written, the claim kept
    assert CheckpointStore(folder).load(stop.run_id).status == "deciding"


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".bench.lock"}
