"""bench's runtime: scenarios, store, gateway, models, traces and the run matrix.

The Python API is the CLI's own path, imported on first use so ``bench --help`` stays quick::

    from harness import RunSpec, run
    result = run(RunSpec(modes=["workflow", "react"], scenarios=["blog_brief_approval"], model="scripted:eager"))
    result.folder, result.manifest.status

``replay`` runs a recorded matrix again offline, ``resume`` decides at a suspended run's gate, and ``load_traces``
reads run folders into tables for analysis (reports/load.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.matrix.commands.recorded_replay import replay
    from harness.matrix.commands.resume import resume
    from harness.matrix.pipeline.driver import RunResult, run
    from harness.matrix.pipeline.spec import RunSpec
    from reports.load import load_traces

from harness.version import __version__ as __version__

__all__ = ["RunResult", "RunSpec", "load_traces", "replay", "resume", "run"]


# Where each name of the API lives; imported on first use.
_HOMES = {
    "RunResult": "harness.matrix.pipeline.driver",
    "run": "harness.matrix.pipeline.driver",
    "RunSpec": "harness.matrix.pipeline.spec",
    "replay": "harness.matrix.commands.recorded_replay",
    "resume": "harness.matrix.commands.resume",
    "load_traces": "reports.load",
}


def __getattr__(name: str) -> Any:
    """Imports the API's names on first use and keeps them, so ``harness.run`` is the function from then on."""
    if name not in _HOMES:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
