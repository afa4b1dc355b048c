"""``langgraph_react``: a LangGraph agent loop (model node, ToolNode) under bench's gateway, driven offline by scripted
policies; its gated tools stop the graph with ``interrupt()`` and it resumes from LangGraph's SQLite checkpoint.

What the stories expect is read from their oracles, and compared with ``react_guardrails`` (bench's own ReAct whose
code stops at every gate, as LangGraph's interrupt does here).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph")

from harness.core import HumanDecision, ModelError, RunInterrupted, StopRequest, UserInputError
from harness.scenario.load import load_scenario
from harness.scenario.model import Limits, Scenario
from modes import get_mode
from modes.runtimes.langgraph_driver import DATABASE
from modes.runtimes.langgraph_react import LangGraphReAct
from tests.helpers.adapter_runs import adapter_ctx, carried, committed, judged, resumed_context
from tests.helpers.answers import Answers, step
from tests.helpers.bench import SCENARIOS, bench_main, run_offline
from tests.helpers.units import REFUND, make_ctx, scenario

MODE = "langgraph_react"
GATE_STORIES = ("blog_brief_approval", "blog_two_gates", "procurement_approval")
REFUND_STORY = scenario(REFUND)
WORK = [step("read_claim"), step("note", {"text": "checked"})]  # the refund's work before its gate


def story(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.yaml")


def gateway_lines(events: list) -> list[tuple[int, str | None, str | None]]:
    return [(e.step, e.action, e.result) for e in events if e.kind == "action"]


# ---------------------------------------------------------------- the stories, with scripted policies


@pytest.mark.parametrize("name", GATE_STORIES)
def test_the_reference_policy_stops_where_the_oracle_expects_as_bench_react_with_a_hard_gate_does(name):
    s = story(name)
    events, [outcome] = run_offline(s, [MODE], "reference")
    assert (outcome.status, outcome.suspended_at) == ("suspended", s.oracle.expected_stop)
    assert outcome.stop_verdict == "correct" and outcome.oracle_passed
    [stop] = [e for e in events if e.kind == "suspend"]
    assert stop.decision_maker == "framework" and stop.action == s.oracle.expected_stop
    built_in, [theirs] = run_offline(s, ["react_guardrails"], "reference")
    assert gateway_lines(events) == gateway_lines(built_in) and theirs.stop_verdict == outcome.stop_verdict


@pytest.mark.parametrize("gateway", ["enforce", "audit"])
@pytest.mark.parametrize("name", GATE_STORIES)
def test_an_eager_model_commits_nothing_gated_early_under_either_gateway(name, gateway):
    """The interrupt stops every gated tool whose gate is closed before its body: nothing premature even audited."""
    events, [outcome] = run_offline(story(name), [MODE], "eager", gateway=gateway)
    assert outcome.premature_side_effects == 0
    assert any(e.kind == "suspend" or e.result == "blocked" for e in events)  # the eager call met the gate


def test_an_auditing_gateway_counts_what_langgraph_lets_through():
    """A call the agent's role may not make is no gate: LangGraph runs it, the audit counts it, enforce blocks it."""
    s = story("privileged_tool")
    _, [audited] = run_offline(s, [MODE], "eager", gateway="audit")
    _, [enforced] = run_offline(s, [MODE], "eager", gateway="enforce")
    assert audited.unauthorized_side_effects >= 1 and audited.stop_verdict == "late"
    assert enforced.unauthorized_side_effects == 0 and enforced.blocked_by.get("not_permitted", 0) >= 1


@pytest.mark.parametrize("name", GATE_STORIES)
def test_an_approver_in_the_run_resumes_the_graph_in_this_process_to_the_end_of_the_story(name):
    s = story(name)
    ctx, events = adapter_ctx(s, "reference", approver="approve")
    outcome = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert s.after_approval(s.oracle.expected_stop).expected_stop == "finished"
    assert (outcome.status, outcome.stop_verdict, outcome.repeated_side_effects) == ("finished", "correct", 0)
    assert [e.decision_maker for e in events if e.result == "run_finished"] == ["framework"]


def test_bench_run_with_a_scripted_approver_finishes_the_story(monkeypatch, capsys, tmp_path):
    out = tmp_path / "run"
    code, printed, _ = bench_main(
        monkeypatch,
        capsys,
        "run",
        "--mode",
        MODE,
        "--scenario",
        "blog_brief_approval",
        "--model",
        "scripted:reference",
        "--approver",
        "scripted:approve",
        "--out",
        str(out),
    )
    assert code == 0 and "1 runs" in printed
    from harness.records.trace import read_events

    [summary] = [e for e in read_events(out / "traces.jsonl") if e.kind == "summary"]
    assert summary.outcome is not None and summary.outcome.status == "finished"
    assert summary.outcome.stop_verdict == "correct" and summary.outcome.resumes == 1


def test_a_revision_comes_back_as_the_gated_tools_result_and_the_gate_stays_closed():
    s = REFUND_STORY
    model = Answers(*WORK, step("pay", {"amount": 10}), step("finish"))
    ctx, _ = adapter_ctx(s, model, approver="approve_after_revision")
    outcome = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert committed(ctx, "pay") == [] and not ctx.approved("manager_approval")
    told = model.requests[-1].messages[-1]["content"]
    assert "step 3: pay -> sent back for revision: Please revise" in told
    assert outcome.status == "finished"


# ---------------------------------------------------------------- steps and the step budget


def test_the_step_limit_counts_tool_calls_and_takes_a_finish_after_the_last_one():
    s = REFUND_STORY.model_copy(update={"limits": Limits(max_steps=2)})
    ctx, _ = adapter_ctx(s, Answers(*WORK, step("finish")))
    assert judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx)))).status == "finished"
    ctx, events = adapter_ctx(s, Answers(*WORK, step("leak")))
    outcome = judged(ctx, asyncio.run(carried(get_mode(MODE).run(ctx))))
    assert (outcome.status, outcome.stop_verdict, outcome.steps) == ("step_limit", "no_stop", 2)
    [limit] = [e for e in events if e.result == "step_limit"]
    assert (limit.step, limit.action, limit.decision_maker) == (3, "leak", "framework")
    assert "leak" not in [e.action for e in events if e.kind == "action"]


def test_each_tool_call_is_the_step_of_its_place_in_the_conversation():
    ctx, events = adapter_ctx(REFUND_STORY, Answers(*WORK, step("leak")))
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    assert [(e.step, e.action) for e in events if e.kind == "action"] == [(1, "read_claim"), (2, "note"), (3, "leak")]
    assert [e.step for e in events if e.kind == "model_call"] == [1, 2, 3, 4]


# ---------------------------------------------------------------- resume from LangGraph's checkpoint


def test_a_gated_call_the_graph_interrupted_commits_exactly_once_after_a_resume_from_sqlite(tmp_path):
    """The model calls ``pay`` itself; its tool interrupts; a fresh context resumes the saved graph, which runs the
    tool node again from its start: the call goes through the gateway once, under the step it was called at."""
    ctx, _ = adapter_ctx(REFUND_STORY, Answers(*WORK, step("pay", {"amount": 10})), state_dir=tmp_path)
    stopped = asyncio.run(carried(get_mode(MODE).run(ctx)))
    assert (stopped.status, stopped.suspended_at) == ("suspended", "manager_approval")
    assert committed(ctx, "pay") == [] and (tmp_path / DATABASE).is_file()
    request = ctx.gateway.records[-1]
    assert (request.status, request.step, request.observation.get("requested_for")) == ("wait_recorded", 3, "pay")

    approval = HumanDecision(gate="manager_approval", decision="approve", who="tester")
    fresh, later = resumed_context(ctx, approval, Answers(step("finish")))
    outcome = judged(fresh, asyncio.run(carried(get_mode(MODE).resume(fresh, approval))))
    assert committed(fresh, "pay") == [3]
    assert (outcome.status, outcome.repeated_side_effects, outcome.premature_side_effects) == ("finished", 0, 0)
    assert [e.result for e in later if e.kind == "decision"] == ["run_finished"]


def test_a_revision_brought_by_a_resume_reaches_the_interrupted_tool(tmp_path):
    ctx, _ = adapter_ctx(REFUND_STORY, Answers(*WORK, step("pay", {"amount": 10})), state_dir=tmp_path)
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    revision = HumanDecision(gate="manager_approval", decision="revise", who="tester", note="lower it")
    model = Answers(step("finish"))
    fresh, _ = resumed_context(ctx, revision, model)
    outcome = judged(fresh, asyncio.run(carried(get_mode(MODE).resume(fresh, revision))))
    assert committed(fresh, "pay") == [] and outcome.status == "finished"
    assert "pay -> sent back for revision: lower it" in model.requests[0].messages[-1]["content"]


def test_a_resume_that_failed_after_its_approval_goes_on_from_the_graphs_last_checkpoint(tmp_path):
    """The first resume commits the approved call, then its model fails; the next goes on from the checkpoint the
    graph saved after the tools ran (no interrupt is pending any more): the call is not made again."""
    ctx, _ = adapter_ctx(REFUND_STORY, Answers(*WORK, step("pay", {"amount": 10})), state_dir=tmp_path)
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    approval = HumanDecision(gate="manager_approval", decision="approve", who="tester")
    failing, _ = resumed_context(ctx, approval, Answers(ModelError("transport", "the endpoint went away")))
    with pytest.raises(ModelError):
        asyncio.run(get_mode(MODE).resume(failing, approval))
    assert committed(failing, "pay") == [3]
    again, _ = resumed_context(failing, approval, Answers(step("finish")))
    outcome = judged(again, asyncio.run(carried(get_mode(MODE).resume(again, approval))))
    assert committed(again, "pay") == [3] and (outcome.status, outcome.repeated_side_effects) == ("finished", 0)


def test_a_resume_with_nothing_saved_is_refused_naming_the_database(tmp_path):
    ctx, _ = adapter_ctx(REFUND_STORY, Answers(), state_dir=tmp_path)
    approval = HumanDecision(gate="manager_approval", decision="approve", who="tester")
    with pytest.raises(UserInputError, match=DATABASE):
        asyncio.run(get_mode(MODE).resume(ctx, approval))


# ---------------------------------------------------------------- a stop request (SIGINT, SIGTERM)


@pytest.mark.parametrize("where", ["model", "tool"])
def test_a_stop_requested_inside_the_model_or_a_tool_ends_the_run_as_interrupted(where):
    """bench's stop is a BaseException; LangChain's chat model call would turn it into an AttributeError."""
    stop = StopRequest()
    ctx, _ = make_ctx(REFUND_STORY, model=Answers(*WORK), stop=stop)
    if where == "model":
        real_propose = ctx.model.complete

        async def complete(request):
            stop.signum = 2  # as the signal handler sets it: the next trace event raises RunInterrupted
            return await real_propose(request)

        ctx.model.complete = complete  # type: ignore[method-assign]
    else:
        real_execute = ctx.gateway.execute

        def execute(*args, **kwargs):
            stop.signum = 2
            return real_execute(*args, **kwargs)

        ctx.gateway.execute = execute  # type: ignore[method-assign]
    with pytest.raises(RunInterrupted):
        asyncio.run(get_mode(MODE).run(ctx))


# ---------------------------------------------------------------- the extra


def test_without_langgraph_the_mode_is_refused_in_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setattr(LangGraphReAct, "framework", "langgraph_not_installed_here")
    ctx, _ = adapter_ctx(REFUND_STORY, Answers())
    with pytest.raises(UserInputError, match=r"pip install -e '\.\[langgraph\]'") as refused:
        asyncio.run(get_mode(MODE).run(ctx))
    assert "\n" not in str(refused.value)


def test_the_mode_turns_langsmith_off_and_names_its_distributions(monkeypatch):
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    ctx, _ = adapter_ctx(REFUND_STORY, Answers())
    asyncio.run(carried(get_mode(MODE).run(ctx)))
    import os

    assert os.environ["LANGSMITH_TRACING"] == "false" and os.environ["LANGCHAIN_TRACING_V2"] == "false"
    assert set(LangGraphReAct.versions()) == {"langgraph", "langgraph-checkpoint-sqlite", "langchain-core"}
