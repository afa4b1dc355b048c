"""``bench export --format parquet``: the runs and events tables as Parquet files, for pandas, DuckDB, R or Spark.

runs.parquet is the loader's runs table as ``bench report`` counts it (one row per complete run, the summary's
outcome flattened). events.parquet is one row per trace line the loader kept: the loader's events columns plus the
nested fields (``args``, ``detail``, ``error``, ``outcome``) as JSON text, written in batches so the whole lines of
a large folder are never all in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import UserInputError
from reports.export_lines import NESTED_FIELDS, default_out, kept_lines, nested_json, write_whole_file
from reports.load import Traces, load_traces
from reports.report import skip_warnings

RUNS_FILE = "runs.parquet"
EVENTS_FILE = "events.parquet"
BATCH_ROWS = 65_536  # events written per row group: the most whole lines held at once


@dataclass
class ParquetExport:
    """What an export wrote, and what the loader had to say about the traces."""

    out: Path
    files: list[Path]
    runs: int
    events: int
    warnings: list[str] = field(default_factory=list)


def export_parquet(path: Path, out: Path | None = None) -> ParquetExport:
    """Writes OUT/runs.parquet and OUT/events.parquet from the run folder (or traces.jsonl) ``path``."""
    traces = load_traces(path)
    if traces.events.empty:
        raise UserInputError(f"{path}: no trace events to export ({traces.skipped_count} lines skipped)")
    out = out if out is not None else default_out(path)
    runs_file, events_file = out / RUNS_FILE, out / EVENTS_FILE
    runs = pa.Table.from_pandas(traces.runs, preserve_index=False)
    write_whole_file(runs_file, lambda tmp: pq.write_table(runs, tmp))
    write_whole_file(events_file, lambda tmp: _write_events(traces, tmp))
    return ParquetExport(out, [runs_file, events_file], len(traces.runs), len(traces.events), skip_warnings(traces))


def _write_events(traces: Traces, tmp: Path) -> None:
    """The events table in file and line order, with each line's nested fields, one batch at a time."""
    writer: pq.ParquetWriter | None = None
    try:
        for batch in _event_batches(traces):
            if writer is None:
                writer = pq.ParquetWriter(tmp, batch.schema)
            writer.write_table(batch.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def _event_batches(traces: Traces) -> Iterator[pa.Table]:
    """Yields tables of at most BATCH_ROWS events: the loader's columns and the nested fields as JSON text."""
    rows: list[int] = []
    nested: dict[str, list[str | None]] = {name: [] for name in NESTED_FIELDS}
    for row, line in kept_lines(traces):
        rows.append(row)
        for name, text in nested_json(line).items():
            nested[name].append(text)
        if len(rows) == BATCH_ROWS:
            yield _batch(traces.events, rows, nested)
            rows, nested = [], {name: [] for name in NESTED_FIELDS}
    if rows:
        yield _batch(traces.events, rows, nested)


def _batch(events: pd.DataFrame, rows: list[int], nested: dict[str, list[str | None]]) -> pa.Table:
    table = pa.Table.from_pandas(events.iloc[np.asarray(rows)], preserve_index=False)
    for name, texts in nested.items():
        table = table.append_column(name, pa.array(texts, pa.string()))
    return table
