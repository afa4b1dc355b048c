"""Recordings of live runs: every exchange with the endpoint, keyed so that a replay finds it again exactly.

A recorded answer is keyed by the run it belongs to (scenario, mode, trial), a stable hash of what
was asked (purpose, messages, response schema) and how many times that run had asked the same thing
before (trials and temperature > 0 make identical requests legitimate). Sampling settings are not in
the hash: they are the recording's, written in its manifest. Nothing here ever sees the API key.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from harness.core.clock import Clock, ShiftedClock
from harness.core.model_port import ModelReply, ModelRequest
from harness.models.exchange import Exchange, interpret, model_time_ms
from harness.records.trace import TraceReadReport, read_records
from harness.version import bench_commit

RECORDING_FILE = "recording.jsonl"
RECORDING_SCHEMA_VERSION = 1

RecordKey = tuple[str, str, int, str, int]  # scenario, mode, trial, request hash, occurrence


def request_hash(request: ModelRequest) -> str:
    """A stable hash of what the model is asked; the same request hashes the same on any machine."""
    payload = {"purpose": request.purpose, "messages": list(request.messages), "schema": request.response_schema}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Provenance(BaseModel):
    """Where a recorded exchange came from: when it was asked, through which endpoint profile, from which bench."""

    model_config = ConfigDict(frozen=True)

    recorded_at: str  # ISO 8601, UTC
    endpoint_profile: str | None = None  # the provider profile the request went out under (harness/models/providers)
    bench_commit: str | None = None  # the git commit bench ran from (-dirty: uncommitted changes); None: no checkout


class RecordEntry(BaseModel):
    """One line of ``recording.jsonl``: which run asked what, and the whole exchange (usage and latency in it)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = RECORDING_SCHEMA_VERSION
    scenario: str
    mode: str
    trial: int
    step: int
    purpose: str
    request_hash: str
    occurrence: int  # 0 for the first time this run asked this request, 1 for the second, ...
    model: str
    exchange: Exchange
    provenance: Provenance | None = None  # None: recorded before lines kept it (the folder's manifest says)
    served_from: str | None = None  # record-through: taken from this recording, not asked again

    @property
    def key(self) -> RecordKey:
        return (self.scenario, self.mode, self.trial, self.request_hash, self.occurrence)


class Occurrences:
    """Counts how often one run has asked each request, to key repeats apart."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()

    def key(self, request: ModelRequest) -> RecordKey:
        digest = request_hash(request)
        occurrence = self._seen[digest]
        self._seen[digest] += 1
        meta = request.meta
        return (meta.scenario, meta.mode, meta.trial, digest, occurrence)


class ExchangingModel(Protocol):
    """A model that can hand over the raw exchange behind its reply (the live model)."""

    label: str

    async def exchange(self, request: ModelRequest) -> Exchange: ...


class ExchangingSource(Protocol):
    label: str

    def for_run(self, seed: int) -> ExchangingModel: ...

    async def aclose(self) -> None: ...


class Serves(Protocol):
    """An earlier recording that may answer a request before the model is asked (harness/models/record_through.py)."""

    def lookup(self, key: RecordKey) -> RecordEntry | None: ...


class RecordingSource:
    """Wraps a live source: every exchange goes to ``sink`` before it is read into a reply.

    ``through``: an earlier recording that answers what it holds (record-through); only its misses are asked.
    ``profile``: the endpoint's provider profile, kept in each line's provenance.
    """

    def __init__(
        self,
        inner: ExchangingSource,
        sink: Callable[[RecordEntry], None],
        *,
        profile: str | None = None,
        through: Serves | None = None,
    ):
        self.inner, self.sink = inner, sink
        self.label = inner.label
        self.through = through
        self.stamp = Provenance(recorded_at="", endpoint_profile=profile, bench_commit=bench_commit())

    def for_run(self, seed: int) -> RecordingModel:
        return RecordingModel(self.inner.for_run(seed), self.sink, self.stamp, self.through)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def manifest_facts(self) -> dict[str, Any]:
        """The wrapped source's facts for the manifest (a live source: its adaptations)."""
        facts = getattr(self.inner, "manifest_facts", None)
        return facts() if callable(facts) else {}


class RecordingModel:
    """One run's live model, recorded; with record-through, the answers already recorded are served, not asked."""

    def __init__(
        self,
        inner: ExchangingModel,
        sink: Callable[[RecordEntry], None],
        stamp: Provenance | None = None,
        through: Serves | None = None,
    ):
        self.inner, self.sink = inner, sink
        self.label = inner.label
        self.stamp = stamp or Provenance(recorded_at="")
        self.through = through
        self._occurrences = Occurrences()
        self.model_ms = 0.0  # the recorded model time of the answers served so far

    def run_clock(self, base: Clock) -> Clock:
        """A served answer lasts the time it took when recorded, as in a replay; asked ones are timed as they go."""
        return base if self.through is None else ShiftedClock(base, lambda: self.model_ms)

    def skip(self, request: ModelRequest) -> None:
        """Counts a request a resumed run answered from its checkpoint, so later repeats key as they did."""
        self._occurrences.key(request)

    async def complete(self, request: ModelRequest) -> ModelReply:
        key = self._occurrences.key(request)
        served = self.through.lookup(key) if self.through is not None else None
        if served is not None:
            self.model_ms += model_time_ms(served.exchange)
            self.sink(served.model_copy(update={"step": request.meta.step}))
            return interpret(request, served.exchange)
        exchange = await self.inner.exchange(request)
        scenario, mode, trial, digest, occurrence = key
        self.sink(
            RecordEntry(
                scenario=scenario,
                mode=mode,
                trial=trial,
                step=request.meta.step,
                purpose=request.purpose,
                request_hash=digest,
                occurrence=occurrence,
                model=self.label,
                exchange=exchange,
                provenance=self.stamp.model_copy(update={"recorded_at": _now()}),
            )
        )
        return interpret(request, exchange)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def served_counts(path: Path) -> dict[str, tuple[int, int]]:
    """Per model label, (served, asked): how many exchanges of a recording came from an earlier recording (record-
    through), and how many were asked of the model."""
    counts: dict[str, tuple[int, int]] = {}
    for entry in read_records(path, RecordEntry):
        served, asked = counts.get(entry.model, (0, 0))
        counts[entry.model] = (served, asked + 1) if entry.served_from is None else (served + 1, asked)
    return counts


def read_recording(path: Path, report: TraceReadReport | None = None) -> dict[RecordKey, RecordEntry]:
    """Loads a ``recording.jsonl`` keyed for replay; unreadable lines (a run cut mid-line) are skipped and counted."""
    return {entry.key: entry for entry in read_records(path, RecordEntry, report)}
