"""bench resume: one decision at a suspended run's gate, and the run going on from its checkpoint exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.core.approvals import NobodyYet
from harness.core.signals import StopRequest
from harness.errors import UserInputError
from harness.matrix.cell_runner import Cell, MatrixConfig
from harness.matrix.exit_status import RunEnds
from harness.matrix.pipeline import Notify, run_async
from harness.matrix.spec import project_dirs
from harness.models.choice import choose, endpoint_from_env, open_source
from harness.models.config import LiveOptions
from harness.records.checkpoint import Checkpoint, CheckpointStore, Decision
from harness.records.folder import TRACE_FILE, RunFolder
from harness.records.manifest import read_manifest
from harness.records.trace import RunOutcome, TraceWriter, read_events
from harness.scenario.model import Scenario
from modes import MODES


@dataclass(frozen=True)
class ResumeResult:
    """A resumed run's new outcome, and where its trace went on."""

    outcome: RunOutcome
    traces: Path
    stop: StopRequest

    def exit_status(self) -> tuple[int, str] | None:
        """As ``RunResult.exit_status``, for the one run that went on."""
        if self.outcome.status == "interrupted":
            return self.stop.exit_code, "interrupted; finished trace lines are kept"
        ends = RunEnds()
        ends.add_outcome(self.outcome)
        return ends.verdict()


def resume(
    folder: Path,
    run_id: str,
    decision: Decision,
    *,
    who: str,
    note: str = "",
    gate: str | None = None,
    env: Mapping[str, str] | None = None,
    scenarios_dir: Path | None = None,
    notify: Notify = lambda line: None,
) -> ResumeResult:
    """Continues one suspended run of ``folder`` with a person's decision, in this process, with the same model
    source; its trace goes on in the same file. Anything that does not fit (a finished run, a gate already
    decided, another gate, an edited checkpoint or scenario) is refused before anything is written."""
    from harness.matrix.cell_runner import execute_run
    from harness.records.checkpoint import HumanDecision

    held = RunFolder.attach(folder)
    try:
        manifest = read_manifest(folder)
        checkpoint = _pending(folder, run_id, gate)
        scenario = _unchanged_scenario(checkpoint, scenarios_dir)
        _trace_ends_at(folder / TRACE_FILE, checkpoint)
        if checkpoint.mode not in MODES:
            raise UserInputError(f"run {run_id}: mode '{checkpoint.mode}' is not registered any more")
        choice = choose(checkpoint.model)  # read once; the run goes on with the same source
        endpoint = endpoint_from_env(env) if choice.needs_endpoint else None
        human = HumanDecision(gate=checkpoint.pending_gate or "", decision=decision, who=who, note=note)
        stop = StopRequest()
        live = manifest.live
        options = LiveOptions(
            **{k: v for k, v in (live.sampling if live else {}).items() if k in LiveOptions.model_fields}
        )
        with (
            stop.installed(),
            open_source(
                choice,
                endpoint=endpoint,
                options=options,
                concurrency=1,
                run_folder=folder,
                scenarios=[scenario],
                notify=notify,
            ) as opened,
        ):
            config = MatrixConfig(
                model=opened.source,
                gateway_policy=checkpoint.gateway_policy,
                stop=stop,
                checkpoints=CheckpointStore(folder),
                model_choice=checkpoint.model,
            )
            cell = Cell(scenario, checkpoint.mode, checkpoint.trial)

            async def go() -> RunOutcome:
                task = asyncio.current_task()
                assert task is not None
                stop.attach(task)
                try:
                    return await execute_run(
                        cell,
                        config,
                        writer.write,
                        run_id=run_id,
                        seed=checkpoint.seed,
                        model=opened.source.for_run(checkpoint.seed),
                        gatekeeper=NobodyYet(),
                        resuming=checkpoint,
                        decision=human,
                    )
                finally:
                    await config.model.aclose()

            with TraceWriter(folder / TRACE_FILE) as writer:
                outcome = run_async(go())
        manifest.model_copy(update={"resumes": manifest.resumes + 1}).write(folder)
        return ResumeResult(outcome, folder / TRACE_FILE, stop)
    finally:
        held.release()


def _pending(folder: Path, run_id: str, gate: str | None) -> Checkpoint:
    """The run's checkpoint, if it waits for a decision (at ``gate``, when one is named); else one clear line."""
    checkpoint = CheckpointStore(folder).load(run_id)
    if checkpoint is None:
        last = _last_summary(folder / TRACE_FILE, run_id)
        if last is None:
            raise UserInputError(
                f"{folder}: no run {run_id} (bench runs {folder} lists the runs waiting for a decision)"
            )
        raise UserInputError(f"run {run_id} is not suspended (it ended {last}); only a suspended run can be resumed")
    if checkpoint.status != "suspended":
        decided = checkpoint.decisions[-1] if checkpoint.decisions else None
        what = f"'{decided.gate}' was already decided ({decided.decision}, by {decided.who})" if decided else "decided"
        raise UserInputError(f"run {run_id}: {what}; nothing waits for a decision")
    if gate is not None and gate != checkpoint.pending_gate:
        raise UserInputError(f"run {run_id} waits at '{checkpoint.pending_gate}', not at '{gate}'")
    return checkpoint


def _unchanged_scenario(checkpoint: Checkpoint, scenarios_dir: Path | None) -> Scenario:
    from harness.matrix.cell_runner import scenario_digest
    from harness.scenario.load import load_scenario

    folder, _ = project_dirs(scenarios_dir)
    path = folder / f"{checkpoint.scenario}.yaml"
    if not path.is_file():
        raise UserInputError(f"scenario '{checkpoint.scenario}' is not in {folder} any more; cannot resume")
    scenario = load_scenario(path)
    if scenario_digest(scenario) != checkpoint.scenario_digest:
        raise UserInputError(
            f"scenario '{checkpoint.scenario}' changed since the run suspended; refusing to resume "
            "it against a different story"
        )
    return scenario


def _last_summary(traces: Path, run_id: str) -> str | None:
    found = None
    if traces.exists():
        for event in read_events(traces):
            if event.run_id == run_id and event.kind == "summary" and event.outcome is not None:
                found = event.outcome.status
    return found


def _trace_ends_at(traces: Path, checkpoint: Checkpoint) -> None:
    """The run's last line must be the suspended summary its checkpoint follows, or the two are out of step."""
    last = None
    for event in read_events(traces):
        if event.run_id == checkpoint.run_id:
            last = event
    if (
        last is None
        or last.kind != "summary"
        or last.seq != checkpoint.next_seq - 1
        or last.outcome is None
        or last.outcome.status != "suspended"
    ):
        raise UserInputError(
            f"{traces}: run {checkpoint.run_id} does not end where its checkpoint says "
            "(a suspended summary); refusing to resume it"
        )
