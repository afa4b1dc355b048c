"""Orchestration: a run spec becomes a matrix of cells (scenario x mode x trial) run against a model source into one
run folder; the same package replays a recording, resumes a suspended run and continues a cut matrix.

The face is lazy: the CLI imports one submodule per command, so ``bench --help`` never loads the matrix.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ReplayCheck", "ResumeResult", "RunResult", "RunSpec", "replay", "resume", "run"]

_HOMES = {
    "RunResult": "harness.matrix.pipeline.driver",
    "run": "harness.matrix.pipeline.driver",
    "RunSpec": "harness.matrix.pipeline.spec",
    "ReplayCheck": "harness.matrix.commands.recorded_replay",
    "replay": "harness.matrix.commands.recorded_replay",
    "ResumeResult": "harness.matrix.commands.resume",
    "resume": "harness.matrix.commands.resume",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'harness.matrix' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
