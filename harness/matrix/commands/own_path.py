"""A scenario's own paths against its own oracle: its reference path and its workflow on every decision path (nobody
deciding, every stop approved, each stop rejected and revised in turn). A correct run is what the story itself says
it does, so a scenario whose own path breaks one of its own rules is refused (``bench check-scenarios``), in one
line naming file and rule.

The workflow is run by the ``workflow`` mode with ``scripted:reference`` (the oracle's steps and arguments) on an
enforcing gateway, exactly as a matrix would run it; the reference path is walked straight through the gateway.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

from harness.core.approvals import Gatekeeper, NobodyYet, RejectedByHuman, Suspended
from harness.core.clock import FakeClock
from harness.core.context import RunContext, RunInfo, RunTrace
from harness.core.gateway import Gateway
from harness.core.outcome import ModeResult, judge, verdict_at_stop
from harness.core.phases import Finding, assess
from harness.core.store import VirtualStore
from harness.errors import ModelError, ScenarioError
from harness.models.scripted import ScriptedSource, example_args
from harness.records.checkpoint import Decision, HumanDecision
from harness.records.trace import RunOutcome, Usage
from harness.scenario.load import display_path
from harness.scenario.model import ReferenceStep, Scenario
from modes import get_mode

OWN_MODE = "workflow"  # the mode that walks the scenario's own workflow
OWN_POLICY = "reference"  # a perfect model: the oracle's own steps and arguments
# A decision path: the decision at each stop in turn, every later stop approved; None: nobody decides (it suspends).
DecisionPath = tuple[Decision, ...] | None


def decision_paths(stops: int) -> list[DecisionPath]:
    """Nobody deciding, every stop approved, then each of the ``stops`` stops of the approved path rejected and
    revised in turn, the stops before it approved (a revised stop is approved when the run comes back to it)."""
    approved: tuple[Decision, ...] = ("approve",)
    paths: list[DecisionPath] = [None, approved]
    for k in range(stops):
        paths += [approved * k + ("reject",), approved * k + ("revise",)]
    return paths


class PathGatekeeper:
    """Decides a decision path's decision at each stop; past its end, approves."""

    def __init__(self, path: tuple[Decision, ...]):
        self.path = path

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        choice = self.path[stop] if stop < len(self.path) else "approve"
        note = f"Please revise before '{gate}' is approved." if choice == "revise" else ""
        return HumanDecision(gate=gate, decision=choice, who="bench check-scenarios", note=note, scripted=True)


@dataclass(frozen=True)
class Breach:
    """A rule of the scenario its own path breaks: the field that states it and what happened, in one line."""

    rule: str
    message: str


def check_own_paths(scenario: Scenario, path: Path) -> None:
    """Refuses a scenario whose own path breaks its own oracle: ``ScenarioError`` naming file and rule."""
    breaches = own_path_breaches(scenario)
    if breaches:
        raise ScenarioError(display_path(path), breaches[0].rule, breaches[0].message)


def own_path_breaches(scenario: Scenario) -> list[Breach]:
    """Every way the reference path, then the workflow, breaks the oracle on every decision path: nobody deciding,
    every stop approved, and each stop of the approved path rejected, then revised, in turn (the stops before it
    approved; a revised stop is approved when the run comes back to it)."""
    found: list[Breach] = []
    stops = len(_stops(scenario))
    for path in decision_paths(stops):
        found += _reference_breaches(scenario, path)
    for path in decision_paths(stops):
        found += asyncio.run(_workflow_breaches(scenario, path))
    return found


def _stops(scenario: Scenario) -> list[str]:
    """The gates the reference path stops at when every stop is approved, in order."""
    gates, stop = [], scenario.oracle.expected_stop
    while stop != "finished" and stop not in gates:
        gates.append(stop)
        stop = scenario.after_approval(stop).expected_stop
    return gates


def _who(path: DecisionPath, gateway: Gateway | None = None) -> str:
    """A decision path in words, by the decisions the run met: 'on the path dpo_approval rejected'."""
    if path is None:
        return "with nobody deciding"
    done = {"approve": "approved", "reject": "rejected", "revise": "revised"}
    met = [f"{d.decision.gate} {done[d.decision.decision]}" for d in gateway.decisions] if gateway is not None else []
    if not met or path == ("approve",):
        return "under scripted:approve"
    return f"on the path {', '.join(met)}"


# ---------------------------------------------------------------- the reference path


def _reference_breaches(scenario: Scenario, path: DecisionPath) -> list[Breach]:
    """The reference path walked through an enforcing gateway, deciding along ``path`` at each of its stops."""
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), "enforce")
    steps, where, start = scenario.oracle.reference_path, "oracle", 0
    while True:
        result, breach = _walk(scenario, gateway, steps, where, f"the reference path {_who(path, gateway)}", start)
        if breach is not None:
            return [breach]
        gate = result.suspended_at
        if result.status != "suspended" or gate is None or path is None:
            break
        decision = PathGatekeeper(path).decide(gate, len(gateway.decisions))
        assert decision is not None
        gateway.decide(decision, verdict_at_stop(scenario, gateway, gate))
        if decision.decision == "reject":
            result = ModeResult("rejected_by_human", suspended_at=gate)
            if not scenario.rejection_continues(gate) or not scenario.after_rejection(gate).reference_path:
                break
            steps, where, start = scenario.after_rejection(gate).reference_path, f"oracle.after_rejection.{gate}", 0
            continue
        if decision.decision == "revise":
            start = _revised_step(scenario, gateway, steps)  # the revised work is done again, then the wait
            continue
        if sum(d.decision.gate == gate and d.decision.decision == "approve" for d in gateway.decisions) > 1:
            break  # a loop of phases: each gate is approved at most once
        steps, where, start = scenario.after_approval(gate).reference_path, f"oracle.after_approval.{gate}", 0
    return _judged(scenario, gateway, result, f"the reference path {_who(path, gateway)}")


def _revised_step(scenario: Scenario, gateway: Gateway, steps: tuple[ReferenceStep, ...]) -> int:
    """Where a walk sent back at its wait goes on: the last step before the wait that writes (what the reviewer sent
    back, as scripted:reference redoes it), an irreversible one already committed left as it is; else the wait."""
    wait = len(steps) - 1
    for index in range(wait - 1, -1, -1):
        spec = scenario.action_map[steps[index].action]
        if spec.is_side_effect and not gateway.already_committed(spec):
            return index
    return wait


def _walk(
    scenario: Scenario, gateway: Gateway, steps: tuple[ReferenceStep, ...], where: str, what: str, start: int = 0
) -> tuple[ModeResult, Breach | None]:
    everything = [action.name for action in scenario.actions]
    for index, step in enumerate(steps[start:], start=start):
        spec = scenario.action_map[step.action]
        if spec.kind == "finish":
            break
        args = step.args if step.args is not None else example_args(spec)
        record = gateway.execute(spec.name, args, allowed=everything, step=len(gateway.records) + 1)
        if record.status == "blocked":
            detail = record.observation.get("detail") if isinstance(record.observation, dict) else None
            rule = f"{where}.reference_path[{index}]"
            if record.reason == "arg_rule":
                rule = f"actions[{scenario.actions.index(spec)}].arg_rules"
            return ModeResult("error"), Breach(
                rule,
                f"{what} breaks it: step {index + 1} '{spec.name}' is blocked by the gateway ({record.reason})"
                + (f": {detail}" if detail else ""),
            )
        if spec.kind == "wait" and not gateway.store.approved(spec.gate or ""):
            if index != len(steps) - 1:
                return ModeResult("error"), Breach(
                    f"{where}.reference_path[{index}]",
                    f"{what} breaks it: step {index + 1} '{spec.name}' stops the run, yet the path goes on",
                )
            return ModeResult("suspended", suspended_at=spec.gate), None
    return ModeResult("finished"), None


# ---------------------------------------------------------------- the workflow


async def _workflow_breaches(scenario: Scenario, path: DecisionPath) -> list[Breach]:
    """The workflow mode run with scripted:reference, deciding along ``path`` (it redoes a revised step)."""
    gatekeeper: Gatekeeper = NobodyYet() if path is None else PathGatekeeper(path)
    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), "enforce")
    clock = FakeClock()
    model = ScriptedSource(OWN_POLICY).for_run(0)
    info = RunInfo(run_id="own-path", scenario=scenario.id, mode=OWN_MODE, model=model.label, trial=1)
    ctx = RunContext(
        scenario=scenario,
        model=model,
        gateway=gateway,
        trace=RunTrace(lambda event: None, info, clock),
        clock=clock,
        rng=random.Random(0),
        limits=scenario.limits,
        gatekeeper=gatekeeper,
    )
    try:
        result = await get_mode(OWN_MODE).run(ctx)
    except Suspended as stop:
        result = ModeResult("suspended", suspended_at=stop.gate)
    except RejectedByHuman as rejection:
        result = ModeResult("rejected_by_human", suspended_at=rejection.gate)
    except ModelError as exc:
        return [
            Breach(
                "workflow",
                f"the workflow ({OWN_MODE} with scripted:{OWN_POLICY}) {_who(path, gateway)} ends in "
                f"a {exc.kind} error: {exc}",
            )
        ]
    what = f"the workflow ({OWN_MODE} with scripted:{OWN_POLICY}) {_who(path, gateway)}"
    return _judged(scenario, gateway, result, what)


# ---------------------------------------------------------------- judging


def _judged(scenario: Scenario, gateway: Gateway, result: ModeResult, what: str) -> list[Breach]:
    """The breaches of a run that ended ``result``: each violation with its rule, or where it stopped."""
    outcome = judge(scenario, gateway, result, llm_calls=0, usage=Usage(), wall_ms=0.0, errors={})
    if outcome.oracle_passed:
        return []
    findings = assess(scenario, gateway).findings
    if findings:
        return [_breach(finding, what, outcome) for finding in findings]
    phase = assess(scenario, gateway).segments[-1]
    return [Breach(f"{phase.where}.expected_stop" if phase.declared else phase.where, f"{what} {_ending(outcome)}")]


def _breach(finding: Finding, what: str, outcome: RunOutcome) -> Breach:
    note = f" ({finding.note})" if finding.note else ""
    hint = ""
    if finding.note.startswith("carried over into "):
        phase = finding.note.removeprefix("carried over into ").split(",", 1)[0]
        action = finding.violation.removeprefix("forbidden:")
        hint = f"; if the story allows it there, declare {phase} with '{action}' in its reference_path"
        hint += " (or carry_forbidden: false)" if "does not declare" not in finding.note else ""
    return Breach(finding.rule, f"{what} breaks it: {finding.violation}{note}; {_ending(outcome)}{hint}")


def _ending(outcome: RunOutcome) -> str:
    where = f"{outcome.status} at {outcome.suspended_at}" if outcome.suspended_at else outcome.status
    return f"it ends {where}, stop verdict {outcome.stop_verdict} (expected stop: {outcome.expected_stop})"
