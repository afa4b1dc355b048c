"""Recording a live run and replaying it offline: same events and outcomes, misses named, drift reported."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import modes.react
from harness.cli.app import app
from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.errors import ModelError
from harness.matrix.commands.trace_diff import compare_traces
from harness.models.exchange import Exchange
from harness.models.recording import RecordEntry, request_hash
from harness.models.replay import ReplaySource
from harness.records.manifest import Manifest
from harness.records.trace import TraceEvent, read_events
from modes import MODES
from tests.helpers.bench import bench_process as bench
from tests.helpers.fault_server import FaultServer

KEY = "sk-rec-MARKER-51d2"
SCRIPT = ["ok", "429", "ok", "500", "ok", "ok", "unknown_action", "ok", "empty", "ok", "ok"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A live run of every mode on the blog scenario, two trials, against the fault server; then the server is gone."""
    out = tmp_path_factory.mktemp("recorded") / "run"
    with FaultServer(SCRIPT) as server:
        env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": KEY}
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--live",
                "--mode",
                "all",
                "--scenario",
                "blog_brief_approval",
                "--trials",
                "2",
                "--out",
                str(out),
                "--retries",
                "2",
                "--backoff",
                "0.01",
            ],
            env=env,
        )
    assert result.exit_code == 0, result.output
    return out


def test_recording_holds_every_exchange_without_the_key(recorded):
    lines = (recorded / "recording.jsonl").read_text().splitlines()
    entries = [RecordEntry.model_validate_json(line) for line in lines]
    calls = [e for e in read_events(recorded / "traces.jsonl") if e.kind == "model_call"]
    assert len(entries) == len(calls)
    assert {(e.scenario, e.mode, e.trial) for e in entries} >= {
        ("blog_brief_approval", "react", 1),
        ("blog_brief_approval", "react", 2),
    }
    assert any(e.exchange.attempts for e in entries)  # the 429 and the 500 were retried and recorded
    for entry in entries:
        assert entry.exchange.latency_ms > 0 and entry.exchange.response["usage"]["total_tokens"] == 48
        assert entry.exchange.request["messages"] and "Authorization" not in json.dumps(entry.exchange.request)
    assert KEY not in (recorded / "recording.jsonl").read_text()


def test_bench_replay_of_an_untouched_recording_exits_0(recorded, tmp_path):
    result = CliRunner().invoke(app, ["replay", str(recorded), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    held = json.loads((recorded / "manifest.json").read_text())["modes"]  # the recording's own, not the registry's
    assert f"{2 * len(held)} runs, every run's events and outcome match the recording" in result.output
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["model_source"] == "replay" and manifest["replay_of"] == str(recorded)
    assert manifest["model"] == "fault-model"  # the recorded model's label: the behaviour is that model's


def test_replay_reproduces_retries_latency_and_usage(recorded, tmp_path):
    out = tmp_path / "replayed"
    result = CliRunner().invoke(app, ["run", "--model", f"replay:{recorded}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    old = list(read_events(recorded / "traces.jsonl"))
    new = list(read_events(out / "traces.jsonl"))
    assert compare_traces(old, new) == []
    pick = lambda events, kind: [(e.latency_ms, e.usage, e.error) for e in events if e.kind == kind]  # noqa: E731
    assert pick(old, "model_call") == pick(new, "model_call")
    assert pick(old, "model_retry") == pick(new, "model_retry") and pick(old, "model_retry")


def test_changed_prompt_exits_1_naming_the_first_diverging_event(recorded, tmp_path, monkeypatch):
    monkeypatch.setattr(modes.react, "INSTRUCTIONS", modes.react.INSTRUCTIONS + " Be brief.")
    result = CliRunner().invoke(app, ["replay", str(recorded), "--out", str(tmp_path / "drift")])
    assert result.exit_code == 1
    out = result.output
    assert "blog_brief_approval / react / trial 1: event 1 differs in" in out
    assert "blog_brief_approval / react / trial 2: event 1 differs in" in out
    assert "recorded: model_call decision_maker=llm" in out
    assert "replayed: error decision_maker=runtime result=run_error error=replay_miss" in out
    assert "scenario 'blog_brief_approval', mode 'react', trial 1, step 1" in out
    # only the runs of modes that share react's prompt differ (react alone today); the other modes still match
    shared = [name for name, cls in MODES.items() if issubclass(cls, modes.react.ReAct)]
    assert f"{2 * len(shared)} runs differ" in out and "workflow /" not in out


def test_replay_miss_names_scenario_mode_trial_and_step(recorded, tmp_path):
    out = tmp_path / "more"
    result = CliRunner().invoke(
        app, ["run", "--model", f"replay:{recorded}", "--mode", "react", "--trials", "3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    misses = [e for e in read_events(out / "traces.jsonl") if e.error is not None and e.error.kind == "replay_miss"]
    assert len(misses) == 1 and misses[0].trial == 3
    assert "scenario 'blog_brief_approval', mode 'react', trial 3, step 1" in misses[0].error.message
    assert misses[0].step == 1  # the error event sits at the step whose request missed


def test_repeated_identical_requests_get_their_own_answers(tmp_path):
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=2)
    request = ModelRequest(
        purpose="next_action",
        messages=({"role": "user", "content": "same"},),
        response_schema={"type": "object"},
        offered=("a",),
        view=view,
        meta=RequestMeta("s", "react", 1, 1),
    )
    digest = request_hash(request)
    lines = []
    for occurrence, answer in enumerate(["first", "second"]):
        body = {"choices": [{"message": {"content": json.dumps({"answer": answer})}}]}
        lines.append(
            RecordEntry(
                scenario="s",
                mode="react",
                trial=1,
                step=1,
                purpose="next_action",
                request_hash=digest,
                occurrence=occurrence,
                model="m",
                exchange=Exchange(request={}, response=body, latency_ms=1.0),
            ).model_dump_json()
        )
    (tmp_path / "recording.jsonl").write_text("\n".join(lines) + "\n{truncated")
    Manifest(
        modes=["react"],
        scenarios=["s"],
        model="m",
        model_source="live",
        trials=1,
        seed=0,
        gateway_policy="enforce",
        concurrency=1,
        start_time="t",
    ).write(tmp_path)
    source = ReplaySource(tmp_path)
    assert source.read_report.skipped_lines == [3]
    model = source.for_run(0)

    async def ask_three_times():
        answers = [(await model.complete(request)).proposal["answer"] for _ in range(2)]
        with pytest.raises(ModelError) as caught:
            await model.complete(request)
        return answers, caught.value

    answers, miss = asyncio.run(ask_three_times())
    assert answers == ["first", "second"]
    assert miss.kind == "replay_miss" and "repeat 3" in str(miss)
    assert source.for_run(0) is not model  # each run counts its own repeats


def test_request_hash_is_stable_and_sensitive_to_content():
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=2)

    def make(content, step=1):
        return ModelRequest(
            purpose="plan",
            messages=({"role": "user", "content": content},),
            response_schema={"type": "object", "properties": {"b": {}, "a": {}}},
            offered=(),
            view=view,
            meta=RequestMeta("s", "m", step),
        )

    assert request_hash(make("x")) == request_hash(make("x", step=5))  # where it was asked is not what was asked
    assert request_hash(make("x")) != request_hash(make("y"))
    reordered = make("x")
    reordered = ModelRequest(
        purpose="plan",
        messages=reordered.messages,
        offered=(),
        view=view,
        meta=reordered.meta,
        response_schema={"properties": {"a": {}, "b": {}}, "type": "object"},
    )
    assert request_hash(reordered) == request_hash(make("x"))  # key order in a schema does not matter


@pytest.mark.slow
def test_bad_replay_folders_are_one_line_errors(tmp_path):
    for args, words in (
        (["run", "--model", f"replay:{tmp_path / 'nothing'}"], "no recording.jsonl"),
        (["replay", str(tmp_path / "nothing")], "no recording.jsonl"),
    ):
        result = bench(*args, "--out", str(tmp_path / "out"))
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert words in line


def test_replace_swaps_a_completed_run_in(recorded, tmp_path):
    target = tmp_path / "target"
    first = CliRunner().invoke(
        app, ["run", "--model", f"replay:{recorded}", "--mode", "workflow", "--out", str(target)]
    )
    assert first.exit_code == 0, first.output
    refused = bench("run", "--model", f"replay:{recorded}", "--out", str(target))
    assert refused.returncode == 2 and "already holds a bench run" in refused.stderr
    again = CliRunner().invoke(app, ["run", "--model", f"replay:{recorded}", "--out", str(target), "--replace"])
    assert again.exit_code == 0, again.output
    modes_run = {e.mode for e in read_events(target / "traces.jsonl")}
    assert modes_run == set(json.loads((recorded / "manifest.json").read_text())["modes"])  # the recording's own
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]  # no staging folder left behind


def test_events_compare_ignoring_ids_and_times_only():
    base = dict(schema_version=1, scenario="s", mode="m", model="x", trial=1, step=0, decision_maker="runtime")
    old = [
        TraceEvent(run_id="a", seq=0, ts="t1", kind="run_start", **base),
        TraceEvent(run_id="a", seq=1, ts="t2", kind="decision", result="run_finished", latency_ms=1.0, **base),
    ]
    same = [e.model_copy(update={"run_id": "b", "ts": "t9"}) for e in old]
    assert compare_traces(old, same) == []
    slower = [old[0], old[1].model_copy(update={"latency_ms": 2.0})]
    (divergence,) = compare_traces(old, slower)
    assert divergence.seq == 1 and divergence.fields == ("latency_ms",)
    shorter = compare_traces(old, old[:1])
    assert shorter[0].seq == 1 and "ended earlier" in shorter[0].replayed
