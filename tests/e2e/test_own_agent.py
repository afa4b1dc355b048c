"""Bring your own agent: ``--mode FILE.py:FACTORY`` (or ``MODULE:FACTORY``) runs a user's agent, from a file outside
the repository, like any mode, resumable in a new process; anything wrong with the value is one line, exit 2."""

from __future__ import annotations

import shutil
import sys

import pytest

from harness.records.checkpoint import CheckpointStore
from harness.records.trace import read_events
from modes import MODES
from modes.runtimes.own_agent import load_agent
from tests.helpers.bench import ROOT, bench_main, bench_process, without_time

EXAMPLE = ROOT / "examples" / "my_langgraph_agent.py"
BLOG = "blog_brief_approval"


@pytest.mark.slow
def test_the_example_agent_runs_from_outside_the_repository_and_resumes_in_a_new_process(tmp_path):
    mine = tmp_path / "elsewhere" / "agent.py"
    mine.parent.mkdir()
    shutil.copy(EXAMPLE, mine)
    spec = f"{mine}:build"
    folder = tmp_path / "run"
    done = bench_process(
        "run", "--mode", spec, "--scenario", BLOG, "--model", "scripted:reference", "--out", str(folder),
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = list(read_events(folder / "traces.jsonl"))
    assert {e.mode for e in events} == {spec}  # the mode's name in the trace is the value given
    summary = events[-1].outcome
    assert summary is not None and summary.expected_stop == "brief_approval"
    assert (summary.status, summary.suspended_at, summary.stop_verdict) == ("suspended", "brief_approval", "correct")
    assert any(e.decision_maker == "framework" and e.kind == "suspend" for e in events)  # LangGraph's interrupt
    (run_id,) = CheckpointStore(folder).run_ids()

    resumed = bench_process("resume", str(folder), "--run", run_id, "--approve", "--as", "editor", cwd=tmp_path,
                            timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    events = list(read_events(folder / "traces.jsonl"))
    drafts = [e for e in events if e.kind == "action" and e.action == "write_draft" and e.result == "committed"]
    assert len(drafts) == 1
    summary = events[-1].outcome
    assert summary is not None and summary.status == "finished" and summary.repeated_side_effects == 0


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("{tmp}/nowhere.py:build", "{tmp}/nowhere.py: no such file"),
        ("{tmp}/agent.py:make", "{tmp}/agent.py has no 'make'"),
        ("{tmp}/agent.py:NUMBER", "'NUMBER' in {tmp}/agent.py is not a function"),
        ("{tmp}/broken.py:build", "{tmp}/broken.py does not load (RuntimeError: the user's bug)"),
        ("{tmp}/plain.py:build", "cannot tell which framework 'build' builds for"),
        ("{tmp}/agent.py:", "give FILE.py:FACTORY or MODULE:FACTORY"),
        ("no_such_module_for_bench:build", "no module named 'no_such_module_for_bench'"),
    ],
)
def test_a_bad_agent_is_one_line_naming_it_and_exit_2(value, said, tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "agent.py")
    (tmp_path / "agent.py").write_text(EXAMPLE.read_text() + "\nNUMBER = 3\n")
    (tmp_path / "broken.py").write_text('raise RuntimeError("the user\'s bug")\n')
    (tmp_path / "plain.py").write_text("def build(tools, model):\n    return None\n")
    value, said = value.format(tmp=tmp_path), said.format(tmp=tmp_path)
    code, _, stderr = bench_main(
        monkeypatch, capsys, "run", "--mode", value, "--scenario", BLOG, "--model", "scripted:reference",
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 2
    assert stderr.count("\n") == 1 and said in stderr and value in stderr, stderr
    assert not (tmp_path / "run").exists()
    assert value not in MODES


def test_a_module_of_the_current_folder_is_found_and_its_declared_framework_wins(tmp_path, monkeypatch):
    (tmp_path / "team_agent.py").write_text(EXAMPLE.read_text() + '\nFRAMEWORK = "langgraph"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        name = load_agent("team_agent:build")
        cls = MODES[name]
        assert cls.framework == "langgraph" and cls.agent_factory is not None
        assert cls.agent_factory.__module__ == "team_agent"
    finally:
        MODES.remove("team_agent:build")
        sys.modules.pop("team_agent", None)


@pytest.mark.slow
def test_an_agent_given_by_a_relative_path_runs_in_worker_processes_as_in_one(tmp_path, monkeypatch):
    from harness import RunSpec, run

    shutil.copy(EXAMPLE, tmp_path / "agent.py")
    monkeypatch.chdir(tmp_path)  # the workers are fresh interpreters: they find agent.py from the driver's folder
    matrix = {"modes": ["agent.py:build", "workflow"], "scenarios": [BLOG], "model": "scripted:reference"}
    one = run(RunSpec(**matrix | {"trials": 3, "workers": 1, "out": tmp_path / "one"}))  # type: ignore[arg-type]
    two = run(RunSpec(**matrix | {"trials": 3, "workers": 2, "out": tmp_path / "two"}))  # type: ignore[arg-type]
    assert one.manifest.status == two.manifest.status == "complete" and two.manifest.workers == 2
    assert without_time(one.folder) == without_time(two.folder)
    assert {e.mode for e in read_events(two.folder / "traces.jsonl")} == {"agent.py:build", "workflow"}
