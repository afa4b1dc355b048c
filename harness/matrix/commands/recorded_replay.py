"""bench replay: a recorded matrix run again offline, and how its trace differs from the recording."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserInputError
from harness.matrix.cell.own_agent_files import load_recorded
from harness.matrix.commands.trace_diff import Divergence, compare_traces
from harness.matrix.pipeline.driver import Matrix, Notify, OnDone, OnEvent, RunResult, run
from harness.matrix.pipeline.spec import RunSpec, project_dirs
from harness.models.choice import choose
from harness.records.folder import TRACE_FILE
from harness.records.manifest import read_manifest
from harness.records.trace import read_events
from harness.scenario.load import load_all
from modes import MODES


@dataclass(frozen=True)
class ReplayCheck:
    """A recorded matrix run again offline, and how its trace differs from the recorded one."""

    result: RunResult
    divergences: list[Divergence]
    notes: list[str]


def replay(
    recording: Path,
    *,
    scenarios_dir: Path | None = None,
    out: Path | None = None,
    on_done: OnDone | None = None,
    notify: Notify = lambda line: None,
    on_plan: Callable[[Matrix], None] | None = None,
    on_event: OnEvent | None = None,
    label: str | None = None,
) -> ReplayCheck:
    """Re-runs the recorded matrix on the recorded answers and compares the two traces run by run."""

    choice = choose(f"replay:{recording}")  # a folder without a recording fails here, naming it
    recorded_trace = recording / TRACE_FILE
    if not recorded_trace.is_file():
        raise UserInputError(f"{recording}: no {TRACE_FILE} to compare with")
    recorded = read_manifest(recording)
    load_recorded(recorded.modes, recorded.agents)  # the own agents, from their recorded files
    folder_of_scenarios, _ = project_dirs(scenarios_dir)
    available = load_all(folder_of_scenarios)
    notes = [
        f"recorded {kind} '{name}' no longer exists; its runs cannot be replayed"
        for kind, names, known in (("scenario", recorded.scenarios, available), ("mode", recorded.modes, MODES))
        for name in names
        if name not in known
    ]
    spec = RunSpec.build(
        modes=tuple(m for m in recorded.modes if m in MODES),
        scenarios=tuple(s for s in recorded.scenarios if s in available),
        scenarios_dir=folder_of_scenarios,
        model=choice,
        out=out,
        command=tuple(sys.argv),
        label=label,
    )
    result = run(spec, on_done=on_done, notify=notify, on_plan=on_plan, on_event=on_event)
    divergences = [] if result.interrupted else compare_traces(read_events(recorded_trace), read_events(result.traces))
    return ReplayCheck(result, divergences, notes)
