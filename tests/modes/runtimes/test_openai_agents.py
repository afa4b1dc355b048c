"""The ``openai_agents`` mode: an OpenAI Agents SDK agent under bench's gateway, driven offline by scripted policies.

What the stories expect is read from their oracles; what the SDK does on resume is characterised against the
installed openai-agents (pinned below), so an upgrade that changes it is seen.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, ModelResponse, Runner, RunState, Usage
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from harness.choices import GatewayPolicy
from harness.core import Gateway, HumanDecision, ModeResult, RejectedByHuman, RunContext, Suspended, judge
from harness.core.approvals import ScriptedApprover
from harness.core.outcome import verdict_at_stop
from harness.models.scripted import ScriptedSource
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.load import load_scenario
from harness.scenario.model import Limits, Scenario
from modes import get_mode
from modes.runtimes.openai_agents import OpenAIAgents
from modes.runtimes.openai_agents_sdk import STATE_FILE
from tests.helpers.answers import Answers, step
from tests.helpers.bench import SCENARIOS
from tests.helpers.units import REFUND, make_ctx, scenario

MODE = "openai_agents"
GATE_STORIES = ("blog_brief_approval", "blog_two_gates", "procurement_approval")
PINNED = "0.24.0"  # the openai-agents the characterisation below was written against


def story(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.yaml")


def scripted_ctx(
    s: Scenario,
    policy: str,
    *,
    gateway: GatewayPolicy = "enforce",
    approver: str | None = None,
    state_dir: Path | None = None,
) -> tuple[RunContext, list[TraceEvent]]:
    gatekeeper = ScriptedApprover(approver) if approver else None
    ctx, events = make_ctx(s, policy=gateway, gatekeeper=gatekeeper, model=ScriptedSource(policy).for_run(0))
    return dataclasses.replace(ctx, state_dir=state_dir), events


async def carried(run: Any) -> ModeResult:
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


def run_mode(ctx: RunContext) -> RunOutcome:
    return judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))


def committed(ctx: RunContext, action: str) -> int:
    return sum(r.action == action and r.status == "committed" for r in ctx.gateway.records)


def gated_tasks(s: Scenario) -> dict[str, str]:
    """Each gated task action and its gate."""
    return {a.name: a.gate for a in s.actions if a.kind == "task" and a.gate is not None}


# ---------------------------------------------------------------- the stories, with scripted policies


@pytest.mark.parametrize("name", GATE_STORIES)
def test_reference_policy_stops_where_the_oracle_expects_through_the_sdks_approval(name):
    s = story(name)
    ctx, events = scripted_ctx(s, "reference")
    outcome = run_mode(ctx)
    expected = s.oracle.expected_stop
    assert outcome.stop_verdict == "correct" and outcome.suspended_at == expected
    last = ctx.gateway.records[-1]
    assert last.status == "wait_recorded" and last.gate == expected  # the wait is recorded before the stop
    [stop] = [e for e in events if e.kind == "suspend"]
    assert stop.decision_maker == "framework" and stop.action == expected
    closed = {name for name, gate in gated_tasks(s).items() if not ctx.approved(gate)}
    assert not any(committed(ctx, action) for action in closed)


@pytest.mark.parametrize("name", GATE_STORIES)
def test_eager_policy_commits_nothing_gated_early_under_either_gateway(name):
    """The SDK pauses every unapproved gated call before its body: nothing premature even when only audited."""
    s = story(name)
    gateways: tuple[GatewayPolicy, ...] = ("enforce", "audit")
    for gateway in gateways:
        ctx, events = scripted_ctx(s, "eager", gateway=gateway)
        outcome = run_mode(ctx)
        assert outcome.premature_side_effects == 0, gateway
        paused = [e for e in events if e.decision_maker == "framework" and e.kind in ("suspend", "decision")]
        assert paused, gateway  # the eager call went for a gate, and the SDK's approval is what held it


def test_eager_policy_goes_for_the_gate_first_so_the_framework_pauses_it(blog):
    ctx, events = scripted_ctx(blog, "eager", gateway="audit")
    outcome = run_mode(ctx)
    first_call = next(e for e in events if e.kind == "model_call")
    assert first_call.action == "write_draft"
    assert committed(ctx, "write_draft") == 0 and outcome.premature_side_effects == 0
    assert outcome.status == "suspended" and outcome.suspended_at == "brief_approval"


@pytest.mark.parametrize("name", GATE_STORIES)
def test_an_approver_in_the_run_lets_the_sdk_go_on_to_the_end_of_the_story(name):
    s = story(name)
    ctx, events = scripted_ctx(s, "reference", approver="approve")
    outcome = run_mode(ctx)
    expected = s.after_approval(s.oracle.expected_stop).expected_stop
    assert expected == "finished"  # the second half of each of these stories ends the run
    assert outcome.status == "finished" and outcome.stop_verdict == "correct"
    assert outcome.repeated_side_effects == 0
    done = {action: committed(ctx, action) for action in gated_tasks(s) if committed(ctx, action)}
    assert done and set(done.values()) == {1}  # the gated work went through once its gate opened, and only once
    finished = [e for e in events if e.kind == "decision" and e.result == "run_finished"]
    assert [e.decision_maker for e in finished] == ["framework"]


def test_a_revision_goes_back_to_the_model_as_the_sdks_rejection_with_the_note(blog):
    ctx, _ = scripted_ctx(blog, "reference", approver="approve_after_revision")
    run_mode(ctx)
    seen = [request.messages[-1]["content"] for request, _ in ctx.transcript]
    assert any("asked for a revision" in text and "make it more specific" in text for text in seen)
    assert ctx.gateway.decisions[0].decision.decision == "revise"


def test_the_step_limit_counts_tool_calls_and_still_takes_the_finish_after_the_last_one():
    s = scenario(REFUND)
    two = Limits(max_steps=2)
    work = [step("read_claim"), step("note", {"text": "checked"})]
    ctx, _ = make_ctx(s, model=Answers(*work, step("finish")), limits=two)
    finished = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert (finished.status, finished.steps) == ("finished", 2)
    ctx, events = make_ctx(s, model=Answers(*work, step("leak")), limits=two)
    cut = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert (cut.status, cut.steps) == ("step_limit", 2)
    assert "leak" not in [e.action for e in events if e.kind == "action"]
    [limit] = [e for e in events if e.kind == "decision" and e.result == "step_limit"]
    assert (limit.step, limit.action) == (3, "leak")


def test_a_tool_the_agent_does_not_have_ends_the_run_as_the_sdk_does():
    s = scenario(REFUND)
    ctx, events = make_ctx(s, model=Answers(step("no_such_tool")))
    result = asyncio.run(carried(get_mode(MODE).run(ctx)))
    assert result.status == "error"
    [error] = [e for e in events if e.kind == "error"]
    assert error.decision_maker == "framework" and "no_such_tool" in (error.error.message if error.error else "")


# ---------------------------------------------------------------- resume in a fresh context, from the state file


def fresh_context_after(ctx: RunContext, decision: HumanDecision | None, model: Any) -> RunContext:
    """What ``bench resume`` hands the mode in a new process: the gateway as it stood at the stop, the decision
    applied to it (None: it is there already), a new model and trace; the framework's state only in the file."""
    old = ctx.gateway
    store = dataclasses.replace(
        old.store,
        artifacts=copy.deepcopy(old.store.artifacts),
        approvals=set(old.store.approvals),
        wait_markers=list(old.store.wait_markers),
        calls=dict(old.store.calls),
    )
    gateway = Gateway(ctx.scenario, store, old.policy)
    gateway.records, gateway.decisions = list(old.records), list(old.decisions)
    fresh, _ = make_ctx(ctx.scenario, policy=gateway.policy, model=model)
    fresh = dataclasses.replace(fresh, gateway=gateway, state_dir=ctx.state_dir)
    if decision is not None:
        gateway.decide(decision, verdict_at_stop(ctx.scenario, gateway, decision.gate))
    return fresh


def test_a_gated_call_the_sdk_paused_commits_exactly_once_after_a_resume_from_its_saved_state(tmp_path):
    """The SDK pauses ``pay`` itself (no wait action first); in a new context the approval reaches the saved call."""
    s = scenario(REFUND)
    ctx, _ = make_ctx(
        s, model=Answers(step("read_claim"), step("note", {"text": "over 2,000"}), step("pay", {"amount": 2600}))
    )
    ctx = dataclasses.replace(ctx, state_dir=tmp_path)
    first = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert first.status == "suspended" and first.suspended_at == "manager_approval"
    assert committed(ctx, "pay") == 0 and (tmp_path / STATE_FILE).is_file()
    approve = HumanDecision(gate="manager_approval", decision="approve", who="tester")
    resumed = fresh_context_after(ctx, approve, Answers())  # after the payment, the model finishes
    outcome = judged(resumed, asyncio.run(carried(OpenAIAgents().resume(resumed, approve))))
    assert committed(resumed, "pay") == 1 and outcome.repeated_side_effects == 0
    assert outcome.status == "finished"
    [paid] = [r for r in resumed.gateway.records if r.action == "pay"]
    assert paid.step == 3  # the call's ordinal in the conversation, the same as before the stop


def test_a_resume_carried_out_again_from_the_same_saved_state_commits_the_approved_call_again(tmp_path):
    """A resume killed after the approved call committed, before any newer state was saved, is carried out again
    from the state the pause saved: the SDK runs the call again and the gateway counts it (the measurement)."""
    s = scenario(REFUND)
    ctx, _ = make_ctx(s, model=Answers(step("read_claim"), step("note", {"text": "ok"}), step("pay", {"amount": 2600})))
    ctx = dataclasses.replace(ctx, state_dir=tmp_path)
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    approve = HumanDecision(gate="manager_approval", decision="approve", who="tester")
    killed = fresh_context_after(ctx, approve, Answers())
    asyncio.run(carried(OpenAIAgents().resume(killed, approve)))
    assert committed(killed, "pay") == 1
    again = fresh_context_after(killed, None, Answers())  # the killed resume's records and decision are the run's
    outcome = judged(again, asyncio.run(carried(OpenAIAgents().resume(again, approve))))
    assert committed(again, "pay") == 2 and outcome.repeated_side_effects == 1
    assert {r.step for r in again.gateway.records if r.action == "pay"} == {3}


def test_a_suspended_story_resumed_from_its_state_file_finishes_with_the_gated_action_once(tmp_path):
    s = story("blog_brief_approval")
    ctx, _ = scripted_ctx(s, "reference", state_dir=tmp_path)
    assert run_mode(ctx).status == "suspended"
    saved = json.loads((tmp_path / STATE_FILE).read_text())
    [waiting] = saved["current_step"]["data"]["interruptions"]  # the SDK's own record of the paused call
    wait = s.wait_for(s.oracle.expected_stop)
    assert wait is not None and waiting["tool_name"] == wait.name
    approve = HumanDecision(gate=s.oracle.expected_stop, decision="approve", who="tester")
    resumed = fresh_context_after(ctx, approve, ScriptedSource("reference").for_run(0))
    outcome = judged(resumed, asyncio.run(carried(OpenAIAgents().resume(resumed, approve))))
    assert outcome.status == "finished" and outcome.stop_verdict == "correct"
    assert committed(resumed, "write_draft") == 1 and outcome.repeated_side_effects == 0
    waits = [r for r in resumed.gateway.records if r.status == "wait_recorded"]
    assert len(waits) == 1  # the approved wait call's body reports the decision, it records no second wait


def test_a_revision_on_resume_sends_the_paused_call_back_and_keeps_the_gate_closed(tmp_path):
    s = scenario(REFUND)
    ctx, _ = make_ctx(s, model=Answers(step("read_claim"), step("note", {"text": "x"}), step("pay", {"amount": 1})))
    ctx = dataclasses.replace(ctx, state_dir=tmp_path)
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    revise = HumanDecision(gate="manager_approval", decision="revise", who="tester", note="lower it")
    model = Answers()
    resumed = fresh_context_after(ctx, revise, model)
    asyncio.run(carried(OpenAIAgents().resume(resumed, revise)))
    assert committed(resumed, "pay") == 0 and not resumed.approved("manager_approval")
    assert "lower it" in model.requests[0].messages[-1]["content"]


# ---------------------------------------------------------------- what openai-agents itself does (pinned)


@pytest.fixture
def pinned_sdk() -> None:
    installed = version("openai-agents")
    if installed != PINNED:
        pytest.skip(
            f"LOUD SKIP: these tests characterise openai-agents {PINNED}; {installed} is installed. Re-run them "
            "against it, check what changed on resume, and re-pin PINNED"
        )


class OneCallModel(Model):
    """Calls ``tool`` once (id ``call_1``), then answers with a final message."""

    def __init__(self, tool: str = "pay", call: str = "call_1"):
        self.tool, self.call = tool, call

    async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any) -> ModelResponse:
        called = any(isinstance(i, dict) and i.get("type") == "function_call" for i in input)
        if called:
            text = ResponseOutputText(text="done", type="output_text", annotations=[], logprobs=[])
            out: Any = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed", content=[text]
            )
        else:
            out = ResponseFunctionToolCall(
                id=self.call, call_id=self.call, type="function_call", name=self.tool, arguments="{}"
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def counting_agent(runs: list[str]) -> Agent[Any]:
    async def pay(tool_ctx: Any, raw: str) -> str:
        runs.append(tool_ctx.tool_call_id)
        return "paid"

    tool = FunctionTool(
        name="pay",
        description="Pay.",
        params_json_schema={"type": "object", "properties": {}},
        on_invoke_tool=pay,
        strict_json_schema=False,
        needs_approval=True,
    )
    return Agent(name="bench_agent", model=OneCallModel(), tools=[tool])


async def paused(runs: list[str]) -> str:
    result = await Runner.run(counting_agent(runs), "go")
    assert [i.tool_name for i in result.interruptions] == ["pay"] and runs == []
    return result.to_state().to_string()


def test_sdk_runs_an_approved_call_once_when_resumed_from_its_serialised_state(pinned_sdk):
    async def scenario_() -> list[str]:
        runs: list[str] = []
        saved = await paused(runs)
        agent = counting_agent(runs)
        state = await RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        result = await Runner.run(agent, state)
        assert result.final_output == "done" and not result.interruptions
        return runs

    assert asyncio.run(scenario_()) == ["call_1"]


def test_sdk_keeps_an_approval_given_before_the_state_was_serialised(pinned_sdk):
    async def scenario_() -> tuple[list[str], list[Any]]:
        runs: list[str] = []
        saved = await paused(runs)
        state = await RunState.from_string(counting_agent(runs), saved)
        state.approve(state.get_interruptions()[0])
        approved_text = state.to_string()
        agent = counting_agent(runs)
        result = await Runner.run(agent, await RunState.from_string(agent, approved_text))
        return runs, result.interruptions

    runs, interruptions = asyncio.run(scenario_())
    assert runs == ["call_1"] and interruptions == []


def test_sdk_honours_an_approval_on_resume_when_a_context_is_passed_openai_agents_python_4244(pinned_sdk):
    """openai/openai-agents-python#4244: with ``context=`` on resume, the run re-interrupted and never ran the tool.
    On the pinned version the restored context stays authoritative and the approval is honoured."""

    async def scenario_() -> tuple[list[str], list[Any]]:
        runs: list[str] = []
        saved = await paused(runs)
        agent = counting_agent(runs)
        state = await RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        result = await Runner.run(agent, state, context={"tenant": "bench"})
        return runs, result.interruptions

    runs, interruptions = asyncio.run(scenario_())
    assert runs == ["call_1"] and interruptions == []


def test_sdk_runs_the_call_again_when_the_same_saved_state_is_resumed_twice(pinned_sdk):
    """The state saved at the pause does not learn that the call ran: a resume repeated from it (a crash after the
    commit, before anything newer was saved) runs the tool body again. Exactly-once is not the SDK's to give."""

    async def resume_once(runs: list[str], saved: str) -> None:
        agent = counting_agent(runs)
        state = await RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        await Runner.run(agent, state)

    async def scenario_() -> list[str]:
        runs: list[str] = []
        saved = await paused(runs)
        await resume_once(runs, saved)
        await resume_once(runs, saved)
        return runs

    assert asyncio.run(scenario_()) == ["call_1", "call_1"]


def test_sdk_skips_a_call_whose_id_the_conversation_already_completed(pinned_sdk):
    """Why the model port numbers call ids by their ordinal: a call id the run already completed is not executed
    again (the Model contract: "an exact completed replay may be omitted"), so reused ids would hide calls."""

    class ReusedIds(Model):
        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any) -> ModelResponse:
            self.turn += 1
            if self.turn <= 2:  # the same call id twice
                call: Any = ResponseFunctionToolCall(
                    id="c", call_id="c", type="function_call", name="pay", arguments="{}"
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            text = ResponseOutputText(text="done", type="output_text", annotations=[], logprobs=[])
            message = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    runs: list[str] = []

    async def pay(tool_ctx: Any, raw: str) -> str:
        runs.append(tool_ctx.tool_call_id)
        return "paid"

    tool = FunctionTool(
        name="pay",
        description="Pay.",
        params_json_schema={"type": "object", "properties": {}},
        on_invoke_tool=pay,
        strict_json_schema=False,
    )
    asyncio.run(Runner.run(Agent(name="bench_agent", model=ReusedIds(), tools=[tool]), "go"))
    assert runs == ["c"]


def test_the_sdks_tracing_sees_nothing_of_a_run(blog):
    """No trace leaves the process: a trace processor registered with the SDK is never called during a run."""
    from agents import add_trace_processor
    from agents.tracing.processor_interface import TracingProcessor

    class Collect(TracingProcessor):
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def on_trace_start(self, trace: Any) -> None:
            self.seen.append(trace)

        def on_trace_end(self, trace: Any) -> None:
            self.seen.append(trace)

        def on_span_start(self, span: Any) -> None:
            self.seen.append(span)

        def on_span_end(self, span: Any) -> None:
            self.seen.append(span)

        def shutdown(self) -> None:
            return None

        def force_flush(self) -> None:
            return None

    collect = Collect()
    add_trace_processor(collect)
    ctx, _ = scripted_ctx(blog, "reference", approver="approve")
    assert run_mode(ctx).status == "finished"
    assert collect.seen == []
