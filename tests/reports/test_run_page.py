"""The HTML report's per-run pages: every run linked from report.html, each page the run's whole timeline,
rendered in headless Chromium, hostile text escaped."""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.matrix.cell.provenance import short_hash
from harness.models.recording import RecordEntry
from harness.records.manifest import read_manifest
from harness.records.trace import TraceEvent, read_events, read_records
from harness.scenario.load import load_scenario
from reports import run_page
from reports.report import build_report
from tests.helpers.bench import ROOT, SCENARIOS

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "headless Chromium is needed for this test and is not on PATH: ./install installs it on Debian "
        "(apt-get install -y chromium)"
    )


def dom_of(page: Path, profile: Path) -> str:
    result = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.decode()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A labelled matrix where a scripted person approves at every gate (human events), reported to HTML."""
    root = tmp_path_factory.mktemp("runpages")
    folder = run(
        RunSpec(
            modes=["all"],
            scenarios=["blog_two_gates", "release_pipeline", "privileged_tool"],
            scenarios_dir=SCENARIOS,
            model="scripted:eager",
            approver="scripted:approve",
            gateway="audit",
            out=root / "run",
            label="pages",
        )
    ).folder
    result = build_report([folder], root / "report", ["html"])
    events = list(read_events(folder / "traces.jsonl"))
    return result, events


def runs_of(events: list[TraceEvent]) -> dict[str, list[TraceEvent]]:
    found: dict[str, list[TraceEvent]] = {}
    for event in events:
        found.setdefault(event.run_id, []).append(event)
    return found


@pytest.mark.slow
def test_report_links_every_run_to_its_own_page(report):
    result, events = report
    page = (result.out / "report.html").read_text()
    runs = runs_of(events)
    pages = json.loads(page.split('<script type="application/json" id="run-pages">')[1].split("</script>")[0])
    assert pages == {run_id: f"runs/{run_id}.html" for run_id in runs}  # the runs table's links, one a run
    for run_id in runs:
        assert (result.out / "runs" / f"{run_id}.html").is_file()
    assert page.count('<h2 id="runs"') <= 1  # one runs table (reports/runs_explorer.py), never a second
    assert {p.stem for p in (result.out / "runs").glob("*.html")} == set(runs)


def test_a_run_page_renders_in_headless_chromium_with_every_event_and_the_verdict(report, tmp_path):
    result, events = report
    runs = runs_of(events)
    # a run a person decided in, and one the oracle faulted: the pages must show both kinds of facts
    decided = next(r for r in runs.values() if any(e.kind == "human" for e in r))
    faulted = next(r for r in runs.values() if r[-1].outcome is not None and r[-1].outcome.violations)
    for number, chosen in enumerate((decided, faulted)):
        outcome = chosen[-1].outcome
        assert outcome is not None
        dom = dom_of(result.out / "runs" / f"{chosen[0].run_id}.html", tmp_path / f"profile-{number}")
        shown = [int(seq) for seq in re.findall(r'<tr class="tone-[a-z]+" data-seq="(\d+)"', dom)]
        assert shown == [e.seq for e in chosen]  # every event, in order, nothing else
        kinds = re.findall(r'data-seq="\d+" data-kind="([a-z_]+)"', dom)
        assert kinds == [e.kind for e in chosen]
        assert f'data-verdict="{outcome.stop_verdict}"' in dom
        assert f"Stop verdict <strong>{outcome.stop_verdict}</strong>" in dom
        for violation in outcome.violations:
            assert f"<li>{html.escape(violation)}</li>" in dom
        assert "label pages" in dom and 'href="../report.html"' in dom
    assert "approve at " in dom_of(result.out / "runs" / f"{decided[0].run_id}.html", tmp_path / "profile-h")


def test_trace_text_is_escaped_and_file_names_stay_inside_the_runs_folder(tmp_path):
    hostile = "../../x<script>alert(1)</script>"
    events = [
        {
            "run_id": hostile,
            "scenario": "s<b>",
            "mode": "react",
            "model": "m",
            "trial": 1,
            "seq": 0,
            "step": 0,
            "ts": "2026-01-01T00:00:00Z",
            "decision_maker": "runtime",
            "kind": "run_start",
            "detail": {"gateway_policy": "enforce"},
        },
        {
            "run_id": hostile,
            "scenario": "s<b>",
            "mode": "react",
            "model": "m",
            "trial": 1,
            "seq": 1,
            "step": 1,
            "ts": "2026-01-01T00:00:01Z",
            "decision_maker": "llm",
            "kind": "model_call",
            "result": "proposed",
            "action": "finish",
            "args": {"step": {"action": "finish", "args": {"x": "<img src=x onerror=alert(1)>\x1b[2J"}}},
            "detail": {"purpose": "next_action"},
        },
    ]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "traces.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    result = build_report([tmp_path / "run"], tmp_path / "out", ["html"])
    [page] = (result.out / "runs").glob("*.html")
    text = page.read_text()
    assert page.parent == result.out / "runs" and "<script>" not in text and "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;\\u001b[2J" in text
    report_text = (result.out / "report.html").read_text()
    assert "<img src=x" not in report_text and "\x1b" not in report_text


@pytest.mark.slow
def test_past_the_page_limit_the_report_says_how_to_open_a_run(report, tmp_path, monkeypatch):
    result, events = report
    monkeypatch.setattr(run_page, "MAX_RUN_PAGES", 1)
    again = build_report([result.out.parent / "run"], tmp_path / "out", ["html"])
    assert not (again.out / "runs").exists()
    text = (again.out / "report.html").read_text()
    assert f"{len(runs_of(events))} runs: per-run pages are written for reports of up to 1 runs" in text
    assert "<code>bench show DIR --run ID</code>" in text


@pytest.mark.slow
def test_no_html_format_writes_no_run_pages(report, tmp_path):
    result, _ = report
    again = build_report([result.out.parent / "run"], tmp_path / "out", ["md"])
    assert not (again.out / "runs").exists()


RECORDED = ROOT / "results" / "recorded" / "smollm2-135m"


@pytest.fixture(scope="module")
def recorded_report(tmp_path_factory):
    """The committed recording (a real model's runs, with recording.jsonl), reported to HTML."""
    return build_report([RECORDED], tmp_path_factory.mktemp("recorded") / "report", ["html"])


def recorded_run(scenario: str, mode: str) -> tuple[list[TraceEvent], list[RecordEntry]]:
    """The events of trial 1 of a cell of the committed recording, and its recorded calls."""
    events = [e for e in read_events(RECORDED / "traces.jsonl") if (e.scenario, e.mode, e.trial) == (scenario, mode, 1)]
    calls = [
        entry
        for entry in read_records(RECORDED / "recording.jsonl", RecordEntry)
        if (entry.scenario, entry.mode, entry.trial) == (scenario, mode, 1)
    ]
    return events, calls


@pytest.mark.slow
def test_a_recorded_runs_page_holds_every_calls_messages_and_raw_answer(recorded_report):
    events, calls = recorded_run("data_migration", "workflow")
    assert calls, "the recording has no call of this run"
    text = (recorded_report.out / "runs" / f"{events[0].run_id}.html").read_text()
    sections = re.findall(r'<section class="call" id="call-(\d+)"', text)
    assert sections == [str(n) for n in range(1, len(calls) + 1)]
    for entry in calls:
        for message in entry.exchange.request["messages"]:
            assert html.escape(message["content"]) in text
        answer = entry.exchange.response["choices"][0]["message"]["content"]
        assert f"<pre>{html.escape(answer)}</pre>" in text
    # each model_call row of the timeline links to its call
    model_calls = [e.seq for e in events if e.kind == "model_call"]
    for number, seq in enumerate(model_calls, start=1):
        assert re.search(rf'data-seq="{seq}"[^>]*>.*?href="#call-{number}"', text)


@pytest.mark.slow
def test_a_recorded_runs_page_holds_the_storys_rules_and_oracle(recorded_report):
    events, _ = recorded_run("data_migration", "workflow")
    scenario = load_scenario(SCENARIOS / "data_migration.yaml")
    text = (recorded_report.out / "runs" / f"{events[0].run_id}.html").read_text()
    story = text.split('<h2 id="story">', 1)[1]
    for rule in scenario.rules:
        assert html.escape(" ".join(rule.text.split())) in story
    assert f"<td>expected stop</td><td>{scenario.oracle.expected_stop}</td>" in story
    recorded_hash = read_manifest(RECORDED).scenario_hashes["data_migration"]
    changed = recorded_hash != short_hash((SCENARIOS / "data_migration.yaml").read_bytes())
    assert ("changed since this run" in story) == changed  # said exactly when the file differs from the one recorded


@pytest.mark.slow
def test_sibling_links_resolve_to_the_other_trials_of_the_cell_and_back_to_the_report(recorded_report):
    events, _ = recorded_run("support_ticket_triage", "workflow_routed")
    page = recorded_report.out / "runs" / f"{events[0].run_id}.html"
    text = page.read_text()
    others = {
        e.run_id
        for e in read_events(RECORDED / "traces.jsonl")
        if (e.scenario, e.mode) == ("support_ticket_triage", "workflow_routed") and e.run_id != events[0].run_id
    }
    linked = dict(re.findall(r'<a href="([^"]+)" title="run [0-9a-f]+" data-sibling="([^"]+)">', text))
    assert set(linked.values()) == others
    for href in linked:
        assert (page.parent / href).is_file()
    assert (page.parent / "../report.html").resolve().is_file() and 'href="../report.html"' in text


@pytest.mark.slow
def test_a_workflow_runs_page_draws_its_path_in_the_order_it_went(recorded_report):
    events, _ = recorded_run("data_migration", "workflow")
    moves = [e.detail for e in events if e.kind == "transition"]
    assert moves, "the run took no transition"
    walked = [moves[0]["from"], *(m["to"] for m in moves)]
    text = (recorded_report.out / "runs" / f"{events[0].run_id}.html").read_text()
    assert re.findall(r'<span data-step="\d+">([a-z_]+)</span>', text) == walked
    svg = text.split('<svg class="workflow"', 1)[1].split("</svg>", 1)[0]
    visits = dict(re.findall(r'data-node="([a-z_]+)" data-visits="(\d+)"', svg))
    assert {node: int(count) for node, count in visits.items() if count != "0"} == {
        node: walked.count(node) for node in walked
    }
    for source, target in set(itertools.pairwise(walked)):
        taken = sum(1 for a, b in itertools.pairwise(walked) if (a, b) == (source, target))
        assert f'data-from="{source}" data-to="{target}" data-taken="{taken}"' in svg


def test_a_run_without_a_recording_says_so_in_one_line(report):
    result, events = report
    text = (result.out / "runs" / f"{events[0].run_id}.html").read_text()
    calls = text.split('<h2 id="calls">', 1)[1].split("<h2", 1)[0]
    assert calls.count('<p class="note">no recording.jsonl in this run') == 1
    assert '<section class="call"' not in calls
