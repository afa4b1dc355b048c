"""Continuing a matrix that was cut short: keep every run that has a final summary, drop the partial ones cleanly.

A run is finished when its trace holds a summary whose status is not ``interrupted`` (suspended counts: it is a
stop, resumable with ``bench resume``, once its checkpoint is saved; a run killed between its suspended summary and
its checkpoint could never be decided, so it is dropped and run again). Every other line of a dropped run, a torn
last line, and the dropped runs' recorded exchanges and checkpoints are removed by rewriting each file to a
temporary copy, flushed, then put in place atomically: a crash during the rewrite leaves the old file whole.

A cell is keyed by the model label its lines carry too, so in a folder of several models each model's runs of the
same (scenario, mode, trial) are told apart; every trace and recording line has always named its model.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserInputError, WriteFailed
from harness.models.recording import RECORDING_FILE
from harness.records.checkpoint import CHECKPOINT_FILE, CheckpointStore
from harness.records.folder import TRACE_FILE

CellKey = tuple[str, str, str, int]  # model label, scenario, mode, trial


@dataclass(frozen=True)
class Kept:
    """The cells whose runs are finished (per model), and the run ids that were dropped."""

    finished: set[CellKey]
    dropped: list[str]
    outcomes: list[dict[str, Any]]  # the kept runs' summary outcomes, as written (the exit status counts them)


def keep_finished_runs(folder: Path) -> Kept:
    """Rewrites the folder's trace (and recording, and checkpoints) down to its finished runs."""
    # Lines that do not name their run (a hand-edited or foreign line) belong to no run: they are dropped.
    events = [event for _, event in _lines(folder / TRACE_FILE) if isinstance(event.get("run_id"), str)]
    last_status: dict[str, Any] = {}
    for e in events:
        if e.get("kind") == "summary":
            last_status[e["run_id"]] = _outcome(e).get("status")
    saved = _checkpointed(folder / CHECKPOINT_FILE)
    finished_ids = {
        run_id
        for run_id, status in last_status.items()
        if status not in (None, "interrupted") and (status != "suspended" or run_id in saved)
    }
    started = {e["run_id"] for e in events}
    dropped = sorted(started - finished_ids)
    finished = {
        cell
        for e in events
        if e["run_id"] in finished_ids and e.get("kind") == "run_start" and (cell := _cell(e)) is not None
    }
    _rewrite(folder / TRACE_FILE, lambda event: event.get("run_id") in finished_ids if _named(event) else False)
    _rewrite(folder / RECORDING_FILE, lambda entry: _cell(entry) in finished)
    # A checkpoint whose run has no summary in the trace (a worker saved it, the driver was killed before writing the
    # run's lines) is an attempt of a unit that runs again, under the same run id: it goes with the dropped runs.
    # A full disk may have left the database without its table: the store makes it, so a second resume finds it.
    with CheckpointStore(folder) as store:
        store.drop(sorted(set(dropped) | (saved - finished_ids)))
    outcomes = [
        e["outcome"]
        for e in events
        if e.get("kind") == "summary" and e["run_id"] in finished_ids and isinstance(e.get("outcome"), dict)
    ]
    return Kept(finished, dropped, outcomes)


def _outcome(event: dict[str, Any]) -> dict[str, Any]:
    outcome = event.get("outcome")
    return outcome if isinstance(outcome, dict) else {}


def _named(event: dict[str, Any]) -> bool:
    return isinstance(event.get("run_id"), str)


def _cell(line: dict[str, Any]) -> CellKey | None:
    """The (model, scenario, mode, trial) a trace or recording line names, or None when it names none."""
    model, scenario, mode, trial = line.get("model"), line.get("scenario"), line.get("mode"), line.get("trial")
    if isinstance(model, str) and isinstance(scenario, str) and isinstance(mode, str) and isinstance(trial, int):
        return (model, scenario, mode, trial)
    return None


def _lines(path: Path) -> list[tuple[bytes, dict[str, Any]]]:
    """The file's complete JSON-object lines (a torn or corrupt line is left out), with their exact bytes."""
    if not path.exists():
        return []
    if not path.is_file():  # a FIFO or a device would block or never end
        raise UserInputError(f"{path}: not a regular file")
    found = []
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                continue  # the line a kill cut short
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append((raw, value))
    return found


def _rewrite(path: Path, keep: Callable[[dict[str, Any]], bool]) -> None:
    if not path.exists():
        return
    tmp = path.with_name(path.name + ".continue.tmp")
    try:
        with open(tmp, "wb") as out:
            for raw, value in _lines(path):
                if keep(value):
                    out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk: the old file stays whole, no temporary file is left behind
        tmp.unlink(missing_ok=True)
        raise WriteFailed(path, exc.strerror or str(exc)) from None


def _checkpointed(path: Path) -> set[str]:
    """The runs the checkpoint database holds a row for (none when there is no database yet)."""
    if not path.exists():
        return set()
    with closing(sqlite3.connect(path)) as db:
        try:
            return {row[0] for row in db.execute("SELECT run_id FROM checkpoints")}
        except sqlite3.DatabaseError:  # no table yet, or not a database: no run can be resumed from it
            return set()
