"""The HTML report's per-run pages: every run linked from report.html, each page the run's whole timeline,
rendered in headless Chromium, hostile text escaped."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.records.trace import TraceEvent, read_events
from reports import run_page
from reports.report import build_report
from tests.helpers.bench import SCENARIOS

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


def test_report_links_every_run_to_its_own_page(report):
    result, events = report
    page = (result.out / "report.html").read_text()
    runs = runs_of(events)
    for run_id in runs:
        assert f'<a href="runs/{run_id}.html">{run_id}</a>' in page
        assert (result.out / "runs" / f"{run_id}.html").is_file()
    assert page.count("<tr data-run=") == len(runs)
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
    assert "<script>" not in (result.out / "report.html").read_text().split('<h2 id="runs">')[1]


def test_past_the_page_limit_the_report_says_how_to_open_a_run(report, tmp_path, monkeypatch):
    result, events = report
    monkeypatch.setattr(run_page, "MAX_RUN_PAGES", 1)
    again = build_report([result.out.parent / "run"], tmp_path / "out", ["html"])
    assert not (again.out / "runs").exists()
    text = (again.out / "report.html").read_text()
    assert f"{len(runs_of(events))} runs: per-run pages are written for reports of up to 1 runs" in text
    assert "<code>bench show DIR --run ID</code>" in text


def test_no_html_format_writes_no_run_pages(report, tmp_path):
    result, _ = report
    again = build_report([result.out.parent / "run"], tmp_path / "out", ["md"])
    assert not (again.out / "runs").exists()
