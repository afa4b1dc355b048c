"""A run folder's life: taken under an exclusive lock, written as the run goes, closed, and swapped in on --replace.

Nothing is ever deleted before a new run is complete, and ``--replace`` only ever replaces a folder
that holds a bench run (its manifest), never an arbitrary directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import uuid
from datetime import datetime
from pathlib import Path
from typing import IO

from harness.errors import UserInputError
from harness.records.manifest import MANIFEST_FILE, is_run_folder

LOCK_FILE = ".bench.lock"
TRACE_FILE = "traces.jsonl"


class RunFolder:
    """The folder one matrix run writes to, held under an exclusive lock until ``release``.

    With ``--replace`` the run goes to a staging sibling (``.NAME.partial``); ``finish`` puts it in the
    target's place only when the run completed, so an interrupted re-recording leaves the old run whole.
    """

    def __init__(self, target: Path, path: Path, locks: list[IO[str]], created: bool):
        self.target, self.path = target, path
        self._locks, self._created = locks, created

    @property
    def staging(self) -> bool:
        return self.path != self.target

    @classmethod
    def take(cls, out: Path | None, replace: bool, results_root: Path, now: datetime) -> RunFolder:
        """Locks the output folder, then checks it, before anything starts; one line and exit 2 when it cannot."""
        if out is None:
            out = results_root / f"{now.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        try:
            return cls._take(out, replace)
        except OSError as exc:  # a name too long, a loop of links, a folder that vanished: the path, not a bug
            raise UserInputError(f"--out {out}: cannot use it ({exc.strerror or type(exc).__name__})") from None

    @classmethod
    def _take(cls, out: Path, replace: bool) -> RunFolder:
        if out.exists() and not out.is_dir():
            raise UserInputError(f"--out {out}: exists and is not a folder")
        created = not out.exists()
        _make(out, "--out")
        stray_lock = not (out / LOCK_FILE).exists()  # ours to remove if the folder turns out not to be usable
        locks: list[IO[str]] = []
        try:
            locks.append(_lock(out, f"--out {out}"))  # first: a folder another run holds is named as such
            _check_target(out, replace)
            if replace and _holds_files(out):
                staging = out.with_name(f".{out.name}.partial")
                _clear_staging(staging)
                _make(staging, "--out")
                locks.append(_lock(staging, f"--out {out} (staging)"))
                return cls(out, staging, locks, created=True)
            return cls(out, out, locks, created)
        except BaseException:
            if created:
                shutil.rmtree(out, ignore_errors=True)
            elif stray_lock and locks:
                (out / LOCK_FILE).unlink(missing_ok=True)
            _unlock(locks)
            raise

    @classmethod
    def attach(cls, path: Path) -> RunFolder:
        """An existing run folder, locked so that nothing else writes to it meanwhile (``bench resume``)."""
        try:
            usable = path.is_dir() and is_run_folder(path)
        except OSError:  # a name too long, a loop of links
            usable = False
        if not usable:
            raise UserInputError(f"{path}: not a bench run folder (no readable {MANIFEST_FILE})")
        try:
            return cls(path, path, [_lock(path, str(path))], created=False)
        except OSError as exc:  # a folder others may read but not write
            raise UserInputError(f"{path}: cannot lock it ({exc.strerror or type(exc).__name__})") from None

    def finish(self, complete: bool) -> Path:
        """Swaps a completed staging folder into the target's place; returns where the run now is."""
        if not self.staging or not complete:
            return self.path
        retired = self.target.with_name(f".{self.target.name}.old")
        if retired.exists() and is_run_folder(retired):
            shutil.rmtree(retired)
        if retired.exists():
            raise UserInputError(f"--replace: {retired} is in the way and is not a bench run; move it away")
        self.target.rename(retired)
        self.path.rename(self.target)
        shutil.rmtree(retired)
        self.path = self.target
        return self.target

    def discard(self) -> None:
        """Removes the folder this run made, as long as no run has written to it (a run that never started)."""
        traces = self.path / TRACE_FILE
        if self.path.exists() and (not traces.exists() or traces.stat().st_size == 0) and self._created:
            shutil.rmtree(self.path, ignore_errors=True)

    def release(self) -> None:
        _unlock(self._locks)
        self._locks = []


def _check_target(out: Path, replace: bool) -> None:
    if not _holds_files(out):
        return
    if not replace:
        what = "already holds a bench run" if is_run_folder(out) else "not empty"
        raise UserInputError(f"--out {out}: {what}; choose a new folder (or --replace to replace a bench run)")
    if not is_run_folder(out):
        raise UserInputError(f"--replace: {out} does not hold a bench run ({MANIFEST_FILE}); refusing to replace it")


def _holds_files(folder: Path) -> bool:
    try:
        return any(entry.name != LOCK_FILE for entry in os.scandir(folder))
    except OSError as exc:
        raise UserInputError(f"--out {folder}: cannot read it ({exc.strerror})") from None


def _make(folder: Path, flag: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".bench-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserInputError(f"{flag} {folder}: cannot write there ({exc.strerror or type(exc).__name__})") from None


def _clear_staging(staging: Path) -> None:
    """A staging folder left by an interrupted --replace run is ours to drop; anything else is not."""
    if not staging.exists():
        return
    if not staging.is_dir() or (_holds_files(staging) and not (staging / MANIFEST_FILE).exists()):
        raise UserInputError(f"--replace: {staging} is in the way and is not a bench staging folder; move it away")
    _lock(staging, f"--replace: {staging}").close()  # refuses while another run writes there
    shutil.rmtree(staging)


def _lock(folder: Path, what: str) -> IO[str]:
    """An exclusive, non-blocking lock on ``folder``; the holder is named when it is taken."""
    path = folder / LOCK_FILE
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = _describe_holder(handle.read())
        handle.close()
        raise UserInputError(f"{what}: locked by {holder} ({path}); wait for it or choose another folder") from None
    handle.seek(0)
    handle.truncate()
    handle.write(
        json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": datetime.now().astimezone().isoformat(timespec="seconds"),
            }
        )
    )
    handle.flush()
    return handle


def _describe_holder(text: str) -> str:
    try:
        facts = json.loads(text)
        return f"bench pid {facts['pid']} on {facts['host']} since {facts['since']}"
    except (ValueError, KeyError, TypeError):
        return "another bench process"


def _unlock(locks: list[IO[str]]) -> None:
    for handle in locks:
        if not handle.closed:
            handle.close()  # closing drops the flock
