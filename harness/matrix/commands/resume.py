"""bench resume: one decision at a suspended run's gate, carried out exactly once whatever crashes when, and only
on the stop its command was meant for.

The decision is claimed in the checkpoint database before anything of it is written (a compare-and-set:
suspended at this stop -> deciding), then carried out; the run's next stop, or its end, replaces the claim.
A resume killed or interrupted in between leaves the claim, and the next ``bench resume`` of the run carries
that same decision out again from the same checkpoint, writing only the trace lines the killed one did not
(``harness.matrix.commands.reconcile``): nothing is committed twice and the checkpoint and the trace never disagree
for good. A decision lands only on the stop that was pending when its command started (and at the gate
``--gate`` names): a stop another decision moved on is refused, saying who decided what and where the run
waits now. ``--stop ID`` names the stop itself, by the short id ``bench runs`` and ``bench show`` print
(``harness.records.checkpoint.stop_id``): an id of a stop decided before is refused as "already decided", so a command
retyped after its run moved on, to another gate or back to the same one after a revision, decides nothing.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.core.approvals import NobodyYet
from harness.core.model_port import Model
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError
from harness.matrix.cell.cell_runner import MatrixConfig
from harness.matrix.cell.frameworks import ready_modes
from harness.matrix.cell.own_agent_files import changed_agent, load_recorded
from harness.matrix.cell.runtime_resume import lines_met
from harness.matrix.cell.units import Cell
from harness.matrix.commands.reconcile import CatchUp, TraceDiverged, decision_in_trace, events_past, run_events
from harness.matrix.executors.in_process import run_async
from harness.matrix.pipeline.driver import Notify
from harness.matrix.pipeline.exit_status import RunEnds
from harness.matrix.pipeline.spec import project_dirs
from harness.models.choice import ModelChoice, choose, endpoint_from_env, open_source
from harness.models.config import LiveOptions
from harness.records.checkpoint import CHECKPOINT_FILE, Checkpoint, CheckpointStore, Decision, HumanDecision
from harness.records.folder import TRACE_FILE, RunFolder
from harness.records.manifest import Manifest, ManifestLedger, read_manifest
from harness.records.trace import RunOutcome, TraceEvent, TraceWriter
from harness.records.write_faults import wrote
from harness.scenario.model import Scenario
from modes import MODES
from modes.base import is_runtime
from modes.runtimes.own_agent import is_agent_spec
from modes.runtimes.process import ProcessAgent

SHORTEST_PREFIX = 4  # as bench show --run: a shorter one names too many runs to be meant


@dataclass(frozen=True)
class ResumeResult:
    """A resumed run's new outcome (None: interrupted, its decision kept for the next resume), and its trace."""

    outcome: RunOutcome | None
    traces: Path
    stop: StopRequest
    run_id: str = ""
    carried_out: HumanDecision | None = None  # a decision claimed before this call (then cut short) that it did
    claimed: bool = True  # interrupted (outcome None): whether a decision stands claimed for the next resume

    def exit_status(self) -> tuple[int, str] | None:
        """As ``RunResult.exit_status``, for the one run that went on; a signal that came once the decision was
        applied still ends the command with its code (130, 143), and its line says the decision was applied."""
        if self.outcome is None and not self.claimed:
            return self.stop.exit_code, "interrupted before a decision was claimed; nothing decided, nothing written"
        if self.outcome is None:
            return self.stop.exit_code, (
                f"interrupted; the decision is kept: bench resume {self.traces.parent} --run {self.run_id} "
                "carries it out"
            )
        if self.stop.requested:
            where = f" at '{self.outcome.suspended_at}'" if self.outcome.suspended_at else ""
            return self.stop.exit_code, (
                f"stopped by {signal.Signals(self.stop.signum or signal.SIGINT).name} after the decision was applied: "
                f"run {self.run_id} is {self.outcome.status}{where}; nothing is left to carry out"
            )
        ends = RunEnds()
        ends.add_outcome(self.outcome)
        return ends.verdict()


@dataclass(frozen=True)
class Standing:
    """Where a run stands: its checkpoint, the trace lines past it, and the decision claimed there, if any."""

    checkpoint: Checkpoint
    past: list[TraceEvent]  # lines a claimed decision wrote before its resume was cut short
    claim: HumanDecision | None  # claimed in the database, or (bench before claims) found in the trace

    @property
    def open(self) -> bool:
        return self.checkpoint.status in ("suspended", "deciding")


def resume(
    folder: Path,
    run_id: str,
    decision: Decision | None,
    *,
    who: str,
    note: str = "",
    gate: str | None = None,
    env: Mapping[str, str] | None = None,
    scenarios_dir: Path | None = None,
    notify: Notify = lambda line: None,
    started: float | None = None,
    confirm: Callable[[str], bool] | None = None,
    named: bool = False,
    stop_id: str | None = None,
    stop: StopRequest | None = None,
) -> ResumeResult:
    """Continues one suspended run of ``folder`` with a person's decision, in this process, with the same model
    source; its trace goes on in the same file. ``run_id`` may be a unique prefix; ``started`` is when the
    command started (default: now): only a stop pending by then is decided. A decision claimed before (by a
    resume cut short) is carried out first; ``decision`` None only does that. Anything that does not fit (a
    finished run, a stop already decided, another gate, an edited checkpoint or scenario) is refused before
    anything is written.

    A decision names what it decides (``named``: the command line's rule): for a run that can stop more than once
    (its story's gates and its mode's own review points, such as hybrid_planner's plan review, counted together, or
    a run that stopped before), a decision without ``gate`` is put to the person (``confirm``, given the question, on
    a terminal) or refused in one line, so retyping a command after its run moved on to its next stop never decides
    a stop nobody saw. ``stop_id`` names the stop decided by its short id (``bench runs``): only the run's open stop
    is taken, one decided before is refused as already decided.

    SIGINT and SIGTERM are ``stop``'s (a new one unless given) for the whole call: one that comes before anything is
    claimed, or while the decision is carried out, ends the call with the outcome None (``claimed`` says whether a
    decision is kept); one that comes after the decision was applied is only noted (``stop.requested``), the outcome
    given. Which of these it was is read from the checkpoint database, never guessed from where the signal landed."""
    started = time.time() if started is None else started
    stop = StopRequest() if stop is None else stop
    traces, seen = folder / TRACE_FILE, None
    with stop.installed():
        try:
            read_manifest(folder)  # not a run folder: one line before anything else
            run_id = resolve_run(folder, run_id)
            seen = _standing(folder, run_id)  # before the lock: the stop this command is meant for
            if stop_id is not None:
                gate = _gate_of_stop(seen, stop_id, gate)
            _refuse_early(seen, decision, gate)
            held = _attach(folder, seen)
            try:
                now = _standing(folder, run_id)
                if now.claim is not None:  # decided before, cut short: carry that decision out first
                    if gate is not None and decision is None and gate != now.claim.gate:
                        raise UserInputError(
                            f"run {run_id}: the decision claimed is at '{now.claim.gate}', not at '{gate}'"
                        )
                    result = _carry_out(folder, now, now.claim, env, scenarios_dir, notify, stop)
                    if result.outcome is None:  # interrupted again: the claim still stands
                        return result
                    notify(f"note: run {run_id}: carried out the decision claimed before ({_said(now.claim)})")
                    if decision is None or (seen.claim is not None and _same(seen.claim, decision, who, gate)):
                        return result
                    raise UserInputError(_decided_before(CheckpointStore(folder).load(run_id), seen.checkpoint.stop))
                if decision is None:
                    raise UserInputError(_nothing_claimed(now.checkpoint))
                _check_target(seen, now, started, gate)
                if named:
                    _named_or_confirmed(now.checkpoint, gate, decision, scenarios_dir, confirm)
                human = HumanDecision(gate=now.checkpoint.pending_gate or "", decision=decision, who=who, note=note)
                return _carry_out(folder, now, human, env, scenarios_dir, notify, stop)
            finally:
                held.release()
        except KeyboardInterrupt:  # a signal before the run went on (a second one: at once)
            if seen is None:
                return ResumeResult(None, traces, stop, run_id, claimed=False)
            return _interrupted(folder, run_id, seen.checkpoint.stop, stop, None, (decision, who))


def _interrupted(
    folder: Path,
    run_id: str,
    target: int,
    stop: StopRequest,
    ended: RunOutcome | None,
    asked: tuple[Decision | None, str] = (None, ""),
) -> ResumeResult:
    """What an interrupted resume leaves, from the database: the stop it targeted decided and carried out (the run
    stands at a later stop, or ended: the outcome its trace's last summary holds), its decision claimed and kept for
    the next resume, or nothing decided. ``asked`` (decision, who), when given, must be what that stop was decided
    with: a decision another command gave there is not this one's."""
    traces = folder / TRACE_FILE
    now = CheckpointStore(folder).load(run_id)
    if now is not None and now.status == "deciding":
        return ResumeResult(None, traces, stop, run_id)
    decided = now.decisions[target] if now is not None and target < len(now.decisions) else None
    if decided is None or (asked[0] is not None and (decided.decision, decided.who) != asked):
        return ResumeResult(None, traces, stop, run_id, claimed=False)
    if ended is None:
        summaries = [e.outcome for e in run_events(traces, run_id) if e.kind == "summary" and e.outcome is not None]
        ended = summaries[-1] if summaries else None
    return ResumeResult(ended, traces, stop, run_id, claimed=ended is None)


def _gate_of_stop(seen: Standing, given: str, gate: str | None) -> str:
    """The gate of the stop ``given`` names, when it is the run's open stop (and at ``gate``, if that is given too);
    a stop decided before is refused as already decided, any other id in one line saying where the run stands."""
    checkpoint, wanted = seen.checkpoint, given.strip().lower()
    if seen.open and wanted == checkpoint.stop_id:
        pending = checkpoint.pending_gate or ""
        if gate is not None and gate != pending:
            raise UserInputError(f"run {checkpoint.run_id}: stop {wanted} is at '{pending}', not at '{gate}'")
        return pending
    earlier = checkpoint.decided_stop(wanted)
    if earlier is not None:
        raise UserInputError(_decided_before(checkpoint, earlier))
    where = (
        f"it waits at '{checkpoint.pending_gate}', stop {checkpoint.stop_id}"
        if seen.open
        else "nothing waits for a decision"
    )
    raise UserInputError(
        f"--stop {given}: run {checkpoint.run_id} has no such stop ({where}; bench runs DIR lists the stops waiting)"
    )


def _named_or_confirmed(
    checkpoint: Checkpoint,
    gate: str | None,
    decision: Decision,
    scenarios_dir: Path | None,
    confirm: Callable[[str], bool] | None,
) -> None:
    """A decision without ``--gate`` on a run that can stop more than once over its life (at its story's gates and
    its mode's own review points, or again where it stopped before): asked, or refused in one line."""
    if gate is not None:
        return
    places = _stop_places(checkpoint, _unchanged_scenario(checkpoint, scenarios_dir))
    if len(places) < 2 and not checkpoint.decisions:
        return
    waits = checkpoint.pending_gate
    earlier = ", ".join(f"'{d.gate}' ({_said(d)})" for d in checkpoint.decisions) or "none"
    stops = (
        f"can stop at {len(places)} gates, {', '.join(places[:-1])} and {places[-1]}"
        if len(places) > 1
        else f"has stopped {checkpoint.stop + 1} times at '{waits}'"
    )
    again = any(d.gate == waits for d in checkpoint.decisions)  # back after a revision: --gate names the old stop too
    name = f"--stop {checkpoint.stop_id}" if again else f"--gate {waits} or --stop {checkpoint.stop_id}"
    question = (
        f"run {checkpoint.run_id} {stops}; it waits now at '{waits}', stop {checkpoint.stop_id} (decided before: "
        f"{earlier}); {decision} '{waits}'?"
    )
    if confirm is not None and confirm(question):
        return
    if confirm is not None:
        raise UserInputError(f"run {checkpoint.run_id}: nothing decided")
    raise UserInputError(
        f"run {checkpoint.run_id} {stops}: name the one you decide, {name} (it waits there now; decided before: "
        f"{earlier}); a retyped command then says it was already decided"
    )


def _stop_places(checkpoint: Checkpoint, scenario: Scenario) -> list[str]:
    """Where a run can stop, each quoted for a line: its mode's own review points (a plan is reviewed before it runs),
    then its story's gates."""
    mode = MODES.get(checkpoint.mode)  # an own agent's spec (not registered here) has no review points of its own
    own = sorted(mode.review_points) if mode is not None else []
    return [*(f"{checkpoint.mode}'s own '{point}'" for point in own), *(f"'{g.name}'" for g in scenario.gates)]


def resolve_run(folder: Path, given: str) -> str:
    """The run id ``given`` names: itself, or the one run whose id starts with it (at least 4 characters, as
    ``bench show --run``); an ambiguous prefix is one line listing the candidates."""
    known = CheckpointStore(folder).run_ids()
    if given in known:
        return given
    ids = set(known) | _trace_run_ids(folder / TRACE_FILE)
    if given in ids or len(given) < SHORTEST_PREFIX:
        return given
    matches = sorted(run for run in ids if run.startswith(given))
    if len(matches) > 1:
        shown = ", ".join(matches[:8]) + (f" and {len(matches) - 8} more" if len(matches) > 8 else "")
        raise UserInputError(f"--run {given}: {len(matches)} runs start with it ({shown}); give more of the id")
    return matches[0] if matches else given


RUN_ID_FIELD = re.compile(r'"run_id"\s*:\s*"([^"\\]+)"')


def _trace_run_ids(traces: Path) -> set[str]:
    if not traces.exists():
        return set()
    if not traces.is_file():
        raise UserInputError(f"{traces}: not a regular file")
    with open(traces, encoding="utf-8", errors="replace") as handle:
        return {found.group(1) for line in handle if (found := RUN_ID_FIELD.search(line))}


def _standing(folder: Path, run_id: str) -> Standing:
    """Reads (never writes) where the run stands; one line for anything that is not a resumable run."""
    checkpoint = CheckpointStore(folder).load(run_id)
    if checkpoint is None:
        raise UserInputError(_no_checkpoint(folder, run_id))
    if checkpoint.status not in ("suspended", "deciding"):
        return Standing(checkpoint, [], None)
    traces = folder / TRACE_FILE
    past = events_past(traces, run_events(traces, run_id), checkpoint)
    if checkpoint.status == "deciding":
        return Standing(checkpoint, past, checkpoint.claim)
    return Standing(checkpoint, past, decision_in_trace(traces, past, checkpoint))


def _no_checkpoint(folder: Path, run_id: str) -> str:
    """Why a run has no checkpoint: it never suspended, it does not exist, or its database lost it."""
    events = run_events(folder / TRACE_FILE, run_id)
    if not events:
        return f"{folder}: no run {run_id} (bench runs {folder} lists the runs waiting for a decision)"
    ends = [e.outcome for e in events if e.kind == "summary" and e.outcome is not None]
    if not ends or ends[-1].status != "suspended":
        how = f"it ended {ends[-1].status}" if ends else "it has no summary: it never finished"
        return f"run {run_id} is not suspended ({how}); only a suspended run can be resumed"
    database, gate = folder / CHECKPOINT_FILE, ends[-1].suspended_at
    if not database.exists():
        return (
            f"{database}: missing: run {run_id} ended suspended at '{gate}' but the checkpoint database is gone "
            "(deleted); the run cannot be resumed"
        )
    return (
        f"{database}: holds no checkpoint of run {run_id}, though its trace ends suspended at '{gate}' "
        "(its rows were deleted); the run cannot be resumed"
    )


def _refuse_early(seen: Standing, decision: Decision | None, gate: str | None) -> None:
    """What can be refused from what the command saw as it started, before it takes the folder's lock."""
    checkpoint = seen.checkpoint
    if not seen.open:
        raise UserInputError(_decided_before(checkpoint, checkpoint.stop - 1))
    if seen.claim is None and decision is None:
        raise UserInputError(_nothing_claimed(checkpoint))
    if seen.claim is None and gate is not None and gate != checkpoint.pending_gate:
        raise UserInputError(_not_there(checkpoint, gate))


def _not_there(checkpoint: Checkpoint, gate: str) -> str:
    """Why a run does not wait at ``gate``: decided there already (who, what), or it waits elsewhere."""
    earlier = [stop for stop, decided in enumerate(checkpoint.decisions) if decided.gate == gate]
    if earlier:
        return _decided_before(checkpoint, earlier[-1])
    return f"run {checkpoint.run_id} waits at '{checkpoint.pending_gate}', not at '{gate}'"


def _attach(folder: Path, seen: Standing) -> RunFolder:
    """The folder's lock; while another resume holds it, one line saying what it is deciding, when that shows."""
    try:
        return RunFolder.attach(folder)
    except UserInputError:
        now = CheckpointStore(folder).load(seen.checkpoint.run_id)
        if now is not None and now.status == "deciding" and now.claim is not None:
            raise UserInputError(
                f"run {now.run_id}: '{now.claim.gate}' is being decided now ({_said(now.claim)}) by another "
                "bench resume"
            ) from None
        if now is not None and now.stop > seen.checkpoint.stop:
            raise UserInputError(_decided_before(now, seen.checkpoint.stop)) from None
        raise


def _check_target(seen: Standing, now: Standing, started: float, gate: str | None) -> None:
    """The run must still wait at the stop the command saw, a stop pending when the command started, at ``gate``."""
    checkpoint, target = now.checkpoint, seen.checkpoint.stop
    if not now.open or checkpoint.stop != target or seen.claim is not None:
        raise UserInputError(_decided_before(checkpoint, target))
    if checkpoint.saved_at is not None and checkpoint.saved_at > started:
        raise UserInputError(_decided_before(checkpoint, target - 1, after_start=True))
    if gate is not None and gate != checkpoint.pending_gate:
        raise UserInputError(_not_there(checkpoint, gate))


def _decided_before(checkpoint: Checkpoint | None, stop: int, *, after_start: bool = False) -> str:
    """One line: who decided the stop a command was meant for, what, and where the run waits now."""
    if checkpoint is None:  # the row went away meanwhile (a folder rewritten by hand)
        return "the run's checkpoint is gone; nothing waits for a decision"
    run_id = checkpoint.run_id
    if checkpoint.status == "suspended":
        where = f"it waits now at '{checkpoint.pending_gate}'"
    elif checkpoint.status == "deciding" and checkpoint.claim is not None:
        where = f"'{checkpoint.pending_gate}' is being decided now ({_said(checkpoint.claim)})"
    else:
        where = "nothing waits for a decision"
    if 0 <= stop < len(checkpoint.decisions):
        decided = checkpoint.decisions[stop]
    elif checkpoint.status == "deciding" and stop == checkpoint.stop and checkpoint.claim is not None:
        decided = checkpoint.claim
    else:
        return f"run {run_id} stopped at '{checkpoint.pending_gate}' after this command started; decide it anew"
    when = " after this command started" if after_start else ""
    return f"run {run_id}: '{decided.gate}' was already decided ({_said(decided)}){when}; {where}"


def _nothing_claimed(checkpoint: Checkpoint) -> str:
    return (
        f"run {checkpoint.run_id} waits at '{checkpoint.pending_gate}' with no decision to carry out; "
        "give one of --approve, --reject and --revise"
    )


def _said(decision: HumanDecision) -> str:
    return f"{decision.decision}, by {decision.who}"


def _same(claimed: HumanDecision, decision: Decision, who: str, gate: str | None) -> bool:
    """Whether a command asks again for the decision it claimed before it was cut short (a retry)."""
    return (claimed.decision, claimed.who) == (decision, who) and gate in (None, claimed.gate)


def _carry_out(
    folder: Path,
    standing: Standing,
    decision: HumanDecision,
    env: Mapping[str, str] | None,
    scenarios_dir: Path | None,
    notify: Notify,
    stop: StopRequest,
) -> ResumeResult:
    """Claims ``decision`` (unless it is claimed already) and runs the run on from its checkpoint with it, writing
    only the trace lines the trace does not hold yet; the run's next stop, or its end, replaces the claim. A signal
    after the run went on is only noted (``stop.requested``)."""
    from harness.matrix.cell.cell_runner import execute_run

    checkpoint, run_id = standing.checkpoint, standing.checkpoint.run_id
    scenario = _unchanged_scenario(checkpoint, scenarios_dir)
    if checkpoint.mode not in MODES and not is_agent_spec(checkpoint.mode):
        raise UserInputError(f"run {run_id}: mode '{checkpoint.mode}' is not registered any more")
    manifest = read_manifest(folder)
    ready_modes(load_recorded([checkpoint.mode], manifest.agents))  # an own agent from its recorded file, unchanged
    changed = changed_agent(checkpoint.mode, manifest.agents)
    if changed is not None:
        raise UserInputError(f"run {run_id}: {changed}")
    refusal = _resume_refused(MODES[checkpoint.mode])  # an agent process that declares no resume: nothing claimed
    if refusal is not None:
        raise UserInputError(f"run {run_id}: {refusal}")
    framework = is_runtime(MODES[checkpoint.mode])
    choice = choose(checkpoint.model)  # read once; the run goes on with the same source
    endpoint = endpoint_from_env(env, model=choice.name or None) if choice.needs_endpoint else None  # live:NAME
    store = CheckpointStore(folder)
    claimed = checkpoint if checkpoint.status == "deciding" else store.claim(checkpoint, decision)
    _count_decisions(folder, manifest, store)
    live = manifest.live
    options = LiveOptions(**{k: v for k, v in (live.sampling if live else {}).items() if k in LiveOptions.model_fields})
    traces = folder / TRACE_FILE
    ended: list[RunOutcome] = []  # the run's outcome once it has one (an interruption may come after)
    with (
        open_source(
            choice,
            endpoint=endpoint,
            options=options,
            concurrency=1,
            run_folder=folder,
            scenarios=[scenario],
            notify=notify,
            label=checkpoint.model_label,
        ) as opened,
    ):
        config = MatrixConfig(
            model=opened.source,
            gateway_policy=checkpoint.gateway_policy,
            stop=stop,
            checkpoints=store,
            model_choice=checkpoint.model,
        )
        cell = Cell(scenario, checkpoint.mode, checkpoint.trial)
        model = _answering_again(folder, choice, cell, opened.source.for_run(checkpoint.seed))

        async def go(sink: CatchUp) -> RunOutcome:
            task = asyncio.current_task()
            assert task is not None
            stop.attach(task)
            try:
                ended.append(
                    await execute_run(
                        cell,
                        config,
                        sink,
                        run_id=run_id,
                        seed=checkpoint.seed,
                        model=model,
                        gatekeeper=NobodyYet(),
                        resuming=claimed,
                        decision=decision,
                        past=standing.past if framework else (),
                    )
                )
                return ended[0]
            finally:
                await config.model.aclose()

        with TraceWriter(traces) as writer:
            met = lines_met(standing.past) if framework else 0  # a framework's run goes on from the killed one's
            sink = CatchUp(traces, checkpoint.next_seq, standing.past, writer.write, met)
            try:
                outcome: RunOutcome | None = run_async(go(sink))
            except (RunInterrupted, asyncio.CancelledError):
                outcome = None  # the claim stays (unless the run had settled it): the next resume carries it out
            except TraceDiverged as diverged:
                raise UserInputError(str(diverged)) from None
            finally:
                stop.detach()  # the run went on or stopped: a signal from now on is only noted
    if outcome is None:
        return _interrupted(folder, run_id, checkpoint.stop, stop, ended[0] if ended else None)
    if not sink.caught_up:  # cannot be: a run that ends earlier differs at its summary
        raise UserInputError(f"{traces}: run {run_id} ended before the lines its trace holds past the checkpoint")
    carried = decision if checkpoint.status == "deciding" or standing.past else None
    return ResumeResult(outcome, traces, stop, run_id, carried)


def _answering_again(folder: Path, choice: ModelChoice, cell: Cell, model: Model) -> Model:
    """A live run's model, answering what the recording holds already for the run (a resume cut short asked it)
    from there: the run goes the same way again, and no request is paid for twice."""
    if not choice.live:
        return model  # scripted and replayed sources answer the same again by themselves
    from harness.matrix.cell.restore import RecordedFirst
    from harness.models.recording import RECORDING_FILE, read_recording

    recording = folder / RECORDING_FILE
    entries = read_recording(recording) if recording.is_file() else {}
    mine = {
        key: entry
        for key, entry in entries.items()
        if (entry.scenario, entry.mode, entry.trial) == (cell.scenario.id, cell.mode, cell.trial)
    }
    return RecordedFirst(model, mine)


def _count_decisions(folder: Path, manifest: Manifest, store: CheckpointStore) -> None:
    """The manifest's count of decisions given with bench resume, from the database (claims included), so a
    resume cut short anywhere leaves it right or the next one puts it right."""
    given = store.decisions_given()
    if given != manifest.resumes:
        ManifestLedger(folder, manifest).amend({"resumes": given}, write=True)
        wrote()


def _unchanged_scenario(checkpoint: Checkpoint, scenarios_dir: Path | None) -> Scenario:
    from harness.matrix.cell.cell_runner import scenario_digest
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


def _resume_refused(cls: type) -> str | None:
    """Why a mode cannot be resumed at all (an agent process that declares no resume), or None."""
    return cls.resume_refusal() if issubclass(cls, ProcessAgent) else None
