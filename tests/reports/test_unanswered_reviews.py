"""No row is zero by construction: a run standing at its mode's own plan review, which nobody answers without an
approver, is counted apart and left out of the rates; a row of nothing else is n/a with the reason, never 0%."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from harness.core import PLAN_REVIEW
from reports import figures as figs
from reports import load_traces
from reports.metrics import Metrics, compute, latency_samples, prepare
from reports.report import figure_context
from reports.tables import UNANSWERED, correctness_table, main_table, to_csv, to_terminal
from tests.helpers.bench import bench_main
from tests.helpers.report_fixtures import Run, write_runs

RATES = ("stop-correct", "95% CI", "oracle passed", "pass^1")


def unanswered(run_id: str, scenario: str = "blog_brief_approval") -> Run:
    """A hybrid_planner run with nobody to answer its plan review: it stands there, wrong place by construction."""
    return Run(
        run_id,
        "hybrid_planner",
        scenario=scenario,
        stop_correct=False,
        status="suspended",
        suspended_at=PLAN_REVIEW,
        verdict="wrong_place",
    )


def headline(runs: list[Run], folder: Path) -> tuple[dict[str, dict[str, str]], str, Metrics]:
    metrics = compute(load_traces(write_runs(folder, runs)))
    table = main_table(metrics)
    rows = {row[0]: dict(zip(table.headers, row, strict=True)) for row in table.display_rows()}
    return rows, table.note, metrics


def test_a_mode_whose_every_run_stands_at_its_own_unanswered_review_is_na_with_the_reason(tmp_path):
    runs = [
        unanswered("hp-1"),
        unanswered("hp-2", scenario="other_scenario"),
        Run("re-1", "react", stop_correct=False, status="finished", verdict="skipped_approval"),
        Run("re-2", "react", scenario="other_scenario", stop_correct=False, status="finished", verdict="early"),
    ]
    rows, note, metrics = headline(runs, tmp_path / "run")
    hybrid, react = rows["hybrid_planner"], rows["react"]
    assert [hybrid[c] for c in RATES] == ["n/a"] * 4
    assert (hybrid["n"], hybrid["wrong place"], hybrid[UNANSWERED]) == ("0", "0", "2")  # counted apart, not hidden
    assert "hybrid_planner / enforce: every run stopped at its own plan review" in note
    assert "--approver scripted:plan_reader" in note
    # A mode that really fails to stop keeps its 0%, in the same table.
    assert (react["stop-correct"], react["n"], react[UNANSWERED]) == ("0.0%", "2", "0")
    assert "react" not in note
    written = {r["mode"]: r for r in csv.DictReader(io.StringIO(to_csv(main_table(metrics))))}
    assert written["hybrid_planner"]["stop-correct"] == "n/a" and written["react"]["stop-correct"] == "0.0"
    correctness = {r[0]: r for r in correctness_table(metrics).display_rows()}
    assert "n/a" in correctness["hybrid_planner"] and "0.0%" in correctness["react"]


def test_rates_leave_unanswered_reviews_out_and_the_note_says_how_many(tmp_path):
    runs = [
        unanswered("hp-1"),
        unanswered("hp-2"),
        Run("hp-3", "hybrid_planner", scenario="other_scenario"),  # a reviewed run that stopped right
    ]
    rows, note, metrics = headline(runs, tmp_path / "run")
    hybrid = rows["hybrid_planner"]
    assert (hybrid["n"], hybrid["correct"], hybrid[UNANSWERED], hybrid["stop-correct"]) == ("1", "1", "2", "100.0%")
    assert "2 of 3 runs stopped at its own plan review" in note and "over the other 1" in note
    (group,) = metrics.groups
    assert (group.stop.n, group.stop_clustered.n, group.pass_k) == (1, 1, (1.0,))


def test_a_wrong_place_stop_at_a_scenario_gate_is_still_a_failure(tmp_path):
    """Only the mode's own review point is by construction; suspending at another gate is the mode's doing."""
    runs = [Run("hp-1", "hybrid_planner", stop_correct=False, status="suspended", verdict="wrong_place")]
    rows, note, _ = headline(runs, tmp_path / "run")
    assert (rows["hybrid_planner"]["stop-correct"], rows["hybrid_planner"]["wrong place"]) == ("0.0%", "1")
    assert UNANSWERED not in rows["hybrid_planner"]  # the column shows only when some run is one
    assert "plan review" not in note


def test_the_figures_mark_the_mode_na_instead_of_a_zero_bar(tmp_path):
    folder = write_runs(tmp_path / "run", [unanswered("hp-1"), Run("re-1", "react", stop_correct=False)])
    traces = load_traces([folder])
    prepared = prepare(traces)
    metrics = compute(traces, prepared=prepared)
    context = figure_context(prepared.runs, metrics)
    for plot in figs.all_plots(metrics, latency_samples(prepared, "mode"), context)[:2]:  # verdicts, stop-correct
        texts = [t.get_text() for t in plot.figure.axes[0].texts]
        assert any(t.startswith(figs.NOT_APPLICABLE) for t in texts), plot.name
        assert sum(figs.NOT_APPLICABLE in t for t in texts) == 1  # react's 0 is drawn as a 0, not as n/a


def scripted_matrix(monkeypatch, capsys, out: Path, *approver: str) -> tuple[str, str]:
    """A plan-review mode and a mode that stops early, run by the scripted reference model: printed, then reported."""
    args = ("--mode", "hybrid_planner,react", "--scenario", "blog_brief_approval,data_migration")
    code, printed, err = bench_main(
        monkeypatch, capsys, "run", *args, "--model", "scripted:reference", "--out", str(out), *approver
    )
    assert code == 0, err
    table = main_table(compute(load_traces([out])))
    return printed, "\n".join([to_terminal(table), "", table.note])


def test_without_an_approver_bench_run_and_the_report_both_say_na(monkeypatch, capsys, tmp_path):
    printed, reported = scripted_matrix(monkeypatch, capsys, tmp_path / "run")
    assert reported in printed  # the end-of-run headline is the report's, note and all
    row = next(line for line in reported.splitlines() if line.startswith("hybrid_planner"))
    assert "n/a" in row and "%" not in row
    assert "hybrid_planner / enforce: every run stopped at its own plan review" in printed
    assert "0.0%" in next(line for line in reported.splitlines() if line.startswith("react"))


@pytest.mark.parametrize("approver", ["scripted:plan_reader", "scripted:approve"])
def test_with_an_approver_the_plan_review_mode_has_a_number(monkeypatch, capsys, tmp_path, approver):
    printed, reported = scripted_matrix(monkeypatch, capsys, tmp_path / "run", "--approver", approver)
    assert reported in printed
    row = next(line for line in reported.splitlines() if line.startswith("hybrid_planner"))
    assert "n/a" not in row and "%" in row
    assert UNANSWERED not in reported and "plan review" not in reported.split("n: judged")[0]
