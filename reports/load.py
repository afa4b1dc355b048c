"""Streaming trace loader: traces.jsonl files -> pandas events and runs tables, refusing to guess.

Clean stretches of a file go through pyarrow's multithreaded JSON reader with an explicit, projected
schema derived from the trace models (reports/trace_columns.py); fields the reports do not use are skipped by
the C++ parser. Only a chunk that fails to parse is re-read line by line, so one corrupt line costs one
chunk's worth of Python work. Each chunk is checked in Arrow and folded into compact columns
(reports/event_store.py), so memory grows with the columns kept, not with the file. What it refuses to guess:

- a line that is not an event (a required field missing, an unknown kind) is skipped and named;
- a summary whose outcome lacks a required field, or holds an unknown status or verdict, is skipped and
  named, so its run is incomplete: never judged, never read as false or 0;
- every line must carry the same ``schema_version`` (a mix is a user error naming the files);
- the same (run_id, seq) on two lines is a user error naming both places, unless the lines are
  byte-identical (a folder reported with its copy, a run appended twice): then it is read once, with
  a warning;
- a run's last summary (highest seq) is its outcome; events after it mean a resume that never finished.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from harness.errors import UserInputError
from harness.records.trace import SCHEMA_VERSION
from reports.event_store import EVENT_COLUMNS, EventStore
from reports.manifests import RunInfo, read_run_info
from reports.trace_columns import (
    EVENT_LITERALS,
    KNOWN_VERSIONS,
    OUTCOME_LITERALS,
    REQUIRED_EVENT_FIELDS,
    SCHEMA,
    required_outcome_fields,
)

CHUNK_BYTES = 8 << 20  # the unit of fallback: a corrupt line re-reads at most this much line by line
TRACE_FILE = "traces.jsonl"
SHOWN_PLACES = 3  # duplicate places named in one error line
_PARSE = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="ignore")
RUN_KEYS = ("source", "file", "line", "run_id", "scenario", "mode", "model", "trial", "summaries")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class SkippedLine:
    """A line that is not a trace event: truncated, garbage, valid JSON of the wrong shape, or an incomplete outcome."""

    path: str
    line: int
    reason: str


@dataclass
class Traces:
    """Loaded traces: one row an event, one row a finished run, and what had to be skipped.

    ``events``: source (run folder), file, line, run_id, scenario, mode, model, gateway_policy, trial, seq,
    step, ts, decision_maker, kind, action, result, latency_ms, prompt/completion/total/reasoning/cached
    tokens, error_kind, purpose, and ``complete`` (the run's last event is a valid summary).
    ``runs``: one row per complete run, from its last summary: the run's fields, ``summaries`` (summary lines
    of the run, more than one after a resume) and its outcome (status, stop_verdict, stop_correct, ...,
    ``violations`` as a list, ``blocked_<reason>`` and ``errors_<kind>`` counts).
    ``violations``: one row per oracle violation of a complete run: ``run`` (its row in ``runs``), ``kind``,
    ``subject`` and the full ``text``.
    """

    events: pd.DataFrame
    runs: pd.DataFrame
    violations: pd.DataFrame
    lines: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the trace files read, in order
    warnings: list[str] = field(default_factory=list)  # duplicates read once, unfinished runs, ...
    run_info: list[RunInfo] = field(default_factory=list)  # what each folder's manifest says
    schema_version: int | None = None  # the one version of every line (None: no events)

    @property
    def skipped_count(self) -> int:
        return len(self.skipped)

    @property
    def incomplete_runs(self) -> int:
        """Runs with events but no valid summary as their last event (interrupted, lost or incomplete summary)."""
        return int(self.events.loc[~self.events["complete"], "run_id"].nunique())


def trace_path(path: Path) -> Path:
    """A run folder's traces.jsonl, or the file itself."""
    candidate = path / TRACE_FILE if path.is_dir() else path
    if not candidate.is_file():
        raise UserInputError(f"{path}: no {TRACE_FILE} found")
    return candidate


def clean_text(text: str, limit: int = 200) -> str:
    """A value from a trace as safe one-line text: control characters shown as '?', long values cut."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_traces(
    paths: Path | str | Iterable[Path | str],
    *,
    chunk_bytes: int = CHUNK_BYTES,
    columns: Iterable[str] | None = None,
    outcome_lists: bool = True,
) -> Traces:
    """Loads run folders (or traces.jsonl files) into pandas; the notebook entry point.

    >>> traces = load_traces(["results/run-a", "results/run-b"])
    >>> traces.runs.groupby(["gateway_policy", "mode"]).stop_correct.mean()

    ``columns`` keeps only those event columns (``complete`` always): each chunk is folded into them as it
    is read, so memory grows with the columns kept, not with the lines' size (bench report keeps the dozen
    its metrics read, and reports ten million events within 2 GiB). ``outcome_lists=False`` leaves the
    outcome's list columns (violations, stops) out of the runs frame; ``violations`` still has every one.

    Raises ``UserInputError`` (one line) for mixed schema versions and conflicting duplicate lines.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files: list[Path] = []
    warnings: list[str] = []
    seen: dict[Path, Path] = {}
    for item in items:
        file = trace_path(Path(item))
        real = file.resolve()
        if real in seen:  # the very same file named twice is read once; a copy is handled line by line
            warnings.append(f"{file}: given more than once; read once")
            continue
        seen[real] = file
        files.append(file)
    store = EventStore(files, _wanted(columns), outcome_lists)
    skipped: list[SkippedLine] = []
    versions: list[tuple[int, int]] = []  # each (file, schema_version) once, in line order
    lines = 0
    for index, file in enumerate(files):
        try:
            for table, counted, bad in _read_file(file, chunk_bytes):
                lines += counted
                skipped.extend(bad)
                if table.num_rows:
                    table = table.append_column("file", pa.array(np.full(table.num_rows, index, np.int32)))
                    skipped.extend(_check_chunk(table, files, versions, store))
        except OSError as exc:
            raise UserInputError(f"{file}: cannot read ({exc.strerror or exc})") from None
    version = _one_version(versions, files)
    pa.default_memory_pool().release_unused()  # the parsed chunks' pages, for the frames to come
    warnings.extend(_drop_identical_duplicates(store, files))
    run_info = [info for info in (read_run_info(f.parent) for f in files) if info is not None]
    warnings.extend(info.problem for info in run_info if info.problem)
    events, runs, violations, unfinished = store.frames(run_info)
    if unfinished:
        warnings.append(
            f"{unfinished} run(s) have events after their last summary (a resume that did not finish); "
            "they are not judged"
        )
    skipped.sort(key=lambda s: (files.index(Path(s.path)) if Path(s.path) in files else 0, s.line))
    return Traces(
        events=events,
        runs=runs,
        violations=violations,
        lines=lines,
        skipped=skipped,
        sources=[str(f) for f in files],
        warnings=warnings,
        run_info=run_info,
        schema_version=version,
    )


def _wanted(columns: Iterable[str] | None) -> tuple[str, ...]:
    """The event columns to keep, in EVENT_COLUMNS order; a name that is not one is a programming error."""
    if columns is None:
        return EVENT_COLUMNS
    asked = set(columns) - {"complete"}
    unknown = asked - set(EVENT_COLUMNS)
    if unknown:
        raise ValueError(f"load_traces: unknown event columns {sorted(unknown)}; known: {', '.join(EVENT_COLUMNS)}")
    return tuple(name for name in EVENT_COLUMNS if name in asked)


def _check_chunk(
    table: pa.Table, files: list[Path], versions: list[tuple[int, int]], store: EventStore
) -> list[SkippedLine]:
    """Checks one chunk's lines, notes their schema versions and hands the valid ones to the store."""
    table, skipped = _check_events(table, files)
    if not table.num_rows:
        return skipped
    found = pd.DataFrame({"file": table["file"].to_numpy(), "version": _versions(table)}).drop_duplicates()
    known = set(versions)
    versions += [p for p in zip(found["file"].tolist(), found["version"].tolist(), strict=True) if p not in known]
    # Every line has the first version seen, or the load ends in a mixed-version error (_one_version).
    table, bad = _check_summaries(table, files, versions[0][1])
    if table.num_rows:
        store.add(table)
    return skipped + bad


# ---------------------------------------------------------------- reading


def _read_file(path: Path, chunk_bytes: int) -> Iterator[tuple[pa.Table, int, list[SkippedLine]]]:
    """Yields (valid events with their line numbers, non-blank lines seen, skipped lines) chunk by chunk."""
    first_line = 1
    with open(path, "rb") as handle:
        rest = b""
        pending: list[bytes] = []  # blocks of one line longer than a chunk, joined once it ends
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                break
            if b"\n" not in block:  # one line longer than a chunk: keep reading until it ends
                pending.append(block)
                continue
            data = b"".join([rest, *pending, block])
            pending.clear()
            cut = data.rfind(b"\n")
            newlines = data.count(b"\n", 0, cut + 1)
            yield _read_chunk(memoryview(data)[: cut + 1], newlines, path, first_line)
            first_line += newlines
            rest = data[cut + 1 :]
        rest = b"".join([rest, *pending])
        if rest.strip():  # a last line without its newline: usually the one a crash cut short
            yield _read_chunk(memoryview(rest), rest.count(b"\n") + 1, path, first_line)


def _read_chunk(chunk: memoryview, lines: int, path: Path, first_line: int) -> tuple[pa.Table, int, list[SkippedLine]]:
    """One chunk of whole lines (``lines`` of them, blank ones included) through the fast path if it can."""
    try:
        table = _parse(chunk)
    except (pa.ArrowException, ValueError):  # ValueError: pyarrow raises UnicodeDecodeError for bad UTF-8
        return _read_lines(bytes(chunk), path, first_line)
    numbers = _line_numbers(chunk, lines, first_line, table.num_rows)
    if numbers is None:  # rows and lines do not line up (pyarrow also ends a row at a lone CR): line by line
        return _read_lines(bytes(chunk), path, first_line)
    return table.append_column("line", numbers), table.num_rows, []


def _line_numbers(chunk: memoryview, lines: int, first_line: int, rows: int) -> pa.Array | None:
    """The line number of each row pyarrow read from ``chunk`` (it skips blank lines); None if they differ."""
    if lines == rows:  # no blank line: row i is line i
        return pa.array(np.arange(first_line, first_line + rows, dtype=np.int64))
    numbers = [first_line + i for i, raw in enumerate(bytes(chunk).split(b"\n")) if raw.strip()]
    return pa.array(np.array(numbers, dtype=np.int64)) if len(numbers) == rows else None


def _parse(data: bytes | memoryview) -> pa.Table:
    """pyarrow's reader over ``data``; a line longer than its 1 MiB blocks gets one block for everything.

    The reader copies string bytes without checking them: a full validation refuses invalid UTF-8 here
    (as ArrowInvalid, like any other bad line) before pandas or a file writer meets it.
    """
    try:
        table = pj.read_json(pa.BufferReader(data), parse_options=_PARSE)
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc):
            raise
        table = pj.read_json(
            pa.BufferReader(data), parse_options=_PARSE, read_options=pj.ReadOptions(block_size=len(data) + 1)
        )
    table.validate(full=True)
    return table


def _read_lines(chunk: bytes, path: Path, first_line: int) -> tuple[pa.Table, int, list[SkippedLine]]:
    """The slow path for a chunk with a bad line: each line on its own, the bad ones skipped and named."""
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
        except RecursionError:  # too deep for Python's parser, maybe not for pyarrow's (it skips unread fields)
            value = {}
        except ValueError:  # includes bad UTF-8 and numbers too long to convert
            bad.append(SkippedLine(str(path), number, "not JSON (truncated or corrupt)"))
            continue
        if not isinstance(value, dict):
            bad.append(SkippedLine(str(path), number, "not a JSON object"))
            continue
        good.append(raw)
        numbers.append(number)
    table, rejected = _parse_good(good, numbers)
    bad.extend(SkippedLine(str(path), n, f"a field has the wrong type or value ({why})") for n, why in rejected)
    bad.sort(key=lambda s: s.line)
    return table, lines, bad


def _parse_good(good: list[bytes], numbers: list[int]) -> tuple[pa.Table, list[tuple[int, str]]]:
    """Parses lines that are JSON objects; a line whose fields have the wrong types is dropped alone."""
    if not good:
        return _empty_with_lines(), []
    try:
        table = _parse(b"\n".join(good))
        if table.num_rows == len(good):
            return table.append_column("line", pa.array(numbers, pa.int64())), []
    except (pa.ArrowException, ValueError):
        pass
    tables, rejected = [], []
    for raw, number in zip(good, numbers, strict=True):
        try:
            one = _parse(raw)
        except (pa.ArrowException, ValueError) as exc:
            rejected.append((number, clean_text(str(exc).removeprefix("JSON parse error: "), 80)))
            continue
        if one.num_rows != 1:
            rejected.append((number, "more than one JSON object on the line"))
            continue
        tables.append(one.append_column("line", pa.array([number], pa.int64())))
    return (pa.concat_tables(tables) if tables else _empty_with_lines()), rejected


def _empty() -> pa.Table:
    return SCHEMA.empty_table()


def _empty_with_lines() -> pa.Table:
    return _empty().append_column("line", pa.array([], pa.int64()))


# ---------------------------------------------------------------- checks, chunk by chunk, and over every line


def _numpy(mask: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks() if mask.num_chunks != 1 else mask.chunk(0)
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _drop_rows(
    table: pa.Table, files: list[Path], keep: np.ndarray, reasons: dict[int, str]
) -> tuple[pa.Table, list[SkippedLine]]:
    """Removes the rows not kept, naming each with its reason."""
    if keep.all():
        return table, []
    gone = np.flatnonzero(~keep)
    file_index = table["file"].take(pa.array(gone)).to_numpy()
    line = table["line"].take(pa.array(gone)).to_numpy()
    skipped = [
        SkippedLine(str(files[f]), int(n), reasons[int(i)]) for i, f, n in zip(gone, file_index, line, strict=True)
    ]
    return table.filter(pa.array(keep)), skipped


def _check_events(table: pa.Table, files: list[Path]) -> tuple[pa.Table, list[SkippedLine]]:
    """Skips lines that are not events: a required field missing (null) or a value outside its closed set."""
    n = table.num_rows
    keep = np.ones(n, dtype=bool)
    problems: list[tuple[np.ndarray, str]] = []
    for name in REQUIRED_EVENT_FIELDS:
        ok = _numpy(pc.is_valid(table[name]))
        problems.append((ok, f"not a trace event (no {name})"))
    for name, values in EVENT_LITERALS.items():
        ok = _numpy(pc.or_kleene(pc.is_in(table[name], value_set=pa.array(values)), pc.is_null(table[name])))
        problems.append((ok, f"not a trace event (unknown {name})"))
    reasons: dict[int, str] = {}
    for ok, reason in problems:
        if not ok.all():
            for i in np.flatnonzero(~ok & keep):
                reasons[int(i)] = reason
            keep &= ok
    return _drop_rows(table, files, keep, reasons)


def _versions(table: pa.Table) -> np.ndarray:
    # A line without schema_version reads as the current one: the field has that default in TraceEvent.
    return pc.fill_null(table["schema_version"], SCHEMA_VERSION).to_numpy()


def _one_version(pairs: list[tuple[int, int]], files: list[Path]) -> int | None:
    """The single schema_version of every line; unknown or mixed versions are a user error naming the files.

    ``pairs``: each (file, version) of the loaded lines once, in line order.
    """
    if not pairs:
        return None
    found = pd.DataFrame(pairs, columns=["file", "version"])
    unknown = found.loc[~found["version"].isin(KNOWN_VERSIONS)]
    if not unknown.empty:
        row = unknown.iloc[0]
        raise UserInputError(
            f"{files[int(row['file'])]}: schema_version {int(row['version'])} is not one this bench "
            f"reads ({', '.join(map(str, KNOWN_VERSIONS))}); use the bench that wrote it"
        )
    if found["version"].nunique() > 1:
        per_file = found.groupby("file")["version"].apply(lambda v: "+".join(str(x) for x in sorted(v)))
        named = ", ".join(f"{files[int(str(f))]} (schema {v})" for f, v in per_file.items())
        raise UserInputError(f"mixed schema_version: {named}; report each version on its own")
    return int(found["version"].iloc[0])


def _check_summaries(table: pa.Table, files: list[Path], version: int | None) -> tuple[pa.Table, list[SkippedLine]]:
    """Validates each summary's outcome against the outcome schema with no defaults for required fields.

    A summary lacking a required field (or holding an unknown status or verdict, or a stop_correct that
    contradicts its stop_verdict) is skipped and named: its run becomes incomplete, never guessed.
    JSON null and a missing key read alike here, so a nullable required field (suspended_at) may be absent.
    """
    if version is None:
        return table, []
    is_summary = _numpy(pc.equal(table["kind"], "summary"))
    if not is_summary.any():
        return table, []
    positions = np.flatnonzero(is_summary)
    outcome = pc.filter(table["outcome"], pa.array(is_summary)).combine_chunks()
    parts = dict(zip([f.name for f in outcome.type], outcome.flatten(), strict=True))
    ok_all = np.ones(len(positions), dtype=bool)
    reasons: dict[int, str] = {}

    def check(ok: np.ndarray, reason: str) -> None:
        nonlocal ok_all
        for i in np.flatnonzero(~ok & ok_all):
            reasons[int(positions[i])] = reason
        ok_all &= ok

    check(_numpy(pc.is_valid(outcome)), "summary without an outcome")
    for spec in required_outcome_fields(version):
        if not spec.nullable:
            check(_numpy(pc.is_valid(parts[spec.name])), f"summary outcome lacks {spec.name}")
    for name, values in OUTCOME_LITERALS.items():
        if any(f.name == name for f in required_outcome_fields(version)):
            check(_numpy(pc.is_in(parts[name], value_set=pa.array(values))), f"summary outcome: unknown {name}")
    if "stop_verdict" in parts and any(f.name == "stop_verdict" for f in required_outcome_fields(version)):
        agrees = pc.equal(parts["stop_correct"], pc.equal(parts["stop_verdict"], "correct"))
        check(_numpy(agrees), "summary outcome: stop_correct contradicts stop_verdict")
    keep = np.ones(table.num_rows, dtype=bool)
    keep[positions[~ok_all]] = False
    return _drop_rows(table, files, keep, reasons)


def _drop_identical_duplicates(store: EventStore, files: list[Path]) -> list[str]:
    """The same (run_id, seq) twice: read once if the lines are byte-identical, else a user error naming both."""
    repeated = _repeated(store.column("run_id"), store.column("seq"))
    if repeated is None:
        return []
    rows = np.flatnonzero(repeated)
    found = pd.DataFrame(
        {
            "row": rows,
            "run": store.column("run_id")[rows].astype(np.int64),
            "seq": store.column("seq")[rows].astype(np.int64),
            "file": store.column("file")[rows],
            "line": store.column("line")[rows].astype(np.int64),
        }
    )
    found = found.sort_values(["run", "seq", "file", "line"], kind="stable")
    digests = _line_digests(files, found[["file", "line"]].itertuples(index=False, name=None))
    found["digest"] = [digests[(f, n)] for f, n in zip(found["file"], found["line"], strict=True)]
    first = found.groupby(["run", "seq"], sort=False).transform("first")
    differs = found["digest"].to_numpy() != first["digest"].to_numpy()
    if differs.any():
        conflicts = found.loc[differs]
        places = [
            f"{files[int(a_f)]}:{int(a_l)} and {files[int(b_f)]}:{int(b_l)}"
            for a_f, a_l, b_f, b_l in zip(
                first.loc[differs, "file"],
                first.loc[differs, "line"],
                conflicts["file"],
                conflicts["line"],
                strict=True,
            )
        ]
        run_id = store.run_id(int(conflicts["run"].iloc[0]))
        more = f" (and {len(places) - SHOWN_PLACES} more)" if len(places) > SHOWN_PLACES else ""
        raise UserInputError(
            f"run {clean_text(run_id, 60)} seq {int(conflicts['seq'].iloc[0])} is on two different "
            f"lines: {'; '.join(places[:SHOWN_PLACES])}{more}; a run id is its work unit's (seed, scenario, mode, "
            "trial, model, policy, approver), so two folders that ran the same matrix hold the same ids: report "
            "them one at a time, or compare them with bench compare"
        )
    later = found.loc[found.duplicated(["run", "seq"], keep="first")]
    originals = first.loc[later.index]
    keep = np.ones(store.rows, dtype=bool)
    keep[later["row"].to_numpy()] = False
    store.drop(keep)
    warnings = []
    pairs = pd.DataFrame(
        {
            "dup": later["file"].to_numpy(),
            "orig": originals["file"].to_numpy(),
            "dup_line": later["line"].to_numpy(),
            "orig_line": originals["line"].to_numpy(),
        }
    )
    for (dup, orig), group in pairs.groupby(["dup", "orig"], sort=True):
        example = group.iloc[0]
        warnings.append(
            f"{files[int(str(dup))]}: {len(group)} line(s) repeat identical lines of "
            f"{files[int(str(orig))]} "
            f"(first: line {int(example['dup_line'])} = line {int(example['orig_line'])}); read once"
        )
    return warnings


def _repeated(runs: np.ndarray, seq: np.ndarray) -> np.ndarray | None:
    """Rows whose (run, seq) another row has too; None when there are none (the usual case: one sort tells)."""
    if not len(runs):
        return None
    low, span = int(seq.min()), int(seq.max()) - int(seq.min()) + 1
    if (int(runs.max()) + 1) * span >= 2**62:  # no one-integer key: pandas hashes the pairs
        repeated = pd.DataFrame({"run": runs, "seq": seq}).duplicated(keep=False).to_numpy()
        return repeated if repeated.any() else None
    key = runs.astype(np.int64) * span + (seq.astype(np.int64) - low)
    ordered = np.sort(key)
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    del ordered
    return pd.Series(key, copy=False).duplicated(keep=False).to_numpy()


def _line_digests(files: list[Path], wanted: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    """A BLAKE2b digest of the bytes of chosen lines (file index, line number), without their line ending.

    Digests, not the lines: a folder reported with its copy repeats every line, and memory stays small.
    """
    by_file: dict[int, set[int]] = {}
    for file_index, line in wanted:
        by_file.setdefault(int(file_index), set()).add(int(line))
    found: dict[tuple[int, int], bytes] = {}
    for file_index, numbers in by_file.items():
        last = max(numbers)
        with open(files[file_index], "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number in numbers:
                    found[(file_index, number)] = hashlib.blake2b(raw.rstrip(b"\r\n"), digest_size=16).digest()
                if number >= last:
                    break
    return found
