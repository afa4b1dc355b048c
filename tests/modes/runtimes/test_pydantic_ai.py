"""The ``pydantic_ai`` mode: a real PydanticAI agent on bench's model and gateway, gated tools deferred for approval,
and a suspended run continued from PydanticAI's saved message history, in this process or a new one."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from importlib.metadata import version

import pytest

from harness.core.approvals import Suspended, parse_approver
from harness.core.clock import FakeClock
from harness.core.context import RunContext, RunInfo, RunTrace
from harness.core.gateway import Gateway
from harness.core.model_port import Model
from harness.core.outcome import repeated_side_effects
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell, scenario_digest
from harness.matrix.cell.units import Cell
from harness.models.scripted import ScriptedSource
from harness.records.checkpoint import HumanDecision
from harness.records.trace import RunOutcome, TraceEvent
from harness.scenario.load import load_scenario
from harness.scenario.model import Scenario
from modes import MODES, get_mode
from tests.helpers.answers import Answers, step
from tests.helpers.bench import SCENARIOS, bench_process, run_offline
from tests.helpers.units import Decisions, make_ctx

pytest.importorskip("pydantic_ai")

MODE = "pydantic_ai"
GATE_STORIES = ("blog_brief_approval", "bank_transfer_compliance", "procurement_approval")
PINNED = "2.68.0"  # the pydantic-ai-slim whose deferred-tool behaviour the characterisation tests pin
STATE = "pydantic_ai_state.json"


def story(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.yaml")


def gated_actions(s: Scenario) -> set[str]:
    return {a.name for a in s.actions if a.kind == "task" and a.gate is not None}


def scripted_ctx(s: Scenario, policy: str, **changes: object) -> tuple[RunContext, list[TraceEvent]]:
    """A run context on a fresh store with a scripted model; ``changes`` replace its fields (state_dir, ...)."""
    ctx, events = make_ctx(s, model=ScriptedSource(policy).for_run(0))
    return dataclasses.replace(ctx, **changes), events  # type: ignore[arg-type]


def with_approver(s: Scenario, policy: str, approver: str) -> RunOutcome:
    config = MatrixConfig(model=ScriptedSource(policy), clock=FakeClock(), approver=parse_approver(approver).for_run)
    return asyncio.run(run_cell(Cell(s, MODE, 1), config, lambda event: None))


# ---------------------------------------------------------------- the stories, as the oracle expects them


@pytest.mark.parametrize("name", GATE_STORIES)
def test_the_reference_model_stops_where_the_oracle_expects(name):
    s = story(name)
    events, [outcome] = run_offline(s, [MODE], "reference")
    assert outcome.status == "suspended" and outcome.suspended_at == s.oracle.expected_stop
    assert outcome.stop_verdict == "correct" and outcome.oracle_passed
    suspends = [e for e in events if e.kind == "suspend"]
    assert [(e.decision_maker, e.action) for e in suspends] == [("framework", s.oracle.expected_stop)]
    assert not any(e.kind == "action" and e.action in gated_actions(s) for e in events)


@pytest.mark.parametrize("name", GATE_STORIES)
def test_an_in_run_approver_lets_the_agent_finish_the_second_half_once(name):
    s = story(name)
    outcome = with_approver(s, "reference", "scripted:approve")
    after = s.after_approval(s.oracle.expected_stop)
    assert outcome.status == after.expected_stop == "finished" and outcome.stop_verdict == "correct"
    assert outcome.resumes == 1 and outcome.repeated_side_effects == 0 and outcome.premature_side_effects == 0


def test_the_eager_model_commits_nothing_early_under_either_gateway(blog):
    _, [enforced] = run_offline(blog, [MODE], "eager", gateway="enforce")
    events, [audited] = run_offline(blog, [MODE], "eager", gateway="audit")
    assert enforced.premature_side_effects == 0 and audited.premature_side_effects == 0
    # under audit nothing but PydanticAI's deferral stands between the eager call and the draft
    deferred = [e for e in events if e.kind == "decision" and e.result == "approval_required"]
    assert deferred and deferred[0].action == "write_draft" and deferred[0].decision_maker == "framework"
    assert "forbidden:write_draft" not in audited.violations


def test_a_blocked_approval_request_comes_back_to_the_model_as_a_denied_tool(blog):
    """The eager draft before any brief: the gateway refuses to ask for an approval of it, PydanticAI gets the call
    denied with the gateway's reason, and the agent goes on until its steps run out (nothing suspends)."""
    ctx, events = scripted_ctx(blog, "eager")
    result = asyncio.run(get_mode(MODE).run(ctx))
    assert result.status == "step_limit"
    blocked = [r for r in ctx.gateway.records if r.status == "blocked"]
    assert blocked and all(r.reason == "precondition" for r in blocked)
    assert not any(e.kind == "suspend" for e in events)
    last_request = ctx.transcript[-1][0]
    assert "blocked" in last_request.messages[-1]["content"]  # the denial, as the agent's observation


def test_the_step_limit_ends_a_looping_agent(blog):
    """As ReAct: max_steps actions, then one more proposal, taken only if it is the finish (it is not here)."""
    events, [outcome] = run_offline(blog, [MODE], "looping")
    assert outcome.status == "step_limit" and outcome.steps == blog.limits.max_steps
    spent = [e for e in events if e.kind == "decision" and e.result == "step_limit"]
    assert [(e.decision_maker, e.step) for e in spent] == [("framework", blog.limits.max_steps + 1)]


def test_a_revision_note_reaches_the_model_as_the_denied_tool_result(blog):
    ctx, _ = scripted_ctx(blog, "reference", gatekeeper=Decisions("revise", note="shorter please"))
    with pytest.raises(Suspended):  # the reference model redoes the brief and asks again; nobody decides now
        asyncio.run(get_mode(MODE).run(ctx))
    assert not ctx.approved("brief_approval") and "write_draft" not in [r.action for r in ctx.gateway.records]
    assert [r.action for r in ctx.gateway.records] == ["create_brief", "wait_for_approval"] * 2
    assert "shorter please" in ctx.transcript[2][0].messages[-1]["content"]  # the denied tool result carries it


@pytest.mark.parametrize("args", [[1, 2], "text", '{"topic": "a string, not an object"}'])
def test_arguments_that_are_not_an_object_are_refused_by_pydantic_ai_and_the_run_goes_on(blog, args):
    ctx, events = make_ctx(
        blog, model=Answers({"action": "create_brief", "args": args}, step("create_brief", {"topic": "t"}))
    )
    result = asyncio.run(get_mode(MODE).run(ctx))
    assert result.status == "finished"
    refused = [e for e in events if e.kind == "decision" and e.result == "refused"]
    assert [(e.decision_maker, e.action, e.step) for e in refused] == [("framework", "create_brief", 1)]
    assert [(r.action, r.status, r.step) for r in ctx.gateway.records] == [("create_brief", "committed", 2)]
    assert "step 1: create_brief -> refused by PydanticAI" in ctx.transcript[1][0].messages[-1]["content"]


def test_running_leaves_the_scenario_as_loaded(blog):
    """PydanticAI edits the schemas it is given; the mode hands it copies (a resume checks the scenario's digest)."""
    before = scenario_digest(blog)
    run_offline(blog, [MODE], "reference")
    with_approver(blog, "random", "scripted:approve")
    assert scenario_digest(blog) == before


# ---------------------------------------------------------------- a suspended run goes on from its saved history


def resumed(
    s: Scenario, ctx: RunContext, decision: HumanDecision, model: Model | None = None
) -> tuple[RunContext, list[TraceEvent]]:
    """A fresh context as ``bench resume`` builds one: the gateway's records and store as they stood at the stop,
    the decision applied to it, a new trace and a new model; only the state folder is shared."""
    gateway = Gateway(s, copy.deepcopy(ctx.gateway.store), ctx.gateway.policy)
    gateway.records, gateway.decisions = list(ctx.gateway.records), list(ctx.gateway.decisions)
    gateway.decide(decision, "correct")
    events: list[TraceEvent] = []
    clock = FakeClock()
    trace = RunTrace(events.append, RunInfo("run-1", s.id, MODE, "scripted:reference", 1), clock)
    fresh = dataclasses.replace(
        ctx, gateway=gateway, trace=trace, model=model or ScriptedSource("reference").for_run(0)
    )
    return dataclasses.replace(fresh, transcript=[]), events


@pytest.mark.parametrize("name", GATE_STORIES)
def test_a_suspended_run_resumed_from_its_saved_state_commits_the_gated_action_once(name, tmp_path):
    s = story(name)
    ctx, _ = scripted_ctx(s, "reference", state_dir=tmp_path)
    with pytest.raises(Suspended):
        asyncio.run(get_mode(MODE).run(ctx))
    (saved,) = json.loads((tmp_path / STATE).read_text())["stops"].values()
    assert [p["gate"] for p in saved["pending"]] == [s.oracle.expected_stop]

    approval = HumanDecision(gate=s.oracle.expected_stop, decision="approve", who="tester")
    fresh, events = resumed(s, ctx, approval)
    result = asyncio.run(get_mode(MODE).resume(fresh, approval))  # a new mode object: nothing kept in memory
    assert result.status == "finished"
    committed = [r.action for r in fresh.gateway.records if r.side_effect]
    assert all(committed.count(action) == 1 for action in gated_actions(s) & set(committed))
    assert gated_actions(s) & set(committed)
    assert not any(e.kind == "model_call" and e.step <= saved["pending"][0]["step"] for e in events)


def test_a_revision_on_resume_is_a_denied_tool_and_the_gate_stays_closed(blog, tmp_path):
    ctx, _ = scripted_ctx(blog, "reference", state_dir=tmp_path)
    with pytest.raises(Suspended):
        asyncio.run(get_mode(MODE).run(ctx))
    revise = HumanDecision(gate="brief_approval", decision="revise", who="tester", note="name the audience")
    fresh, events = resumed(blog, ctx, revise)
    with pytest.raises(Suspended):  # the brief redone, the approval asked again
        asyncio.run(get_mode(MODE).resume(fresh, revise))
    assert not any(r.action == "write_draft" for r in fresh.gateway.records)
    assert next(e.result for e in events if e.decision_maker == "framework") == "tool_denied"
    assert "name the audience" in fresh.transcript[0][0].messages[-1]["content"]


def test_a_resume_killed_past_its_next_stop_goes_on_again_from_the_stop_its_decision_belongs_to(tmp_path):
    """The draft waits for its approval; the first resume runs it and reaches the publication stop, and dies before
    the trace says so. Carried out again, the resume starts from the draft's stop (the file keeps both stops), and
    PydanticAI runs the approved draft a second time under the same step: the repeat bench counts."""
    s = story("blog_two_gates")
    draft = step("write_draft", {"title": "t", "body": "b"})
    ctx, _ = make_ctx(s, model=Answers(step("read_brief"), step("write_synopsis", {"synopsis": "s"}), draft))
    ctx = dataclasses.replace(ctx, state_dir=tmp_path)
    with pytest.raises(Suspended):
        asyncio.run(get_mode(MODE).run(ctx))
    assert not any(r.action == "write_draft" for r in ctx.gateway.records)  # deferred, not run
    approval = HumanDecision(gate="synopsis_approval", decision="approve", who="tester")
    killed, _ = resumed(s, ctx, approval, Answers(step("request_publication")))
    with pytest.raises(Suspended):  # it reaches the next stop; say the process dies right after
        asyncio.run(get_mode(MODE).resume(killed, approval))
    assert sorted(json.loads((tmp_path / STATE).read_text())["stops"]) == ["0", "1"]

    again, _ = resumed(s, ctx, approval, Answers(step("request_publication")))
    again.gateway.records.extend(killed.gateway.records[len(ctx.gateway.records) :])  # what the killed one did
    with pytest.raises(Suspended):
        asyncio.run(get_mode(MODE).resume(again, approval))
    drafts = [r for r in again.gateway.records if r.action == "write_draft" and r.side_effect]
    assert len(drafts) == 2 and drafts[0].step == drafts[1].step == 3
    assert repeated_side_effects(again.gateway.records) == 1


def test_resuming_without_a_saved_state_is_one_line_naming_the_file(blog, tmp_path):
    ctx, _ = scripted_ctx(blog, "reference", state_dir=tmp_path)
    approval = HumanDecision(gate="brief_approval", decision="approve", who="tester")
    with pytest.raises(Exception, match=str(tmp_path / STATE)) as raised:
        asyncio.run(get_mode(MODE).resume(ctx, approval))
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_bench_resume_in_a_new_process_commits_the_gated_action_exactly_once(tmp_path):
    out = tmp_path / "run"
    started = bench_process(
        "run", "-m", MODE, "-s", "blog_brief_approval", "--model", "scripted:reference", "--out", str(out)
    )
    assert started.returncode == 0, started.stderr
    (run_id,) = {json.loads(line)["run_id"] for line in (out / "traces.jsonl").read_text().splitlines()}
    assert list(out.rglob(STATE))  # PydanticAI's history, in the run folder
    continued = bench_process("resume", str(out), "--run", run_id, "--approve")
    assert continued.returncode == 0, continued.stderr
    events = [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    drafts = [e for e in events if e.kind == "action" and e.action == "write_draft" and e.result == "committed"]
    outcome = events[-1].outcome
    assert len(drafts) == 1 and outcome is not None and outcome.repeated_side_effects == 0
    assert outcome.status == "finished" and outcome.stop_verdict == "correct"


def test_without_the_framework_the_mode_is_refused_in_one_line_naming_the_extra(monkeypatch, blog):
    cls = MODES[MODE]
    monkeypatch.setattr(cls, "framework", "pydantic_ai_not_installed")
    ctx, _ = scripted_ctx(blog, "reference")
    with pytest.raises(Exception, match=r"\[pydantic-ai\]") as raised:
        asyncio.run(cls().run(ctx))
    assert "\n" not in str(raised.value)


# ---------------------------------------------------------------- what PydanticAI itself does on resume, pinned


def pinned() -> None:
    installed = version("pydantic-ai-slim")
    if installed != PINNED:
        pytest.skip(
            f"characterises pydantic-ai-slim {PINNED}, but {installed} is installed: rerun these by hand against "
            f"it and pin the new version (what it re-executes on resume may have changed)"
        )


def characterised_agent(ran: list[tuple[str, str, bool]]):  # type: ignore[no-untyped-def]
    """A bare PydanticAI agent: one model turn calls a plain tool and two gated ones, the next finishes."""
    from pydantic_ai import Agent, DeferredToolRequests, Tool
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

    def model(messages, info):  # type: ignore[no-untyped-def]
        if any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[TextPart("done")])
        calls = [("plain", "c1"), ("gated", "c2"), ("gated", "c3")]
        return ModelResponse(parts=[ToolCallPart(name, {}, tool_call_id=call) for name, call in calls])

    def tool(name: str) -> Tool[None]:
        async def body(ctx, **args):  # type: ignore[no-untyped-def]
            ran.append((name, ctx.tool_call_id, ctx.tool_call_approved))
            return f"{name} ran"

        return Tool.from_schema(body, name=name, description=name, json_schema={"type": "object"}, takes_ctx=True)

    tools = ApprovalRequiredToolset(
        FunctionToolset([tool("plain"), tool("gated")]),
        approval_required_func=lambda ctx, tool_def, args: tool_def.name == "gated",
    )
    return Agent(FunctionModel(model), output_type=[str, DeferredToolRequests], toolsets=[tools])


def test_pydantic_ai_runs_an_approved_deferred_tool_once_and_a_denied_one_never():
    """On resume from the saved history, PydanticAI 2.68.0 runs the approved call once (approved), returns the
    denial's message for the denied one without running it, and does not run again the plain call of the same
    turn that ran before the pause."""
    pinned()
    from pydantic_ai import (
        DeferredToolRequests,
        DeferredToolResults,
        ModelMessagesTypeAdapter,
        ToolApproved,
        ToolDenied,
    )
    from pydantic_ai.messages import ToolReturnPart

    ran: list[tuple[str, str, bool]] = []
    agent = characterised_agent(ran)
    first = asyncio.run(agent.run("go"))
    assert isinstance(first.output, DeferredToolRequests)
    assert [c.tool_call_id for c in first.output.approvals] == ["c2", "c3"]
    assert ran == [("plain", "c1", False)]
    history = ModelMessagesTypeAdapter.validate_json(first.all_messages_json())  # as the state file keeps it
    answers = DeferredToolResults(approvals={"c2": ToolApproved(), "c3": ToolDenied("not now")})
    second = asyncio.run(agent.run(message_history=history, deferred_tool_results=answers))
    assert second.output == "done"
    assert ran == [("plain", "c1", False), ("gated", "c2", True)]
    returns = {
        p.tool_call_id: (p.outcome, p.content)
        for m in second.new_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    }
    assert returns["c2"] == ("success", "gated ran") and returns["c3"] == ("denied", "not now")


def test_pydantic_ai_runs_an_approved_tool_again_when_resumed_twice_from_the_same_history():
    """PydanticAI keeps no record that an approved call ran: the same saved history resumed again (a process killed
    after the tool ran, before anything newer was saved) runs it again. bench's gateway counts that repeat."""
    pinned()
    from pydantic_ai import DeferredToolResults, ModelMessagesTypeAdapter, ToolApproved

    ran: list[tuple[str, str, bool]] = []
    agent = characterised_agent(ran)
    saved = asyncio.run(agent.run("go")).all_messages_json()
    answers = DeferredToolResults(approvals={"c2": ToolApproved(), "c3": ToolApproved()})
    for _ in range(2):
        asyncio.run(
            agent.run(message_history=ModelMessagesTypeAdapter.validate_json(saved), deferred_tool_results=answers)
        )
    assert [call for name, call, approved in ran if name == "gated" and approved] == ["c2", "c3", "c2", "c3"]
    assert [call for name, call, _ in ran if name == "plain"] == ["c1"]
