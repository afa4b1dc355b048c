"""The run pipeline: one folder per run under a lock, --replace only over a bench run, a stop request that
ends the run in progress at its next event, and modes added as one file with nothing else changed."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import signal
import sys
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.core.clock import FakeClock
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import UserInputError
from harness.matrix.cell.cell_runner import MatrixConfig, run_cell
from harness.matrix.cell.units import Cell
from harness.models.scripted import ScriptedSource
from harness.records.manifest import read_manifest
from harness.records.trace import TraceEvent, read_events
from harness.scenario.load import load_all
from modes import MODES
from tests.helpers.bench import ROOT, SCENARIOS, bench_child, bench_in_process, bench_process, wait_for


@pytest.mark.slow
def test_a_second_run_on_a_locked_folder_exits_2_naming_the_holder(tmp_path):
    out = tmp_path / "run"
    traces = out / "traces.jsonl"
    with bench_child(
        "run",
        "--mode",
        "react",
        "--scenario",
        "blog_brief_approval",
        "--model",
        "scripted:random",
        "--trials",
        "100000",
        "--out",
        str(out),
    ) as first:
        wait_for(lambda: traces.exists() and traces.stat().st_size > 0, what="the first run's trace", process=first)
        second = bench_in_process("run", "--model", "scripted:eager", "--out", str(out))
        assert second.returncode == 2
        (line,) = second.stderr.strip().splitlines()
        assert "locked by bench pid" in line and str(first.pid) in line
        replacing = bench_in_process("run", "--model", "scripted:eager", "--out", str(out), "--replace")
        assert replacing.returncode == 2 and "locked by bench pid" in replacing.stderr
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 130
    assert {e.model for e in read_events(traces)} == {"scripted:random"}  # nothing of the second run got in


def test_replace_refuses_a_folder_that_holds_no_bench_run_and_deletes_nothing(tmp_path):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("five years of work")
    (precious / "data").mkdir()
    result = bench_in_process("run", "--model", "scripted:eager", "--out", str(precious), "--replace")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "does not hold a bench run" in line
    assert sorted(p.name for p in precious.iterdir()) == ["data", "thesis.tex"]
    assert (precious / "thesis.tex").read_text() == "five years of work"
    plain = bench_in_process("run", "--model", "scripted:eager", "--out", str(precious))
    assert plain.returncode == 2 and "not empty" in plain.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


@pytest.mark.slow
def test_an_interrupted_replace_leaves_the_old_run_whole(tmp_path):
    target = tmp_path / "target"
    first = bench_in_process(
        "run",
        "--model",
        "scripted:eager",
        "--mode",
        "workflow",
        "--scenario",
        "blog_brief_approval",
        "--out",
        str(target),
    )
    assert first.returncode == 0, first.stderr
    before = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file() and p.name != ".bench.lock"}
    staging = tmp_path / ".target.partial"
    with bench_child(
        "run", "--model", "scripted:random", "--trials", "100000", "--out", str(target), "--replace"
    ) as second:
        wait_for(lambda: (staging / "traces.jsonl").exists(), what="the staging trace", process=second)
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=60)
    assert second.returncode == 143
    after = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file() and p.name != ".bench.lock"}
    assert after == before
    assert read_manifest(staging).status == "interrupted"  # the partial run is kept apart, not swapped in


def test_out_folders_that_cannot_be_used_are_one_line_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    for out, words in (
        (tmp_path / "file", "not a folder"),
        (Path("/proc/bench-run"), "cannot write there"),
        (Path("."), "not empty"),
    ):
        result = bench_in_process("run", "--model", "scripted:eager", "--out", str(out))
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert words in line and "Traceback" not in result.stderr
    assert not (ROOT / ".bench.lock").exists()  # a refused folder keeps no lock file of ours


def test_a_stop_request_ends_the_run_in_progress_at_its_next_event():
    """The first signal sets the stop request; the mode's next event raises, the run gets its summary."""
    scenario = load_all(SCENARIOS)["release_pipeline"]
    events: list[TraceEvent] = []
    stop = StopRequest()

    def sink(event: TraceEvent) -> None:
        events.append(event)
        if len(events) == 5:
            stop.signum = signal.SIGTERM  # as the signal handler does, between two events of one run

    config = MatrixConfig(model=ScriptedSource("compliant"), clock=FakeClock(), new_run_id=lambda: "r", stop=stop)
    with pytest.raises(RunInterrupted):
        asyncio.run(run_cell(Cell(scenario, "react", 1), config, sink))
    assert len(events) == 6  # five events, then the summary: nothing after the request but the summary
    summary = events[-1]
    assert summary.kind == "summary" and summary.outcome is not None
    assert summary.outcome.status == "interrupted" and summary.outcome.stop_verdict == "infrastructure"
    assert stop.exit_code == 143


THROWAWAY = """
from harness.core.outcome import ModeResult
from modes.base import Mode, mode
from modes.prompting import observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step


@mode("throwaway_{suffix}")
class Throwaway(Mode):
    summary = "a mode written for a test"
    spectrum = 9

    async def run(self, ctx):
        scenario = ctx.scenario
        offered = [a.name for a in scenario.actions]
        seen = []
        for step in range(1, ctx.limits.max_steps + 1):
            messages = [system_message(scenario, "Choose.", scenario.actions, "{{}}"), user_message(seen, "Next?")]
            reply = await ctx.propose("next_action", messages, next_action_schema(scenario.actions), offered, step=step)
            proposal = read_step(reply.proposal)
            if proposal.action == scenario.finish_action.name:
                return ModeResult("finished")
            record = ctx.act(proposal.action, proposal.args, allowed=offered, step=step)
            seen.append(observation_line(record))
        return ModeResult("step_limit")
"""


def test_a_mode_is_one_file_plus_its_registration(tmp_path, monkeypatch):
    name = f"throwaway_{tmp_path.name[-6:].replace('-', '_')}"
    module_file = tmp_path / f"{name}.py"
    module_file.write_text(THROWAWAY.format(suffix=name.removeprefix("throwaway_")))
    spec = importlib.util.spec_from_file_location(name, module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)  # registers the mode, as modes/__init__.py's import would
    try:
        assert name in MODES
        result = run(RunSpec(modes=[name], scenarios=["all"], model="scripted:random", trials=2, out=tmp_path / "run"))
        summaries = [e for e in read_events(result.traces) if e.kind == "summary"]
        assert len(summaries) == 2 * len(load_all(SCENARIOS))
        assert all(e.mode == name and e.outcome is not None and not e.outcome.errors.get("internal") for e in summaries)
        assert result.manifest.status == "complete" and result.manifest.modes == [name]
        listing = bench_process("list")  # a new process does not know it: nothing else was changed
        assert name not in listing.stdout
    finally:
        MODES.remove(name)


def test_the_python_api_is_the_cli_path_and_refuses_bad_specs_in_one_line(tmp_path):
    result = run(
        RunSpec.build(
            modes="workflow,react", scenarios=["blog_brief_approval"], model="scripted:eager", out=tmp_path / "api"
        )
    )
    manifest = json.loads((tmp_path / "api" / "manifest.json").read_text())
    assert manifest["modes"] == ["workflow", "react"] and manifest["model_source"] == "scripted"
    assert result.manifest.runs == 2
    for fields, words in (
        ({"trials": 0}, "--trials"),
        ({"concurrency": 0}, "--concurrency"),
        ({"gateway": "off"}, "--gateway"),
        ({"replace": True}, "--replace needs --out"),
        ({"model": "gpt-4o"}, "--model live with LLM_API_URL"),
    ):
        with pytest.raises(UserInputError, match=words):
            RunSpec.build(**fields)
