"""Compares a replayed trace with the recorded one, run by run: the first event that differs, or none.

Run ids, timestamps and wall-clock durations differ between any two runs and are set aside; a
model call's latency is the recorded one in a replay, so it is compared like everything else. A gateway
line's audit hashes are compared where both lines have them: a recording made before the hashes existed
still replays, and a hash that changes under the same args and result still shows as drift.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.records.trace import TraceEvent
from harness.terminal import printable

RunKey = tuple[str, str, int]  # scenario, mode, trial

# Fields that differ between two honest runs of the same thing.
IGNORED_FIELDS = frozenset({"run_id", "ts"})
# Gateway detail keys newer than some recordings: compared only when both sides carry them.
BOTH_SIDES_DETAIL = ("input_hash", "output_hash")


@dataclass(frozen=True)
class Divergence:
    """Where one run's replay first differs from its recording."""

    run: RunKey
    seq: int | None  # the first differing event's number; None when a whole run is missing
    fields: tuple[str, ...]
    recorded: str
    replayed: str

    def describe(self) -> str:
        """Three lines (one for a missing run); model text in them is shown escaped, never as a line break."""
        scenario, mode, trial = self.run
        where = printable(f"{scenario} / {mode} / trial {trial}", one_line=True)
        recorded, replayed = printable(self.recorded, one_line=True), printable(self.replayed, one_line=True)
        if self.seq is None:
            return f"{where}: {recorded} vs {replayed}"
        return (
            f"{where}: event {self.seq} differs in {', '.join(self.fields)}\n"
            f"    recorded: {recorded}\n    replayed: {replayed}"
        )


def normalised(event: TraceEvent) -> dict[str, Any]:
    """The event as compared: ids and times dropped, the run's wall time dropped from its summary."""
    data = event.model_dump(mode="json", exclude=set(IGNORED_FIELDS))
    if event.kind == "summary":
        data["latency_ms"] = None  # the summary's latency is the run's wall time
        if data.get("outcome"):
            data["outcome"]["wall_ms"] = None
    return data


def by_run(events: Iterable[TraceEvent]) -> dict[RunKey, list[TraceEvent]]:
    """Events grouped by run, each run in ``seq`` order."""
    runs: dict[RunKey, list[TraceEvent]] = defaultdict(list)
    for event in events:
        runs[(event.scenario, event.mode, event.trial)].append(event)
    return {key: sorted(found, key=lambda e: e.seq) for key, found in runs.items()}


def compare_runs(recorded: list[TraceEvent], replayed: list[TraceEvent], run: RunKey) -> Divergence | None:
    """The first event where two runs differ, or None when they are the same."""
    for index in range(max(len(recorded), len(replayed))):
        old = normalised(recorded[index]) if index < len(recorded) else None
        new = normalised(replayed[index]) if index < len(replayed) else None
        if old is not None and new is not None:
            _only_common_audit(old, new)
        if old == new:
            continue
        if old is None or new is None:
            missing = "(no event: the run ended earlier)"
            return Divergence(
                run, index, ("presence",), _brief(old) if old else missing, _brief(new) if new else missing
            )
        fields = tuple(key for key in old if old.get(key) != new.get(key))
        return Divergence(run, index, fields, _brief(old, fields, new), _brief(new, fields, old))
    return None


def _only_common_audit(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Drops an audit key from both events' details where only one of them has it."""
    old_detail, new_detail = old.get("detail") or {}, new.get("detail") or {}
    for key in BOTH_SIDES_DETAIL:
        if (key in old_detail) != (key in new_detail):
            old_detail.pop(key, None)
            new_detail.pop(key, None)
    for event, detail in ((old, old_detail), (new, new_detail)):
        event["detail"] = detail or None  # a detail that held only the hashes reads as none, as it was recorded


def compare_traces(recorded: Iterable[TraceEvent], replayed: Iterable[TraceEvent]) -> list[Divergence]:
    """Every run of the recording checked against its replay; runs only one side has are divergences too."""
    old_runs, new_runs = by_run(recorded), by_run(replayed)
    found: list[Divergence] = []
    for key in sorted(set(old_runs) | set(new_runs)):
        if key not in new_runs:
            found.append(Divergence(key, None, (), "recorded", "not replayed"))
        elif key not in old_runs:
            found.append(Divergence(key, None, (), "not recorded", "replayed"))
        else:
            divergence = compare_runs(old_runs[key], new_runs[key], key)
            if divergence is not None:
                found.append(divergence)
    return found


def _brief(event: dict[str, Any], fields: Iterable[str] = (), other: dict[str, Any] | None = None) -> str:
    """One line naming the event and the differing fields' values (of an object, only its keys that differ)."""
    head = [f"{event.get('kind')}"]
    for key in ("decision_maker", "action", "result"):
        if event.get(key) is not None:
            head.append(f"{key}={event[key]}")
    if event.get("error"):
        head.append(f"error={event['error'].get('kind')}: {event['error'].get('message')}")
    shown = {"kind", "decision_maker", "action", "result", "error"}
    extra = [
        f"{key}={_short(_differing(event.get(key), (other or {}).get(key)))}" for key in fields if key not in shown
    ]
    return " ".join(head + extra)


def _differing(value: Any, other: Any) -> Any:
    """Of an object that differs from another, its keys whose values differ: a changed verdict deep in an outcome
    must show, not the outcome's first 200 characters."""
    if isinstance(value, dict) and isinstance(other, dict):
        return {key: value.get(key) for key in sorted(set(value) | set(other)) if value.get(key) != other.get(key)}
    return value


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
