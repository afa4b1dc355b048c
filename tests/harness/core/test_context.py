"""The run context: the read-only queries a mode decides from, the traced paths to the model and the gateway,
and ``suspend``, the only way a mode stops and waits."""

from __future__ import annotations

import asyncio

import pytest

from harness.core.approvals import RejectedByHuman, Suspended
from harness.core.audit_hash import audit_hash
from harness.core.model_port import Attempt, ModelReply, ModelRequest
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import ModelError
from harness.records.trace import ErrorInfo, Usage
from harness.scenario.model import Condition
from tests.helpers.units import REFUND, THRESHOLD, Decisions, make_ctx, scenario

S = scenario(REFUND)
EVERYTHING = [a.name for a in S.actions]


class Recorder:
    """A model that answers fixed replies and keeps every request it was sent."""

    label = "test:recorder"

    def __init__(self, *replies: ModelReply | ModelError):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, ModelError):
            raise reply
        return reply


def reply(proposal, *, prompt=3, completion=2, latency=7.5, attempts=()) -> ModelReply:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
    return ModelReply(proposal=proposal, text="t", usage=usage, latency_ms=latency, failed_attempts=attempts)


# ---------------------------------------------------------------- the run's trace


def test_every_event_names_its_run_and_counts_up_from_zero():
    ctx, events = make_ctx(S)
    ctx.decide(1, "executor", "note", "execute")
    ctx.decide(2, "executor", None, "plan_exhausted", {"k": 1})
    assert [(e.run_id, e.scenario, e.mode, e.model, e.trial) for e in events] == [
        ("run-1", "unit_refund", "unit", "test:answers", 1)
    ] * 2
    assert [e.seq for e in events] == [0, 1] and ctx.trace.seq == 2 and ctx.trace.last_step == 2
    assert events[0].ts < events[1].ts  # the clock is read per event
    assert (events[1].decision_maker, events[1].kind, events[1].action, events[1].result, events[1].detail) == (
        "executor",
        "decision",
        None,
        "plan_exhausted",
        {"k": 1},
    )


def test_a_muted_trace_writes_nothing_but_keeps_counting():
    ctx, events = make_ctx(S)
    ctx.trace.muted = True
    ctx.fail(4, "workflow", "node", "workflow", "boom")
    assert events == [] and ctx.trace.seq == 1 and ctx.trace.last_step == 4 and ctx.trace.errors == {"workflow": 1}


def test_once_a_stop_is_requested_only_the_final_summary_goes_out():
    stop = StopRequest()
    ctx, events = make_ctx(S, stop=stop)
    stop.signum = 2
    with pytest.raises(RunInterrupted):
        ctx.decide(1, "executor", None, "x")
    assert events == []
    ctx.trace.emit(step=0, decision_maker="runtime", kind="summary", final=True)
    assert [e.kind for e in events] == ["summary"]


def test_errors_are_counted_by_kind_as_they_are_traced():
    ctx, _ = make_ctx(S)
    ctx.fail(1, "workflow", "a", "workflow", "m")
    ctx.fail(2, "workflow", "b", "workflow", "m")
    ctx.fail(3, "runtime", "c", "schema", "m")
    assert ctx.trace.errors == {"workflow": 2, "schema": 1}


# ---------------------------------------------------------------- read-only queries


def test_approved_and_open_gates_follow_the_store():
    ctx, _ = make_ctx(S)
    assert not ctx.approved("manager_approval") and ctx.open_gates() == frozenset()
    ctx.gateway.store.approvals.add("manager_approval")
    assert ctx.approved("manager_approval") and ctx.open_gates() == frozenset({"manager_approval"})


def test_a_threshold_gate_is_open_while_its_condition_is_false():
    ctx, _ = make_ctx(scenario(THRESHOLD))
    assert ctx.open_gates() == frozenset({"legal"})
    ctx.act("set_amount", {"amount": 500}, allowed=["set_amount"], step=1)
    assert ctx.open_gates() == frozenset() and not ctx.approved("legal")


def test_argument_problem_checks_the_actions_schema_and_ignores_unknown_actions():
    ctx, _ = make_ctx(S)
    assert ctx.argument_problem("note", {"text": "x"}) is None
    assert "is a required property" in (ctx.argument_problem("note", {}) or "")
    assert ctx.argument_problem("no_such_action", {"anything": 1}) is None


def test_holds_and_evaluate_read_the_store_and_never_guess():
    ctx, _ = make_ctx(S)
    assert ctx.holds(None)
    assert ctx.holds(Condition(exists="claim.id"))
    assert not ctx.holds(Condition(exists="note"))
    unknown = Condition(greater_than={"claim.id": 1})
    assert not ctx.holds(unknown)
    truth = ctx.evaluate(unknown)
    assert truth.value is None and truth.why == "claim.id holds 'EX-1', not a number"
    assert ctx.evaluate(Condition(greater_than={"claim.amount": 2000})).value is True
    assert ctx.evaluate(Condition(missing="claim")).value is False


# ---------------------------------------------------------------- the gateway's verdicts, traced


def test_act_goes_through_the_gateway_and_traces_its_verdict():
    ctx, events = make_ctx(S)
    record = ctx.act("note", {"text": "n"}, allowed=EVERYTHING, step=2)
    assert record.status == "committed" and ctx.gateway.records == [record]
    (event,) = events
    assert (event.decision_maker, event.kind, event.action, event.args, event.result, event.step) == (
        "gateway",
        "action",
        "note",
        {"text": "n"},
        "committed",
        2,
    )
    assert event.detail == {
        "observation": {"stored": "note"},
        "input_hash": audit_hash({"text": "n"}),
        "output_hash": audit_hash({"stored": "note"}),
    }


def test_a_blocked_action_is_traced_with_its_reason_and_violations():
    ctx, events = make_ctx(S)
    ctx.act("pay", {"amount": 1}, allowed=["pay"], step=1)
    assert events[0].result == "blocked"
    assert events[0].detail == {
        "observation": {
            "blocked": "gate_closed",
            "detail": "'pay' needs approval 'manager_approval', which has not been given",
        },
        "reason": "gate_closed",
        "violations": ["gate_closed", "precondition"],
        "input_hash": audit_hash({"amount": 1}),
        "output_hash": audit_hash(events[0].detail["observation"]),
    }


def test_a_premature_commit_under_audit_is_traced_as_premature():
    ctx, events = make_ctx(S, policy="audit")
    ctx.act("pay", {"amount": 1}, allowed=["pay"], step=1)
    assert events[0].result == "committed" and events[0].detail is not None
    assert events[0].detail["premature"] is True and events[0].detail["violations"] == ["gate_closed", "precondition"]
    assert "reason" not in events[0].detail


def test_request_approval_is_traced_as_the_gates_wait():
    ctx, events = make_ctx(S)
    record = ctx.request_approval("manager_approval", step=3)
    assert record.status == "wait_recorded"
    assert [(e.action, e.result, e.step) for e in events] == [("ask_manager", "wait_recorded", 3)]


# ---------------------------------------------------------------- the other events


def test_transition_plan_verdict_and_fail_are_traced_with_their_facts():
    ctx, events = make_ctx(S)
    ctx.transition(2, "read", "approve")
    ctx.plan_verdict("REVISE", ["step 2: no wait"], 1)
    ctx.fail(3, "workflow", "pay", "workflow", "NO_CLAIM")
    transition, verdict, error = events
    assert (transition.decision_maker, transition.kind, transition.action, transition.result, transition.detail) == (
        "workflow",
        "transition",
        "approve",
        "transition",
        {"from": "read", "to": "approve"},
    )
    assert (verdict.step, verdict.decision_maker, verdict.kind, verdict.result, verdict.detail) == (
        0,
        "plan_validator",
        "plan_validation",
        "REVISE",
        {"reasons": ["step 2: no wait"], "revision": 1},
    )
    assert (error.step, error.kind, error.action, error.result, error.error) == (
        3,
        "error",
        "pay",
        "run_error",
        ErrorInfo(kind="workflow", message="NO_CLAIM"),
    )


# ---------------------------------------------------------------- suspend


def test_suspend_with_nobody_to_decide_stops_the_run_after_tracing_the_stop():
    gatekeeper = Decisions()
    ctx, events = make_ctx(S, gatekeeper=gatekeeper)
    ctx.request_approval("manager_approval", step=1)
    with pytest.raises(Suspended) as stopped:
        ctx.suspend(1, "runtime", "manager_approval", {"why": "wait"})
    assert stopped.value.gate == "manager_approval"
    last = events[-1]
    assert (last.kind, last.decision_maker, last.action, last.result, last.detail) == (
        "suspend",
        "runtime",
        "manager_approval",
        "run_suspended",
        {"why": "wait"},
    )
    assert gatekeeper.asked == [("manager_approval", 0)] and ctx.gateway.decisions == []


def test_an_approval_opens_the_gate_and_the_run_goes_on():
    ctx, events = make_ctx(S, gatekeeper=Decisions("approve"))
    ctx.act("read_claim", {}, allowed=EVERYTHING, step=1)
    ctx.act("note", {"text": "n"}, allowed=EVERYTHING, step=2)
    ctx.request_approval("manager_approval", step=3)
    decision = ctx.suspend(3, "executor", "manager_approval")
    assert decision.decision == "approve" and ctx.approved("manager_approval")
    human = events[-1]
    assert (human.kind, human.decision_maker, human.action, human.result, human.step) == (
        "human",
        "human",
        "manager_approval",
        "approve",
        3,
    )
    assert human.detail == {"who": "tester", "note": "", "scripted": False, "verdict_at_stop": "correct"}
    assert decision.seq == human.seq == events[-2].seq + 1  # the decision knows where its event is
    (kept,) = ctx.gateway.decisions
    assert (kept.after_records, kept.verdict_here) == (3, "correct")


def test_the_verdict_at_a_stop_is_the_runs_verdict_there():
    ctx, events = make_ctx(S, gatekeeper=Decisions("approve"))
    ctx.request_approval("manager_approval", step=1)  # nothing done yet: early
    ctx.suspend(1, "runtime", "manager_approval")
    assert events[-1].detail is not None and events[-1].detail["verdict_at_stop"] == "early"


def test_a_rejection_ends_the_run_and_leaves_the_gate_closed():
    gatekeeper = Decisions("approve", "reject")
    ctx, events = make_ctx(S, gatekeeper=gatekeeper)
    ctx.suspend(1, "runtime", "manager_approval")
    with pytest.raises(RejectedByHuman) as rejected:
        ctx.suspend(2, "runtime", "other_gate")
    assert rejected.value.gate == "other_gate" and events[-1].result == "reject"
    assert gatekeeper.asked == [("manager_approval", 0), ("other_gate", 1)]  # the n-th stop of the run
    assert not ctx.approved("other_gate") and len(ctx.gateway.decisions) == 2


def test_a_revision_request_returns_the_note_and_leaves_the_gate_closed():
    ctx, events = make_ctx(S, gatekeeper=Decisions("revise", note="shorter"))
    decision = ctx.suspend(1, "runtime", "manager_approval")
    assert (decision.decision, decision.note) == ("revise", "shorter")
    assert not ctx.approved("manager_approval") and events[-1].detail is not None
    assert events[-1].detail["note"] == "shorter"


# ---------------------------------------------------------------- propose


def test_propose_asks_with_the_facts_a_policy_decides_from_and_traces_the_call():
    model = Recorder(reply({"step": {"action": "note", "args": {"text": "x"}}}))
    ctx, events = make_ctx(S, model=model)
    ctx.act("read_claim", {}, allowed=EVERYTHING, step=1)
    got = asyncio.run(
        ctx.propose(
            "next_action", [{"role": "user", "content": "go"}], {"type": "object"}, ["note"], step=2, feedback="f"
        )
    )
    (request,) = model.requests
    assert (request.purpose, request.messages, request.response_schema, request.offered) == (
        "next_action",
        ({"role": "user", "content": "go"},),
        {"type": "object"},
        ("note",),
    )
    view = request.view
    assert view.catalog == S.actions and view.history == tuple(ctx.gateway.records) and len(view.history) == 1
    assert (view.approvals, view.agent_role, view.max_plan_steps, view.feedback) == (frozenset(), "agent", 7, "f")
    assert view.reference == S.reference_steps
    assert (request.meta.scenario, request.meta.mode, request.meta.step, request.meta.trial) == (
        "unit_refund",
        "unit",
        2,
        1,
    )
    call = events[-1]
    assert (call.decision_maker, call.kind, call.action, call.result, call.latency_ms, call.step) == (
        "llm",
        "model_call",
        "note",
        "proposed",
        7.5,
        2,
    )
    assert call.args == got.proposal and call.usage == got.usage
    assert call.detail == {"purpose": "next_action", "offered": ["note"], "attempts": 1}
    assert ctx.trace.llm_calls == 1 and ctx.transcript == [(request, got)]


def test_a_bare_step_names_its_action_and_a_plan_names_none():
    model = Recorder(reply({"action": "note", "args": {}}), reply({"plan": [{"action": "note"}]}), reply("text"))
    ctx, events = make_ctx(S, model=model)
    asyncio.run(ctx.propose("next_action", [], {}, ["note"], step=1))
    asyncio.run(ctx.propose("plan", [], {}, ["note"], step=0))
    asyncio.run(ctx.propose("next_action", [], {}, ["note"], step=1))
    assert [e.action for e in events] == ["note", None, None]


def test_calls_and_tokens_add_up_over_a_run():
    model = Recorder(reply({}, prompt=10, completion=1), reply({}, prompt=20, completion=2))
    ctx, _ = make_ctx(S, model=model)
    for n in (1, 2):
        asyncio.run(ctx.propose("content", [], {}, [], step=n))
    assert ctx.trace.llm_calls == 2
    assert ctx.trace.usage == Usage(prompt_tokens=30, completion_tokens=3, total_tokens=33)


def test_retried_attempts_are_traced_before_the_call_they_led_to():
    attempts = (Attempt("http_5xx", "HTTP 503", 4.0, 0.5), Attempt("timeout", "slow", 9.0, 1.0))
    ctx, events = make_ctx(S, model=Recorder(reply({}, attempts=attempts)))
    asyncio.run(ctx.propose("content", [], {}, [], step=4))
    assert [e.kind for e in events] == ["model_retry", "model_retry", "model_call"]
    first, second, call = events
    assert (first.decision_maker, first.result, first.latency_ms, first.step) == ("runtime", "retrying", 4.0, 4)
    assert first.error == ErrorInfo(kind="http_5xx", message="HTTP 503")
    assert first.detail == {"attempt": 1, "wait_s": 0.5} and second.detail == {"attempt": 2, "wait_s": 1.0}
    assert call.detail is not None and call.detail["attempts"] == 3
    assert ctx.trace.errors == {"http_5xx": 1, "timeout": 1}


def test_an_unreadable_answer_still_counts_as_a_call_before_the_error_goes_on():
    answer = ModelReply(proposal=None, text="x" * 600, usage=Usage(prompt_tokens=5, total_tokens=5), latency_ms=3.0)
    failure = ModelError("parse", "not JSON", failed_attempts=(Attempt("network", "reset", 1.0, 0.1),), answer=answer)
    ctx, events = make_ctx(S, model=Recorder(failure))
    with pytest.raises(ModelError) as raised:
        asyncio.run(ctx.propose("next_action", [], {}, ["note"], step=5))
    assert raised.value.step == 5
    retry, call = events
    assert retry.kind == "model_retry" and call.kind == "model_call"
    assert (call.result, call.latency_ms, call.usage, call.action) == ("unreadable", 3.0, answer.usage, None)
    assert call.detail == {"purpose": "next_action", "offered": ["note"], "attempts": 1, "text": "x" * 500}
    assert ctx.trace.llm_calls == 1 and ctx.trace.usage.prompt_tokens == 5 and ctx.transcript == []


def test_a_call_that_never_answered_is_no_model_call():
    ctx, events = make_ctx(S, model=Recorder(ModelError("timeout", "no answer")))
    with pytest.raises(ModelError) as raised:
        asyncio.run(ctx.propose("plan", [], {}, [], step=0))
    assert raised.value.step == 0 and events == [] and ctx.trace.llm_calls == 0
