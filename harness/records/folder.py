"""A run folder's life: taken under an exclusive lock, written as the run goes, closed, and swapped in on --replace.

Nothing is ever deleted before a new run is complete, and ``--replace`` only ever replaces a folder
that holds a bench run (its manifest), never an arbitrary directory.

The swap is atomic from the user's view: the staging folder (``.NAME.partial``, marked ``STAGED_MARK`` from the
moment it is made) and ``--out`` are exchanged in one rename (Linux's ``renameat2(RENAME_EXCHANGE)``; two renames
elsewhere), so ``--out`` holds the old run or the new one at every instant; then the old run, now beside it, is
deleted and the mark taken out of ``--out``. A kill anywhere in between is repaired by the next bench command on
that ``--out`` (``recover_swap``): a marked ``--out`` is the new run, and what is left of the old one goes; a marked
staging folder where ``--out`` is missing (cut between the two renames) is renamed into place; a staging folder
whose run completed (a kill, or a file of the user's in ``--out``, stopped the swap) is swapped in now; one whose run
never completed is a run no one can resume and goes, leaving the old run as it was.
"""

from __future__ import annotations

import ctypes
import errno
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
from harness.records.checkpoint import CHECKPOINT_FILE
from harness.records.manifest import MANIFEST_FILE, is_run_folder, read_manifest
from harness.records.write_faults import reached

LOCK_FILE = ".bench.lock"
TRACE_FILE = "traces.jsonl"
RECORDING_FILE = "recording.jsonl"  # harness.models.recording's (a layer above this one); a test keeps them equal
REPORT_DIR = "report"  # bench report's default --out inside a run folder
# Where runtime adapters' frameworks keep each run's own state (runtime/<run id>/: a checkpointer's database, a
# serialised run state): bench's, written by the framework, so --replace deletes it with the run.
RUNTIME_DIR = "runtime"
STAGED_MARK = ".bench-staged"  # a --replace run's staged folder, from its start until its swap is cleaned up

# What bench writes in a run folder: only these does --replace ever delete. Every other file is the user's.
RUN_FILES = frozenset(
    {
        TRACE_FILE,
        MANIFEST_FILE,
        RECORDING_FILE,
        LOCK_FILE,
        STAGED_MARK,
        CHECKPOINT_FILE,
        *(f"{CHECKPOINT_FILE}{suffix}" for suffix in ("-wal", "-shm", "-journal")),
        f"{MANIFEST_FILE}.tmp",  # a manifest write cut short
        *(f"{name}.continue.tmp" for name in (TRACE_FILE, RECORDING_FILE)),  # a --resume rewrite cut short
    }
)
REPORT_FILES = {  # bench report's outputs, by sub-folder of report/: names and the suffixes they may have
    "": (frozenset({"report.md", "report.html"}), ()),
    "figures": (frozenset(), (".png", ".pdf")),
    "tables": (frozenset(), (".csv", ".tex")),
    "runs": (frozenset(), (".html",)),
}
SHOWN_FOREIGN = 5  # files named in the refusal; the rest are counted


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
        if replace and out.is_symlink():  # a swap by renaming would move the link, not the folder it names
            raise UserInputError(
                f"--replace: --out {out} is a symbolic link (to {os.readlink(out)}); "
                f"give the folder itself (--out {out.resolve()}) or a new folder"
            )
        if out.exists() and not out.is_dir():
            raise UserInputError(f"--out {out}: exists and is not a folder")
        recover_swap(out)
        created = not out.exists()
        _make(out, "--out")
        stray_lock = not (out / LOCK_FILE).exists()  # ours to remove if the folder turns out not to be usable
        locks: list[IO[str]] = []
        try:
            locks.append(_lock(out, f"--out {out}"))  # first: a folder another run holds is named as such
            _check_target(out, replace)
            if replace and _holds_files(out):
                staging = staging_of(out)
                if staging.exists() or staging.is_symlink():  # recover_swap leaves none of its own
                    raise UserInputError(
                        f"--replace: {staging} is in the way and is not a bench staging folder; move it away"
                    )
                _make(staging, "--out")
                (staging / STAGED_MARK).touch()
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
            recover_swap(path)
        except OSError as exc:
            raise UserInputError(f"{path}: cannot finish an interrupted --replace ({exc.strerror})") from None
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
        kept_apart = f"the new run stays in {self.path}"
        if self.target.is_symlink():  # made one while the run went on
            raise UserInputError(f"--replace: {self.target} became a symbolic link; {kept_apart}")
        locks = [_lock(self.target, f"--replace: {self.target}"), _lock(self.path, f"--replace: {self.path}")]
        try:
            _refuse_foreign(self.target, f"; {kept_apart}")  # a file added while the run went on is still the user's
            _exchange(self.path, self.target)  # --out holds the new run from here on
            _finish_swap(self.target)
        finally:
            _unlock(locks)
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
    _refuse_foreign(out, "")


def _refuse_foreign(folder: Path, then: str) -> None:
    """One line naming the files in ``folder`` that bench did not write (a few, and how many more), if any."""
    found = foreign_files(folder)
    if found:
        more = f" and {len(found) - SHOWN_FOREIGN} more" if len(found) > SHOWN_FOREIGN else ""
        raise UserInputError(
            f"--replace: {folder} holds files bench did not write: {', '.join(found[:SHOWN_FOREIGN])}{more}; "
            f"move them away first, nothing was replaced{then}"
        )


def foreign_files(folder: Path) -> list[str]:
    """The paths in a run folder, relative to it and sorted, that no bench run or report wrote (a folder: ``name/``).

    A symbolic link is never bench's, nor a folder bench does not make; what is inside such a folder is not listed.
    """
    found: list[str] = []
    for entry in _entries(folder):
        if entry.is_dir(follow_symlinks=False) and entry.name == REPORT_DIR:
            found += [f"{REPORT_DIR}/{name}" for name in _foreign_report_files(Path(entry.path))]
        elif entry.is_dir(follow_symlinks=False) and entry.name == RUNTIME_DIR:
            continue  # the frameworks' state of this folder's runs: whatever they wrote there is the run's
        elif not (entry.is_file(follow_symlinks=False) and _bench_file(entry.name, RUN_FILES, ())):
            found.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    return sorted(found)


def _foreign_report_files(report: Path) -> list[str]:
    found: list[str] = []
    for entry in _entries(report):
        if entry.is_dir(follow_symlinks=False) and entry.name in REPORT_FILES.keys() - {""}:
            names, suffixes = REPORT_FILES[entry.name]
            found += [
                f"{entry.name}/{inner.name}" + ("/" if inner.is_dir(follow_symlinks=False) else "")
                for inner in _entries(Path(entry.path))
                if not (inner.is_file(follow_symlinks=False) and _bench_file(inner.name, names, suffixes))
            ]
        elif not (entry.is_file(follow_symlinks=False) and _bench_file(entry.name, *REPORT_FILES[""])):
            found.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    return found


def _bench_file(name: str, names: frozenset[str], suffixes: tuple[str, ...]) -> bool:
    """Whether bench writes a file of this name here, or this name is one of its writes cut short."""
    if name.startswith(".bench-write-probe-"):  # _make's probe, left by a kill
        return True
    if name.startswith(".") and name.endswith(".tmp"):  # a report file's temporary (reports.writing)
        name = name[1:-4]
    return name in names or (bool(suffixes) and name.endswith(suffixes) and not name.startswith("."))


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return list(listing)
    except OSError as exc:
        raise UserInputError(f"--replace: cannot read {folder} ({exc.strerror})") from None


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


def staging_of(out: Path) -> Path:
    """Where a --replace run of ``out`` is staged until its swap."""
    return out.with_name(f".{out.name}.partial")


def retired_of(out: Path) -> Path:
    """Where the old run of ``out`` waits to be deleted when the swap is two renames."""
    return out.with_name(f".{out.name}.old")


def recover_swap(out: Path) -> None:
    """Finishes, or rolls back, a --replace swap of ``out`` that a kill cut short (the module's docstring says how);
    nothing to do, and nothing touched, when there is none. A folder in the way that is not bench's is one line."""
    out = Path(os.path.abspath(out))  # "." and "dir/.." have a name here
    if not out.name:
        return  # the root of the file system: never a --replace target
    staging, retired = staging_of(out), retired_of(out)
    marked = (out / STAGED_MARK).is_file()
    if not (marked or staging.exists() or staging.is_symlink() or retired.exists() or retired.is_symlink()):
        return
    for path in (staging, retired):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise UserInputError(f"--out {out}: {path} is in the way and is not bench's; move it away")
    # A swap in progress holds these locks; so does a --replace run still writing its staging folder.
    locks = [_lock(path, f"--out {out}") for path in (out, staging, retired) if path.is_dir() and not path.is_symlink()]
    try:
        if marked:  # swapped: what is left of the old run goes
            _finish_swap(out)
        elif not out.exists() and (staging / STAGED_MARK).is_file():  # cut between the two renames: finish them
            staging.rename(out)
            _finish_swap(out)
        elif _complete(staging) and (staging / STAGED_MARK).is_file():  # cut before the swap: make it now
            _refuse_foreign(out, f"; the new run stays in {staging} until they are")
            _exchange(staging, out)
            _finish_swap(out)
        else:  # a --replace run that never completed: --out holds the old run as it was; the staged one goes
            _drop(staging, out)
            _drop(retired, out)
    finally:
        _unlock(locks)


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds a run whose manifest says it completed."""
    try:
        return folder.is_dir() and read_manifest(folder).status == "complete"
    except UserInputError:
        return False


def _finish_swap(out: Path) -> None:
    """``out`` holds the new run: the old one beside it (at either name) is deleted, then the mark."""
    for leftover in (staging_of(out), retired_of(out)):
        _drop(leftover, out)
    reached("swap-old-deleted")
    (out / STAGED_MARK).unlink(missing_ok=True)


def _drop(path: Path, out: Path) -> None:
    """Deletes a staged or retired folder of ``out``: only when everything in it is bench's."""
    if not path.exists():
        return
    if path.is_symlink() or not path.is_dir() or foreign_files(path):
        raise UserInputError(f"--out {out}: {path} is in the way and is not bench's; move it away")
    shutil.rmtree(path)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(staging: Path, target: Path) -> None:
    """Puts ``staging`` in ``target``'s place and the old ``target`` at ``staging``'s, in one rename where the system
    can (Linux, most file systems); elsewhere the old run is first renamed aside, then the new one into place."""
    if _exchanged(staging, target):
        reached("swap-exchanged")
        return
    target.rename(retired_of(target))
    reached("swap-retired")
    staging.rename(target)
    reached("swap-renamed")


def _exchanged(a: Path, b: Path) -> bool:
    """Whether ``renameat2(RENAME_EXCHANGE)`` swapped the two paths; False where it does not exist or is refused."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # a file system without the exchange: two renames
        return False
    raise OSError(code, os.strerror(code), str(b))


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
