"""bench's shared runtime: scenarios, store, gateway, models, traces and the run matrix.

The Python API is the CLI's own path (``harness.run``), imported lazily so ``bench --help`` stays quick::

    from harness import RunSpec, run
    result = run(RunSpec(modes=["all"], scenarios=["blog_brief_approval"], model="scripted:eager"))
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["RunSpec", "replay", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness import run as run_module

        return getattr(run_module, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
