"""The tool-result cache of a run (seed 003: a cache keyed by user and tool, with a time-to-live).

One run is one user's session: the cache lives in the run's store and dies with it, so runs never share results
and a replay hits where its recording hit. Time is the run's simulated time (the declared durations of its calls).
A write to the artifact a cached action reads drops that action's entries: a cache never serves a stale read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.core.audit_hash import canonical_json
from harness.scenario.model import ActionSpec
from harness.scenario.paths import MISSING, lookup


@dataclass(frozen=True)
class CacheEntry:
    result: Any
    stored_at_ms: int
    reads: str | None  # the artifact the result came from: a write to it drops the entry


@dataclass
class ToolCache:
    """Results by (user, tool, key values), each with when it was stored."""

    entries: dict[str, CacheEntry] = field(default_factory=dict)

    @staticmethod
    def key(spec: ActionSpec, args: Any, run_user: str) -> str:
        """The entry a call of a cached action goes under: its user, the tool, the key fields' values."""
        policy = spec.cache
        assert policy is not None
        data = args if isinstance(args, dict) else {}
        user = lookup(data, policy.user) if policy.user is not None else run_user
        values = [lookup(data, path) for path in policy.key]
        return canonical_json([None if user is MISSING else user, spec.name, [_plain(v) for v in values]])

    def hit(self, spec: ActionSpec, key: str, now_ms: int) -> CacheEntry | None:
        """The live entry for ``key``, or None (none stored, or older than the action's time-to-live)."""
        entry = self.entries.get(key)
        if entry is None or spec.cache is None or now_ms - entry.stored_at_ms >= spec.cache.ttl_ms:
            return None
        return entry

    def store(self, spec: ActionSpec, key: str, result: Any, now_ms: int) -> None:
        self.entries[key] = CacheEntry(result, now_ms, spec.reads)

    def written(self, artifacts: set[str]) -> None:
        """Drops the entries read from artifacts a call just wrote or removed."""
        stale = [key for key, entry in self.entries.items() if entry.reads in artifacts]
        for key in stale:
            del self.entries[key]


def _plain(value: Any) -> Any:
    return None if value is MISSING else value
