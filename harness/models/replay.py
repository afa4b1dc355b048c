"""Replay: answers every request from a recording, with no network; a request never recorded is a ``replay_miss``.

A replayed run carries the recorded model's label (the behaviour is that model's), while the run's
manifest says it was replayed and from where. Latency and usage are the recorded ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import ModelError, UserInputError
from harness.models.base import ModelReply, ModelRequest
from harness.models.exchange import interpret
from harness.models.recording import RECORDING_FILE, Occurrences, RecordEntry, RecordKey, read_recording
from harness.trace import TraceReadReport


class ReplaySource:
    """A recording folder (``manifest.json`` + ``recording.jsonl``) loaded once for a whole matrix."""

    def __init__(self, folder: Path):
        self.folder = folder
        recording, manifest_path = folder / RECORDING_FILE, folder / "manifest.json"
        if not recording.is_file():
            raise UserInputError(f"--model replay:{folder}: no {RECORDING_FILE} there (record one with bench run --live)")
        try:
            self.manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserInputError(f"--model replay:{folder}: manifest.json unreadable: {exc}") from exc
        self.read_report = TraceReadReport()
        self.entries: dict[RecordKey, RecordEntry] = read_recording(recording, self.read_report)
        self.label = str(self.manifest.get("model", "unknown"))

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

    async def complete(self, request: ModelRequest) -> ModelReply:
        key = self._occurrences.key(request)
        entry = self.source.entries.get(key)
        if entry is None:
            meta = request.meta
            repeat = f", repeat {key[4] + 1}" if key[4] else ""
            raise ModelError("replay_miss", (
                f"no recorded answer for scenario '{meta.scenario}', mode '{meta.mode}', trial {meta.trial}, "
                f"step {meta.step} ({request.purpose} request {key[3][:12]}{repeat}) in {self.source.folder}"))
        return interpret(request, entry.exchange)
