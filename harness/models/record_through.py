"""Record-through: an earlier recording answers every request it holds, and only the misses reach the model.

A recording grows like a cassette in VCR's "new episodes" mode: ``--record-through DIR`` with a live or local
model looks each request up in DIR's recording by the same key a replay uses (scenario, mode, trial, request hash,
occurrence), serves the recorded exchange when it is there, and asks the model otherwise. Both kinds are written to
the new folder's recording, so it holds every exchange the matrix used and replays exactly; a served line keeps the
provenance it was recorded with and names the recording it came from (``served_from``). A changed prompt hashes
differently, so only the runs whose requests changed are asked again.

Only answers are served: a recorded exchange that ended in an error (a timeout, a refused connection, a 5xx) is a
miss, asked again, since it says nothing about the model. A recording answers only for the model it recorded: a
folder recorded with another model, or with other sampling settings, is refused in one line, because serving its
answers would mix two models' behaviour under one label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserInputError
from harness.models.recording import RECORDING_FILE, Provenance, RecordEntry, RecordKey, served_counts
from harness.records.manifest import Manifest, read_manifest
from harness.records.trace import TraceReadReport, read_records

# Sampling settings that change what a model answers: a recording made with others cannot stand in for this run.
SAMPLING_KEYS = ("temperature", "max_tokens")


@dataclass
class Served:
    """How many exchanges a run took from the old recording and how many it asked the model for."""

    served: int = 0
    asked: int = 0

    def add(self, other: Served) -> None:
        self.served += other.served
        self.asked += other.asked


@dataclass
class RecordThrough:
    """Earlier recording folders, loaded once for a whole matrix, answering for one model: for a request several hold,
    the first folder named answers (a newer recording named first overrides an older one)."""

    folders: tuple[Path, ...]
    label: str
    entries: dict[RecordKey, RecordEntry] = field(default_factory=dict)
    skipped_lines: int = 0

    @classmethod
    def load(cls, folders: tuple[Path, ...], label: str, sampling: dict[str, Any] | None = None) -> RecordThrough:
        """The recordings in ``folders`` for the model labelled ``label``; one line for a folder that cannot serve."""
        report = TraceReadReport()
        entries: dict[RecordKey, RecordEntry] = {}
        for folder in folders:
            default = _provenance_of(check_recording(folder, label, sampling))
            for entry in read_records(folder / RECORDING_FILE, RecordEntry, report):
                if entry.model != label or entry.exchange.error is not None or entry.key in entries:
                    continue  # another model's, a failed call (nothing to serve), or held by a folder named earlier
                entries[entry.key] = entry.model_copy(
                    update={"provenance": entry.provenance or default, "served_from": str(folder)}
                )
        return cls(folders, label, entries, report.skipped)

    def lookup(self, key: RecordKey) -> RecordEntry | None:
        """The recorded exchange for ``key``, naming the folder it is served from; None: ask the model."""
        return self.entries.get(key)


def with_counts(manifest: Manifest, folder: Path) -> Manifest:
    """The manifest with each live model's record-through counts (``live.record_through``: the recording it went
    through, exchanges served from it and asked of the model), read from the folder's recording, so a resumed or
    worker-run matrix counts every exchange once."""
    through = manifest.live_options.get("record_through")
    if not through or not (folder / RECORDING_FILE).is_file():
        return manifest
    counts = served_counts(folder / RECORDING_FILE)
    sources = [str(path) for path in through] if isinstance(through, list) else [str(through)]
    models = []
    for model in manifest.models:
        if model.live is not None:
            served, asked = counts.get(model.label, (0, 0))
            # one folder keeps the shape manifests had before several were allowed: "from" is its path
            facts = {"from": sources[0] if len(sources) == 1 else sources, "served": served, "asked": asked}
            model = model.model_copy(update={"live": model.live.model_copy(update={"record_through": facts})})
        models.append(model)
    first = models[0].live if models else None
    return manifest.model_copy(update={"models": models, "live": first or manifest.live})


def check_recording(folder: Path, label: str, sampling: dict[str, Any] | None = None) -> Manifest:
    """The manifest of a recording that can answer for ``label`` under ``sampling``; one line for one that cannot.
    Reads the manifest only: the matrix checks this before it starts anything."""
    flag = f"--record-through {folder}"
    if not (folder / RECORDING_FILE).is_file():
        raise UserInputError(f"{flag}: no {RECORDING_FILE} there (a folder recorded with --model live or local)")
    manifest = read_manifest(folder)
    labels = [model.label for model in manifest.models] or [manifest.model]
    if label not in labels:
        raise UserInputError(
            f"{flag}: it recorded {', '.join(labels)}, this run asks {label}; a recording answers only for its "
            "own model"
        )
    _check_sampling(flag, manifest, label, sampling or {})
    return manifest


def _provenance_of(manifest: Manifest) -> Provenance:
    """What a line recorded before lines carried their provenance inherits from its folder's manifest."""
    live = manifest.live
    profile = None
    if live is not None:
        extra = live.model_extra or {}
        provider = extra.get("provider")
        found = provider.get("name") if isinstance(provider, dict) else provider
        profile = found if isinstance(found, str) else None
    return Provenance(recorded_at=manifest.start_time, endpoint_profile=profile, bench_commit=manifest.bench_commit)


def _check_sampling(flag: str, manifest: Manifest, label: str, sampling: dict[str, Any]) -> None:
    """Refuses a recording whose sampling settings differ from this run's (its answers are another model's)."""
    live = next((model.live for model in manifest.models if model.label == label), None) or manifest.live
    if live is None:
        return
    for key in SAMPLING_KEYS:
        recorded, wanted = live.sampling.get(key), sampling.get(key)
        if recorded is not None and wanted is not None and recorded != wanted:
            raise UserInputError(
                f"{flag}: it was recorded with {key} {recorded}, this run asks {key} {wanted}; give the same "
                f"--{key.replace('_', '-')} or record anew"
            )
