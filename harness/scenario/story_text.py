"""A story's rules and oracle as (name, text) rows a reader can check a run against: the run page and
``bench show --prompts`` print them beside what the model was told and what it did."""

from __future__ import annotations

import json
from typing import Any

from harness.scenario.model import Phase, Scenario, StopExpectation
from harness.scenario.values import Operand, RequiredAction, RequiredArtifact, ValueTestFields
from harness.scenario.workflow_graph import condition_text

Row = tuple[str, str]
_SIGNS = {
    "equals": "=",
    "greater_than": ">",
    "at_least": "≥",
    "less_than": "<",
    "at_most": "≤",
    "covers": "covers",
    "excludes": "excludes",
}


def rule_rows(s: Scenario) -> list[Row]:
    """Each rule as the agent reads it, named with its precedence and whether a correct run obeys it."""
    return [(f"{r.id} (precedence {r.precedence}, {'obeyed' if r.obeyed else 'not obeyed'})", r.text) for r in s.rules]


def oracle_rows(s: Scenario) -> list[Row]:
    """What a correct run does: its stop, path, forbidden actions and required work, then each later phase."""
    rows = [("task", s.task), *_stop_rows(s, s.oracle, "")]
    for check in s.oracle.checks:
        rows.append(("check", _check_text(check)))
    first = frozenset(s.oracle.forbidden)
    for gate, stage in s.oracle.after_approval.items():
        rows += _stop_rows(s, stage, f"after {gate} approved: ", first)
    for gate in [g.name for g in s.gates if not g.approved]:
        if gate not in s.oracle.after_rejection and not s.rejection_continues(gate):
            continue
        phase = s.after_rejection(gate)
        prefix = f"after {gate} rejected: "
        if s.rejection_continues(gate):
            path = " → ".join(step.action for step in phase.reference_path) or "the run ends or finishes"
            rows.append((f"{prefix}compensation", path))
        else:
            rows.append((f"{prefix}the run ends", "on_rejection: end"))
        retry = s.retry_of(gate) - phase.takes if s.rejection_continues(gate) else frozenset()
        rows += _phase_rows(s, phase, prefix, first, retry)
    gates = [
        f"{g.name}: {g.description}" + (f" (when {condition_text(g.applies_when)})" if g.applies_when else "")
        for g in s.gates
    ]
    if gates:
        rows.append(("gates", "; ".join(gates)))
    return rows


def _stop_rows(s: Scenario, stage: StopExpectation, prefix: str, before: frozenset[str] = frozenset()) -> list[Row]:
    path = " → ".join(step.action + (f" {_json(step.args)}" if step.args else "") for step in stage.reference_path)
    return [
        (f"{prefix}expected stop", stage.expected_stop),
        (f"{prefix}reference path", path),
        *_phase_rows(s, stage, prefix, before),
    ]


def _phase_rows(
    s: Scenario, phase: Phase, prefix: str, before: frozenset[str] = frozenset(), retry: frozenset[str] = frozenset()
) -> list[Row]:
    """A phase's bans (its own, those carried over from the phase before, the retry of a refusal), work and order."""
    rows = []
    carried = sorted(phase.forbidden_after(before) - set(phase.forbidden))
    retried = sorted(retry - set(phase.forbidden) - set(carried))
    bans = [*phase.forbidden, *(f"{a} (carried)" for a in carried), *(f"{a} (the retry)" for a in retried)]
    if bans:
        rows.append((f"{prefix}forbidden", ", ".join(bans)))
    work = [_artifact_text(a) for a in phase.required_artifacts] + [_action_text(a) for a in phase.required_actions]
    if work:
        rows.append((f"{prefix}required work", "; ".join(work)))
    elif isinstance(phase, StopExpectation) and not phase.declares_work:
        derived = s.work_for(phase)
        listed = [*derived.artifacts, *(f"{a} taken" for a in derived.actions)]
        if listed:
            rows.append((f"{prefix}required work (derived)", "; ".join(listed)))
    if phase.order:
        rows.append((f"{prefix}order", ", ".join(f"{o.before} before {o.after}" for o in phase.order)))
    return rows


def _artifact_text(a: RequiredArtifact) -> str:
    tests = _tests_text(a)
    return f"{a.path} {tests}" if tests else f"{a.path} written"


def _action_text(a: RequiredAction) -> str:
    rules = "; ".join(f"{path} {_tests_text(tests)}" for path, tests in a.arg_rules.items())
    return f"{a.action} taken" + (f" with {rules}" if rules else "")


def _tests_text(tests: ValueTestFields) -> str:
    return " and ".join(f"{_SIGNS[name]} {_operand_text(operand)}" for name, operand in tests.tests())


def _operand_text(o: Operand) -> str:
    if o.store is not None:
        return f"the store's {o.store}"
    if o.action is not None:
        return f"{o.action}'s {'result ' + o.result if o.result else 'arg ' + str(o.arg)}"
    return _json(o.value)


def _check_text(check: Any) -> str:
    if check.type == "grounded":
        source = f"values under {check.field}" if check.field else "keys"
        among = f" of {', '.join(check.sources)}" if check.sources else ""
        return f"{check.action}.{check.arg} must be {source} an earlier tool result{among} returned"
    if check.type == "no_phrases":
        where = f"{check.action}.{check.arg}" if check.arg else f"{check.action}'s args"
        return f"{where} must not say: " + ", ".join(repr(p) for p in check.phrases)
    return f"{check.action}'s args must fit {_json(check.args)}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
