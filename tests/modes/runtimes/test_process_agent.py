"""An agent process as a mode: the example loop judged where it stops, and every way a process can go wrong (a
command that is not there, a non-zero exit, a hang past the time limit with children, a flood of output) ends the
run with a clear outcome and nothing left running."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from harness.core import AgentError, UserInputError
from harness.records.timeline import LooseEvent, ending
from modes import MODES
from modes.runtimes.process.mode import register_process_agent
from tests.helpers.adapter_runs import adapter_ctx, carried, judged
from tests.helpers.bench import ROOT

PLAIN_LOOP = ROOT / "examples" / "agents" / "plain_loop.py"


def _run(blog, command: str, *, answers: str = "reference", time_limit_s: float = 60.0, **kwargs):
    name = register_process_agent(f"agent:{command}", command, time_limit_s=time_limit_s)
    ctx, events = adapter_ctx(blog, answers, **kwargs)
    result = asyncio.run(carried(MODES[name]().run(ctx)))
    return judged(ctx, result), events


def _python(code: str) -> str:
    return f"{sys.executable} -c '{code}'"


def _exited(events):
    (ended,) = [e for e in events if e.kind == "decision" and e.result == "agent_exited"]
    assert ended.detail is not None
    return ended.detail


def test_the_plain_loop_example_asks_for_approval_and_the_run_suspends_at_the_gate(blog):
    outcome, events = _run(blog, f"{sys.executable} {PLAIN_LOOP}")
    assert (outcome.status, outcome.suspended_at, outcome.stop_verdict) == ("suspended", "brief_approval", "correct")
    assert [(e.action, e.result) for e in events if e.kind == "action"] == [
        ("create_brief", "committed"),
        ("wait_for_approval", "wait_recorded"),
    ]
    assert outcome.llm_calls == 3  # two tool calls and the final message, each one model call through the endpoint
    assert _exited(events)["exit_code"] == 0


def test_a_command_that_is_not_there_is_refused_in_one_line():
    with pytest.raises(UserInputError, match="'no-such-agent-program' is not a program bench can run"):
        register_process_agent("agent:no-such-agent-program --x", "no-such-agent-program --x")


def test_a_non_zero_exit_is_the_agents_error_naming_its_last_line(blog):
    command = _python('import sys; print("the agent broke"); sys.exit(3)')
    name = register_process_agent(f"agent:{command}", command)
    ctx, events = adapter_ctx(blog, "reference")
    with pytest.raises(AgentError, match="status 3: the agent broke"):  # judged agent_error by the runner
        asyncio.run(MODES[name]().run(ctx))
    assert _exited(events)["exit_code"] == 3 and "the agent broke" in _exited(events)["output_tail"]


@pytest.mark.slow
def test_a_hanging_agent_is_stopped_at_the_time_limit_with_the_processes_it_started(blog, tmp_path):
    pid_file = tmp_path / "child.pid"
    # a shell, not Python: it writes its file and starts its child within milliseconds even on a loaded machine
    # (a Python agent once had not started writing when the time limit came)
    command = f"sh -c 'sleep 300 & echo $! > {pid_file}; echo x > notes.txt; sleep 300'"
    outcome, events = _run(blog, command, time_limit_s=2.0)
    assert (outcome.status, outcome.stop_verdict) == ("step_limit", "no_stop")
    detail = _exited(events)
    assert detail["timed_out"] and detail["files_written"] == ["notes.txt"]  # what it wrote in its folder, named
    child = int(pid_file.read_text())
    assert not _alive(child), "the agent's child outlived its run"
    loose = [LooseEvent.model_validate(e.model_dump()) for e in events]
    facts = dict(ending(outcome.model_dump(), loose).facts)  # what bench show's ending says
    assert facts["files written"] == "notes.txt"


def test_an_agent_that_floods_its_output_is_read_to_the_end_and_keeps_only_the_tail(blog):
    outcome, events = _run(blog, _python('import sys; [sys.stdout.write("x" * 65536) for _ in range(80)]'))
    detail = _exited(events)
    assert detail["exit_code"] == 0 and detail["output_bytes"] == 80 * 65536
    assert outcome.status == "finished"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())  # a zombie waiting for its reaper is gone
