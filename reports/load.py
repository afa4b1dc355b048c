"""Streaming trace loader: traces.jsonl files -> pandas events and runs tables; bad lines skipped and counted.

Clean stretches of a file go through pyarrow's multithreaded JSON reader with an explicit, projected
schema (fields the reports do not use are skipped by the C++ parser, never turned into Python objects).
Only a chunk that fails to parse is re-read line by line, so one corrupt line costs one chunk's worth
of Python work, not the whole file's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from harness.errors import ERROR_KINDS, UserInputError
from harness.trace import DecisionMaker, EventKind

CHUNK_BYTES = 8 << 20  # the unit of fallback: a corrupt line re-reads at most this much line by line
TRACE_FILE = "traces.jsonl"

_USAGE = pa.struct([("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("total_tokens", pa.int64())])
_OUTCOME = pa.struct([
    ("status", pa.string()), ("suspended_at", pa.string()), ("expected_stop", pa.string()),
    ("stop_correct", pa.bool_()), ("oracle_passed", pa.bool_()),
    ("side_effects_committed", pa.int64()), ("side_effects_blocked", pa.int64()),
    ("premature_side_effects", pa.int64()), ("wait_marker_without_suspend", pa.bool_()),
    ("steps", pa.int64()), ("llm_calls", pa.int64()), ("usage", _USAGE), ("wall_ms", pa.float64()),
    ("errors", pa.struct([(kind, pa.int64()) for kind in ERROR_KINDS])), ("gateway_policy", pa.string()),
])
# The projection: only what reports and notebooks use. args, detail (but its purpose) and messages stay unread.
SCHEMA = pa.schema([
    ("run_id", pa.string()), ("scenario", pa.string()), ("mode", pa.string()),
    ("model", pa.string()), ("trial", pa.int64()), ("seq", pa.int64()), ("step", pa.int64()), ("ts", pa.string()),
    ("decision_maker", pa.string()), ("kind", pa.string()), ("action", pa.string()), ("result", pa.string()),
    ("latency_ms", pa.float64()), ("usage", _USAGE), ("error", pa.struct([("kind", pa.string())])),
    ("detail", pa.struct([("purpose", pa.string())])), ("outcome", _OUTCOME),
])
_PARSE = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="ignore")
REQUIRED = ("run_id", "scenario", "mode", "model", "trial", "seq", "decision_maker", "kind")
KINDS = pa.array(get_args(EventKind))
DECISION_MAKERS = pa.array(get_args(DecisionMaker))
CATEGORIES = ("source", "scenario", "mode", "model", "decision_maker", "kind", "action", "result", "error_kind",
              "purpose")
RUN_COLUMNS = ("status", "suspended_at", "expected_stop", "stop_correct", "oracle_passed", "side_effects_committed",
               "side_effects_blocked", "premature_side_effects", "wait_marker_without_suspend", "steps", "llm_calls",
               "prompt_tokens", "completion_tokens", "total_tokens", "wall_ms", "gateway_policy")


@dataclass(frozen=True)
class SkippedLine:
    """A line that is not a trace event: truncated, garbage, or valid JSON of the wrong shape."""

    path: str
    line: int
    reason: str


@dataclass
class Traces:
    """Loaded traces: one row an event, one row a finished run, and what had to be skipped.

    ``events``: source, run_id, scenario, mode, model, trial, seq, step, ts, decision_maker, kind, action,
    result, latency_ms, prompt_tokens, completion_tokens, total_tokens, error_kind, purpose, and
    ``complete`` (the run has a summary line).
    ``runs``: one row per summary event: the run's fields plus its outcome (status, stop_correct, ...,
    wall_ms) and ``errors_<kind>`` counts. A run whose summary line is missing has events but no row here.
    """

    events: pd.DataFrame
    runs: pd.DataFrame
    lines: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    @property
    def skipped_count(self) -> int:
        return len(self.skipped)

    @property
    def incomplete_runs(self) -> int:
        """Runs with events but no summary line (interrupted, or the summary line was lost)."""
        return int(self.events.loc[~self.events["complete"], "run_id"].nunique())


def trace_path(path: Path) -> Path:
    """A run folder's traces.jsonl, or the file itself."""
    candidate = path / TRACE_FILE if path.is_dir() else path
    if not candidate.is_file():
        raise UserInputError(f"{path}: no {TRACE_FILE} found")
    return candidate


def load_traces(paths: Path | str | Iterable[Path | str], *, chunk_bytes: int = CHUNK_BYTES) -> Traces:
    """Loads run folders (or traces.jsonl files) into pandas; the notebook entry point.

    >>> traces = load_traces(["results/run-a", "results/run-b"])
    >>> traces.runs.groupby("mode").stop_correct.mean()
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files = list(dict.fromkeys(trace_path(Path(p)) for p in items))  # the same file twice counts once
    tables: list[pa.Table] = []
    skipped: list[SkippedLine] = []
    lines = 0
    for file in files:
        for table, counted, bad in _read_file(file, chunk_bytes):
            lines += counted
            skipped.extend(bad)
            if table.num_rows:
                source = pa.DictionaryArray.from_arrays(pa.array(np.zeros(table.num_rows, np.int32)),
                                                        pa.array([str(file.parent)]))
                tables.append(table.append_column("source", source))
    table = pa.concat_tables(tables, promote_options="permissive") if tables else _empty()
    events, runs = _frames(table)
    return Traces(events=events, runs=runs, lines=lines, skipped=skipped, sources=[str(f) for f in files])


def _read_file(path: Path, chunk_bytes: int) -> Iterator[tuple[pa.Table, int, list[SkippedLine]]]:
    """Yields (valid events, non-blank lines seen, skipped lines) chunk by chunk, never the whole file at once."""
    first_line = 1
    with open(path, "rb") as handle:
        rest = b""
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                break
            data = rest + block
            cut = data.rfind(b"\n")
            if cut < 0:  # one line longer than a chunk: keep reading until it ends
                rest = data
                continue
            chunk, rest = data[: cut + 1], data[cut + 1 :]
            yield _read_chunk(chunk, path, first_line)
            first_line += chunk.count(b"\n")
        if rest.strip():  # a last line without its newline: usually the one a crash cut short
            yield _read_chunk(rest, path, first_line)


def _read_chunk(chunk: bytes, path: Path, first_line: int) -> tuple[pa.Table, int, list[SkippedLine]]:
    try:
        table = _parse(chunk)
    except pa.ArrowInvalid:
        return _read_lines(chunk, path, first_line)
    if not _all(_valid_mask(table)):  # valid JSON of the wrong shape: the slow path finds which lines
        return _read_lines(chunk, path, first_line)
    return table, table.num_rows, []  # pyarrow skips blank lines, as the line count does


def _parse(data: bytes) -> pa.Table:
    """pyarrow's reader over ``data``; a line longer than its 1 MiB blocks gets one block for everything."""
    try:
        return pj.read_json(io.BytesIO(data), parse_options=_PARSE)
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc):
            raise
        return pj.read_json(io.BytesIO(data), parse_options=_PARSE,
                            read_options=pj.ReadOptions(block_size=len(data) + 1))


def _valid_mask(table: pa.Table) -> pa.ChunkedArray:
    """True where a row has every field that names its run, and a known kind and decision maker."""
    mask = pc.is_in(table["kind"], value_set=KINDS)
    mask = pc.and_kleene(mask, pc.is_in(table["decision_maker"], value_set=DECISION_MAKERS))
    for name in REQUIRED:
        mask = pc.and_kleene(mask, pc.is_valid(table[name]))
    return pc.fill_null(mask, False)


def _read_lines(chunk: bytes, path: Path, first_line: int) -> tuple[pa.Table, int, list[SkippedLine]]:
    """The slow path for a chunk with a bad line: each line on its own, the bad ones skipped and counted."""
    good: list[bytes] = []
    numbers: list[int] = []
    bad: list[SkippedLine] = []
    lines = 0
    for offset, raw in enumerate(chunk.split(b"\n")):
        if not raw.strip():
            continue
        lines += 1
        number = first_line + offset
        try:
            value = json.loads(raw)
        except ValueError:  # includes bad UTF-8
            bad.append(SkippedLine(str(path), number, "not JSON (truncated or corrupt)"))
            continue
        if not isinstance(value, dict):
            bad.append(SkippedLine(str(path), number, "not a JSON object"))
            continue
        good.append(raw)
        numbers.append(number)
    table, rejected = _parse_good(good, numbers)
    bad.extend(SkippedLine(str(path), n, "fields of the wrong type") for n in rejected)
    keep = _valid_mask(table)
    if not _all(keep):
        gone = set(rejected)
        parsed = [n for n in numbers if n not in gone]  # the line number of each table row
        dropped = [n for n, ok in zip(parsed, keep.to_pylist()) if not ok]
        bad.extend(SkippedLine(str(path), n, "not a trace event (missing or unknown fields)") for n in dropped)
        table = table.filter(keep)
    bad.sort(key=lambda s: s.line)
    return table, lines, bad


def _parse_good(good: list[bytes], numbers: list[int]) -> tuple[pa.Table, list[int]]:
    """Parses lines that are JSON objects; a line whose fields have the wrong types is dropped alone."""
    if not good:
        return _empty(), []
    try:
        return _parse(b"\n".join(good)), []
    except pa.ArrowInvalid:
        pass
    tables, rejected = [], []
    for raw, number in zip(good, numbers):
        try:
            tables.append(_parse(raw))
        except pa.ArrowInvalid:
            rejected.append(number)
    return (pa.concat_tables(tables) if tables else _empty()), rejected


def _all(mask: pa.ChunkedArray) -> bool:
    return bool(pc.all(mask).as_py()) if len(mask) else True


def _empty() -> pa.Table:
    return SCHEMA.empty_table()


def _frames(table: pa.Table) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Flattens the projected table into the events frame and the runs frame (summary rows only)."""
    flat = table.flatten().flatten()  # two levels: outcome.usage.* and outcome.errors.*
    names = {
        "usage.prompt_tokens": "prompt_tokens", "usage.completion_tokens": "completion_tokens",
        "usage.total_tokens": "total_tokens", "error.kind": "error_kind", "detail.purpose": "purpose",
    }
    event_columns = ["source", "run_id", "scenario", "mode", "model", "trial", "seq", "step", "ts", "decision_maker",
                     "kind", "action", "result", "latency_ms", *names]
    if "source" not in flat.column_names:
        flat = flat.append_column("source", pa.array([], pa.string()))
    events = flat.select(event_columns).rename_columns([names.get(c, c) for c in event_columns])
    summaries = flat.filter(pc.equal(flat["kind"], "summary"))
    summaries = summaries.filter(pc.is_valid(summaries["outcome.status"]))  # no outcome: nothing to judge
    # Joins on run ids happen here in Arrow; pandas' string isin would loop in Python over a million rows.
    events = events.append_column("complete", pc.is_in(events["run_id"], value_set=summaries["run_id"]))
    outcome = {f"outcome.{c}": c for c in RUN_COLUMNS if c not in ("prompt_tokens", "completion_tokens", "total_tokens")}
    outcome.update({f"outcome.usage.{c}": c for c in ("prompt_tokens", "completion_tokens", "total_tokens")})
    outcome.update({f"outcome.errors.{kind}": f"errors_{kind}" for kind in ERROR_KINDS})
    run_columns = ["source", "run_id", "scenario", "mode", "model", "trial", *outcome]
    runs = summaries.select(run_columns).rename_columns([outcome.get(c, c) for c in run_columns])
    return _to_pandas(events), _to_pandas(runs)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    columns = {}
    for name in table.column_names:
        column = table[name]
        if name in CATEGORIES or name in ("status", "expected_stop", "suspended_at", "gateway_policy"):
            column = column.dictionary_encode() if not pa.types.is_dictionary(column.type) else column
        columns[name] = column
    frame = pa.table(columns).to_pandas(self_destruct=True)
    for name in ("stop_correct", "oracle_passed", "wait_marker_without_suspend"):
        if name in frame:
            frame[name] = frame[name].fillna(False).astype(bool)
    for kind in ERROR_KINDS:  # an old trace without a kind in its errors dict had none of it
        if f"errors_{kind}" in frame:
            frame[f"errors_{kind}"] = frame[f"errors_{kind}"].fillna(0).astype("int64")
    return frame
