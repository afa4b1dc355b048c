"""``--mode agent:CMD`` and ``agent:NAME`` (bench.toml) through the command line: a named agent that declares resume
goes on after ``bench resume`` with the decision and its conversation; one that does not is refused in one line,
nothing claimed; a bad table is one line naming the field."""

from __future__ import annotations

import sys

import pytest

from harness.records.checkpoint import CheckpointStore
from harness.records.trace import read_events
from tests.helpers.bench import ROOT, bench_main

PLAIN_LOOP = ROOT / "examples" / "agents" / "plain_loop.py"
BLOG = ("--scenario", "blog_brief_approval", "--model", "scripted:reference")


def _toml(folder, name: str, **fields: object) -> None:
    lines = [f"{key} = {value!r}".replace("'", '"').replace("True", "true") for key, value in fields.items()]
    (folder / "bench.toml").write_text(f"[agents.{name}]\n" + "\n".join(lines) + "\n")


@pytest.mark.slow
def test_a_named_agent_that_declares_resume_goes_on_with_the_decision_and_its_conversation(
    tmp_path, monkeypatch, capsys
):
    _toml(tmp_path, "writer", command=f"{sys.executable} {PLAIN_LOOP}", resume=True, time_limit_s=120)
    monkeypatch.chdir(tmp_path)
    code, _, stderr = bench_main(monkeypatch, capsys, "run", "--mode", "agent:writer", *BLOG, "--out", "run")
    assert code == 0, stderr
    (run_id,) = CheckpointStore(tmp_path / "run").run_ids()
    code, _, stderr = bench_main(monkeypatch, capsys, "resume", "run", "--run", run_id, "--approve", "--as", "editor")
    assert code == 0, stderr
    events = list(read_events(tmp_path / "run" / "traces.jsonl"))
    summary = events[-1].outcome
    assert summary is not None and (summary.status, summary.stop_verdict) == ("finished", "correct")
    drafts = [e for e in events if e.kind == "action" and e.action == "write_draft" and e.result == "committed"]
    assert len(drafts) == 1 and summary.side_effects_committed == 2
    # the resumed agent sent its conversation so far: its next model call is the next step, not step 1 again
    calls = [e.step for e in events if e.kind == "model_call"]
    assert calls == sorted(calls) and calls[-1] > 3


@pytest.mark.slow
def test_resume_of_an_agent_that_declares_none_is_refused_in_one_line_and_nothing_is_claimed(
    tmp_path, monkeypatch, capsys
):
    spec = f"agent:{sys.executable} {PLAIN_LOOP}"
    code, _, stderr = bench_main(monkeypatch, capsys, "run", "--mode", spec, *BLOG, "--out", str(tmp_path / "run"))
    assert code == 0, stderr
    (run_id,) = CheckpointStore(tmp_path / "run").run_ids()
    before = (tmp_path / "run" / "traces.jsonl").read_text()
    code, _, stderr = bench_main(monkeypatch, capsys, "resume", str(tmp_path / "run"), "--run", run_id, "--approve")
    assert code == 2 and stderr.count("\n") == 1 and "declares no resume" in stderr, stderr
    assert (tmp_path / "run" / "traces.jsonl").read_text() == before
    assert CheckpointStore(tmp_path / "run").load(run_id).status == "suspended"


def test_a_bad_agents_table_is_one_line_naming_the_field(tmp_path, monkeypatch, capsys):
    _toml(tmp_path, "broken", command="python agent.py", time_limit_s=-1)
    monkeypatch.chdir(tmp_path)
    code, _, stderr = bench_main(monkeypatch, capsys, "run", "--mode", "agent:broken", *BLOG, "--out", "run")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert "agents.broken: time_limit_s: must be a positive number" in stderr
    assert not (tmp_path / "run").exists()
