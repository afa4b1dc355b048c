"""Checked trace events folded chunk by chunk into compact columns, and the pandas frames built from them once.

The loader parses ~8 MiB of lines at a time into a pyarrow table of every field it reads. Holding those
tables until the end costs about 1 GiB per million events; the store keeps only what the frames are made
of: per event its run, seq, kind, file and line as small integers and the wanted columns (strings as codes
into one dictionary per column, shared by every chunk), per summary line its run's flat outcome columns,
per run_start the gateway policy it names. Ten million events then report within 2 GiB (docs/scale.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from reports.manifests import RunInfo
from reports.trace_columns import OUTCOME_COLUMNS, OUTCOME_DEFAULTS, SCHEMA, TOKEN_COLUMNS

FLAT_EVENT = {  # nested fields that become event columns of their own
    **{f"usage.{name}": name for name in TOKEN_COLUMNS},
    "error.kind": "error_kind",
    "detail.purpose": "purpose",
}
EVENT_COLUMNS = (
    "source",
    "file",
    "line",
    "run_id",
    "scenario",
    "mode",
    "model",
    "gateway_policy",
    "trial",
    "seq",
    "step",
    "ts",
    "decision_maker",
    "kind",
    "action",
    "result",
    "latency_ms",
    *FLAT_EVENT.values(),
)
CATEGORIES = (
    "source",
    "file",
    "run_id",
    "scenario",
    "mode",
    "model",
    "gateway_policy",
    "decision_maker",
    "kind",
    "action",
    "result",
    "error_kind",
    "purpose",
    "status",
    "suspended_at",
    "expected_stop",
    "stop_verdict",
    "subject",
)
# Event columns kept as codes while reading (run_id and kind always: the frames are built from them).
CODED = ("run_id", "scenario", "mode", "model", "decision_maker", "kind", "action", "result", "error_kind", "purpose")
DERIVED = ("source", "file", "gateway_policy", "line", "seq")  # built from the store's own columns
RUN_FIELDS = ("line", "run_id", "scenario", "mode", "model", "trial")  # a run's own fields, from its summary line
JOIN_EVERY = 32  # chunks between joins of the folded columns' pieces
_FLAT_SOURCE = {flat: path for path, flat in FLAT_EVENT.items()}
_FLAT_TYPES = SCHEMA.empty_table().flatten().schema


class Codes:
    """Strings as small integers in order of first appearance, one dictionary across every chunk of a load."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.values: list[str] = []

    def encode(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Each row's code (-1 for null), in the narrowest integer type the dictionary fits so far."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        encoded = pc.dictionary_encode(column)
        local = encoded.dictionary.to_pylist()
        remap = np.empty(len(local) + 1, dtype=np.int64)
        for i, value in enumerate(local):
            code = self.index.get(value)
            if code is None:
                code = self.index[value] = len(self.values)
                self.values.append(value)
            remap[i] = code
        remap[-1] = -1  # null
        indices = pc.fill_null(encoded.indices, len(local)).to_numpy(zero_copy_only=False)
        return remap.astype(_narrow(len(self.values)))[indices]

    def code(self, value: str) -> int:
        """The value's code, or -2 (no row's code) when no row has held it yet."""
        return self.index.get(value, -2)


class EventStore:
    """Checked chunks of events, folded as they arrive into what the frames need and nothing more.

    ``wanted``: the event columns the events frame will have (``complete`` always), in EVENT_COLUMNS order.
    ``outcome_lists``: False leaves the outcome's list columns (violations, stops) out of the runs frame: as
    Python lists they cost more than the rest of a run's row (the violations frame has every violation still).
    Row numbers count the events kept, across files, in the order they were added.
    """

    def __init__(self, files: list[Path], wanted: tuple[str, ...], outcome_lists: bool = True):
        self.files = files
        self.wanted = wanted
        self.outcome_lists = outcome_lists
        self.rows = 0
        self.chunks = 0
        self.joined: dict[str, int] = {}
        self.codes = {name: Codes() for name in CODED}
        self.policies = Codes()  # gateway policies named by run_start details and summary outcomes
        self.parts: dict[str, list[np.ndarray]] = {name: [] for name in ("file", "line", "seq", *CODED)}
        self.plain: dict[str, list[pa.Array]] = {}
        self.runs: list[pa.Table] = []  # one row per summary line: RUN_FIELDS, file, outcome columns
        self.parts.update(summary_rows=[], summary_policies=[], start_rows=[], start_policies=[])

    def add(self, table: pa.Table) -> None:
        """Keeps one chunk of valid events (the loader's projection plus ``line`` and ``file`` columns)."""
        start = self.rows
        self.rows += table.num_rows
        self.parts["file"].append(table["file"].to_numpy())
        self.parts["line"].append(_ints(table["line"]))
        self.parts["seq"].append(_ints(table["seq"]))
        coded = [n for n in CODED if n in self.wanted or n in ("run_id", "kind")]
        plain = [n for n in self.wanted if n not in CODED and n not in DERIVED]
        parents = dict.fromkeys(_FLAT_SOURCE.get(n, n).split(".")[0] for n in (*coded, *plain))
        flat = table.select(list(parents)).flatten()
        for name in coded:
            self.parts[name].append(self.codes[name].encode(flat[_FLAT_SOURCE.get(name, name)]))
        for name in plain:
            self.plain.setdefault(name, []).extend(flat[_FLAT_SOURCE.get(name, name)].chunks)
        kind = self.parts["kind"][-1]
        summary = kind == self.codes["kind"].code("summary")
        if summary.any():
            rows = table.select([*RUN_FIELDS, "file", "outcome"]).filter(pa.array(summary))
            outcome = rows["outcome"].combine_chunks()
            self.runs.append(_run_columns(rows, outcome, self.outcome_lists))
            self.parts["summary_rows"].append(start + np.flatnonzero(summary))
            self.parts["summary_policies"].append(self.policies.encode(pc.struct_field(outcome, "gateway_policy")))
        run_start = kind == self.codes["kind"].code("run_start")
        if run_start.any():
            said = pc.struct_field(pc.filter(table["detail"], pa.array(run_start)), "gateway_policy")
            self.parts["start_rows"].append(start + np.flatnonzero(run_start))
            self.parts["start_policies"].append(self.policies.encode(said))
        self.chunks += 1
        if self.chunks % JOIN_EVERY == 0:  # few large blocks, not thousands of small ones between other objects
            for name, parts in self.parts.items():
                joined = self.joined.get(name, 0)  # parts[:joined] are joined blocks already
                if len(parts) > joined + 1:
                    parts[joined:] = [np.concatenate(parts[joined:])]
                self.joined[name] = len(parts)

    def column(self, name: str) -> np.ndarray:
        """One folded column (run_id as codes, seq, file index, line, ...), joined into one array once."""
        parts = self.parts[name]
        if len(parts) != 1:
            parts[:] = [np.concatenate(parts) if parts else np.array([], np.int64)]
        return parts[0]

    def run_id(self, code: int) -> str:
        return self.codes["run_id"].values[code]

    def drop(self, keep: np.ndarray) -> None:
        """Keeps only the rows ``keep`` marks (identical duplicates read once); rows are numbered anew."""
        renumber = np.cumsum(keep) - 1
        for name in ("summary_rows", "start_rows"):
            rows = self.column(name)
            kept = keep[rows]
            self.parts[name][:] = [renumber[rows[kept]]]
            other = name.replace("rows", "policies")
            self.parts[other][:] = [self.column(other)[kept]]
            if name == "summary_rows":
                self.runs = [pa.concat_tables(self.runs).filter(pa.array(kept))] if self.runs else []
        for name in ("file", "line", "seq", *CODED):
            if self.parts[name]:
                self.parts[name][:] = [self.column(name)[keep]]
        for name, chunks in self.plain.items():
            self.plain[name] = pa.chunked_array(chunks, _flat_type(name)).filter(pa.array(keep)).chunks
        self.rows = int(keep.sum())

    def frames(self, run_info: list[RunInfo]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, int]:
        """The events, runs (each complete run's last summary) and violations frames; also the runs left unfinished.

        A run's last summary (highest seq) is its outcome; events after it mean a resume that never finished.
        """
        codes = self.column("run_id")
        seq = self.column("seq").astype(np.int64)
        runs_count = len(self.codes["run_id"].values)
        summary_rows = self.column("summary_rows")
        last_seq = np.full(runs_count, np.iinfo(np.int64).min)
        np.maximum.at(last_seq, codes, seq)
        order = np.lexsort((seq[summary_rows], codes[summary_rows]))
        last_summary = np.full(runs_count, -1)  # per run: its last summary, as a position in summary_rows
        last_summary[codes[summary_rows[order]]] = order  # sorted by (run, seq): the last write per run wins
        summaries = np.bincount(codes[summary_rows], minlength=runs_count)
        has_summary = last_summary >= 0
        complete = has_summary.copy()  # the run's last summary is its last event
        complete[has_summary] = seq[summary_rows[last_summary[has_summary]]] == last_seq[has_summary]
        unfinished = int((has_summary & ~complete).sum())
        del seq, last_seq
        picked = np.zeros(len(summary_rows), dtype=bool)  # the summaries that become the runs table, in file order
        picked[last_summary[complete]] = True
        run_codes = codes[summary_rows[picked]]
        policy = self._policies(codes, runs_count, summary_rows[picked], picked, run_info)
        events = self._events(codes, policy, complete[codes])
        # Arrow's allocator keeps freed pages for itself, pandas allocates elsewhere: hand them back between frames.
        pa.default_memory_pool().release_unused()
        runs_table = pa.concat_tables(self.runs) if self.runs else _run_columns(*_no_summaries(), self.outcome_lists)
        self.runs = []
        if not picked.all():  # usually every run has one summary: no copy
            runs_table = runs_table.filter(pa.array(picked))
        violations = _violations(runs_table["violations"].combine_chunks())
        picked_files = runs_table["file"].to_numpy()
        run_columns = {
            "source": _dictionary(picked_files, [str(f.parent) for f in self.files]),
            "file": _dictionary(picked_files, [str(f) for f in self.files]),
            **{name: runs_table[name] for name in RUN_FIELDS},
            "summaries": pa.array(summaries[run_codes], pa.int64()),
            **{name: runs_table[name] for name in OUTCOME_COLUMNS.values() if name in runs_table.column_names},
        }
        if not self.outcome_lists:
            del run_columns["violations"]
        del runs_table
        runs = to_pandas(run_columns)
        pa.default_memory_pool().release_unused()
        return events, runs, violations, unfinished

    def _events(self, codes: np.ndarray, policy: np.ndarray, complete: np.ndarray) -> pd.DataFrame:
        file_index = self.column("file")
        columns: dict[str, pa.Array | pa.ChunkedArray] = {}
        for name in self.wanted:
            if name == "source":
                columns[name] = _dictionary(file_index, [str(f.parent) for f in self.files])
            elif name == "file":
                columns[name] = _dictionary(file_index, [str(f) for f in self.files])
            elif name == "gateway_policy":
                columns[name] = _dictionary(codes, policy)
            elif name in CODED:
                columns[name] = _from_codes(self.column(name), self.codes[name].values)
            elif name in ("line", "seq"):
                columns[name] = pa.array(self.column(name).astype(np.int64))
            else:
                columns[name] = pa.chunked_array(self.plain.pop(name, []), _flat_type(name))
        columns["complete"] = pa.array(complete, pa.bool_())
        for name in ("file", "line", "seq", *(n for n in CODED if n != "run_id")):
            self.parts[name].clear()  # folded into the frame: not held twice
        return to_pandas(columns)

    def _policies(
        self, codes: np.ndarray, runs_count: int, run_rows: np.ndarray, picked: np.ndarray, run_info: list[RunInfo]
    ) -> np.ndarray:
        """Each run's gateway policy: its summary's, else its run_start's, else its folder manifest's, else unknown."""
        chosen = np.full(runs_count, -1, dtype=np.int64)
        said = self.column("summary_policies")[picked]
        for rows, found in ((self.column("start_rows"), self.column("start_policies")), (run_rows, said)):
            present = found >= 0
            chosen[codes[rows][present]] = found[present]  # the last one in file order wins
        policy = np.array([*self.policies.values, None], dtype=object)[chosen]  # -1: None, filled next
        missing = chosen < 0
        if missing.any():
            by_folder = {info.folder: info.gateway_policy for info in run_info if info.gateway_policy}
            first_row = np.full(runs_count, -1)
            first_row[codes[::-1]] = np.arange(len(codes))[::-1]
            file_index = self.column("file")
            for code in np.flatnonzero(missing):
                folder = str(self.files[int(file_index[first_row[code]])].parent)
                policy[code] = by_folder.get(folder, "unknown")
        return policy


def _no_summaries() -> tuple[pa.Table, pa.StructArray]:
    table = SCHEMA.empty_table().append_column("line", pa.array([], pa.int64()))
    table = table.append_column("file", pa.array([], pa.int32()))
    return table, pa.array([], SCHEMA.field("outcome").type)


def _run_columns(rows: pa.Table, outcome: pa.StructArray, lists: bool) -> pa.Table:
    """Summary lines as runs-table rows: the run's fields, its file index and its outcome's flat columns.

    Without ``lists``, of the list columns only violations is kept (the violations frame is made of it).
    """
    columns = {name: rows[name] for name in (*RUN_FIELDS, "file")}
    for path, name in OUTCOME_COLUMNS.items():
        column = _outcome_column(outcome, path.split(".")[1:])
        if lists or name == "violations" or not pa.types.is_list(column.type):
            columns[name] = column
    return pa.table(columns)


def _narrow(size: int) -> type[np.signedinteger]:
    """The narrowest signed integer type that holds codes 0..size-1 and -1."""
    for kind in (np.int8, np.int16, np.int32):
        if size <= np.iinfo(kind).max:
            return kind
    return np.int64


def _ints(column: pa.ChunkedArray) -> np.ndarray:
    """A required integer column as int32 when it fits (line numbers, seqs), else int64."""
    values = column.to_numpy()
    if values.size and np.iinfo(np.int32).min <= values.min() and values.max() <= np.iinfo(np.int32).max:
        return values.astype(np.int32)
    return values


def _flat_type(name: str) -> pa.DataType:
    return _FLAT_TYPES.field(_FLAT_SOURCE.get(name, name)).type


def _violations(lists: pa.ListArray) -> pd.DataFrame:
    """One row per oracle violation of a run: ``run`` (its row in the runs table), ``kind`` and ``subject``.

    ``forbidden:deploy`` -> (forbidden, deploy); ``ungrounded:write_answer.claims[].doc_id='D-9'`` ->
    (ungrounded, write_answer.claims[].doc_id): the value after '=' differs run to run, the subject does not.
    """
    flat = pc.fill_null(pc.list_flatten(lists), "")
    parts = pc.extract_regex(flat, r"^(?P<kind>[^:]*):?(?P<subject>[^=]*)")
    return to_pandas(
        {
            "run": pc.list_parent_indices(lists),
            "kind": parts.field("kind"),
            "subject": parts.field("subject"),
            "text": flat,
        }
    )


def _dictionary(indices: np.ndarray, values: list[str] | np.ndarray) -> pa.DictionaryArray:
    """Row i holds values[indices[i]], dictionary-encoded with each distinct value once (pandas needs that)."""
    encoded = pc.dictionary_encode(pa.array(values, pa.string()))
    remap = encoded.indices.to_numpy(zero_copy_only=False).astype(_narrow(len(encoded.dictionary)))
    return pa.DictionaryArray.from_arrays(
        pa.array(remap[indices]) if len(indices) else pa.array([], pa.int32()), encoded.dictionary
    )


def _from_codes(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """Row i holds values[codes[i]] (null for -1): a store column as the dictionary array pandas gets."""
    indices = pa.array(codes, mask=codes < 0) if len(codes) else pa.array([], pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(values, pa.string()))


def _outcome_column(outcome: pa.StructArray, names: list[str]) -> pa.Array:
    """One outcome field as a column; a key of a present count record, or a field with a default, reads as 0.

    A required field a line's version did not have yet (unauthorized_side_effects in schema 1) stays null:
    unknown, never 0.
    """
    top = outcome.field(names[0])
    if len(names) == 1:
        default = OUTCOME_DEFAULTS.get(names[0])
        return top if default is None else pc.fill_null(top, default)
    child = top.field(names[1])
    return pc.if_else(pc.is_valid(top), pc.fill_null(child, 0), pa.nulls(len(child), child.type))


def to_pandas(columns: dict[str, pa.Array | pa.ChunkedArray]) -> pd.DataFrame:
    """A frame with CATEGORIES columns as pandas categoricals (their values in order of first appearance).

    ``columns`` is emptied, so each column's Arrow memory can be freed as pandas takes it over.
    """
    table = pa.table(
        {
            name: column.dictionary_encode()
            if name in CATEGORIES and not pa.types.is_dictionary(column.type)
            else column
            for name, column in columns.items()
        }
    )
    columns.clear()
    return table.to_pandas(self_destruct=True)
