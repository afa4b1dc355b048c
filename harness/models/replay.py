"""Replay: answers every request from a recording, with no network; a request never recorded is a ``replay_miss``.

A replayed run carries the recorded model's label (the behaviour is that model's), while the run's
manifest says it was replayed and from where. Latency and usage are the recorded ones, and so is a run's time:
the run is timed on a clock that adds each answer's recorded model time (its attempts, back-offs and last call) to
bench's own, so a replay's wall time and P95 are the recording's, not the milliseconds a replay takes.
"""

from __future__ import annotations

from pathlib import Path

from harness.core.clock import Clock, ShiftedClock
from harness.core.model_port import ModelReply, ModelRequest
from harness.errors import ModelError, UserInputError
from harness.models.exchange import interpret, model_time_ms
from harness.models.recording import RECORDING_FILE, Occurrences, RecordEntry, RecordKey, read_recording
from harness.records.manifest import Manifest, read_manifest
from harness.records.trace import TraceReadReport


class ReplaySource:
    """A recording folder (``manifest.json`` + ``recording.jsonl``) loaded once for a whole matrix."""

    def __init__(self, folder: Path):
        self.folder = folder
        recording = folder / RECORDING_FILE
        if not recording.is_file():
            raise UserInputError(f"--model replay:{folder}: no {RECORDING_FILE} there (record one with --model live)")
        self.manifest: Manifest = read_manifest(folder)
        self.read_report = TraceReadReport()
        self.entries: dict[RecordKey, RecordEntry] = read_recording(recording, self.read_report)
        if self.read_report.lines and not self.entries:  # every line corrupt: nothing here was recorded by bench
            raise UserInputError(
                f"{recording}: none of its {self.read_report.lines} lines is a recorded exchange; not a recording"
            )
        self.label = self.manifest.model

    def for_run(self, seed: int) -> ReplayModel:
        return ReplayModel(self)

    async def aclose(self) -> None:
        return None


class ReplayModel:
    """One run's replayed model: the n-th time the run asks a request, it gets the n-th recorded answer."""

    def __init__(self, source: ReplaySource):
        self.source = source
        self.label = source.label
        self._occurrences = Occurrences()
        self.model_ms = 0.0  # the recorded model time of every answer given so far

    def run_clock(self, base: Clock) -> Clock:
        """The run's clock: the matrix's own, plus the recorded model time of the answers given so far."""
        return ShiftedClock(base, lambda: self.model_ms)

    def skip(self, request: ModelRequest) -> None:
        """Counts a request a resumed run answered from its checkpoint, so later repeats key as they did."""
        self._occurrences.key(request)

    async def complete(self, request: ModelRequest) -> ModelReply:
        key = self._occurrences.key(request)
        entry = self.source.entries.get(key)
        if entry is None:
            meta = request.meta
            repeat = f", repeat {key[4] + 1}" if key[4] else ""
            raise ModelError(
                "replay_miss",
                (
                    f"no recorded answer for scenario '{meta.scenario}', mode '{meta.mode}', trial {meta.trial}, "
                    f"step {meta.step} ({request.purpose} request {key[3][:12]}{repeat}) in {self.source.folder}"
                ),
            )
        self.model_ms += model_time_ms(entry.exchange)
        return interpret(request, entry.exchange)
