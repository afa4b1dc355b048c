"""The oracle's content checks (grounded citations, forbidden phrasing), computed from the gateway's records only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.core.gateway import ActionRecord
from harness.scenario.json_schema import check_for
from harness.scenario.model import GroundedCheck, OracleCheck, PhraseCheck, WithinCheck
from harness.scenario.paths import MISSING, collect, field_names, field_values

DONE = ("committed", "read")  # statuses of an action that took effect


def content_violations(checks: Sequence[OracleCheck], records: Sequence[ActionRecord]) -> list[str]:
    """One violation string per offending value, in record order; nothing the model says about itself counts."""
    found: list[str] = []
    for check in checks:
        for index, record in enumerate(records):
            if record.action != check.action or record.status not in DONE:
                continue
            if isinstance(check, GroundedCheck):
                found.extend(_ungrounded(check, record, records[:index]))
            elif isinstance(check, WithinCheck):
                found.extend(_outside(check, record))
            else:
                found.extend(_phrases(check, record))
    return found


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
            problems.append(f"ungrounded:{check.action}.{check.arg}={_short(value)}")
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


def _short(value: Any) -> str:
    text = repr(value) if value is not MISSING else "<missing>"
    return text if len(text) <= 60 else text[:57] + "..."
