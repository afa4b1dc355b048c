"""What a run folder's manifest.json says about its run, read defensively: reports show it, never count with it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_FILE = "manifest.json"
UNFINISHED = ("running", "interrupted")  # a run whose numbers cover only what was written before it stopped


@dataclass(frozen=True)
class RunInfo:
    """The facts of one run folder's manifest that reports show (model, source, policy, trials, status)."""

    folder: str
    status: str | None = None
    model: str | None = None  # the first model's label (the manifest's ``model``)
    models: tuple[str, ...] = ()  # every model's label in the order they ran; a one-model manifest: its model
    model_source: str | None = None
    gateway_policy: str | None = None
    trials: int | None = None
    label: str | None = None
    problem: str | None = None  # why the manifest could not be read, if it could not
    # provenance (harness/matrix/cell/provenance.py), compared across folders by reports/provenance.py; empty: not kept
    versions: dict[str, str] = field(default_factory=dict, hash=False)
    bench_commit: str | None = None
    scenario_hashes: dict[str, str] = field(default_factory=dict, hash=False)
    prompt_hash: str | None = None

    @property
    def unfinished(self) -> bool:
        return self.status in UNFINISHED


def read_run_info(folder: Path) -> RunInfo | None:
    """The manifest next to a trace, or None when there is none; a broken manifest is reported, not raised."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        return RunInfo(str(folder), problem=f"{path}: unreadable manifest ({type(exc).__name__})")
    if not isinstance(data, dict):
        return RunInfo(str(folder), problem=f"{path}: not a JSON object")
    return RunInfo(
        str(folder),
        status=_text(data, "status"),
        model=_text(data, "model"),
        models=_models(data),
        model_source=_text(data, "model_source"),
        gateway_policy=_text(data, "gateway_policy"),
        trials=_count(data, "trials"),
        label=_text(data, "label"),
        versions=_texts(data, "versions"),
        bench_commit=_text(data, "bench_commit"),
        scenario_hashes=_texts(data, "scenario_hashes"),
        prompt_hash=_text(data, "prompt_hash"),
    )


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _models(data: dict[str, Any]) -> tuple[str, ...]:
    """Every model's label from ``models`` (each entry's ``label``), or the one ``model`` of an older manifest."""
    entries = data.get("models")
    labels = (
        [e["label"] for e in entries if isinstance(e, dict) and isinstance(e.get("label"), str)]
        if isinstance(entries, list)
        else []
    )
    first = _text(data, "model")
    return tuple(dict.fromkeys(labels)) or ((first,) if first else ())


def _texts(data: dict[str, Any], key: str) -> dict[str, str]:
    """A mapping of text to text; anything else in it is left out."""
    value = data.get(key)
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _count(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
