"""The run folder's manifest.json: what a matrix run was, typed, written atomically, read back typed."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.choices import GatewayPolicy
from harness.errors import UserInputError, WriteFailed
from harness.files import Unreadable, read_text

MANIFEST_FILE = "manifest.json"
MAX_MANIFEST_BYTES = 16 * 1024 * 1024  # a manifest is a page of facts; past this it is not one of ours
MANIFEST_SCHEMA_VERSION = 2  # 1: the untyped manifest, live settings at the top level
ModelSourceKind = Literal["scripted", "replay", "live"]
RunFolderStatus = Literal["running", "complete", "interrupted", "failed"]


class LiveManifest(BaseModel):
    """A live run's endpoint (never the key), sampling and client settings, and what was adapted."""

    model_config = ConfigDict(frozen=True, extra="allow")  # providers add their own facts

    endpoint: str
    local_model: bool = False
    local_model_file: str | None = None
    local_model_versions: dict[str, str] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict)
    client: dict[str, Any] = Field(default_factory=dict)


class OwnAgentFile(BaseModel):
    """A user's own agent of the matrix (``--mode FILE.py:FACTORY``): the file it was loaded from, and its hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str  # absolute: replay and resume load it from here wherever they run
    sha256: str  # of the file's bytes: a resume refuses an agent changed since


class ManifestModel(BaseModel):
    """One model of a matrix folder: the --model value it ran with, the label its trace lines carry, its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    choice: str
    label: str
    source: ModelSourceKind
    live: LiveManifest | None = None  # a live model: its endpoint and settings, as ``Manifest.live`` for the first


class Manifest(BaseModel):
    """One run folder's facts: the command, the matrix, the model, versions and provenance, times and status."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = MANIFEST_SCHEMA_VERSION
    command: list[str] = Field(default_factory=list)
    label: str | None = None  # the name given with bench run --label, shown by bench runs, show and report
    modes: list[str]
    scenarios: list[str]
    model: str  # the model's label, as in every trace line
    model_source: ModelSourceKind
    model_choice: str | None = None  # the --model value it ran with (scripted:NAME, replay:DIR, live, local)
    # Every model of the matrix, in the order they ran (model, model_source and model_choice are the first's); a
    # manifest written before several models were allowed has none and is read as its one model.
    models: list[ManifestModel] = Field(default_factory=list)
    trials: int
    seed: int
    gateway_policy: GatewayPolicy
    concurrency: int
    workers: int = 1  # the most worker processes any of its models ran in (1: in-process; docs/scale.md)
    executor: str = "local"  # what ran the units: local (this machine's processes) or ray (docs/scale.md#ray)
    duplicate_units: int = 0  # late second results of a unit the driver had written already: dropped, counted
    start_time: str
    end_time: str | None = None
    status: RunFolderStatus = "running"
    runs: int | None = None  # runs with a final summary, written at the end
    versions: dict[str, str] = Field(default_factory=dict)
    agents: dict[str, OwnAgentFile] = Field(default_factory=dict)  # --mode FILE.py:FACTORY value -> its file
    # Provenance (harness/matrix/cell/provenance.py): what must match for two runs' numbers to be compared. A manifest
    # written before they were kept reads with the defaults (unknown), and nothing is compared on them.
    bench_commit: str | None = None  # the git commit bench ran from (-dirty: uncommitted changes); None: no checkout
    scenario_hashes: dict[str, str] = Field(default_factory=dict)  # scenario id -> short sha256 of its file's bytes
    prompt_hash: str | None = None  # short sha256 over the modes package's source, where the prompts are written
    replay_of: str | None = None  # a replay: the recording it answered from
    approver: str | None = None  # who decided at gates during the matrix (a scripted approver), if anyone
    resumes: int = 0  # decisions given later with bench resume
    live_options: dict[str, Any] = Field(default_factory=dict)  # the live flags given (a continued matrix reuses them)
    continued: int = 0  # times bench run --resume continued this matrix after it was cut short
    dropped_runs: list[str] = Field(default_factory=list)  # partial runs a continuation removed before going on
    live: LiveManifest | None = None
    notes: list[str] = Field(default_factory=list)
    stopped_because: str | None = None  # a failed matrix: the error that stopped it (a file it could not write)

    def write(self, folder: Path) -> None:
        """Readers see the old manifest or the new one, never half of one; raises WriteFailed naming the file."""
        data = self.model_dump(mode="json", exclude_none=False)
        if self.stopped_because is None:  # only a stopped matrix has the key: every other manifest reads as before
            del data["stopped_because"]
        if self.executor == "local" and not self.duplicate_units:  # only another executor's manifest names it
            del data["executor"], data["duplicate_units"]
        if not self.agents:  # only a matrix with an own agent names its files: every other manifest reads as before
            del data["agents"]
        write_json_atomic(folder / MANIFEST_FILE, data)


class ManifestLedger:
    """The one owner of a run folder's manifest over a matrix's life: written as the matrix starts (so even a run
    stopped while its model server starts says so), amended as its models learn, closed once; nothing else writes
    ``manifest.json``. ``current`` is the manifest as it stands; an amendment is written only when asked."""

    def __init__(self, folder: Path, manifest: Manifest) -> None:
        self.folder = folder
        self._manifest = manifest

    @property
    def current(self) -> Manifest:
        return self._manifest

    def write(self) -> None:
        """Writes the manifest as it stands (atomically; WriteFailed names the file)."""
        self._manifest.write(self.folder)

    def amend(self, update: dict[str, Any], *, write: bool = False) -> Manifest:
        """The manifest with ``update``'s fields changed, kept (and written with ``write``)."""
        self._manifest = self._manifest.model_copy(update=update)
        if write:
            self.write()
        return self._manifest

    def amend_live(self, index: int, live: LiveManifest, *, write: bool = False) -> None:
        """Model ``index``'s live facts (the first model's are also the top-level ``live``)."""
        models = list(self._manifest.models)
        if index < len(models):
            models[index] = models[index].model_copy(update={"live": live})
        update: dict[str, Any] = {"models": models}
        if index == 0:
            update["live"] = live
        self.amend(update, write=write)

    def close(
        self,
        update: dict[str, Any],
        failure: BaseException | None,
        finish: Callable[[Manifest], Manifest] | None = None,
    ) -> Manifest:
        """Writes the final manifest (``finish`` adds what is counted only now), then raises what stopped the matrix,
        if anything. A file that could not be written is named in one line that also says whether the manifest
        recorded it and how to go on."""
        self._manifest = self._manifest.model_copy(update=update)
        go_on = f"bench run --resume {self.folder} continues the matrix once it can be written"
        try:
            if finish is not None:
                self._manifest = finish(self._manifest)
            self.write()
        except WriteFailed as unwritten:
            if not isinstance(failure, WriteFailed):
                raise
            raise WriteFailed(
                failure.path,
                f"{failure.reason}; {unwritten.path} could not record it either ({unwritten.reason}); {go_on}",
            ) from None
        if isinstance(failure, WriteFailed):
            raise WriteFailed(failure.path, f"{failure.reason}; the manifest says so; {go_on}") from None
        if failure is not None:
            raise failure
        return self._manifest


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a run folder, typed; a manifest written before schema 2 is read too."""
    path = folder / MANIFEST_FILE
    try:
        missing = not path.exists() and not path.is_symlink()
    except OSError:  # a name too long, a loop of links: no manifest can be there
        missing = True
    if missing:
        raise UserInputError(f"{folder}: no {MANIFEST_FILE}: not a bench run folder")
    try:
        raw = json.loads(read_text(path, MAX_MANIFEST_BYTES))
    except Unreadable as exc:
        raise UserInputError(f"{path}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # not JSON, nested past the parser's depth, a 4,300-digit number
        raise UserInputError(f"{path}: unreadable ({type(exc).__name__}: {exc})".splitlines()[0][:300]) from None
    if not isinstance(raw, dict):
        raise UserInputError(f"{path}: not a JSON object")
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserInputError(f"{path}: schema_version: must be an integer, got {type(version).__name__}")
    try:
        return Manifest.model_validate(_upgrade(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise UserInputError(f"{path}: {field}: {first['msg']}") from None


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a bench run (a manifest that reads as one)."""
    try:
        read_manifest(folder)
    except UserInputError:
        return False
    return True


_V1_LIVE_KEYS = ("endpoint", "local_model", "local_model_file", "local_model_versions", "sampling", "client")


def _upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 manifests kept the live settings at the top level and had no schema_version."""
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or version >= MANIFEST_SCHEMA_VERSION:  # not a number: validation says so
        return raw
    data = {key: value for key, value in raw.items() if key not in _V1_LIVE_KEYS}
    if raw.get("model_source") == "live":
        data["live"] = {key: raw[key] for key in _V1_LIVE_KEYS if key in raw and raw[key] is not None}
    data["schema_version"] = 1
    return data


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Writes a JSON document so that readers see the old or the new file, never half of one.

    When the system refuses (a full disk), the old file stays as it was, the temporary copy is removed and
    WriteFailed names ``path``.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise WriteFailed(path, exc.strerror or type(exc).__name__) from None
