"""Continuing a suspended run in a new process: the mode's own code is replayed, silently, to where it stopped.

The recorded answers stand in for the model (each request must hash as the one asked before, and no
new request may be made before the stop), the recorded decisions are given again at earlier gates,
and the gateway rebuilds the store from the same actions in memory: no model call, no side effect and
no trace line is repeated. At the stop the checkpoint names, the rebuilt store, record count and trace
position must equal the checkpoint's; only then is the trace unmuted and the new decision given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.model_port import Attempt, Model, ModelReply, ModelRequest
from harness.errors import ResumeMismatch
from harness.models.exchange import interpret
from harness.models.recording import Occurrences, RecordEntry, RecordKey, request_hash
from harness.records.checkpoint import Checkpoint, HumanDecision, content_digest

if TYPE_CHECKING:
    from harness.core.context import RunTrace
    from harness.core.gateway import Gateway


def store_snapshot(gateway: Gateway) -> dict[str, object]:
    """The virtual store as a checkpoint keeps it (JSON values only)."""
    store = gateway.store
    return {
        "artifacts": store.artifacts,
        "approvals": sorted(store.approvals),
        "wait_markers": store.wait_markers,
        "calls": store.calls,
    }


class CachedModel:
    """Answers a resumed run's earlier requests from its checkpoint; later ones go to the run's real model."""

    def __init__(self, checkpoint: Checkpoint, inner: Model, trace: RunTrace):
        self.label = inner.label
        self._replies, self._inner, self._trace = checkpoint.replies, inner, trace
        self._next = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        if self._next < len(self._replies):
            recorded = self._replies[self._next]
            self._next += 1
            if request_hash(request) != recorded.request_hash:
                raise ResumeMismatch(
                    f"request {self._next} of the run differs from the one it made before it "
                    "suspended: the mode, its prompts or the scenario changed"
                )
            skip = getattr(self._inner, "skip", None)
            if skip is not None:
                skip(request)  # a replayed or recorded source counts it, so later repeats key as before
            return ModelReply(
                proposal=recorded.proposal,
                text=recorded.text,
                usage=recorded.usage,
                latency_ms=recorded.latency_ms,
                failed_attempts=tuple(
                    Attempt(kind=a.kind, message=a.message, latency_ms=a.latency_ms, wait_s=a.wait_s)
                    for a in recorded.attempts
                ),
            )
        if self._trace.muted:
            raise ResumeMismatch(
                "the run asks the model something new before it reaches the stop its checkpoint "
                "names: the mode or its prompts changed"
            )
        return await self._inner.complete(request)


class RecordedFirst:
    """A live run carried out again after a crash: what the killed process was already answered (its recording
    lines, found by request hash and occurrence) is answered the same again; only newer requests reach the model.

    So the run goes the same way as before the crash and its trace lines match the ones already written.
    """

    def __init__(self, inner: Model, recorded: dict[RecordKey, RecordEntry]):
        self.label = inner.label
        self._inner, self._recorded = inner, recorded
        self._occurrences = Occurrences()

    def skip(self, request: ModelRequest) -> None:
        """Counts a request answered from the checkpoint, here and in the model behind (its repeats key on)."""
        self._occurrences.key(request)
        skip = getattr(self._inner, "skip", None)
        if skip is not None:
            skip(request)

    async def complete(self, request: ModelRequest) -> ModelReply:
        entry = self._recorded.get(self._occurrences.key(request))
        if entry is None:
            return await self._inner.complete(request)
        skip = getattr(self._inner, "skip", None)
        if skip is not None:
            skip(request)  # not recorded again: the line is there already
        return interpret(request, entry.exchange)


class ResumeGatekeeper:
    """Gives the recorded decisions again at earlier stops, checks the run at the checkpoint's stop, then decides."""

    def __init__(self, checkpoint: Checkpoint, decision: HumanDecision, trace: RunTrace, gateway: Gateway):
        self._checkpoint, self._decision = checkpoint, decision
        self._trace, self._gateway = trace, gateway

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        checkpoint = self._checkpoint
        past = checkpoint.decisions
        if stop < len(past):
            if past[stop].gate != gate:
                raise ResumeMismatch(f"stop {stop + 1} of the run is at '{gate}', not at '{past[stop].gate}' as before")
            seq = past[stop].seq
            if seq is not None:  # an earlier resume wrote a summary before this decision's event
                self._trace.seq = seq
            return past[stop]
        if stop > len(past):
            return None  # a later gate: nobody has decided yet, the run suspends again
        self._check_arrival(gate)
        trace = self._trace
        trace.seq, trace.muted = checkpoint.next_seq, False  # from here on, every event is new
        return self._decision

    def _check_arrival(self, gate: str) -> None:
        checkpoint, gateway = self._checkpoint, self._gateway
        if gate != checkpoint.pending_gate:
            raise ResumeMismatch(f"the run stops at '{gate}', its checkpoint at '{checkpoint.pending_gate}'")
        problems = []
        if len(gateway.records) != checkpoint.records:
            problems.append(f"{len(gateway.records)} gateway records, not {checkpoint.records}")
        if content_digest(store_snapshot(gateway)) != content_digest(checkpoint.store):
            problems.append("the rebuilt store differs from the checkpoint's")
        if self._trace.seq != checkpoint.next_seq - 1:  # the summary followed the suspend event
            problems.append(f"trace position {self._trace.seq}, not {checkpoint.next_seq - 1}")
        if problems:
            raise ResumeMismatch(f"the run replays to '{gate}' but not to its checkpoint: {'; '.join(problems)}")
