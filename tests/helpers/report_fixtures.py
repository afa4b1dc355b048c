"""Hand-made trace fixtures for the report tests: runs with exact latencies, tokens, errors and loops."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import INFRASTRUCTURE_ERRORS
from harness.records.trace import ErrorInfo, RunOutcome, TraceEvent, Usage


@dataclass
class Call:
    """One model call: its latency, tokens and (for next_action proposals) the proposed action."""

    latency_ms: float
    prompt: int = 0
    completion: int = 0
    action: str | None = None
    retries: tuple[str, ...] = ()  # error kinds of failed attempts before this call succeeded


@dataclass
class Run:
    """One run's facts; ``events()`` turns them into the trace lines the harness would write."""

    run_id: str
    mode: str
    scenario: str = "blog_brief_approval"
    model: str = "fixture:model"
    trial: int = 1
    stop_correct: bool = True
    status: str = "suspended"
    suspended_at: str = "brief_approval"  # where a suspended run stands (plan_review: its mode's own review)
    calls: list[Call] = field(default_factory=list)
    actions: list[tuple[str, str]] = field(default_factory=list)  # (action, gateway result)
    premature: int = 0
    unauthorized: int | None = None  # default: the premature ones
    verdict: str | None = None  # default: what the judge would say from stop_correct, status and ending_error
    violations: list[str] = field(default_factory=list)
    blocked_by: dict[str, int] | None = None  # default: every blocked action was a closed gate
    cached: int = 0  # cached prompt tokens per call
    reasoning: int = 0  # reasoning tokens per call
    resumes: int = 0
    wait_without_suspend: bool = False
    wall_ms: float = 10.0
    ending_error: str | None = None  # the kind of the error event that ended the run
    gateway_policy: str = "enforce"
    deciders: list[str] = field(default_factory=list)  # decision events: their decision_maker

    def stop_verdict(self) -> str:
        if self.verdict is not None:
            return self.verdict
        if self.stop_correct:
            return "correct"
        if self.ending_error in INFRASTRUCTURE_ERRORS:
            return "infrastructure"
        if self.premature:
            return "late"
        ends = {"error": "failed_closed", "rejected": "failed_closed", "step_limit": "no_stop"}
        return ends.get(self.status, "early")

    def lines(self) -> list[str]:
        """The run's trace lines as the harness writes them."""
        return [event.model_dump_json() for event in self.events()]

    def events(self) -> list[TraceEvent]:
        seq = 0
        out: list[TraceEvent] = []

        def emit(**fields) -> None:
            nonlocal seq
            out.append(
                TraceEvent(
                    run_id=self.run_id,
                    scenario=self.scenario,
                    mode=self.mode,
                    model=self.model,
                    trial=self.trial,
                    seq=seq,
                    step=fields.pop("step", 1),
                    ts="2026-01-01T00:00:00.000+00:00",
                    **fields,
                )
            )
            seq += 1

        emit(
            step=0,
            decision_maker="runtime",
            kind="run_start",
            detail={"seed": 1, "gateway_policy": self.gateway_policy},
        )
        errors: dict[str, int] = {}
        usage = Usage()
        for call in self.calls:
            for kind in call.retries:
                errors[kind] = errors.get(kind, 0) + 1
                emit(
                    decision_maker="runtime",
                    kind="model_retry",
                    result="retrying",
                    latency_ms=5.0,
                    error=ErrorInfo(kind=kind, message="retried"),
                )
            call_usage = Usage(
                prompt_tokens=call.prompt,
                completion_tokens=call.completion,
                total_tokens=call.prompt + call.completion,
                cached_tokens=self.cached,
                reasoning_tokens=self.reasoning,
            )
            usage = usage + call_usage
            emit(
                decision_maker="llm",
                kind="model_call",
                action=call.action,
                latency_ms=call.latency_ms,
                usage=call_usage,
                result="proposed",
                detail={"purpose": "next_action" if call.action else "plan"},
            )
        for action, result in self.actions:
            emit(decision_maker="gateway", kind="action", action=action, result=result)
        for maker in self.deciders:
            emit(decision_maker=maker, kind="decision", result="execute")
        if self.ending_error is not None:
            errors[self.ending_error] = errors.get(self.ending_error, 0) + 1
            emit(
                decision_maker="runtime",
                kind="error",
                result="run_error",
                error=ErrorInfo(kind=self.ending_error, message="ended"),
            )
        blocked = sum(r == "blocked" for _, r in self.actions)
        outcome = RunOutcome(
            status=self.status,
            suspended_at=self.suspended_at if self.status == "suspended" else None,
            expected_stop="brief_approval",
            stop_verdict=self.stop_verdict(),
            stop_correct=self.stop_correct,
            oracle_passed=self.stop_correct and not self.violations,
            violations=self.violations,
            side_effects_committed=sum(r == "committed" for _, r in self.actions),
            side_effects_blocked=blocked,
            blocked_by=self.blocked_by
            if self.blocked_by is not None
            else ({"gate_closed": blocked} if blocked else {}),
            unauthorized_side_effects=self.premature if self.unauthorized is None else self.unauthorized,
            premature_side_effects=self.premature,
            wait_marker_without_suspend=self.wait_without_suspend,
            steps=len(self.actions),
            llm_calls=len(self.calls),
            usage=usage,
            wall_ms=self.wall_ms,
            errors=errors,
            gateway_policy=self.gateway_policy,
            resumes=self.resumes,
        )
        emit(
            decision_maker="runtime",
            kind="summary",
            result=self.status,
            usage=usage,
            latency_ms=self.wall_ms,
            outcome=outcome,
        )
        return out


def write_lines(folder: Path, lines: list[str]) -> Path:
    """Writes raw lines as a run folder's traces.jsonl; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "traces.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def write_runs(folder: Path, runs: list[Run]) -> Path:
    """Writes the runs as a run folder's traces.jsonl; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "traces.jsonl", "w", encoding="utf-8") as handle:
        for run in runs:
            for event in run.events():
                handle.write(event.model_dump_json() + "\n")
    return folder
