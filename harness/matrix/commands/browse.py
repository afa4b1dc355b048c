"""Reading runs back for bench runs and bench show: the folders, the runs waiting for a decision, one run's timeline."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserInputError
from harness.matrix.pipeline.spec import project_dirs
from harness.records.manifest import read_manifest


def folders(root: Path | None = None) -> list[Any]:
    """The run folders at or under ``root`` (default: the results folder), oldest first
    (harness.matrix.commands.listing.FolderRow each)."""
    from harness.matrix.commands.listing import run_folders

    return run_folders(root if root is not None else project_dirs()[1])


def waiting(folder: Path) -> list[Any]:
    """The runs of a folder at a gate: waiting for a decision, or with one given and not yet carried out
    (harness.matrix.commands.listing.WaitingRun each, its ``state`` says which)."""
    from harness.matrix.commands.listing import waiting_runs

    return waiting_runs(folder)


@dataclass(frozen=True)
class Shown:
    """What ``bench show`` found: the timeline of the one run selected, or the runs to choose from."""

    timeline: Any  # harness.records.timeline.Timeline, or None when the selection names no single run
    matches: list[Any]  # harness.records.timeline.RunRef of every run the selection matched
    skipped: int  # unreadable trace lines
    stops: dict[str, Any] = field(default_factory=dict)  # run id -> its stop waiting for a decision (WaitingRun)


def show(
    folder: Path,
    *,
    run_id: str | None = None,
    scenario: str | None = None,
    mode: str | None = None,
    trial: int | None = None,
) -> Shown:
    """One run of a folder (or traces.jsonl) as a timeline when the selection names exactly one; else the
    runs it matches. A selection that matches nothing is one line naming what there is.

    A whole run id alone reads only the lines that mention it (a large trace opens fast); anything else reads
    the trace's listing first, and counts every line that is not an event.
    """
    from harness.records.timeline import list_runs, select, timeline

    label = None
    if folder.is_dir():
        with contextlib.suppress(UserInputError):
            label = read_manifest(folder).label
    stops = _waiting_stops(folder if folder.is_dir() else folder.parent)
    if run_id is not None and scenario is None and mode is None and trial is None:
        found, skipped = timeline(folder, run_id, label=label)
        if found is not None:
            return Shown(found, [found.run], skipped, stops)
    runs, skipped = list_runs(folder)
    matches = select(runs, run_id=run_id, scenario=scenario, mode=mode, trial=trial)
    if not matches:
        raise UserInputError(_nothing_matches(folder, runs, run_id, scenario, mode, trial))
    if len(matches) > 1:
        return Shown(None, matches, skipped, stops)
    one, _ = timeline(folder, matches[0].run_id, label=label)
    return Shown(one, matches, skipped, stops)


def _waiting_stops(folder: Path) -> dict[str, Any]:
    """The folder's runs waiting for a decision, by run id; none where its checkpoint database does not read (bench
    runs DIR says why): the timeline is shown all the same."""
    from harness.matrix.commands.listing import waiting_runs
    from harness.records.checkpoint import CHECKPOINT_FILE

    if not (folder / CHECKPOINT_FILE).is_file():
        return {}
    try:
        return {w.run_id: w for w in waiting_runs(folder) if w.state == "waiting"}
    except UserInputError:
        return {}


def _nothing_matches(
    folder: Path, runs: list[Any], run_id: str | None, scenario: str | None, mode: str | None, trial: int | None
) -> str:
    if not runs:
        return f"{folder}: the trace holds no runs"
    asked = " ".join(
        f"--{flag} {value}"
        for flag, value in (("run", run_id), ("scenario", scenario), ("mode", mode), ("trial", trial))
        if value is not None
    )
    if run_id is not None and scenario is None and mode is None and trial is None:
        hint = "bench show DIR without --run lists its runs"
    else:
        names = {
            "scenarios": sorted({r.scenario for r in runs}),
            "modes": sorted({r.mode for r in runs}),
            "trials": sorted({r.trial for r in runs if r.trial is not None}),
        }
        hint = "; ".join(f"{key}: {', '.join(str(v) for v in values)}" for key, values in names.items())
    return f"{folder}: no run matches {asked} ({hint})"
