"""The run pages start first, in a process of their own, before the report imports pandas and matplotlib: what
the CLI imports to start them stays free of both, and a report given pages already started writes no others."""

from __future__ import annotations

import json
import subprocess
import sys

from reports.report import build_report
from reports.run_page import RunLink, RunPages, pages_meanwhile
from tests.helpers.bench import ROOT
from tests.helpers.report_fixtures import Run, write_runs


def test_what_starts_the_run_pages_imports_neither_pandas_nor_matplotlib():
    code = (
        "import sys, harness.cli.app, reports.run_page, reports.report_formats; "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib') if m in sys.modules))"
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
