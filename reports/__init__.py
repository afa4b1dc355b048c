"""The report stages: load traces, compute metrics, write tables, figures and the HTML page; compare two runs."""

from reports.load import Traces, load_traces

__all__ = ["Traces", "load_traces"]
