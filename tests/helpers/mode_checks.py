"""The checks every mode passes, each a function of a mode's name: the tests parametrised over the registry call them,
and tests/modes/test_new_mode.py calls them on a mode registered for that test alone, so a new mode gets them all.

Which checks apply comes from the mode's own class (``hard_gate``, ``naive``), never from a list of names.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from pathlib import Path

from harness.errors import INFRASTRUCTURE_ERRORS
from harness.matrix.commands.sanity import run_scripted
from harness.models import RECORDED_MODEL
from harness.models.scripted import POLICIES
from harness.records.trace import TraceEvent, read_events
from harness.scenario.load import load_all
from harness.scenario.model import Scenario
from modes import MODES
from modes.workflow import WorkflowMode
from tests.helpers.bench import SCENARIOS, run_offline
from tests.helpers.units import REFUND, THRESHOLD, scenario

GATEWAYS = ("enforce", "audit")
# Small gate stories written in the tests, so a change to the library never changes what the gate checks prove.
STORIES = {"refund": scenario(REFUND), "threshold": scenario(THRESHOLD)}
HARD_GATE_POLICIES = ("eager", "random", "looping", "compliant")
GOLDEN = Path(__file__).resolve().parent / "golden"
# The policy that shows a mode's characteristic behaviour in its golden trace, where it is not the compliant one.
GOLDEN_POLICY = {"react": "looping", "react_guardrails": "eager"}
WRITE_GOLDEN = "BENCH_UPDATE_GOLDEN"  # set to 1: the golden check writes the trace (a new mode's, or after a change)


def hard_gate_modes() -> list[str]:
    """The registered modes whose own code stops before every unapproved gate."""
    return sorted(name for name, cls in MODES.items() if cls.hard_gate)


def naive_modes() -> list[str]:
    """The registered modes whose own code does nothing to keep to a gate."""
    return sorted(name for name, cls in MODES.items() if cls.naive)


def workflow_modes() -> list[str]:
    """The registered modes that walk the scenario's workflow graph (WorkflowMode and its variants)."""
    return sorted(name for name, cls in MODES.items() if issubclass(cls, WorkflowMode))


def recorded_modes() -> set[str]:
    """The modes the committed recordings hold, each by its own manifest: the modes a recording made established."""
    return {
        mode
        for manifest in RECORDED_MODEL.parent.glob("*/manifest.json")
        for mode in json.loads(manifest.read_text())["modes"]
    }


# ---------------------------------------------------------------- what the class declares


def check_declares_itself(mode: str) -> None:
    """The registry knows it by its name; it describes itself for the report tables and claims no contradiction."""
    cls = MODES[mode]
    assert cls.name == mode
    assert cls.summary and cls.decides and cls.stopper, mode  # bench list and the report tables show these
    assert not (cls.hard_gate and cls.naive), f"{mode}: a mode cannot both stop at every gate and ignore them"
    json.dumps(cls.parameters())  # every tunable it names exists and can be traced in run_start


# ---------------------------------------------------------------- the gateway and the mode's own gate


def check_hard_gate_under_audit(mode: str, story: str, policy: str) -> None:
    """A hard-gate mode commits no gated action before its approval with only an auditing gateway behind it."""
    _, outcomes = run_offline(STORIES[story], [mode], policy, trials=4 if policy == "random" else 1, gateway="audit")
    assert outcomes and all(o.premature_side_effects == 0 for o in outcomes)
    assert not any(o.stop_correct and o.unauthorized_side_effects for o in outcomes)


def check_naive_commits_early_unless_enforced(mode: str) -> None:
    """A naive mode commits the gated action early when nothing blocks it; the enforcing gateway blocks it."""
    _, (outcome,) = run_offline(STORIES["refund"], [mode], "eager", gateway="audit")
    assert outcome.premature_side_effects >= 1 and outcome.stop_verdict == "late" and not outcome.stop_correct
    _, (enforced,) = run_offline(STORIES["refund"], [mode], "eager", gateway="enforce")
    assert enforced.premature_side_effects == 0 and enforced.blocked_by.get("gate_closed", 0) >= 1


def check_audit_gateway_counts_premature_writes(blog: Scenario, mode: str) -> None:
    """With the gateway only auditing blog_brief_approval, what the mode's own control flow allows becomes visible."""
    _, [outcome] = run_offline(blog, [mode], "eager", gateway="audit")
    wrote_draft = "forbidden:write_draft" in outcome.violations
    assert outcome.premature_side_effects == (1 if wrote_draft else 0)
    if MODES[mode].naive:
        assert wrote_draft and not outcome.stop_correct
    if MODES[mode].hard_gate:
        assert not wrote_draft


# ---------------------------------------------------------------- every scenario, every scripted policy


def check_every_policy_offline(story: Scenario, mode: str) -> None:
    """Every scripted policy under both gateway policies: one summary, no harness error, nothing premature enforced."""

    async def cells() -> list[tuple[str, str, tuple]]:
        return [
            (policy, gateway, await run_scripted(story, mode, policy, gateway))
            for policy in POLICIES
            for gateway in GATEWAYS
        ]

    for policy, gateway, (outcome, events) in asyncio.run(cells()):
        cell = f"{story.id}/{mode}/{policy}/{gateway}"
        assert not set(outcome.errors) & INFRASTRUCTURE_ERRORS, (cell, outcome.errors)
        assert [e.kind for e in events].count("summary") == 1, cell
        assert events[-1].kind == "summary" and events[-1].outcome == outcome, cell
        # the workflow family walks nodes (bounded by max_transitions and each sub-agent's own budget)
        assert outcome.steps <= story.limits.max_steps or issubclass(MODES[mode], WorkflowMode), cell
        # Whatever the policy, nothing irreversible slips through the enforcing gateway unapproved.
        if gateway == "enforce":
            assert outcome.premature_side_effects == 0, cell


def gate_opened_before(story: Scenario, events: list[TraceEvent], index: int, gate: str) -> bool:
    """Independently of the gateway: approved by a person earlier in the run, approved from the start, or a
    conditional gate whose condition does not hold on the story's store."""
    spec = next(g for g in story.gates if g.name == gate)
    if spec.approved or (spec.applies_when is not None and not spec.applies_when.holds(story.store.artifacts)):
        return True
    return any(e.kind == "human" and e.action == gate and e.result == "approve" for e in events[:index])


def check_random_answers_and_decisions(mode: str, folder: Path, runs: int = 1000) -> None:
    """``runs``+ runs of the library: random answers (scripted:random) and random decisions at every gate (approve,
    reject, revise); under an auditing gateway too when the mode claims a hard gate. No gated action commits
    without its approval, nothing repeats."""
    from harness.matrix.pipeline.driver import run
    from harness.matrix.pipeline.spec import RunSpec

    library = load_all(SCENARIOS)
    for policy in GATEWAYS if MODES[mode].hard_gate else GATEWAYS[:1]:
        out = folder / policy
        run(
            RunSpec(
                modes=(mode,),
                scenarios=["all"],
                model="scripted:random",
                approver="scripted:random",
                trials=runs // len(library) + 1,
                gateway=policy,
                seed=11,
                out=out,
            )
        )
        by_run: dict[str, list[TraceEvent]] = {}
        for event in read_events(out / "traces.jsonl"):
            by_run.setdefault(event.run_id, []).append(event)
        assert len(by_run) >= runs
        decided: Counter[str | None] = Counter()
        for events in by_run.values():
            story = library[events[0].scenario]
            gates = {a.name: a.gate for a in story.actions if a.kind == "task" and a.gate}
            for index, event in enumerate(events):
                if event.kind == "action" and event.result == "committed" and event.action in gates:
                    assert gate_opened_before(story, events, index, gates[event.action]), (mode, policy, event)
                decided[event.result] += event.kind == "human"
            outcome = events[-1].outcome
            assert outcome is not None
            # an irreversible action committed twice under audit is a repeat by design, flagged already_committed
            flagged = sum(v.startswith("already_committed:") for v in outcome.violations) if policy == "audit" else 0
            assert outcome.repeated_side_effects <= flagged, (mode, policy, events[0].scenario, outcome.violations)
            assert not outcome.errors.get("internal")
        if MODES[mode].hard_gate:
            assert decided["approve"] and decided["reject"] and decided["revise"]  # every decision was exercised


# ---------------------------------------------------------------- golden traces


def golden_path(mode: str, folder: Path = GOLDEN) -> Path:
    return folder / f"blog_brief_approval.{mode}.{GOLDEN_POLICY.get(mode, 'compliant')}.jsonl"


def normalise(events: list[TraceEvent]) -> list[dict]:
    """Drops what differs between identical runs: ids, timestamps, wall-clock durations."""
    ids: dict[str, str] = {}
    lines = []
    for event in events:
        data = json.loads(event.model_dump_json())
        data["run_id"] = ids.setdefault(data["run_id"], f"run-{len(ids) + 1}")
        data.pop("ts")
        if data["kind"] == "summary":
            data.pop("latency_ms")
            data["outcome"].pop("wall_ms")
        lines.append(data)
    return lines


def check_golden(blog: Scenario, mode: str, folder: Path = GOLDEN) -> bool:
    """The mode's run on blog_brief_approval equals its golden trace, after normalising ids and times.

    False when the mode has no golden trace (not a failure: a new mode gets one by running the golden test with
    BENCH_UPDATE_GOLDEN=1, then reviewing the file); with that variable set, the trace is written first.
    """
    path = golden_path(mode, folder)
    if not path.exists() and not os.environ.get(WRITE_GOLDEN):
        return False
    got = normalise(run_offline(blog, [mode], GOLDEN_POLICY.get(mode, "compliant"))[0])
    if os.environ.get(WRITE_GOLDEN):
        path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in got))
    expected = [json.loads(line) for line in path.read_text().splitlines()]
    assert got == expected
    return True


# ---------------------------------------------------------------- the report over a mode's runs


def check_report_matches_the_trace(run_folder: Path, report: Path, printed: str, trials: int) -> None:
    """The report of a run names every mode of it, and its stop-correctness table counts what the trace says."""
    import csv

    summaries = [e for e in read_events(run_folder / "traces.jsonl") if e.kind == "summary"]
    correct = Counter(e.mode for e in summaries if e.outcome is not None and e.outcome.stop_correct)
    with open(report / "tables" / "correctness_by_mode.csv") as handle:
        rows = {row["mode"]: row for row in csv.DictReader(handle)}
    for mode in {e.mode for e in summaries}:
        assert mode in printed
        assert int(rows[mode]["stop-correct"]) == correct[mode]
        assert int(rows[mode]["judged (n)"]) == trials


def not_covered_in(printed: str) -> dict[str, str]:
    """Mode -> where it has no sanity rows, read from ``bench check-scenarios``' notes (several modes share a line)."""
    found = {}
    for line in printed.splitlines():
        if line.startswith("not covered"):
            modes, where = line.split("): ", 1)[1].split("; ", 1)[0].split(" in ", 1)
            found.update(dict.fromkeys(modes.split(", "), where))
    return found
