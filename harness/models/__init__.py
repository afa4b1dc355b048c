"""Model backends. Only this package talks to the network."""

from __future__ import annotations

from harness.errors import UnknownNameError
from harness.models.base import ModelSource
from harness.models.scripted import ScriptedSource

MODEL_KINDS = ("scripted:NAME",)


def resolve_model(spec: str) -> ModelSource:
    """Turns a ``--model`` value into a model source; unknown kinds fail with the known ones."""
    kind, _, name = spec.partition(":")
    if kind == "scripted" and name:
        return ScriptedSource(name)
    raise UnknownNameError("model", spec, MODEL_KINDS)
