"""Report columns are declared once: golden Markdown pins the headline and verdicts tables, and a column added to a
table's declaration shows in every format and in the legend with no other edit."""

from __future__ import annotations

import csv
import difflib
import io
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli.tally import RunTally
from reports import load_traces
from reports import tables as tbl
from reports.html import table_block
from reports.latex import latex_escape, to_latex
from reports.metrics import Metrics, compute
from reports.tables import Column, main_table, to_csv, to_html, to_markdown, to_terminal
from tests.helpers.report_fixtures import Run, write_runs

GOLDEN = Path(__file__).parent / "golden"
UPDATE = "BENCH_UPDATE_GOLDEN"
ROOT = Path(__file__).resolve().parents[2]


def golden_runs() -> list[Run]:
    """Every judged verdict, an infrastructure run, side effects and blocked attempts, two modes, two policies, and a
    correct stop whose work the oracle faults (oracle passed below stop-correct)."""
    blocked = [("write_draft", "blocked")]
    return [
        Run("wf-1", "workflow", trial=1),
        Run("wf-2", "workflow", trial=2, violations=["order:create_brief<write_draft"]),  # right stop, wrong work
        Run("wf-3", "workflow", scenario="other_scenario", trial=1),
        Run("wf-4", "workflow", scenario="other_scenario", trial=2, stop_correct=False, status="error"),
        Run("re-1", "react", trial=1, actions=blocked),
        Run("re-2", "react", trial=2, stop_correct=False, status="finished", actions=blocked * 2),
        Run("re-3", "react", scenario="other_scenario", trial=1, stop_correct=False, status="finished", premature=1),
        Run("re-4", "react", scenario="other_scenario", trial=2, stop_correct=False, verdict="wrong_place"),
        Run("re-5", "react", trial=3, stop_correct=False, status="step_limit"),
        Run("re-7", "react", trial=5, stop_correct=False, status="finished", verdict="skipped_approval"),
        Run("re-6", "react", trial=4, stop_correct=False, status="error", ending_error="timeout"),
        Run("au-1", "react", trial=1, gateway_policy="audit"),
        Run(
            "au-2",
            "react",
            trial=2,
            gateway_policy="audit",
            stop_correct=False,
            status="finished",
            verdict="late",
            unauthorized=2,
        ),
    ]


@pytest.fixture(scope="module")
def metrics(tmp_path_factory) -> Metrics:
    return compute(load_traces(write_runs(tmp_path_factory.mktemp("columns") / "run", golden_runs())))


@pytest.mark.parametrize("name, build", [("headline", main_table), ("verdicts", tbl.verdicts_table)])
def test_the_headline_and_verdicts_tables_render_as_their_golden_markdown(metrics, name, build):
    rendered = to_markdown(build(metrics))
    golden = GOLDEN / f"{name}.md"
    if os.environ.get(UPDATE):
        golden.write_text(rendered, encoding="utf-8")
    where = golden.relative_to(ROOT)
    regenerate = (
        f"if the change is intended, rewrite it with {UPDATE}=1 .venv/bin/python -m pytest -n 0 "
        f"{Path(__file__).relative_to(ROOT)} and review the diff of {where}"
    )
    assert golden.exists(), f"no golden file {where}: {regenerate}"
    expected = golden.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(expected.splitlines(True), rendered.splitlines(True), str(where), "rendered"))
    assert rendered == expected, f"the {name} table no longer renders as {where} ({regenerate}):\n{diff}"


def test_every_run_verdict_and_side_effect_reaches_the_golden_headline(metrics):
    """The fixture exercises what the golden file pins: each judged verdict, infra, side effects and blocks."""
    table = main_table(metrics)
    rows = {tuple(row[:2]): dict(zip(table.headers, row, strict=True)) for row in table.display_rows()}
    react = rows[("react", "enforce")]
    verdicts = ("correct", "early", "skipped approval", "late", "wrong place", "no stop", "infra")
    assert [react[v] for v in verdicts] == ["1"] * 7
    assert rows[("react", "audit")]["oracle passed"] == "50.0%"  # one of two judged runs passed the oracle
    assert (react["premature"], react["blocked"]) == ("1", "3")
    assert rows[("workflow", "enforce")]["failed closed"] == "1"
    assert (rows[("workflow", "enforce")]["stop-correct"], rows[("workflow", "enforce")]["oracle passed"]) == (
        "75.0%",
        "50.0%",
    )
    assert rows[("react", "audit")]["unauthorized"] == "2"


# ---------------------------------------------------------------- one spec, every format

NEW = Column("fixture extra", "int", lambda record: record.judged + 9000, "a column a test added to the declaration.")


@pytest.mark.parametrize(
    "declaration, build", [("HEADLINE_COLUMNS", main_table), ("VERDICTS_COLUMNS", tbl.verdicts_table)]
)
def test_a_column_added_to_a_declaration_shows_in_every_format_and_the_legend(metrics, monkeypatch, declaration, build):
    before = build(metrics)
    monkeypatch.setattr(tbl, declaration, (*getattr(tbl, declaration), NEW))
    table = build(metrics)
    values = [str(g.judged + 9000) for g in metrics.groups]

    assert table.headers == [*before.headers, NEW.header]
    assert table.note == f"{before.note} {NEW.header}: {NEW.description}"  # the legend, after the old one
    terminal = to_terminal(table).splitlines()
    assert terminal[0].rstrip().endswith(NEW.header)
    assert [line.split()[-1] for line in terminal[2:]] == values
    markdown = to_markdown(table)
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines() if line.startswith("|")]
    assert cells[0][-1] == NEW.header and [row[-1] for row in cells[2:]] == values
    assert markdown.rstrip().endswith(f"{NEW.header}: {NEW.description}")
    written = list(csv.DictReader(io.StringIO(to_csv(table))))
    assert [row[NEW.header] for row in written] == values
    latex = to_latex(table)
    header = latex.split("\\midrule")[-2]  # up to the last part's header row: a long table goes on in parts
    assert all(word in header for word in NEW.header.split()) and latex_escape(NEW.description) in latex
    assert all(f"& {v} \\\\" in latex for v in values)
    page = table_block(table)
    assert f'<th class="num">{NEW.header}</th>' in to_html(table) and NEW.description in page
    assert all(f'<td class="num">{v}</td></tr>' in page for v in values)


def test_a_column_added_to_the_headline_reaches_the_table_and_legend_bench_run_prints(monkeypatch):
    monkeypatch.setattr(tbl, "HEADLINE_COLUMNS", (*tbl.HEADLINE_COLUMNS, NEW))
    tally = RunTally()
    for run in golden_runs():
        cell = SimpleNamespace(mode=run.mode, scenario=SimpleNamespace(id=run.scenario))
        tally.add(cell, run.events()[-1].outcome)
    table, legend = tally.table().split("\n\n")
    assert table.splitlines()[0].endswith(NEW.header)
    assert legend.endswith(f"blocked: attempts the gateway refused. {NEW.header}: {NEW.description}")
