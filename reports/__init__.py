"""The report stages: load traces, compute metrics, write tables, figures and the HTML page; compare two runs.

``load_traces`` and ``Traces`` are imported on first use: a process that writes only run pages (reports.run_page,
started before the report loads anything) never imports pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reports.load import Traces, load_traces

__all__ = ["Traces", "load_traces"]


def __getattr__(name: str) -> Any:
    """``reports.load_traces`` and ``reports.Traces``, from reports.load when first asked for."""
    if name not in __all__:
        raise AttributeError(f"module 'reports' has no attribute {name!r}")
    from reports import load

    return getattr(load, name)
