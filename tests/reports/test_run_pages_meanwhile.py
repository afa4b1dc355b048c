"""The run pages start first, in a process of their own, before the report imports pandas and matplotlib: what
the CLI imports to start them stays free of both, and a report given pages already started writes no others."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from harness.models import RECORDED_MODEL
from reports import run_page
from reports.report import build_report
from reports.run_links import RunLink, RunPages, pages_meanwhile
from tests.helpers.bench import ROOT
from tests.helpers.report_fixtures import Run, write_runs


def test_what_starts_the_run_pages_imports_neither_pandas_nor_matplotlib_nor_what_writing_them_needs():
    code = (
        "import sys, harness.cli.app, reports.run_links, reports.report_formats; "
        "heavy = ('pandas', 'pyarrow', 'matplotlib', 'reports.run_page', 'jsonschema'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_a_folder_without_a_trace_starts_no_pages(tmp_path):
    with pages_meanwhile([tmp_path / "nothing here"], tmp_path / "out") as pages:
        assert pages() == RunPages([], [])
    assert not (tmp_path / "out").exists()


def test_a_report_given_its_run_pages_writes_no_others_and_links_its_run_ids_to_those(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("r1", "react"), Run("r2", "workflow")])
    given = RunPages([], [RunLink("r1", "runs/made-elsewhere.html")])
    result = build_report([folder], tmp_path / "report", ["html"], pages=lambda: given)
    assert not (tmp_path / "report" / "runs").exists()
    assert not [f for f in result.files if "runs" in f.parts]
    text = (tmp_path / "report" / "report.html").read_text()
    pages = text.split('<script type="application/json" id="run-pages">', 1)[1].split("</script>", 1)[0]
    assert json.loads(pages) == {"r1": "runs/made-elsewhere.html"}  # the runs table's links: those given


def test_a_report_without_pages_given_writes_one_page_a_run(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("r1", "react"), Run("r2", "workflow")])
    result = build_report([folder], tmp_path / "report", ["html"])
    assert sorted(f.name for f in result.files if "runs" in f.parts) == ["r1.html", "r2.html"]


def test_run_pages_stop_at_the_first_run_past_the_limit_when_no_manifest_counts_them(tmp_path, monkeypatch):
    folder = write_runs(tmp_path / "run", [Run("r1", "react"), Run("r2", "workflow"), Run("r3", "react", trial=2)])
    monkeypatch.setattr(run_page, "MAX_RUN_PAGES", 3)
    assert len(run_page.write_run_pages([str(folder / "traces.jsonl")], tmp_path / "all").written) == 3
    monkeypatch.setattr(run_page, "MAX_RUN_PAGES", 2)
    assert run_page.write_run_pages([str(folder / "traces.jsonl")], tmp_path / "none") == RunPages([], [], 2)
    assert not (tmp_path / "none").exists()


def test_run_pages_past_the_runs_a_manifest_counts_read_no_trace(tmp_path, monkeypatch):
    folder = write_runs(tmp_path / "run", [Run("r1", "react")])
    shutil.copy(RECORDED_MODEL / "manifest.json", folder / "manifest.json")  # it counts 900 runs
    monkeypatch.setattr(run_page, "MAX_RUN_PAGES", 899)

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trace was read")

    monkeypatch.setattr(run_page, "scan", unread)
    assert run_page.write_run_pages([str(folder / "traces.jsonl")], tmp_path / "out") == RunPages([], [], 899)
