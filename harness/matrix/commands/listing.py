"""The run folders under a root, each described from its manifest, and the runs of a folder waiting for a person.

``bench runs`` reads this; nothing here writes: a folder another process is running in is only looked at.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from harness.errors import UserInputError
from harness.records.checkpoint import CHECKPOINT_FILE, CheckpointStore, HumanDecision
from harness.records.folder import LOCK_FILE, TRACE_FILE
from harness.records.manifest import MANIFEST_FILE, read_manifest
from harness.records.timeline import RunRef, list_runs

MAX_DEPTH = 4  # results/recorded/<name> is two levels down; deeper trees are not searched


@dataclass(frozen=True)
class FolderRow:
    """One run folder as ``bench runs`` lists it; ``problem`` says why its manifest could not be read."""

    path: Path
    label: str | None = None
    started: str | None = None  # local time, minutes
    model: str | None = None  # every model's label, comma-separated, in the order they ran
    model_source: str | None = None
    modes: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    trials: int | None = None
    status: str = "unreadable"
    runs: int | None = None
    suspended: int | None = None  # runs waiting for a decision (bench resume); None: unknown
    problem: str | None = None
    start_key: str = ""  # the manifest's ISO start time, for sorting


@dataclass(frozen=True)
class WaitingRun:
    """A suspended run at a gate: waiting for a decision, or with one given and not yet carried out."""

    run_id: str
    gate: str
    stop_id: str  # the stop's short id (bench resume --stop)
    run: RunRef | None  # its cell, when the trace names it
    state: Literal["waiting", "decided", "deciding"] = "waiting"  # decided: a resume was cut short, the next one
    # carries the decision out; deciding: a resume is carrying it out now (it holds the folder)
    claim: HumanDecision | None = None  # the decision given, when the database holds it


def run_folders(root: Path) -> list[FolderRow]:
    """Every run folder at or under ``root`` (hidden staging folders aside), oldest first."""
    if not root.exists():
        raise UserInputError(f"{root}: no such folder (bench run writes its runs under results/)")
    if not root.is_dir():
        raise UserInputError(f"{root}: not a folder")
    found = [describe(path) for path in _walk(root, 0)]
    return sorted(found, key=lambda row: (row.start_key, str(row.path)))


def _walk(folder: Path, depth: int) -> list[Path]:
    manifest = folder / MANIFEST_FILE
    if manifest.is_file() or (manifest.exists() and not manifest.is_dir()):
        return [folder]  # a run folder's report/ and other contents are not run folders; a FIFO manifest is a row
    if depth >= MAX_DEPTH:
        return []
    try:
        children = sorted(entry for entry in folder.iterdir() if entry.is_dir() and not entry.name.startswith("."))
    except OSError:
        return []
    return [path for child in children for path in _walk(child, depth + 1)]


def describe(folder: Path) -> FolderRow:
    """A run folder's facts from its manifest; a manifest that does not read becomes a row that says why."""
    try:
        manifest = read_manifest(folder)
    except UserInputError as exc:
        return FolderRow(folder, problem=str(exc))
    except Exception as exc:  # one odd folder must not hide the others; its row says what went wrong
        return FolderRow(folder, problem=f"{folder / MANIFEST_FILE}: unreadable ({type(exc).__name__}: {exc})")
    status: str = manifest.status
    if status == "running" and not _held(folder):
        status = "stopped"  # nothing holds its lock: the process that ran it is gone (killed, crashed)
    return FolderRow(
        path=folder,
        label=manifest.label,
        started=_local_minutes(manifest.start_time),
        model=", ".join(dict.fromkeys(m.label for m in manifest.models)) or manifest.model,  # every model it ran
        model_source=", ".join(dict.fromkeys(m.source for m in manifest.models)) or manifest.model_source,
        modes=tuple(manifest.modes),
        scenarios=tuple(manifest.scenarios),
        trials=manifest.trials,
        status=status,
        runs=manifest.runs,
        suspended=_waiting_count(folder),
        start_key=manifest.start_time,
    )


def waiting_runs(folder: Path) -> list[WaitingRun]:
    """The runs of a folder at a gate, with their cells; [] when none ever suspended. A run whose decision was
    given (claimed, or written to the trace by a resume cut short) is never listed as waiting."""
    try:
        stops = CheckpointStore(folder).open_stops()
    except sqlite3.Error as exc:
        raise UserInputError(f"{folder / CHECKPOINT_FILE}: unreadable ({exc})") from None
    if not stops:
        return []
    refs = {ref.run_id: ref for ref in list_runs(folder)[0]} if (folder / TRACE_FILE).is_file() else {}
    busy = _held(folder)
    found = []
    for stop in stops:
        ref = refs.get(stop.run_id)
        ahead = ref is not None and stop.next_seq is not None and ref.events > stop.next_seq  # its trace went on
        if stop.claim is None and not ahead:
            found.append(WaitingRun(stop.run_id, stop.gate, stop.stop_id, ref))
        else:
            state: Literal["decided", "deciding"] = "deciding" if busy else "decided"
            found.append(WaitingRun(stop.run_id, stop.gate, stop.stop_id, ref, state, stop.claim))
    return found


def _waiting_count(folder: Path) -> int | None:
    database = folder / CHECKPOINT_FILE
    if not database.exists():
        return 0
    if not database.is_file():
        return None  # a FIFO or a socket in its place: never opened, it would block
    try:
        return len(CheckpointStore(folder).suspended())
    except (sqlite3.Error, UserInputError):
        return None


def _held(folder: Path) -> bool:
    """Whether a process holds the folder's lock now (tested without taking it for longer than a moment)."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO in its place must not block the listing
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # not bench's lock: no process of bench holds it
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock taken just now
    return False


def _local_minutes(iso: str) -> str | None:
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return None
