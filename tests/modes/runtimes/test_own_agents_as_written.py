"""Users' own agents, written as their framework's documentation writes them (LangGraph: sync nodes calling ``.invoke``,
the prebuilt ReAct agent compiled, a hand-written tool node, structured output, approvals asked with the agent's own
``interrupt()`` payload; an Agents SDK ``Agent``, with its own ``needs_approval``; a PydanticAI ``Agent`` with
deferred tools), run and judged like examples/my_langgraph_agent.py; each approval bound to its own call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import RunSpec, resume, run
from harness.records.trace import TraceEvent, read_events
from tests.helpers.bench import ROOT

AGENTS = Path(__file__).parents[2] / "helpers" / "own_agents"
EXAMPLE = ROOT / "examples" / "my_langgraph_agent.py"
BLOG = "blog_brief_approval"
SHAPES = ["sync_nodes", "prebuilt_react", "hand_tool_node", "structured_output"]
OWN_APPROVALS = ["human_interrupt", "own_payload", "question_string"]
OTHER_FRAMEWORKS = ["sdk_agent", "sdk_reviewed", "pydantic_agent"]


def judged(tmp_path: Path, agent: Path, model: str, *, scenario: str = BLOG, policy: str = "enforce") -> Path:
    """Runs the agent once with no approver (it suspends at its first gate); the run folder."""
    spec = RunSpec(
        modes=(f"{agent}:build",), scenarios=(scenario,), model=model, gateway=policy, out=tmp_path / agent.stem
    )  # type: ignore[call-arg]
    return run(spec).folder


def events(folder: Path) -> list[TraceEvent]:
    return list(read_events(folder / "traces.jsonl"))


def outcome(folder: Path) -> Any:
    summaries = [e for e in events(folder) if e.kind == "summary"]
    assert summaries, "the run wrote no summary"
    return summaries[-1].outcome


def approve(folder: Path) -> None:
    (run_id,) = {e.run_id for e in events(folder)}
    resume(folder, run_id, "approve", who="editor")


def attempts(folder: Path, action: str, result: str | None = None) -> list[TraceEvent]:
    return [e for e in events(folder) if e.kind == "action" and e.action == action and result in (None, e.result)]


def errors(folder: Path) -> list[Any]:
    return [e.error for e in events(folder) if e.kind == "error"]


AS_WRITTEN = [EXAMPLE, *(AGENTS / f"{name}.py" for name in SHAPES + OWN_APPROVALS + OTHER_FRAMEWORKS)]


@pytest.mark.parametrize("agent", AS_WRITTEN, ids=lambda path: path.stem)
def test_an_agent_as_written_stops_at_the_gate_and_resumes_like_the_example(agent, tmp_path):
    folder = judged(tmp_path, agent, "scripted:reference")
    first = outcome(folder)
    assert not errors(folder)
    assert (first.status, first.suspended_at, first.stop_verdict) == ("suspended", "brief_approval", "correct")
    assert first.premature_side_effects == 0 and not attempts(folder, "write_draft")

    approve(folder)
    last = outcome(folder)
    assert not errors(folder)
    assert (last.status, last.premature_side_effects, last.repeated_side_effects) == ("finished", 0, 0)
    assert len(attempts(folder, "write_draft", "committed")) == 1


def test_a_structured_output_is_asked_of_benchs_model_with_the_agents_schema(tmp_path):
    folder = judged(tmp_path, AGENTS / "structured_output.py", "scripted:reference")
    approve(folder)
    filled = [e for e in events(folder) if e.kind == "model_call" and (e.detail or {}).get("purpose") == "content"]
    assert len(filled) == 1 and filled[0].detail is not None and filled[0].detail["offered"] == ["report"]
    assert isinstance(filled[0].args, dict) and set(filled[0].args) >= {"summary", "done"}


@pytest.mark.parametrize("agent", OWN_APPROVALS)
def test_an_agents_own_review_stops_at_the_gate_guarding_the_call_and_an_ungated_one_is_approved_and_counted(
    agent, tmp_path
):
    folder = judged(tmp_path, AGENTS / f"{agent}.py", "scripted:reference")
    reviewed = [e for e in events(folder) if e.kind == "decision" and e.result == "review_answered"]
    assert [e.action for e in reviewed] == ["create_brief"]  # no gate guards it: approved, as a person would
    assert attempts(folder, "create_brief", "committed")
    (stop,) = [e for e in events(folder) if e.kind == "suspend"]
    assert stop.action == "brief_approval" and (stop.detail or {}).get("call") == "call_2"  # the wait's call
    # the agent's own review stopped the wait before bench's tool ran: the gateway holds only the approval request
    assert [e.result for e in attempts(folder, "wait_for_approval")] == ["wait_recorded"]


def test_the_approval_of_one_call_of_a_parallel_batch_never_reaches_the_other(tmp_path):
    folder = judged(tmp_path, AGENTS / "parallel_batch.py", "scripted:reference", scenario="blog_layered")
    assert (outcome(folder).status, outcome(folder).suspended_at) == ("suspended", "brief_approval")
    assert not attempts(folder, "write_synopsis") and not attempts(folder, "outline_sections")

    approve(folder)  # brief_approval: write_synopsis's gate, not outline_sections'
    standing = outcome(folder)
    assert (standing.status, standing.suspended_at) == ("suspended", "synopsis_approval")
    assert len(attempts(folder, "write_synopsis", "committed")) == 1
    assert not attempts(folder, "outline_sections")
    assert standing.premature_side_effects == 0

    approve(folder)
    assert len(attempts(folder, "outline_sections", "committed")) == 1
    assert outcome(folder).status == "finished"


def test_under_an_auditing_gateway_the_batch_commits_nothing_prematurely(tmp_path):
    folder = judged(
        tmp_path, AGENTS / "parallel_batch.py", "scripted:reference", scenario="blog_layered", policy="audit"
    )
    approve(folder)
    assert not attempts(folder, "outline_sections")
    assert outcome(folder).premature_side_effects == 0 and outcome(folder).suspended_at == "synopsis_approval"


def test_a_call_whose_arguments_changed_after_its_approval_is_refused(tmp_path):
    folder = judged(tmp_path, AGENTS / "edited_after_approval.py", "scripted:reference")
    assert outcome(folder).suspended_at == "brief_approval"
    approve(folder)
    refused = [e for e in events(folder) if e.kind == "decision" and e.result == "refused"]
    assert refused and {((e.detail or {}).get("guard"), e.action) for e in refused} == {
        ("approval_binding", "write_draft")
    }
    assert not attempts(folder, "write_draft", "committed")


def test_a_tool_the_agent_binds_that_bench_did_not_provide_is_named_in_the_trace(tmp_path):
    folder = judged(tmp_path, AGENTS / "own_tool.py", "scripted:reference")
    named = [e for e in events(folder) if e.kind == "decision" and e.result == "tools_not_provided"]
    assert [(e.detail or {}).get("tools") for e in named] == [["post_to_social"]]
    assert outcome(folder).suspended_at == "brief_approval"


def test_langgraph_runs_a_nodes_code_before_its_interrupts_again_on_each_resume_and_a_batch_again_whole(tmp_path):
    folder = judged(tmp_path, AGENTS / "two_interrupts.py", "scripted:reference", scenario="blog_layered")
    approve(folder)
    approve(folder)
    notes = attempts(folder, "record_research", "committed")[1:]  # the first is the agent's research step
    assert len(notes) == 3 and len({e.step for e in notes}) == 1  # the run, then once more per resume: one step
    assert len(attempts(folder, "write_synopsis", "committed")) == 2  # the batch's task ran again at the 2nd resume
    assert outcome(folder).repeated_side_effects == 3
