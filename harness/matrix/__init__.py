"""Orchestration: a run spec becomes a matrix of cells (scenario x mode x trial) run against a model source into one
run folder; the same package replays a recording, resumes a suspended run and continues a cut matrix.

The face is lazy: the CLI imports one submodule per command, so ``bench --help`` never loads the matrix.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ReplayCheck", "ResumeResult", "RunResult", "RunSpec", "replay", "resume", "run"]

_HOMES = {
    "RunResult": "harness.matrix.pipeline",
    "run": "harness.matrix.pipeline",
    "RunSpec": "harness.matrix.spec",
    "ReplayCheck": "harness.matrix.recorded_replay",
    "replay": "harness.matrix.recorded_replay",
    "ResumeResult": "harness.matrix.decide",
    "resume": "harness.matrix.decide",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'harness.matrix' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
