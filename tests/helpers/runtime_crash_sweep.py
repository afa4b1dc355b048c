"""The crash sweep of the runtime adapters: every write of a run and of its resume is a kill point, and what the
recovered run shows (repeated side effects, approvals lost or applied twice) is counted per boundary.

Two phases per mode and story, each command a real ``bench`` entry point forked warm (``tests/helpers/kill_sweep.py``):

- **run**: ``bench run`` killed after its Nth write (N = 1, 2, ... until a run ends unkilled), then ``bench run
  --resume``, which drops the cut-short run and runs the cell again from its start. What the killed run had
  committed is committed again by the new one: counted as repeated (the trace keeps only the new run). A run kept
  as suspended without its checkpoint can never be decided: counted as an approval lost.
- **resume**: the run stopped at its gate, then ``bench resume --approve`` killed after its Nth write; after each
  kill, ``bench resume`` with no decision carries out the claimed one (``--approve`` again where nothing was
  claimed, or at a later stop) until the run is settled. Its final summary says what was repeated; its human
  events and commits, against an uninterrupted resume's, say whether an approval was lost or applied twice.

Each kill point is labelled with the boundary it fell on, read from what the kill left in the folder against what
the kill one write earlier left: a new trace line (a gateway commit, another line), bench's claim and bookkeeping,
its settlement, or the framework's own state (LangGraph's SQLite checkpoints and writes, the Agents SDK's and
PydanticAI's state files; each such write is a kill point through ``harness.core.crash_point``).

Run as ``python -m tests.helpers.runtime_crash_sweep MODE ...``: the kill-sweep driver with those modes' frameworks
imported once before it forks (a command starts in milliseconds, not the seconds a framework takes to import).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.records.checkpoint import CheckpointStore
from harness.records.folder import TRACE_FILE
from harness.records.trace import TraceEvent, read_events
from harness.records.write_faults import KILL_AFTER_WRITES
from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
MODEL = "scripted:reference"  # the default: a model that does everything right (and sees what was committed)
WHO = "editor"
MOST_RECOVERIES = 6  # bench resume commands after one kill before the sweep calls the run unsettled

# The boundary a kill point fell on, after its phase ("run: ", "resume: "): what the last write before the kill was.
CLAIM = "bench's claim and decision"
COMMIT = "a gateway commit"
LINE = "another trace line"
FRAMEWORK = "a framework state write"
SETTLED = "bench's summary and checkpoint"
UNSEEN = "a write with no visible change"
KINDS = (CLAIM, COMMIT, LINE, FRAMEWORK, SETTLED, UNSEEN)
PHASES = ("run", "resume")
BOUNDARIES = tuple(f"{phase}: {kind}" for phase in PHASES for kind in KINDS if (phase, kind) != ("run", CLAIM))

Commands = Callable[[list[list[str]], int], list[dict[str, Any]]]  # commands, kill after -> each one's result


@dataclass
class KillPoint:
    """One kill and its recovery: where it fell and what the settled run shows against an uninterrupted one."""

    mode: str
    story: str
    phase: str  # "run" or "resume"
    index: int  # the kill came after this write of the killed command
    boundary: str
    write: str  # what that write was, as the folder shows it
    readable: bool = True  # the trace read cleanly right after the kill
    settled_once: bool = False  # one final summary, numbered lines, the checkpoint released, no claim left
    repeated: int = 0  # repeated_side_effects of the final summary (run phase: commits made again by the rerun)
    lost: int = 0  # gated actions an approval let through in the uninterrupted run and not here
    twice: int = 0  # gated actions committed more often than in the uninterrupted run, and extra human events
    extra_decisions: int = 0  # human events beyond the uninterrupted run's: a decision bench applied twice
    ended_otherwise: bool = False  # a final status or stop verdict other than the uninterrupted run's
    recovery: list[str] = field(default_factory=list)  # the commands that settled it, with their exit codes


# ------------------------------------------------------------------------------------------------ the driver


class ForkDriver:
    """A warm kill-sweep driver process: bench commands forked from an interpreter that imported the frameworks of
    ``modes``."""

    def __init__(self, modes: Iterable[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_") and k != KILL_AFTER_WRITES}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.runtime_crash_sweep", *modes],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def __call__(self, commands: list[list[str]], kill_after: int) -> list[dict[str, Any]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"commands": commands, "kill_after": kill_after}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the kill-sweep driver died (exit {self.process.poll()})")
        results: list[dict[str, Any]] = json.loads(line)
        return results

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


# ------------------------------------------------------------------------------------------------ what a folder shows


@dataclass(frozen=True)
class Seen:
    """What a folder holds of one run, to tell which write a kill came after: its trace lines, its checkpoint, the
    manifest's count of decisions, and the framework's own state."""

    lines: tuple[str, ...]
    checkpoint: tuple[str, int] | None
    resumes: int
    framework: tuple[tuple[str, str], ...]


def seen_in(folder: Path, run_id: str | None = None) -> Seen:
    """What ``folder`` holds of ``run_id`` (None: of the one run its trace starts, or of none yet)."""
    events = list(read_events(folder / TRACE_FILE)) if (folder / TRACE_FILE).exists() else []
    run_id = run_id or (events[0].run_id if events else None)
    if run_id is None:
        return Seen((), None, 0, ())
    row = CheckpointStore(folder).load(run_id)
    manifest = folder / "manifest.json"
    resumes = json.loads(manifest.read_text(encoding="utf-8")).get("resumes", 0) if manifest.exists() else 0
    return Seen(
        tuple(describe(e) for e in events if e.run_id == run_id),
        None if row is None else (row.status, row.stop),
        int(resumes),
        framework_state(folder / "runtime" / run_id),
    )


def describe(event: TraceEvent) -> str:
    what = " ".join(str(part) for part in (event.kind, event.action, event.result) if part)
    return f"{what} ({event.decision_maker}, step {event.step})"


def framework_state(folder: Path) -> tuple[tuple[str, str], ...]:
    """The framework's files, each as something that changes with every write: a SQLite database's rows per table
    (read from a copy, so the killed process's database and its write-ahead log stay as it left them; none while it
    holds no row), else a digest of the file."""
    if not folder.is_dir():
        return ()
    found = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".sqlite":
            rows = sqlite_rows(folder, path.name)
            if rows:  # a database with tables and no row yet is LangGraph's setup, which is no kill point
                found.append((path.name, rows))
        elif path.is_file() and not path.name.endswith(("-wal", "-shm")) and not path.name.startswith("."):
            found.append((path.name, content_digest(path)))
    return tuple(found)


VOLATILE = frozenset({"timestamp", "run_id", "conversation_id"})  # PydanticAI's history: new in every run


def content_digest(path: Path) -> str:
    """A digest of what a state file says, the same for the same state saved by two runs (in the run phase, each
    kill point is a run of its own): a JSON file without the keys that differ from run to run."""
    if path.suffix != ".json":
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]

    def stable(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [stable(v) for v in value]
        return value

    text = json.dumps(stable(json.loads(path.read_text(encoding="utf-8"))), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sqlite_rows(folder: Path, name: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        for part in folder.iterdir():
            if part.name.startswith(name):
                shutil.copy2(part, Path(scratch) / part.name)
        db = sqlite3.connect(Path(scratch) / name)
        try:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
            return ", ".join(f"{t}: {n}" for t, n in counts.items()) if any(counts.values()) else ""
        finally:
            db.close()


def boundary_between(phase: str, before: Seen, after: Seen) -> tuple[str, str]:
    """The boundary a kill point fell on and what its last write was: what the folder gained over the kill point
    one write earlier."""
    new_lines = after.lines[len(before.lines) :] if after.lines[: len(before.lines)] == before.lines else after.lines
    changed = [name for name, state in after.framework if (name, state) not in before.framework]
    kind, what = UNSEEN, "nothing new in the trace, the checkpoint, the manifest or the framework's state"
    if changed:
        states = dict(after.framework)
        kind, what = FRAMEWORK, "; ".join(f"{name} ({states[name]})" for name in changed)
    elif new_lines:
        line = new_lines[-1]
        kind, what = LINE, line
        if line.startswith("action ") and " committed " in line:
            kind = COMMIT
        elif line.startswith("human "):
            kind = CLAIM
        elif line.startswith("summary "):
            kind = SETTLED
    elif after.checkpoint != before.checkpoint:
        status = after.checkpoint[0] if after.checkpoint else "gone"
        kind, what = (CLAIM if status == "deciding" else SETTLED), f"checkpoint {status}"
    elif after.resumes != before.resumes:
        kind, what = CLAIM, "manifest (decisions given)"
    return f"{phase}: {kind}", what


# ------------------------------------------------------------------------------------------------ the sweep


def bench_run(mode: str, story: str, out: Path, model: str = MODEL) -> list[str]:
    return ["run", "--mode", mode, "--scenario", story, "--model", model, "--out", str(out)]


def events_of(folder: Path, run_id: str) -> list[TraceEvent]:
    return [e for e in read_events(folder / TRACE_FILE) if e.run_id == run_id]


def gated_commits(scenario: Scenario, events: list[TraceEvent]) -> Counter[str]:
    """The gated actions committed after the first human decision, counted; only those whose gate a person
    approved."""
    approved = {e.action for e in events if e.kind == "human" and e.result == "approve"}
    gated = {a.name for a in scenario.actions if a.kind == "task" and a.gate in approved}
    first = next((i for i, e in enumerate(events) if e.kind == "human"), len(events))
    return Counter(
        e.action or "" for e in events[first:] if e.kind == "action" and e.result == "committed" and e.action in gated
    )


def final(events: list[TraceEvent]) -> TraceEvent | None:
    ends = [e for e in events if e.kind == "summary" and e.outcome is not None and e.outcome.status != "suspended"]
    return ends[-1] if len(ends) == 1 and ends[-1] is events[-1] else None


@dataclass(frozen=True)
class Killed:
    """A command killed in ``folder``: its run (None: the folder's one run), what the folder held before the command,
    and how to recover and check it."""

    run_id: str | None
    before: Seen
    recover: Callable[[KillPoint], None]


@dataclass(frozen=True)
class Reference:
    """What a run resumed with no kill shows: its end, its human events and its gated commits."""

    scenario: Scenario
    end: tuple[str, str | None]
    humans: int
    commits: Counter[str]


def approve(folder: Path, run_id: str) -> list[str]:
    return ["resume", str(folder), "--run", run_id, "--approve", "--as", WHO]


class Sweep:
    """The crash sweep of (mode, story) pairs in ``work``, each bench command run through ``commands``."""

    def __init__(self, commands: Commands, work: Path, *, phases: Iterable[str] = PHASES, model: str = MODEL):
        self.commands, self.work, self.phases, self.model = commands, work, tuple(phases), model

    def one(self, mode: str, story: str) -> list[KillPoint]:
        """Every kill point of the chosen phases of one mode on one story, each recovered and checked."""
        scenario = load_scenario(SCENARIOS / f"{story}.yaml")
        stopped = self.work / f"{mode}-{story}-stopped"
        self._bench(bench_run(mode, story, stopped, self.model))
        points: list[KillPoint] = []
        if "run" in self.phases:
            points += self._sweep(
                mode, story, "run", lambda folder, n: self._killed_run(mode, story, folder, n, stopped)
            )
        if "resume" in self.phases:
            (run_id,) = {e.run_id for e in read_events(stopped / TRACE_FILE)}
            reference = self._resumed_whole(stopped, run_id, scenario)
            points += self._sweep(
                mode, story, "resume", lambda folder, n: self._killed_resume(folder, n, stopped, run_id, reference)
            )
        return points

    def _bench(self, command: list[str], kill_after: int = 0) -> dict[str, Any]:
        result = self.commands([command], kill_after)[0]
        if not kill_after and result["code"] != 0:
            raise RuntimeError(f"bench {' '.join(command)}: exit {result['code']}: {result['err'].strip()}")
        return result

    def _sweep(self, mode: str, story: str, phase: str, kill: Callable[[Path, int], Killed | None]) -> list[KillPoint]:
        """Kill points 1, 2, ... of one phase until its command runs to its end unkilled; each one labelled by what
        the folder gained over the one before, then recovered and checked."""
        points: list[KillPoint] = []
        previous: Seen | None = None
        kill_after = 0
        while True:
            kill_after += 1
            folder = self.work / f"{mode}-{story}-{phase}-{kill_after}"
            killed = kill(folder, kill_after)  # None: it ran to its end
            if killed is None:
                shutil.rmtree(folder)
                return points
            point = KillPoint(mode, story, phase, kill_after, f"{phase}: {UNSEEN}", "")
            try:
                now = seen_in(folder, killed.run_id)
            except Exception as exc:  # a finding in itself: bench must leave a readable folder at any kill
                point.readable, point.write = False, f"unreadable after the kill: {exc}"
            else:
                if previous is None:
                    previous = killed.before
                point.boundary, point.write = boundary_between(phase, previous, now)
                previous = now
                killed.recover(point)
            points.append(point)
            shutil.rmtree(folder)

    # ---------------------------------------------------------------- the first run, killed

    def _killed_run(self, mode: str, story: str, folder: Path, kill_after: int, stopped: Path) -> Killed | None:
        killed = self._bench(bench_run(mode, story, folder, self.model), kill_after)
        if killed["code"] != -signal.SIGKILL:
            assert killed["code"] == 0, killed
            return None
        reference = [e for e in read_events(stopped / TRACE_FILE) if e.kind == "summary"][-1]
        return Killed(None, Seen((), None, 0, ()), lambda point: self._recover_run(folder, point, reference))

    def _recover_run(self, folder: Path, point: KillPoint, reference: TraceEvent) -> None:
        """What a person does after a killed ``bench run``: ``bench run --resume``, which keeps a run that wrote its
        summary and drops a cut-short one, running its cell again from its start. What the dropped run had
        committed, the new one commits again: counted as repeated. A run kept suspended must have its checkpoint,
        or no decision can ever reach its stop: counted as an approval lost."""
        before = list(read_events(folder / TRACE_FILE))
        ended = {e.run_id for e in before if e.kind == "summary"}
        dropped = Counter(
            e.action for e in before if e.run_id not in ended and e.kind == "action" and e.result == "committed"
        )
        again = self.commands([["run", "--resume", str(folder)]], 0)[0]
        point.recovery.append(f"bench run --resume: exit {again['code']}")
        if again["code"] != 0:
            point.recovery.append(again["err"].strip().splitlines()[-1] if again["err"].strip() else "")
            return
        after = list(read_events(folder / TRACE_FILE))
        summaries = [e for e in after if e.kind == "summary" and e.outcome is not None]
        point.settled_once = len(summaries) == 1 and len({e.run_id for e in after}) == 1 and summaries[0] is after[-1]
        if summaries:
            got, expected = summaries[0].outcome, reference.outcome
            assert got is not None and expected is not None
            point.ended_otherwise = (got.status, got.stop_verdict, got.suspended_at) != (
                expected.status,
                expected.stop_verdict,
                expected.suspended_at,
            )
            row = CheckpointStore(folder).load(summaries[0].run_id)
            if got.status == "suspended" and (row is None or row.status != "suspended"):
                point.lost = 1
                point.recovery.append("suspended with no checkpoint: bench resume cannot decide it")
        committed = Counter(e.action for e in after if e.kind == "action" and e.result == "committed")
        point.repeated = sum((dropped & committed).values())

    # ---------------------------------------------------------------- the resume, killed

    def _resumed_whole(self, stopped: Path, run_id: str, scenario: Scenario) -> Reference:
        """The run resumed with no kill: what every recovered run is held to."""
        whole = self.work / f"{stopped.name}-whole"
        shutil.copytree(stopped, whole)
        self._bench(approve(whole, run_id))
        self._settle(whole, run_id, [])
        events = events_of(whole, run_id)
        end = final(events)
        assert end is not None and end.outcome is not None, f"{whole}: the uninterrupted resume did not end"
        return Reference(
            scenario,
            (end.outcome.status, end.outcome.stop_verdict),
            sum(e.kind == "human" for e in events),
            gated_commits(scenario, events),
        )

    def _killed_resume(
        self, folder: Path, kill_after: int, stopped: Path, run_id: str, reference: Reference
    ) -> Killed | None:
        shutil.copytree(stopped, folder)
        killed = self._bench(approve(folder, run_id), kill_after)
        if killed["code"] != -signal.SIGKILL:
            assert killed["code"] == 0, killed
            return None
        return Killed(run_id, seen_in(stopped, run_id), lambda p: self._recover_resume(folder, run_id, p, reference))

    def _recover_resume(self, folder: Path, run_id: str, point: KillPoint, reference: Reference) -> None:
        self._settle(folder, run_id, point.recovery)
        events = events_of(folder, run_id)
        row = CheckpointStore(folder).load(run_id)
        end = final(events)
        point.settled_once = (
            end is not None
            and [e.seq for e in events] == list(range(len(events)))
            and row is not None
            and row.status in ("continued", "rejected")
            and row.claim is None
        )
        if end is not None and end.outcome is not None:
            point.repeated = end.outcome.repeated_side_effects
            point.ended_otherwise = (end.outcome.status, end.outcome.stop_verdict) != reference.end
        got = gated_commits(reference.scenario, events)
        point.lost = sum((reference.commits - got).values())
        point.extra_decisions = max(0, sum(e.kind == "human" for e in events) - reference.humans)
        point.twice = sum((got - reference.commits).values()) + point.extra_decisions

    def _settle(self, folder: Path, run_id: str, log: list[str]) -> None:
        """What a person does after a kill until the run is settled: ``bench resume`` with no decision while one is
        claimed, ``--approve`` where the run waits with none (killed before its claim, or at a later stop)."""
        for _ in range(MOST_RECOVERIES):
            row = CheckpointStore(folder).load(run_id)
            if row is None or row.status not in ("suspended", "deciding"):
                return
            approving = row.status == "suspended"
            command = approve(folder, run_id) if approving else ["resume", str(folder), "--run", run_id]
            result = self.commands([command], 0)[0]
            log.append(f"bench resume{' --approve' if approving else ''}: exit {result['code']}")
            if result["code"] != 0:
                log.append(result["err"].strip().splitlines()[-1] if result["err"].strip() else "(no message)")
                return


# ------------------------------------------------------------------------------------------------ the warm driver


def warm(modes: Iterable[str]) -> None:
    """Imports what the modes' commands would otherwise import themselves (each adapter's ``crash_sweep_modules``:
    its framework and its framework-bound half), so a forked command starts warm. (No framework starts a thread on
    import: forking stays safe.)"""
    import importlib

    from modes import MODES

    for name in (module for mode in modes for module in getattr(MODES.get(mode), "crash_sweep_modules", ())):
        with contextlib.suppress(ImportError):  # not installed: its adapter is refused in one line, as in any run
            importlib.import_module(name)


if __name__ == "__main__":
    from tests.helpers.kill_sweep import serve

    warm(sys.argv[1:])
    serve()
