"""bench resume of a framework-run mode (a runtime adapter): the gateway rebuilt as it stood at the stop, the
decision traced and applied, then the framework goes on from its own saved state (``RuntimeMode.resume``).

The built-in modes are resumed by replaying their own code to the stop (``harness.matrix.cell.restore``). A framework's
position cannot be replayed so: its checkpointer or serialised run state in the run folder (``ctx.state_dir``)
says where it stands, and what it repeats from there reaches the gateway again and is counted
(``repeated_side_effects``): that is the measurement. So the stop's checkpoint keeps what the gateway held (its
records and decisions, ``Checkpoint.runtime``; the store, as for every mode) and where the trace's counters stood.

A resume killed after its decision was claimed is carried out again the same way, from where the killed one got
to: the trace lines it wrote past the checkpoint are the run's own (what its framework did there took place), so
they are applied to the rebuilt gateway and counters, not written again, and the framework goes on from its state
as the killed process left it. A killed resume whose run had already stopped again (or ended) is only settled: the
framework is never handed a decision meant for the stop before.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Sequence

from harness.core.approvals import RejectedByHuman
from harness.core.context import RunContext, RunTrace
from harness.core.gateway import ActionRecord, GateDecision, Gateway
from harness.core.outcome import ModeResult, verdict_at_stop
from harness.core.store import VirtualStore
from harness.errors import ResumeMismatch
from harness.records.checkpoint import (
    Checkpoint,
    HumanDecision,
    RecordedAction,
    RecordedGateDecision,
    RuntimeState,
)
from harness.records.trace import TraceEvent
from harness.scenario.model import Scenario
from modes.runtimes.base import RuntimeMode

__all__ = ["lines_met", "rebuilt_gateway", "restore_trace", "resume_framework", "runtime_state"]


def runtime_state(gateway: Gateway, trace: RunTrace) -> RuntimeState:
    """What a framework-run mode's stop keeps for its resume: the gateway's records and decisions, the counters."""
    return RuntimeState(
        records=[RecordedAction.model_validate(dataclasses.asdict(record)) for record in gateway.records],
        decisions=[
            RecordedGateDecision(decision=d.decision, after_records=d.after_records, verdict_here=d.verdict_here)
            for d in gateway.decisions
        ],
        last_step=trace.last_step,
        llm_calls=trace.llm_calls,
        usage=trace.usage,
        errors=dict(trace.errors),
    )


def rebuilt_gateway(scenario: Scenario, checkpoint: Checkpoint, gateway: Gateway) -> Gateway:
    """``gateway`` (fresh, with the run's policy) as it stood at the checkpoint's stop: store, records, decisions."""
    state = _state(checkpoint)
    snapshot = copy.deepcopy(checkpoint.store)
    store = VirtualStore.for_scenario(scenario)  # the gates' conditions come from the scenario
    store.artifacts = dict(snapshot.get("artifacts", {}))
    store.approvals = set(snapshot.get("approvals", ()))
    store.wait_markers = list(snapshot.get("wait_markers", ()))
    store.calls = dict(snapshot.get("calls", {}))
    rebuilt = Gateway(scenario, store, gateway.policy)
    rebuilt.records = [
        ActionRecord(**{**record.model_dump(), "violations": tuple(record.violations)}) for record in state.records
    ]
    rebuilt.decisions = [GateDecision(d.decision, d.after_records, d.verdict_here) for d in state.decisions]
    return rebuilt


def restore_trace(trace: RunTrace, checkpoint: Checkpoint) -> None:
    """Puts the trace where the run stood at its stop: the next line's number, the last step, the counters."""
    state = _state(checkpoint)
    trace.seq, trace.last_step = checkpoint.next_seq, state.last_step
    trace.llm_calls, trace.usage, trace.errors = state.llm_calls, state.usage, Counter(state.errors)


def lines_met(past: Sequence[TraceEvent]) -> int:
    """How many of the lines a killed resume wrote past the checkpoint the run takes as its own, unwritten: all
    but a closing summary, which the run writes again (compared with the one there, so not written twice)."""
    return len(past) - (1 if past and past[-1].kind == "summary" else 0)


async def resume_framework(
    mode: RuntimeMode, ctx: RunContext, checkpoint: Checkpoint, decision: HumanDecision, past: Sequence[TraceEvent]
) -> tuple[ModeResult, str | None]:
    """Traces and applies ``decision`` at the checkpoint's stop (a rejection raises ``RejectedByHuman``), then lets
    the framework go on; with ``past`` (a killed resume's lines), goes on from where they end instead. Returns how
    the run ended and, for an error of the plumbing a killed resume had traced, its kind."""
    gate = checkpoint.pending_gate or decision.gate
    if not past:
        decision = ctx.apply_decision(ctx.trace.last_step, gate, decision)
        return await mode.resume(ctx, decision), None
    decision = _decided_in(ctx, gate, decision, past[0])
    for event in past[1 : lines_met(past)]:
        _take(ctx, event)
    if decision.decision == "reject" and not ctx.scenario.rejection_continues(gate):
        raise RejectedByHuman(gate)
    ending = _ending(past)
    if ending is not None:  # it stopped again or ended in the killed process: nothing is asked of the framework
        return ending
    return await mode.resume(ctx, decision), None


def _state(checkpoint: Checkpoint) -> RuntimeState:
    if checkpoint.runtime is None:
        raise ResumeMismatch(
            f"run {checkpoint.run_id}: its checkpoint holds no gateway state for mode '{checkpoint.mode}', which "
            "a framework runs (it suspended before the mode ran on one); it cannot be resumed"
        )
    return checkpoint.runtime


def _decided_in(ctx: RunContext, gate: str, decision: HumanDecision, first: TraceEvent) -> HumanDecision:
    """The decision's event, written by the killed resume, taken as the run's: applied to the gateway, not traced."""
    if first.kind != "human" or first.action != gate or first.result != decision.decision:
        raise ResumeMismatch(
            f"run {first.run_id}: line {first.seq} of its trace is not the decision '{decision.decision}' at "
            f"'{gate}' that was claimed; refusing to resume it"
        )
    detail = first.detail or {}
    verdict = detail.get("verdict_at_stop")
    decision = decision.model_copy(update={"seq": first.seq})
    ctx.gateway.decide(decision, str(verdict) if verdict else verdict_at_stop(ctx.scenario, ctx.gateway, gate))
    _count(ctx.trace, first)
    return decision


def _take(ctx: RunContext, event: TraceEvent) -> None:
    """One line of a killed resume, taken as the run's: an action goes into the gateway, a model call counts."""
    trace = ctx.trace
    if event.kind == "model_call":
        trace.llm_calls += 1
        if event.usage is not None:
            trace.usage = trace.usage + event.usage
    elif event.kind == "action":
        _replay_action(ctx.gateway, event)
    _count(trace, event)


def _count(trace: RunTrace, event: TraceEvent) -> None:
    trace.seq, trace.last_step = event.seq + 1, event.step
    if event.error is not None:
        trace.errors[event.error.kind] += 1


def _ending(past: Sequence[TraceEvent]) -> tuple[ModeResult, str | None] | None:
    """How the run ended in the killed resume, when its lines say: its summary, its next stop, or an error of the
    plumbing that ended it (the runtime's error event; a mode's own error exit is seen only in its summary)."""
    failed = [e for e in past if e.kind == "error" and e.decision_maker == "runtime" and e.error is not None]
    ended_by = failed[-1].error.kind if failed and failed[-1].error is not None else None
    summary = past[-1] if past[-1].kind == "summary" and past[-1].outcome is not None else None
    if summary is not None and summary.outcome is not None:
        status = summary.outcome.status
        return ModeResult(status, suspended_at=summary.outcome.suspended_at), ended_by if status == "error" else None
    stops = [e for e in past if e.kind == "suspend"]
    if stops:
        return ModeResult("suspended", suspended_at=stops[-1].action), None
    if ended_by is not None:
        return ModeResult("error"), ended_by
    return None


def _replay_action(gateway: Gateway, event: TraceEvent) -> None:
    """Applies a traced gateway verdict again: the store changes as it did, the record is the one traced."""
    detail = event.detail or {}
    observation = detail.get("observation")
    name = event.action or ""
    spec = gateway.scenario.action_map.get(name)
    waited = isinstance(observation, dict) and ("wait_marker" in observation or "gate" in observation)
    if waited and (spec is None or spec.kind == "wait"):  # a recorded wait, or an approval request
        assert isinstance(observation, dict)
        gate = observation.get("gate") or observation.get("wait_marker")
        if event.result == "wait_recorded":
            gateway.store.wait_markers.append(str(gate))
        gateway.records.append(
            ActionRecord(
                step=event.step,
                action=name,
                args=event.args,
                status="wait_recorded" if event.result == "wait_recorded" else "blocked",
                reason=detail.get("reason"),
                observation=observation,
                side_effect=False,
                violations=tuple(detail.get("violations", ())),
                premature=False,
                gate=str(gate) if gate is not None else None,
            )
        )
        return
    violations = tuple(detail.get("violations", ()))
    timed_out = detail.get("reason") == "timeout"
    record = gateway.execute(
        name,
        event.args,
        allowed=() if "not_allowed" in violations else (name,),
        step=event.step,
        timeout_ms=detail.get("duration_ms") if timed_out else None,
    )
    if record.status != event.result:
        raise ResumeMismatch(
            f"run {event.run_id}: line {event.seq} of its trace ('{name}' {event.result}) does not apply again "
            f"to the gateway rebuilt from its checkpoint (it is {record.status} now); refusing to resume it"
        )
