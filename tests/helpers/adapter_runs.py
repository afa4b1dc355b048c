"""Runs of a runtime adapter (a mode a real framework runs) in a hand-built context, as the runner and ``bench resume``
would: the stop or rejection caught, the run judged, and a fresh context for the resume in "another process"."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Awaitable
from pathlib import Path

from harness.core import Gateway, HumanDecision, ModeResult, RejectedByHuman, RunContext, Suspended, judge
from harness.core.approvals import Gatekeeper, ScriptedApprover
from harness.core.model_port import Model
from harness.matrix.pipeline.spec import GatewayPolicy
from harness.models.scripted import ScriptedSource
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.model import Scenario
from tests.helpers.units import make_ctx


def adapter_ctx(
    s: Scenario,
    model: Model | str,
    *,
    gateway: GatewayPolicy = "enforce",
    approver: str | Gatekeeper | None = None,
    state_dir: Path | None = None,
) -> tuple[RunContext, list[TraceEvent]]:
    """A context for one run: ``model`` a scripted policy's name or a model; ``approver`` a scripted approver's name
    or a gatekeeper (none: the run suspends at its first stop); ``state_dir`` where the framework keeps its state."""
    answers = ScriptedSource(model).for_run(0) if isinstance(model, str) else model
    gatekeeper = ScriptedApprover(approver) if isinstance(approver, str) else approver
    ctx, events = make_ctx(s, policy=gateway, gatekeeper=gatekeeper, model=answers)
    return dataclasses.replace(ctx, state_dir=state_dir), events


async def carried(run: Awaitable[ModeResult]) -> ModeResult:
    """How the run ended, as the runner sees it: a stop at a gate is a suspension (or a rejection)."""
    try:
        return await run
    except Suspended as stop:
        return ModeResult("suspended", stop.gate)
    except RejectedByHuman as rejection:
        return ModeResult("rejected_by_human", rejection.gate)


def judged(ctx: RunContext, result: ModeResult) -> RunOutcome:
    trace = ctx.trace
    return judge(
        ctx.scenario,
        ctx.gateway,
        result,
        llm_calls=trace.llm_calls,
        usage=trace.usage,
        wall_ms=0.0,
        errors=dict(trace.errors),
    )


def resumed_context(ctx: RunContext, decision: HumanDecision, model: Model) -> tuple[RunContext, list[TraceEvent]]:
    """What ``bench resume`` hands the mode in a new process: the gateway as it stood at the stop (a copy), a new
    model and trace, the decision traced and applied; the framework's state only in ``state_dir``."""
    old = ctx.gateway
    gateway = Gateway(ctx.scenario, copy.deepcopy(old.store), old.policy)
    gateway.records, gateway.decisions = list(old.records), list(old.decisions)
    fresh, events = make_ctx(ctx.scenario, policy=old.policy, model=model)
    fresh = dataclasses.replace(fresh, gateway=gateway, state_dir=ctx.state_dir)
    fresh.apply_decision(ctx.trace.last_step, decision.gate, decision)
    return fresh, events


def committed(ctx: RunContext, action: str) -> list[int]:
    """The steps at which ``action`` committed, in order."""
    return [r.step for r in ctx.gateway.records if r.action == action and r.status == "committed"]
