"""Model backends. Only this package talks to the network."""

from __future__ import annotations

from pathlib import Path

from harness.errors import UnknownNameError
from harness.models.base import ModelSource
from harness.models.scripted import ScriptedSource

MODEL_KINDS = ("scripted:NAME", "replay:DIR")


def resolve_model(spec: str) -> ModelSource:
    """Turns a ``--model`` value into a model source; unknown kinds fail with the known ones.

    Live sources are not named here: they need the environment, which only the CLI reads.
    """
    kind, _, name = spec.partition(":")
    if kind == "scripted" and name:
        return ScriptedSource(name)
    if kind == "replay" and name:
        from harness.models.replay import ReplaySource

        return ReplaySource(Path(name))
    raise UnknownNameError("model", spec, MODEL_KINDS)
