"""Seed 003's release gate as a recipe (``bench gate-check``): an error injected into one workflow step must take
the step's declared ``on_failure`` route, and a seeded sample of the run's gateway records must carry both audit
hashes, each recomputed from the recorded args and result.

The injection is a fault on the step's action in a copy of the story (every call fails with the injected error),
run under a workflow mode with a scripted model and approver, into a run folder of its own; the audit then reads
that folder's trace as any auditor would. ``audit_log`` audits any run folder.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.audit_hash import audit_hash
from harness.errors import UserInputError
from harness.matrix.pipeline.driver import run
from harness.matrix.pipeline.spec import RunSpec, project_dirs
from harness.records.folder import TRACE_FILE
from harness.records.trace import TraceEvent, read_events
from harness.scenario.load import display_path, load_scenario, scenario_files
from harness.scenario.model import Node, Scenario
from harness.scenario.safe_yaml import read_yaml

ALWAYS = 10_000  # an injected fault's fail_first: every call of the run fails
WORKFLOW_MODES = ("workflow", "workflow_routed", "workflow_param", "workflow_fallback_react")


@dataclass(frozen=True)
class Injection:
    """An error injected into a workflow step: the node, and what its action returns instead of a result."""

    node: str
    error: str

    @classmethod
    def parse(cls, text: str) -> Injection:
        """``NODE=ERROR``; a bare status code (``404``) reads as an HTTP error of that code."""
        node, sep, error = text.partition("=")
        if not sep or not node.strip() or not error.strip():
            raise UserInputError(f"--inject {text}: give NODE=ERROR (a workflow node and the error, e.g. plate=404)")
        error = error.strip()
        return cls(node.strip(), f"HTTP {error}: injected by bench gate-check" if error.isdigit() else error)


@dataclass(frozen=True)
class Check:
    """One check of the gate: what it asked, whether it held, and what was seen."""

    name: str
    passed: bool
    seen: str

    def line(self) -> str:
        return f"{'ok  ' if self.passed else 'FAIL'} {self.name}: {self.seen}"


@dataclass(frozen=True)
class GateReport:
    """The gate's checks and the run folder they read."""

    folder: Path
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


def gate_check(
    scenario: str,
    injection: Injection,
    *,
    mode: str = "workflow",
    sample: int = 20,
    seed: int = 0,
    approver: str = "scripted:approve",
    model: str = "scripted:reference",
    out: Path | None = None,
    scenarios_dir: Path | None = None,
) -> GateReport:
    """Runs the story with the error injected, then checks the route its step took and audits the run's records."""
    if mode not in WORKFLOW_MODES:
        raise UserInputError(
            f"--mode {mode}: the gate checks a workflow's failure contract; give one of {', '.join(WORKFLOW_MODES)}"
        )
    folder, _ = project_dirs(scenarios_dir)
    story = _story_file(folder, scenario)
    original = load_scenario(story)
    node = _injected_node(original, injection)
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as staging:
        copy = Path(staging) / story.name
        copy.write_text(json.dumps(_with_fault(story, node, injection.error)), encoding="utf-8")
        spec = {
            "modes": (mode,),
            "scenarios": (scenario,),
            "scenarios_dir": Path(staging),
            "model": model,  # read into the spec's models, as --model is
            "approver": approver,
            "seed": seed,
            "out": out,
            "command": ("bench", "gate-check", scenario, "--inject", f"{injection.node}={injection.error}"),
            "label": f"gate-check {scenario} {injection.node}",
        }
        result = run(RunSpec.model_validate(spec))
    events = list(read_events(result.traces))
    checks = route_checks(original, node, events) + audit_log(result.folder, sample=sample, seed=seed)
    return GateReport(result.folder, tuple(checks))


def _story_file(folder: Path, name: str) -> Path:
    files = {path.stem: path for path in scenario_files(folder)}
    if name not in files:
        raise UserInputError(f"scenario '{name}': no such story in {display_path(folder)}; known: {', '.join(files)}")
    return files[name]


def _injected_node(scenario: Scenario, injection: Injection) -> Node:
    node = scenario.node_map.get(injection.node)
    if node is None:
        known = ", ".join(n.id for n in scenario.workflow.nodes if n.action is not None)
        raise UserInputError(
            f"--inject {injection.node}: no such workflow node in {scenario.id}; nodes with an action: {known}"
        )
    if node.type not in ("action", "model_step") or node.action is None:
        raise UserInputError(
            f"--inject {injection.node}: a {node.type} node runs no action of its own; inject into "
            "an action or model_step node"
        )
    return node


def _with_fault(story: Path, node: Node, error: str) -> dict[str, Any]:
    """The story's file as data, its node's action failing on every call with ``error``."""
    raw = read_yaml(story, display_path(story))
    for action in raw["actions"]:
        if action.get("name") == node.action:
            action["fault"] = {"fail_first": ALWAYS, "error": error}
            action.pop("cache", None)  # a cached result would hide the injected error
    return raw


def route_checks(scenario: Scenario, node: Node, events: list[TraceEvent]) -> list[Check]:
    """Whether the run took the node's declared failure route: the error reached it, its retries ran, its alert
    went out, and it ended, fell back or went on as the contract says."""
    contract = node.on_failure
    calls = [e for e in events if e.kind == "action" and e.action == node.action]
    failed = [e for e in calls if e.result == "failed" and (e.detail or {}).get("reason") == "fault"]
    summary = next((e for e in reversed(events) if e.kind == "summary" and e.outcome is not None), None)
    decided = [e for e in events if e.kind == "decision" and (e.detail or {}).get("node") == node.id]
    other = Counter(f"{e.result} ({(e.detail or {}).get('reason')})" for e in calls if e not in failed)
    seen = f"{len(failed)} call(s) of {node.action} returned it" + (
        "; other calls: " + ", ".join(f"{n} {what}" for what, n in sorted(other.items())) if other else ""
    )
    checks = [Check("injected error reached the step", bool(failed), seen)]
    if not failed:
        return checks  # the run never got there (a gate stopped it, an earlier step failed): nothing to route
    retries = sum(e.result == "retry" for e in decided)
    wanted = contract.retry if contract is not None else 0
    checks.append(Check(f"retry: {wanted}", retries == wanted, f"{retries} retr{'y' if retries == 1 else 'ies'}"))
    if contract is not None and contract.alert is not None:
        alerts = [e for e in events if e.kind == "alert" and (e.detail or {}).get("node") == node.id]
        who = ", ".join(str(e.action) for e in alerts) or "no alert"
        checks.append(Check(f"alert: {contract.alert}", any(e.action == contract.alert for e in alerts), who))
    status = summary.outcome.status if summary is not None and summary.outcome is not None else "no summary"
    terminated = summary.outcome.terminated if summary is not None and summary.outcome is not None else None
    if contract is not None and contract.terminate is not None:
        ok = status == "error" and (terminated or "").startswith(f"{contract.terminate}:")
        checks.append(Check(f"terminate: {contract.terminate}", ok, f"status {status}, terminated: {terminated}"))
    elif contract is not None and contract.fallback is not None:
        took = [e.action for e in decided if e.result == "fallback"]
        checks.append(Check(f"fallback: {contract.fallback}", contract.fallback in took, f"fell back to {took}"))
    elif contract is not None and contract.return_error is not None:
        errors = [e.error.message for e in events if e.kind == "error" and e.error is not None]
        ok = status == "error" and any(m.startswith(f"{contract.return_error}:") for m in errors)
        checks.append(Check(f"return_error: {contract.return_error}", ok, f"status {status}, errors {errors}"))
    elif contract is not None and contract.alert is not None:
        went = [e.action for e in decided if e.result == "continue_after_alert"]
        way_on = node.next or next(b.goto for b in node.branches if b.when is None)
        checks.append(Check(f"continue to {way_on}", way_on in went, f"went on to {went}"))
    else:
        checks.append(Check("no contract: the run ends with an error", status == "error", f"status {status}"))
    return checks


def audit_log(folder: Path, *, sample: int = 20, seed: int = 0) -> list[Check]:
    """A seeded sample of the folder's gateway records: each must carry both hashes, and each hash must be the one
    recomputed from the record's args and result (its observation). One check per failed record."""
    traces = folder / TRACE_FILE if folder.is_dir() else folder
    if not traces.is_file():
        raise UserInputError(f"{display_path(traces)}: no trace to audit")
    records = [e for e in read_events(traces) if e.kind == "action" and e.decision_maker == "gateway"]
    picked = random.Random(seed).sample(records, min(sample, len(records)))
    problems = [_audit_problem(event) for event in picked]
    failed = [
        Check(f"audit {e.run_id[:8]} seq {e.seq} ({e.action})", False, p)
        for e, p in zip(picked, problems, strict=True)
        if p
    ]
    seen = f"{len(picked)} of {len(records)} gateway records sampled (seed {seed}), {len(failed)} failed"
    return [Check("audit hashes present and traceable", bool(picked) and not failed, seen), *failed]


def _audit_problem(event: TraceEvent) -> str | None:
    detail = event.detail or {}
    for key in ("input_hash", "output_hash"):
        if not detail.get(key):
            return f"{key} missing"
    if audit_hash(event.args) != detail["input_hash"]:
        return "input_hash is not the hash of the recorded args"
    if audit_hash(detail.get("observation")) != detail["output_hash"]:
        return "output_hash is not the hash of the recorded result"
    return None
