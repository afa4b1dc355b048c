"""bench export: Parquet tables and inspect_ai logs read back by their own readers, equal to what the report loads."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness import RunSpec, load_traces, run
from reports import export_parquet as parquet_module
from reports.export_inspect import export_inspect
from reports.export_parquet import export_parquet
from tests.helpers.bench import ROOT, bench_main
from tests.helpers.report_fixtures import Run, write_runs

HAS_INSPECT = importlib.util.find_spec("inspect_ai") is not None
needs_inspect = pytest.mark.skipif(
    not HAS_INSPECT,
    reason="inspect_ai is not installed (the [inspect] extra): the inspect round trip is NOT tested; "
    "pip install -e '.[inspect]'",
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A small scripted run (labelled scripted: the eager policy): three modes, two stories, two trials."""
    out = tmp_path_factory.mktemp("export") / "run"
    run(
        RunSpec(
            modes=["workflow", "react", "react_guardrails"],
            scenarios=["blog_brief_approval", "refund_amount"],
            model="scripted:eager",
            trials=2,
            out=out,
            label="scripted export fixture",
        )
    )
    return out


def trace_lines(folder: Path) -> list[dict]:
    """The trace read independently of the loader: every line as JSON."""
    return [json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines() if line.strip()]


def test_parquet_has_one_row_per_run_and_per_event_with_the_reports_verdicts(folder, tmp_path):
    result = export_parquet(folder, tmp_path / "out")
    runs = pd.read_parquet(tmp_path / "out" / "runs.parquet")
    events = pd.read_parquet(tmp_path / "out" / "events.parquet")
    lines = trace_lines(folder)
    reported = load_traces(folder).runs
    assert len(events) == len(lines) == result.events
    assert len(runs) == len({line["run_id"] for line in lines}) == len(reported) == result.runs
    for column in ("run_id", "stop_verdict", "stop_correct", "oracle_passed", "unauthorized_side_effects"):
        assert runs[column].astype(str).tolist() == reported[column].astype(str).tolist(), column
    assert runs["stop_verdict"].nunique() > 1  # the fixture has several verdicts, so equal columns prove something


def test_parquet_events_keep_the_nested_fields_the_report_does_not_read(folder, tmp_path):
    export_parquet(folder, tmp_path)
    events = pd.read_parquet(tmp_path / "events.parquet")
    by_place = {(line["run_id"], line["seq"]): line for line in trace_lines(folder)}
    for row in events.itertuples(index=False):
        line = by_place[(str(row.run_id), int(row.seq))]
        for name in ("args", "detail", "error", "outcome"):
            text = getattr(row, name)
            assert (None if pd.isna(text) else json.loads(text)) == line[name], name


def test_parquet_events_written_in_small_batches_equal_one_batch(folder, tmp_path, monkeypatch):
    export_parquet(folder, tmp_path / "whole")
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 7)
    export_parquet(folder, tmp_path / "batched")
    whole = pd.read_parquet(tmp_path / "whole" / "events.parquet")
    batched = pd.read_parquet(tmp_path / "batched" / "events.parquet")
    pd.testing.assert_frame_equal(whole, batched)


def test_a_skipped_line_is_not_exported_and_is_named(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    with open(copy / "traces.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"truncated": \n')
    result = export_parquet(copy, tmp_path / "out")
    assert len(pd.read_parquet(tmp_path / "out" / "events.parquet")) == len(trace_lines(folder))
    assert any("skipped" in line for line in result.warnings)


def test_the_cli_refuses_an_unknown_format_in_one_line(folder, monkeypatch, capsys):
    code, _, err = bench_main(monkeypatch, capsys, "export", "--format", "csv", str(folder))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--format" in err


def test_the_cli_refuses_a_folder_without_traces_in_one_line(tmp_path, monkeypatch, capsys):
    code, _, err = bench_main(monkeypatch, capsys, "export", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(tmp_path) in err


def test_without_inspect_ai_the_inspect_export_names_the_extra(folder, tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")] + ["inspect_ai"]:
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: the import fails as if not installed
    code, _, err = bench_main(monkeypatch, capsys, "export", "--format", "inspect", str(folder), "--out", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "bench[inspect]" in err and "not installed" in err
    assert not list(tmp_path.iterdir())


@needs_inspect
def test_inspect_logs_load_with_inspects_reader_one_sample_per_run_with_the_traces_verdicts(folder, tmp_path):
    from inspect_ai.log import read_eval_log

    result = export_inspect(folder, tmp_path)
    lines = trace_lines(folder)
    summaries = {line["run_id"]: line["outcome"] for line in lines if line["kind"] == "summary"}
    events_per_run = pd.Series([line["run_id"] for line in lines]).value_counts().to_dict()
    cells = {(line["model"], line["mode"]) for line in lines}
    assert len(result.files) == len(cells)
    seen = set()
    for file in result.files:
        log = read_eval_log(str(file))
        assert log.status == "success" and log.samples is not None
        assert (log.eval.model, log.eval.task) in cells
        for sample in log.samples:
            run_id = sample.uuid
            outcome = summaries[run_id]
            assert sample.scores is not None
            assert sample.scores["stop_verdict"].value == outcome["stop_verdict"]
            assert sample.scores["stop_correct"].value == outcome["stop_correct"]
            assert sample.scores["oracle_passed"].value == outcome["oracle_passed"]
            assert sample.scores["side_effects"].value["unauthorized"] == outcome["unauthorized_side_effects"]
            assert len(sample.events) == events_per_run[run_id]
            assert (sample.id, sample.epoch) == (sample.metadata["scenario"], sample.metadata["trial"])
            seen.add(run_id)
    assert seen == set(summaries)  # every run is a sample, once


@needs_inspect
def test_inspect_results_are_the_reports_rates(folder, tmp_path):
    from inspect_ai.log import read_eval_log

    reported = load_traces(folder).runs
    for file in export_inspect(folder, tmp_path).files:
        log = read_eval_log(str(file), header_only=True)
        assert log.results is not None
        mine = reported[(reported["mode"] == log.eval.task) & (reported["model"] == log.eval.model)]
        scores = {s.name: s for s in log.results.scores}
        assert scores["stop_correct"].metrics["accuracy"].value == pytest.approx(mine["stop_correct"].mean())
        shares = {name: metric.value for name, metric in scores["stop_verdict"].metrics.items()}
        assert shares == pytest.approx(mine["stop_verdict"].astype(str).value_counts(normalize=True).to_dict())


@needs_inspect
def test_a_run_ended_by_infrastructure_is_unscored_never_false(tmp_path):
    from inspect_ai.log import read_eval_log

    folder = write_runs(
        tmp_path / "run",
        [
            Run("judged", "react", stop_correct=True),
            Run("lost", "react", stop_correct=False, status="error", ending_error="network", trial=2),
        ],
    )
    [file] = export_inspect(folder, tmp_path / "out").files
    log = read_eval_log(str(file))
    assert log.samples is not None and log.results is not None
    by_run = {s.uuid: s.scores for s in log.samples if s.scores is not None}
    assert by_run["lost"]["stop_verdict"].value == "infrastructure"
    assert math.isnan(float(by_run["lost"]["stop_correct"].value))  # inspect's unscored: left out of its metrics
    assert by_run["judged"]["stop_correct"].value is True
    stop = next(s for s in log.results.scores if s.name == "stop_correct")
    assert (stop.scored_samples, stop.metrics["accuracy"].value) == (1, 1.0)


@needs_inspect
def test_the_cli_writes_inspect_logs_and_says_how_to_open_them(folder, tmp_path, monkeypatch, capsys):
    code, out, _ = bench_main(monkeypatch, capsys, "export", "--format", "inspect", str(folder), "--out", str(tmp_path))
    assert code == 0 and "inspect view --log-dir" in out
    assert sorted(p.name for p in tmp_path.glob("*.eval")) == sorted(
        line.rsplit("/", 1)[-1] for line in out.splitlines() if line.endswith(".eval")
    )


@pytest.mark.slow
@needs_inspect
def test_an_exported_recording_opens_in_inspect_with_its_tokens_samples_and_conversations(tmp_path):
    """The committed recording through inspect's own reader: stats.model_usage holds bench's token totals, the
    dataset counts each story once (stories x trials samples over trials epochs, not that times trials again), each
    model call is a model event with the messages the recording holds, and the Messages tab has the prompts."""
    from inspect_ai.log import read_eval_log, resolve_sample_attachments

    from harness.models.run_calls import read_calls
    from reports.load import load_traces

    recorded = ROOT / "results" / "recorded" / "smollm2-135m"
    runs = load_traces(recorded).runs
    calls = read_calls(recorded)
    assert calls is not None
    logs = [read_eval_log(str(file)) for file in export_inspect(recorded, tmp_path).files]
    manifest = json.loads((recorded / "manifest.json").read_text())
    assert len(logs) == 10
    for log in logs:
        mode = log.eval.task
        mine = runs[runs["mode"] == mode]
        usage = log.stats.model_usage["smollm2-135m"]
        assert usage.total_tokens == int(mine["total_tokens"].sum()) > 0
        assert usage.input_tokens == int(mine["prompt_tokens"].sum())
        stories, trials = len(manifest["scenarios"]), manifest["trials"]
        assert log.eval.dataset.samples == stories and log.eval.config.epochs == trials
        assert len(log.samples or []) == stories * trials
        for condensed in log.samples or []:
            sample = resolve_sample_attachments(condensed)  # inspect stores a repeated prompt once, as an attachment
            expected = calls.calls.get((str(sample.id), mode, sample.epoch, "smollm2-135m"), [])
            models = [e for e in sample.events if e.event == "model"]
            assert len(models) == len(expected)
            for event, call in zip(models, expected, strict=True):
                assert [m.text for m in event.input] == [m.content for m in call.messages]
                assert event.output.completion == (call.answer or "")
            if expected:
                said = [m.text for m in sample.messages]
                assert expected[0].messages[-1].content in said  # the first prompt, in the Messages tab
                assert sample.model_usage["smollm2-135m"].total_tokens > 0
