"""What a run page and ``bench show --prompts`` add to a run's timeline: the model calls from the folder's recording,
the story (rules and oracle) from the scenario file the run used, the path it took through the workflow, and the
other trials of its cell.

The scenario is found by name in the scenario library and checked against the hash the run's manifest kept: a
file changed since the run is still shown, with one line saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserInputError
from harness.models.recording import RECORDING_FILE
from harness.models.run_calls import ModelCall, Recorded, read_calls
from harness.records.manifest import Manifest, read_manifest
from harness.records.run_path import workflow_path
from harness.records.timeline import Timeline, list_runs, scan, trace_path
from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario

LIBRARY = Path(__file__).resolve().parents[1] / "scenarios"  # the installed project's (pipeline/spec.py's too)


@dataclass(frozen=True)
class Sibling:
    """Another trial of the same cell (story, mode, model, gateway policy), or the run itself."""

    run_id: str
    trial: int | None
    href: str | None  # its page, relative to this one (None: no page, the terminal)
    itself: bool


@dataclass(frozen=True)
class Story:
    """The scenario a run used, or why it cannot be shown; ``note`` qualifies one that is shown (changed since)."""

    scenario: Scenario | None
    note: str | None


@dataclass(frozen=True)
class RunExtras:
    calls: list[ModelCall] | None  # None: no recording in the run's folder
    calls_note: str
    story: Story
    path: list[str]  # workflow nodes entered, in order; empty: the mode walks no workflow
    siblings: list[Sibling] = field(default_factory=list)


class FolderFacts:
    """One run folder read once for every run of it: its manifest (hashes, label) and its recording, or, for a
    replay, the recording its manifest's ``replay_of`` names (the calls the replayed runs were answered from)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.manifest: Manifest | None = None
        with contextlib.suppress(UserInputError):
            self.manifest = read_manifest(folder)
        self.recorded: Recorded | None = read_calls(folder)
        self.origin = RECORDING_FILE
        self.missing: str | None = None  # why there is no recording to show
        replayed = self.manifest.replay_of if self.manifest is not None else None
        if self.recorded is None and replayed:
            found = replayed_folder(folder, replayed)
            self.recorded = read_calls(found) if found is not None else None
            if found is not None and self.recorded is not None:
                self.origin = f"{found / RECORDING_FILE}, the recording this run replayed"
            else:
                self.missing = (
                    f"no {RECORDING_FILE} in this run's folder, and none in the recording it replayed "
                    f"({replayed}): gone or moved since"
                )

    @property
    def label(self) -> str | None:
        return self.manifest.label if self.manifest is not None else None

    def calls(self, scenario: str, mode: str, trial: int | None, model: str) -> tuple[list[ModelCall] | None, str]:
        """The run's calls and one line on where they come from (or why there are none)."""
        if self.recorded is None:
            return None, self.missing or (
                f"no {RECORDING_FILE} in this run's folder: only live runs record what the model was sent "
                "(a scripted model's runs do not)"
            )
        found = self.recorded.calls.get((scenario, mode, trial if trial is not None else -1, model), [])
        skipped = f"; {self.recorded.skipped} unreadable lines of it skipped" if self.recorded.skipped else ""
        return found, f"{len(found)} calls from {self.origin}{skipped}"


def replayed_folder(folder: Path, replay_of: str) -> Path | None:
    """The folder a replay's manifest names, as written (absolute, or relative to where bench ran), relative to the
    run folder, or relative to the project; None when none of them holds a recording."""
    named = Path(replay_of)
    for candidate in (named, folder / named, LIBRARY.parent / named):
        if (candidate / RECORDING_FILE).is_file():
            return candidate
    return None


class StoryFinder:
    """Scenario files by name, each read once, checked against the hash a run's manifest kept."""

    def __init__(self, library: Path | None = None):
        local = Path.cwd() / "scenarios"
        self.folders = [library] if library is not None else [local] if local.is_dir() else []
        if library is None and LIBRARY not in self.folders:
            self.folders.append(LIBRARY)
        self._read: dict[Path, tuple[Scenario | None, str | None, str]] = {}

    def story(self, name: str, manifest: Manifest | None) -> Story:
        kept = manifest.scenario_hashes.get(name) if manifest is not None else None
        found: list[tuple[Path, Scenario | None, str | None, str]] = []
        for folder in self.folders:
            path = folder / f"{name}.yaml"
            if path.is_file():
                found.append((path, *self._load(path)))
        if not found:
            return Story(None, f"scenario {name}: no {name}.yaml in {', '.join(str(f) for f in self.folders)}")
        same = [f for f in found if kept is not None and f[3].startswith(kept)]
        path, scenario, problem, digest = (same or found)[0]
        if scenario is None:
            return Story(None, f"{path}: {problem}")
        if kept is None:
            return Story(scenario, f"from {path}; the run's manifest kept no hash of it: it may have changed since")
        if not digest.startswith(kept):
            return Story(
                scenario,
                f"{path} changed since this run (hash {kept} then, {digest[: len(kept)]} now): "
                "the rules and oracle shown are today's",
            )
        return Story(scenario, None)

    def _load(self, path: Path) -> tuple[Scenario | None, str | None, str]:
        if path not in self._read:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            try:
                self._read[path] = (load_scenario(path), None, digest)
            except UserInputError as exc:
                self._read[path] = (None, str(exc), digest)
        return self._read[path]


CellOfRun = tuple[str, tuple[str, str, str, str | None], int | None, str | None]  # run id, cell, trial, href


def siblings_of(cells: Sequence[CellOfRun], run_id: str) -> list[Sibling]:
    """The trials of ``run_id``'s cell among ``cells`` (run id, cell, trial, href), by trial."""
    return siblings_by_run(cells).get(run_id, [])


def siblings_by_run(cells: Sequence[CellOfRun]) -> dict[str, list[Sibling]]:
    """Every run's ``siblings_of``, from one pass over ``cells`` (a run id given twice: its first cell)."""
    trials: dict[tuple[str, str, str, str | None], list[tuple[str, int | None, str | None]]] = {}
    first: dict[str, tuple[str, str, str, str | None]] = {}
    for rid, cell, trial, href in cells:
        trials.setdefault(cell, []).append((rid, trial, href))
        first.setdefault(rid, cell)
    for same in trials.values():
        same.sort(key=lambda s: (s[1] is None, s[1] or 0, s[0]))
    return {
        run_id: [Sibling(rid, trial, href, rid == run_id) for rid, trial, href in trials[cell]]
        for run_id, cell in first.items()
    }


def extras_of_run(where: Path, t: Timeline, library: Path | None = None) -> RunExtras:
    """Everything ``bench show --prompts`` adds to one run's timeline, read from its folder (or its traces.jsonl)."""
    trace = trace_path(where)
    facts = FolderFacts(trace.parent)
    run = t.run
    calls, note = facts.calls(run.scenario, run.mode, run.trial, run.model)
    events = scan(trace, only=run.run_id).runs.get(run.run_id, [])
    runs, _ = list_runs(trace)
    cells = [(r.run_id, (r.scenario, r.mode, r.model, None), r.trial, None) for r in runs]
    return RunExtras(
        calls=calls,
        calls_note=note,
        story=StoryFinder(library).story(run.scenario, facts.manifest),
        path=workflow_path(events),
        siblings=siblings_of(cells, run.run_id),
    )
