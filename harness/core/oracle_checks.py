"""The oracle's content checks (grounded citations, forbidden phrasing, argument schemas) and what required work must
hold (value rules), computed from the gateway's records and store only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.core.gateway import TOOK_EFFECT, ActionRecord, apply_effect
from harness.scenario.json_schema import check_for
from harness.scenario.model import GroundedCheck, OracleCheck, PhraseCheck, Scenario, WithinCheck
from harness.scenario.paths import MISSING, collect, field_names, field_values
from harness.scenario.values import RequiredAction, RequiredArtifact, Seen, ValueProblem, short, value_problem

DONE = TOOK_EFFECT  # statuses of an action that took effect


def content_violations(checks: Sequence[OracleCheck], records: Sequence[ActionRecord]) -> list[str]:
    """One violation string per offending value, in record order; nothing the model says about itself counts."""
    return [violation for _, violation in content_findings(checks, records)]


def content_findings(checks: Sequence[OracleCheck], records: Sequence[ActionRecord]) -> list[tuple[int, str]]:
    """(index of the check, violation) per offending value, check by check and in record order."""
    found: list[tuple[int, str]] = []
    for number, check in enumerate(checks):
        for index, record in enumerate(records):
            if record.action != check.action or record.status not in DONE:
                continue
            if isinstance(check, GroundedCheck):
                problems = _ungrounded(check, record, records[:index])
            elif isinstance(check, WithinCheck):
                problems = _outside(check, record)
            else:
                problems = _phrases(check, record)
            found.extend((number, problem) for problem in problems)
    return found


# ---------------------------------------------------------------- what required work must hold


def artifact_value_problem(
    required: RequiredArtifact, store: Mapping[str, Any], records: Sequence[ActionRecord]
) -> ValueProblem | None:
    """How a required artifact's value breaks its tests, judged on the store as the run stops and every call that
    took effect; None when it holds (or the artifact is missing: that is missing work of its own)."""
    if not required.tests():
        return None
    return value_problem(required, store, required.path, Seen(store, _calls(records)))


def args_problem(
    scenario: Scenario, needed: RequiredAction, records: Sequence[ActionRecord], indexes: Sequence[int]
) -> ValueProblem | None:
    """None when one of the calls at ``indexes`` (calls of the required action that took place) satisfies every
    argument rule, each judged on the store as that call saw it and the calls before it; else the last call's first
    broken rule (its ``reason`` starts with the argument's path)."""
    last: ValueProblem | None = None
    for index in indexes:
        record = records[index]
        seen = Seen(store_before(scenario, records, index), _calls(records[:index]))
        last = next(
            (p for path, tests in needed.arg_rules.items() if (p := value_problem(tests, record.args, path, seen))),
            None,
        )
        if last is None:
            return None
    return last


def store_before(scenario: Scenario, records: Sequence[ActionRecord], index: int) -> dict[str, Any]:
    """The store's artifacts as they stood when the record at ``index`` was made: the initial store with every
    earlier committed call's effect replayed (the gateway's own ``apply_effect``)."""
    artifacts = dict(scenario.store.artifacts)
    for record in records[:index]:
        spec = scenario.action_map.get(record.action)
        if record.status == "committed" and spec is not None:
            apply_effect(artifacts, spec, record.args)
    return artifacts


def _calls(records: Sequence[ActionRecord]) -> list[tuple[str, Any, Any]]:
    return [(r.action, r.args, r.observation) for r in records if r.status in DONE]


def _outside(check: WithinCheck, record: ActionRecord) -> list[str]:
    """One violation per argument the rule's schema refuses, named by its path (the whole args: the action alone)."""
    if check_for(check.args).first_error(record.args) is None:
        return []
    import jsonschema  # only for a breach: every argument it names

    errors = sorted(
        jsonschema.Draft202012Validator(check.args).iter_errors(record.args), key=lambda e: [str(p) for p in e.path]
    )
    where = dict.fromkeys(".".join(str(p) for p in error.absolute_path) for error in errors)
    return [f"outside:{check.action}" + (f".{path}" if path else "") for path in where]


def _ungrounded(check: GroundedCheck, record: ActionRecord, earlier: Sequence[ActionRecord]) -> list[str]:
    known = _returned(check, earlier)
    problems = []
    for value in collect(record.args, check.arg):
        if value is MISSING or not _hashable(value) or value not in known:
            problems.append(f"ungrounded:{check.action}.{check.arg}={short(value)}")
    return problems


def _returned(check: GroundedCheck, earlier: Iterable[ActionRecord]) -> set[Any]:
    """What the tools returned before this call: field names, or the values of one field."""
    seen: list[Any] = []
    for record in earlier:
        if record.status not in DONE or (check.sources and record.action not in check.sources):
            continue
        found = (
            field_names(record.observation)
            if check.match == "field_names"
            else field_values(record.observation, check.field or "")
        )
        for value in found:
            if _hashable(value) and value not in seen:
                seen.append(value)
    return set(seen[: check.first] if check.first is not None else seen)


def _phrases(check: PhraseCheck, record: ActionRecord) -> list[str]:
    texts = [v for v in collect(record.args, check.arg) if isinstance(v, str)] if check.arg else _strings(record.args)
    lowered = " ".join(texts).casefold()
    return [f"phrase:{check.action}:{phrase}" for phrase in check.phrases if phrase.casefold() in lowered]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None
