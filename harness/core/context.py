"""The frozen run context a mode works through: the only way a mode reaches the model, gateway and trace."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.approvals import Gatekeeper, NobodyYet, RejectedByHuman, Reviewer, Suspended, UnderReview
from harness.core.clock import Clock
from harness.core.gateway import ActionRecord, Gateway
from harness.core.model_port import Model, ModelReply, ModelRequest, PolicyView, Purpose, RequestMeta, RouteChoice
from harness.core.outcome import plan_problems, verdict_at_review, verdict_at_stop
from harness.core.signals import StopRequest
from harness.core.step_deadline import answer_within
from harness.errors import ErrorKind, ModelError
from harness.records.checkpoint import HumanDecision
from harness.records.trace import DecisionMaker, ErrorInfo, EventKind, RunOutcome, TraceEvent, Usage
from harness.scenario.model import PLAN_REVIEW, ActionSpec, Condition, Limits, Scenario, Truth


@dataclass(frozen=True)
class RunInfo:
    """The fields every event of a run repeats."""

    run_id: str
    scenario: str
    mode: str
    model: str
    trial: int


class RunTrace:
    """Emits one run's events with its fields filled in, and keeps the run's counters."""

    def __init__(
        self, sink: Callable[[TraceEvent], None], info: RunInfo, clock: Clock, stop: StopRequest | None = None
    ):
        self._sink, self.info, self._clock = sink, info, clock
        self._stop = stop or StopRequest()
        self.seq = 0
        self.muted = False  # a resumed run replaying to where it stopped: counted, never written again
        self.last_step = 0  # the step of the latest event: where a failure after a model call belongs
        self.llm_calls = 0
        self.usage = Usage()
        self.errors: Counter[str] = Counter()

    def emit(
        self,
        *,
        step: int,
        decision_maker: DecisionMaker,
        kind: EventKind,
        action: str | None = None,
        args: Any = None,
        result: str | None = None,
        latency_ms: float | None = None,
        usage: Usage | None = None,
        error: ErrorInfo | None = None,
        detail: dict[str, Any] | None = None,
        outcome: RunOutcome | None = None,
        final: bool = False,
    ) -> None:
        """Writes one event; once a stop was requested, only the run's final summary still goes out."""
        if not final:
            self._stop.check()
        if self.muted:  # the original run wrote this event already; only its counters matter now
            self.seq += 1
            self.last_step = step
            if error is not None:
                self.errors[error.kind] += 1
            return
        info = self.info
        event = TraceEvent(
            run_id=info.run_id,
            scenario=info.scenario,
            mode=info.mode,
            model=info.model,
            trial=info.trial,
            seq=self.seq,
            step=step,
            ts=self._clock.now().isoformat(timespec="milliseconds"),
            decision_maker=decision_maker,
            kind=kind,
            action=action,
            args=args,
            result=result,
            latency_ms=latency_ms,
            usage=usage,
            error=error,
            detail=detail,
            outcome=outcome,
        )
        self.seq += 1
        self.last_step = step
        if error is not None:
            self.errors[error.kind] += 1
        self._sink(event)


@dataclass(frozen=True)
class RunContext:
    """Everything a mode may use. Tests swap any part; a mode never touches network, files or terminal.

    A mode reads the gateway and the trace only through the queries and emits below (``approved``,
    ``argument_problem``, ``holds``; ``act``, ``decide``, ``suspend``, ...), never the store or the
    writer themselves: the gateway is the only path to a side effect, the runtime the only author of events.
    """

    scenario: Scenario
    model: Model
    gateway: Gateway
    trace: RunTrace
    clock: Clock
    rng: random.Random
    limits: Limits
    gatekeeper: Gatekeeper = field(default_factory=NobodyYet)  # who decides at a gate during this run
    transcript: list[tuple[ModelRequest, ModelReply]] = field(default_factory=list)  # every answer used, in order
    # Where a runtime adapter's framework keeps its own state for this run (its checkpointer's database, its
    # serialised run state): a folder of the run folder, so ``bench resume`` continues from it in a new process.
    # None: no run folder (a test, an in-memory run); the framework keeps its state in memory.
    state_dir: Path | None = None

    async def propose(
        self,
        purpose: Purpose,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        offered: Collection[str],
        *,
        step: int,
        feedback: str | None = None,
        catalog: Sequence[ActionSpec] | None = None,
        routes: tuple[RouteChoice, ...] = (),
        delegates: tuple[tuple[str, tuple[str, ...]], ...] = (),
        timeout_ms: int | None = None,
    ) -> ModelReply:
        """Asks the model for one proposal and traces the call, its retries and its usage.

        ``timeout_ms``: a workflow step's deadline on the answer (``harness.core.step_deadline``); past it the call
        is given up (``StepTimedOut``) and nothing of it is traced.

        ``catalog``: the actions as this request presents them, where a mode reshapes one (a sub-agent's finish that
        carries its report, a template's slots); by default the scenario's. ``routes``: a route request's choices.
        ``delegates``: a plan node's react steps and their tools, at its planning.
        """
        request = ModelRequest(
            purpose=purpose,
            messages=tuple(messages),
            response_schema=schema,
            offered=tuple(offered),
            view=PolicyView(
                catalog=tuple(catalog) if catalog is not None else self.scenario.actions,
                history=tuple(self.gateway.records),
                approvals=self.open_gates(),
                agent_role=self.scenario.agent_role,
                max_plan_steps=self.limits.max_steps + 1,
                feedback=feedback,
                reference=self.scenario.reference_after(
                    tuple((d.decision.gate, d.decision.decision) for d in self.gateway.decisions)
                ),
                routes=routes,
                delegates=delegates,
                refused=frozenset(d.decision.gate for d in self.gateway.decisions if d.decision.decision == "reject"),
                revising=self.gateway.revising(),
            ),
            meta=RequestMeta(
                scenario=self.scenario.id, mode=self.trace.info.mode, step=step, trial=self.trace.info.trial
            ),
        )
        trace = self.trace
        try:
            reply = await answer_within(self.model, self.model.complete(request), timeout_ms)
        except ModelError as exc:
            exc.step = step
            self._trace_retries(exc.failed_attempts, step)
            if isinstance(exc.answer, ModelReply):
                # The model answered but the answer is unreadable: the call and its tokens still count.
                answer = exc.answer
                trace.llm_calls += 1
                trace.usage = trace.usage + answer.usage
                trace.emit(
                    step=step,
                    decision_maker="llm",
                    kind="model_call",
                    result="unreadable",
                    latency_ms=answer.latency_ms,
                    usage=answer.usage,
                    detail={
                        "purpose": purpose,
                        "offered": list(offered),
                        "attempts": len(answer.failed_attempts) + 1,
                        "text": answer.text[:500],
                    },
                )
            raise
        self._trace_retries(reply.failed_attempts, step)
        self.transcript.append((request, reply))
        trace.llm_calls += 1
        trace.usage = trace.usage + reply.usage
        proposal = reply.proposal
        # A next action comes as {"step": {"action": ...}} (object-root schemas); scripted models answer the bare step.
        chosen = proposal.get("step", proposal) if isinstance(proposal, dict) else None
        proposed = chosen.get("action") if isinstance(chosen, dict) and purpose == "next_action" else None
        trace.emit(
            step=step,
            decision_maker="llm",
            kind="model_call",
            action=proposed,
            args=proposal,
            result="proposed",
            latency_ms=reply.latency_ms,
            usage=reply.usage,
            detail={"purpose": purpose, "offered": list(offered), "attempts": len(reply.failed_attempts) + 1},
        )
        return reply

    # ------------------------------------------------------------ read-only queries (never a side effect)

    def approved(self, gate: str) -> bool:
        """Whether the gate lets its actions through now: approved, or its condition does not apply."""
        return self.gateway.store.approved(gate)

    def enforcing(self) -> bool:
        """Whether the gateway blocks a broken rule (``enforce``), rather than commit it and record it (``audit``)."""
        return self.gateway.policy == "enforce"

    def open_gates(self) -> frozenset[str]:
        """Every gate of the scenario that lets its actions through now."""
        return frozenset(g.name for g in self.scenario.gates if self.approved(g.name))

    def argument_problem(self, action: str, args: Any) -> str | None:
        """The first way ``args`` fails the action's argument schema; None when they fit (or no such action)."""
        spec = self.scenario.action_map.get(action)
        return None if spec is None else self.gateway.argument_problem(spec, args)

    def holds(self, condition: Condition | None) -> bool:
        """Whether a store condition certainly holds (one that cannot be evaluated does not); none holds trivially."""
        return condition is None or condition.holds(self.gateway.store.artifacts)

    def evaluate(self, condition: Condition) -> Truth:
        """A store condition's value: True, False, or unknown with the reason (code never routes on unknowns)."""
        return condition.evaluate(self.gateway.store.artifacts)

    # ------------------------------------------------------------ the model proposes, the gateway decides

    def act(
        self, action: str, args: Any, *, allowed: Collection[str], step: int, timeout_ms: int | None = None
    ) -> ActionRecord:
        """Sends an action through the gateway and traces the gateway's verdict; ``timeout_ms`` bounds how long the
        caller waits for it (simulated: the action's declared duration decides, nothing sleeps)."""
        return self._traced(self.gateway.execute(action, args, allowed=allowed, step=step, timeout_ms=timeout_ms))

    def request_approval(self, gate: str, *, step: int, for_action: str | None = None) -> ActionRecord:
        """Asks for a gate's approval through the gateway (a recorded wait, or blocked) before a mode suspends."""
        return self._traced(self.gateway.request_approval(gate, step=step, for_action=for_action))

    def _traced(self, record: ActionRecord) -> ActionRecord:
        action, args, step = record.action, record.args, record.step
        detail: dict[str, Any] = {"observation": record.observation}
        if record.reason:
            detail["reason"] = record.reason
        if record.violations:
            detail["violations"] = list(record.violations)
        if record.premature:
            detail["premature"] = True
        if record.duration_ms is not None:
            detail["duration_ms"] = record.duration_ms
        if record.cache is not None:
            detail["cache"] = record.cache
        if record.redacted:
            detail["redacted"] = list(record.redacted)
        detail["input_hash"], detail["output_hash"] = record.input_hash, record.output_hash
        self.trace.emit(
            step=step,
            decision_maker="gateway",
            kind="action",
            action=action,
            args=args,
            result=record.status,
            detail=detail,
        )
        return record

    def decide(
        self,
        step: int,
        decision_maker: DecisionMaker,
        action: str | None,
        result: str,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Traces a choice made by code: the executor's next step, a refusal, a finish."""
        self.trace.emit(
            step=step, decision_maker=decision_maker, kind="decision", action=action, result=result, detail=detail
        )

    def suspend(
        self, step: int, decision_maker: DecisionMaker, gate: str, detail: dict[str, Any] | None = None
    ) -> HumanDecision:
        """Stops the run at a gate until someone decides: the only way a mode stops and waits.

        Nobody to decide now: the run ends here, suspended (a ``Suspended`` the runner catches; ``bench resume``
        continues it later). A rejection ends it too (``RejectedByHuman``) unless the story goes on after a rejection
        at this gate (``on_rejection: continue``). This returns only when the run may go on: approved (the gate is
        open now), sent back for a revision (the decision's ``note`` says what to change, and the gate stays closed),
        or rejected at a gate the story goes on from (the gate stays closed; the mode tells its agent).
        """
        self.trace.emit(
            step=step, decision_maker=decision_maker, kind="suspend", action=gate, result="run_suspended", detail=detail
        )
        review = self._under_review(gate, detail)
        stop = len(self.gateway.decisions)
        keeper = self.gatekeeper  # one that reads what it decides on is shown it (a plan under review)
        decision = keeper.review(review, stop) if isinstance(keeper, Reviewer) else keeper.decide(gate, stop)
        if decision is None:
            raise Suspended(gate)
        return self.apply_decision(step, gate, decision, plan=review.plan)

    def _under_review(self, gate: str, detail: dict[str, Any] | None) -> UnderReview:
        """What the stop puts before whoever decides: at a plan review, the plan's actions and what is unsafe in it."""
        shown = (detail or {}).get("plan") if gate == PLAN_REVIEW else None
        if not isinstance(shown, list):
            return UnderReview(gate)
        plan = tuple(str(step.get("action")) if isinstance(step, dict) else str(step) for step in shown)
        return UnderReview(gate, plan, tuple(plan_problems(self.scenario, self.gateway, plan)))

    def apply_decision(
        self, step: int, gate: str, decision: HumanDecision, *, plan: tuple[str, ...] | None = None
    ) -> HumanDecision:
        """Traces a decision at the gate the run stands at and applies it to the gateway: the second half of
        ``suspend``, and what ``bench resume`` does first for a framework-run mode (whose code is not replayed to
        its stop). A rejection ends the run (``RejectedByHuman``) unless the story goes on from it; otherwise the
        decision is returned. ``plan``: the plan under review at a plan review, which the verdict at this stop is
        judged from."""
        verdict_here = (
            verdict_at_review(self.scenario, self.gateway, gate, plan)
            if plan is not None
            else verdict_at_stop(self.scenario, self.gateway, gate)
        )
        decision = decision.model_copy(update={"seq": self.trace.seq})
        self.trace.emit(
            step=step,
            decision_maker="human",
            kind="human",
            action=gate,
            result=decision.decision,
            detail={
                "who": decision.who,
                "note": decision.note,
                "scripted": decision.scripted,
                "verdict_at_stop": verdict_here,
                **({"plan_problems": plan_problems(self.scenario, self.gateway, plan)} if plan is not None else {}),
            },
        )
        self.gateway.decide(decision, verdict_here)
        if decision.decision == "reject" and not self.scenario.rejection_continues(gate):
            raise RejectedByHuman(gate)
        return decision

    def transition(self, step: int, source: str, target: str) -> None:
        """Traces the workflow moving from one node to the next (code's choice)."""
        self.trace.emit(
            step=step,
            decision_maker="workflow",
            kind="transition",
            action=target,
            result="transition",
            detail={"from": source, "to": target},
        )

    def plan_verdict(self, verdict: str, reasons: list[str], revision: int, step: int = 0) -> None:
        """Traces the plan validator's verdict on a proposed plan (a plan mode plans before step 1; a plan node at its
        graph step)."""
        self.trace.emit(
            step=step,
            decision_maker="plan_validator",
            kind="plan_validation",
            result=verdict,
            detail={"reasons": reasons, "revision": revision},
        )

    def plan_state(self, step: int, where: str, revision: int, result: str, steps: list[dict[str, Any]]) -> None:
        """Traces a structured plan's state at a plan node: each step's id, action, dependencies and status, when a
        revision is adopted and when its execution ends (the executor keeps the statuses)."""
        self.trace.emit(
            step=step,
            decision_maker="executor",
            kind="plan",
            action=where,
            result=result,
            detail={"node": where, "revision": revision, "steps": steps},
        )

    def alert(self, step: int, decision_maker: DecisionMaker, who: str, detail: dict[str, Any]) -> None:
        """Traces an alert to a person (a failure contract's ``alert``): who, and the node and reason in ``detail``."""
        self.trace.emit(
            step=step, decision_maker=decision_maker, kind="alert", action=who, result="alerted", detail=detail
        )

    def fail(self, step: int, decision_maker: DecisionMaker, where: str, kind: ErrorKind, message: str) -> None:
        """Traces an error the mode ends the run with (a workflow's error exit); the mode returns right after."""
        self.trace.emit(
            step=step,
            decision_maker=decision_maker,
            kind="error",
            action=where,
            result="run_error",
            error=ErrorInfo(kind=kind, message=message),
        )

    def _trace_retries(self, attempts: tuple, step: int) -> None:
        for number, attempt in enumerate(attempts, start=1):
            self.trace.emit(
                step=step,
                decision_maker="runtime",
                kind="model_retry",
                result="retrying",
                latency_ms=attempt.latency_ms,
                error=ErrorInfo(kind=attempt.kind, message=attempt.message),
                detail={"attempt": number, "wait_s": attempt.wait_s},
            )
