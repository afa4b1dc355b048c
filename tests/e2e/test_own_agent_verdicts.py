"""A user's own agent judged as its own: an exception in its code is ``agent_error`` (counted, exit 4, never
infrastructure); the manifest keeps its file's hash, a resume refuses it changed, and a replay runs it again from the
recorded file (refused in one line where the file is gone)."""

from __future__ import annotations

import json
import shutil

from harness.records.checkpoint import CheckpointStore
from harness.records.manifest import read_manifest
from harness.records.trace import read_events
from tests.helpers.bench import ROOT, bench_main
from tests.helpers.fault_server import FaultServer

AGENTS = ROOT / "tests" / "helpers" / "own_agents"
BLOG = "blog_brief_approval"


def test_an_agent_that_raises_in_half_its_runs_is_judged_agent_error_counted_and_exits_non_zero(
    tmp_path, monkeypatch, capsys
):
    shutil.copy(AGENTS / "flaky.py", tmp_path / "flaky.py")  # its own module: a fresh count of builds
    spec = f"{tmp_path / 'flaky.py'}:build"
    code, out, err = bench_main(
        monkeypatch, capsys, "run", "--mode", spec, "--scenario", BLOG, "--model", "scripted:reference",
        "--trials", "4", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    verdicts = [e.outcome.stop_verdict for e in read_events(tmp_path / "run" / "traces.jsonl") if e.outcome]
    assert sorted(verdicts) == ["agent_error", "agent_error", "correct", "correct"]
    errors = [e.error for e in read_events(tmp_path / "run" / "traces.jsonl") if e.kind == "error"]
    assert {(e.kind, e.message) for e in errors if e} == {("agent", "KeyError: 'temperature'")}
    assert code == 4 and "2 of 4 runs ended in an error of the agent's own code" in err
    header, _, row = out.splitlines()[:3]
    assert "agent error" in header and "infrastructure" not in err
    assert row.split()[2] == "4"  # n: all four judged


def test_a_resume_refuses_an_agent_file_changed_since_the_run(tmp_path, monkeypatch, capsys):
    agent = tmp_path / "agent.py"
    shutil.copy(ROOT / "examples" / "my_langgraph_agent.py", agent)
    code, _, _ = bench_main(
        monkeypatch, capsys, "run", "--mode", f"{agent}:build", "--scenario", BLOG, "--model", "scripted:reference",
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0
    recorded = read_manifest(tmp_path / "run").agents[f"{agent}:build"]
    assert recorded.path == str(agent) and len(recorded.sha256) == 64
    agent.write_text(agent.read_text() + "\n# edited after the run\n")
    (run_id,) = CheckpointStore(tmp_path / "run").run_ids()
    code, _, err = bench_main(monkeypatch, capsys, "resume", str(tmp_path / "run"), "--run", run_id, "--approve")
    assert code == 2 and err.count("\n") == 1 and f"{agent} changed since the run was made" in err, err
    assert CheckpointStore(tmp_path / "run").run_ids() == [run_id]  # nothing decided: the run still waits


def test_bench_replay_runs_an_own_agent_again_from_its_recorded_file_and_refuses_once_it_is_gone(
    tmp_path, monkeypatch, capsys
):
    agent = tmp_path / "agent.py"
    shutil.copy(ROOT / "examples" / "my_langgraph_agent.py", agent)
    with FaultServer(["ok"] * 20) as server:
        monkeypatch.setenv("LLM_API_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "fault-model")
        monkeypatch.setenv("LLM_API_KEY", "sk-own-agent-test")
        code, _, err = bench_main(
            monkeypatch, capsys, "run", "--live", "--mode", f"{agent}:build", "--scenario", BLOG,
            "--out", str(tmp_path / "recorded"),
        )  # fmt: skip
    assert code == 0, err
    monkeypatch.chdir(tmp_path.parent)  # elsewhere: the recorded absolute path finds the file
    code, _, err = bench_main(
        monkeypatch, capsys, "replay", str(tmp_path / "recorded"), "--out", str(tmp_path / "again")
    )
    assert code == 0, err
    lines = [json.loads(line) for line in (tmp_path / "again" / "traces.jsonl").read_text().splitlines()]
    assert {line["mode"] for line in lines} == {f"{agent}:build"}

    agent.unlink()
    code, _, err = bench_main(
        monkeypatch, capsys, "replay", str(tmp_path / "recorded"), "--out", str(tmp_path / "gone")
    )
    assert code == 2 and err.count("\n") == 1 and f"{agent}: no such file" in err, err
