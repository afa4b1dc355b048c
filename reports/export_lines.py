"""The whole trace lines behind the loader's events table, streamed: what the exports need beyond the table.

The loader validates every line and keeps only the fields the reports read (no ``args``, no error message, two keys
of ``detail``). An export carries the rest too, so it re-reads exactly the lines the loader kept (by file and line
number), one at a time, and never a line it skipped: the loader stays the one judge of what a trace holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import WriteFailed
from reports.load import Traces

DEFAULT_OUT = "export"  # the folder an export goes to by default, inside the run folder
NESTED_FIELDS = ("args", "detail", "error", "outcome")  # the fields an export keeps as JSON text


def default_out(path: Path) -> Path:
    """The run folder's export/ (next to the traces.jsonl when a file was given)."""
    return (path if path.is_dir() else path.parent) / DEFAULT_OUT


def kept_lines(traces: Traces, rows: np.ndarray | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row of ``traces.events``, that line's JSON object) for ``rows`` (default: all), file by file, line by line.

    One line is parsed at a time; lines not asked for are passed over unparsed.
    """
    events = traces.events
    chosen = np.arange(len(events)) if rows is None else np.asarray(rows)
    files = events["file"].to_numpy()[chosen]
    lines = events["line"].to_numpy()[chosen]
    for source in traces.sources:
        mine = chosen[files == source]
        if not len(mine):
            continue
        wanted = lines[files == source]
        order = np.argsort(wanted, kind="stable")
        mine, wanted = mine[order], wanted[order]
        position = 0
        with open(source, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number < wanted[position]:
                    continue
                yield int(mine[position]), _parsed(raw)
                position += 1
                if position == len(wanted):
                    break


def _parsed(raw: bytes) -> dict[str, Any]:
    """The line as a dict; a line the loader could read but Python's parser cannot (nested too deep) as {}."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def nested_json(line: dict[str, Any]) -> dict[str, str | None]:
    """The line's nested fields as compact JSON text (None where the line has none)."""
    return {
        name: None if line.get(name) is None else json.dumps(line[name], separators=(",", ":"), ensure_ascii=False)
        for name in NESTED_FIELDS
    }


def write_whole_file(path: Path, write: Callable[[Path], object]) -> None:
    """Runs ``write`` on a temporary sibling, then puts it in place: the file goes out whole or not at all (as
    reports/writing.py does for text), and a refusal (a full disk) is one line naming ``path``."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(path)
    except OSError as exc:
        with suppress(OSError):
            tmp.unlink()
        raise WriteFailed(path, exc.strerror or type(exc).__name__) from None
