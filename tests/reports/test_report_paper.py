"""Paper-ready outputs: LaTeX that compiles, figures titled with model, policy, trials and n, print resolution."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from operator import itemgetter
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from harness.models import RECORDED_MODEL
from reports import figures as figs
from reports.decision_kinds import decision_tallies
from reports.figure_files import DPI
from reports.latex import PACKAGES, latex_escape, to_latex
from reports.load import load_traces
from reports.metrics import GROUP_KEYS, compute, latency_samples, prepare
from reports.report import figure_context
from reports.tables import Column, Table
from tests.helpers.report_fixtures import Call, Run, write_runs
from tests.reports.conftest import AUDIT_RECORDING as AUDIT


@pytest.fixture
def recorded_report(recorded_pair_report: Path) -> Path:
    return recorded_pair_report


def pdflatex() -> str:
    found = shutil.which("pdflatex")
    if found is None:
        pytest.fail(
            "pdflatex is needed for this test: apt-get install -y --no-install-recommends "
            "texlive-latex-base texlive-latex-recommended"
        )
    return found


def compile_latex(folder: Path, body: str) -> subprocess.CompletedProcess:
    (folder / "main.tex").write_text(
        "\\documentclass{article}\n\\usepackage{graphicx}\n"
        + "".join(f"\\usepackage{{{package}}}\n" for package in PACKAGES)
        + "\\usepackage[margin=2cm]{geometry}\n\\begin{document}\n"
        + body
        + "\n\\end{document}\n"
    )
    return subprocess.run(
        [pdflatex(), "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_every_latex_table_and_pdf_figure_compiles(recorded_report, tmp_path):
    tables = sorted((recorded_report / "tables").glob("*.tex"))
    figures = sorted((recorded_report / "figures").glob("*.pdf"))
    assert len(tables) > 20 and len(figures) == 10  # five figures, full width and one column wide
    body = "\n".join(
        [f"\\input{{{t}}}\n\\clearpage" for t in tables]
        + [f"\\begin{{figure}}\\includegraphics[width=\\linewidth]{{{f}}}\\end{{figure}}" for f in figures]
    )
    result = compile_latex(tmp_path, body)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "main.pdf").stat().st_size > 10_000


def test_hostile_text_compiles_too(tmp_path):
    nasty = "mode_1 & 50% #2 $x$ {a} ~b^c \\d <e> |f| é – \x07"
    table = Table(
        "nasty_table",
        f"Title {nasty}",
        (Column("name", "text", itemgetter(0)), Column("pass^3", "pct", itemgetter(1))),
        ((nasty, 0.5), ("plain", float("nan"))),
        about=f"note {nasty}",
    )
    result = compile_latex(tmp_path, to_latex(table, context=nasty))
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.slow
def test_latex_has_caption_label_right_aligned_numbers_and_math_powers(recorded_report):
    latex = (recorded_report / "tables" / "pass_k_by_mode.tex").read_text()
    assert "\\caption{pass$^{k}$ over trials (model smollm2-135m" in latex
    assert "\\label{tab:pass-k-by-mode}" in latex
    powers = re.findall(r"pass\$\^\{(\d+)\}\$", latex)  # the columns: pass^1 .. pass^k, k up to the trials
    assert powers and powers == [str(k) for k in range(1, len(powers) + 1)] and "\\^{}" not in latex
    spec = re.search(r"\\begin\{tabular\}\{@\{\}([lr]+)@\{\}\}", latex).group(1)
    assert spec == "ll" + "r" * len(powers)  # mode and policy left, the pass^k columns right
    assert latex_escape("50% of a_b") == "50\\% of a\\_b"


def png_dpi(data: bytes) -> float:
    at = data.index(b"pHYs")
    x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return x * 0.0254


@pytest.mark.slow
@pytest.mark.parametrize("name", ["verdicts", "stop_correctness", "latency", "tokens", "decision_share"])
def test_figures_print_at_200_dpi_or_more(recorded_report, name):
    data = (recorded_report / "figures" / f"{name}.png").read_bytes()
    assert png_dpi(data) >= 199.9 and DPI >= 200
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 1400 and height >= 600


def plots_for(folders: list[Path], by: str = "mode") -> list[figs.Plot]:
    traces = load_traces(folders)
    prepared = prepare(traces)
    shown = "mode" if by == "scenario" else by
    metrics = compute(traces, shown, prepared=prepared)
    cells = compute(traces, "scenario", prepared=prepared) if by == "scenario" else None
    decisions = decision_tallies(traces.events, GROUP_KEYS[shown])
    context = figure_context(prepared.runs, metrics)
    return figs.all_plots(metrics, latency_samples(prepared, shown), context, cells, decisions)


@pytest.mark.slow
def test_every_figure_title_names_model_policy_trials_and_n():
    for plot in plots_for([RECORDED_MODEL, AUDIT]):
        title = plot.figure.get_suptitle()
        assert "model smollm2-135m" in title and "gateway enforce, audit" in title, title
        manifests = [json.loads((folder / "manifest.json").read_text()) for folder in (RECORDED_MODEL, AUDIT)]
        counts = sorted({manifest["trials"] for manifest in manifests})
        trials = "-".join(map(str, counts)) + " trial" + ("s" if counts[-1] > 1 else "")
        judged = sum(
            manifest["runs"] - standing_at_plan_review(folder)
            for manifest, folder in zip(manifests, (RECORDED_MODEL, AUDIT), strict=True)
        )
        assert trials in title and f"n = {judged} judged runs" in title, title


def standing_at_plan_review(folder: Path) -> int:
    """Runs whose summary leaves them at their mode's own plan review, unanswered: not judged (no approver)."""
    lines = (json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines())
    last = {e["run_id"]: e["outcome"] for e in lines if e["kind"] == "summary"}  # a resumed run: its last summary
    return sum(o["status"] == "suspended" and o["suspended_at"] == "plan_review" for o in last.values())


def test_legends_sit_outside_the_data(tmp_path):
    runs = [
        Run(f"{m}-{i}", m, trial=i, calls=[Call(100.0 + i, 300, 40, "x")], deciders=["runtime", "workflow"])
        for m in ("react", "workflow")
        for i in range(1, 4)
    ]
    for plot in plots_for([write_runs(tmp_path / "run", runs)]):
        canvas = FigureCanvasAgg(plot.figure)
        canvas.draw()
        renderer = canvas.get_renderer()
        legends = [*plot.figure.legends, *(ax.get_legend() for ax in plot.figure.axes if ax.get_legend())]
        for legend in legends:
            box = legend.get_window_extent(renderer)
            for ax in plot.figure.axes:
                assert not box.overlaps(ax.get_window_extent(renderer)), plot.name


@pytest.mark.slow
def test_by_scenario_draws_a_heatmap_not_a_column_of_bars():
    plots = {p.name: p for p in plots_for([RECORDED_MODEL, AUDIT], by="scenario")}
    heat = plots["stop_correctness"].figure
    FigureCanvasAgg(heat).draw()
    panels = [ax for ax in heat.axes if ax.images]
    assert len(panels) == 2  # one per gateway policy
    recorded = json.loads((RECORDED_MODEL / "manifest.json").read_text())
    turned = len(recorded["scenarios"]) > figs.STORIES_ACROSS  # a long library: stories down the side
    ticks = panels[0].get_yticklabels() if turned else panels[-1].get_xticklabels()
    assert [t.get_text() for t in ticks] == sorted(recorded["scenarios"])
    trials = recorded["trials"]
    assert any(t.get_text() == f"{trials}/{trials}" for t in panels[0].texts)  # correct / judged in the cells
    assert heat.get_size_inches()[0] <= 7.3  # a paper's text width
    recorded = json.loads((RECORDED_MODEL / "manifest.json").read_text())["modes"]  # the recording's own modes
    assert len(plots["verdicts"].figure.axes[0].get_yticklabels()) == 2 * len(recorded)  # the others: mode x policy


@pytest.mark.slow
def test_html_tables_scroll_only_sideways_and_numbers_do_not_wrap(recorded_report):
    html = (recorded_report / "report.html").read_text()
    tables = html.count('<table id="table-')
    assert tables > 20 and html.count('<div class="table-wrap"><table id="table-') == tables
    assert ".table-wrap { overflow-x: auto; max-width: 100%; }" in html  # no fixed height: every row shows
    assert ".num { text-align: right; white-space: nowrap;" in html
    intervals = re.findall(r'<td class="(\w+)">\[\d+\.\d%, \d+\.\d%\]</td>', html)
    assert intervals and set(intervals) == {"num"}  # an interval never wraps


def test_the_verdicts_figure_splits_the_correct_stops_by_the_oracle_and_shows_skipped_approval(tmp_path):
    runs = [
        Run("w-1", "workflow", trial=1),
        Run("w-2", "workflow", trial=2, violations=["order:create_brief<write_draft"]),  # right stop, wrong work
        Run("w-3", "workflow", trial=3, stop_correct=False, status="finished", verdict="skipped_approval"),
        Run("w-4", "workflow", trial=4, stop_correct=False, status="finished", verdict="late", unauthorized=1),
    ]
    plot = next(p for p in plots_for([write_runs(tmp_path / "run", runs)]) if p.name == "verdicts")
    ax = plot.figure.axes[0]
    labels = {container.get_label(): container for container in ax.containers}  # one group: one bar each
    shares = {label: c.patches[0].get_width() for label, c in labels.items()}
    assert shares["correct, oracle passed"] == shares["correct, oracle failed"] == 0.25
    assert shares["skipped approval"] == shares["late"] == 0.25 and sum(shares.values()) == 1.0
    assert labels["correct, oracle failed"].patches[0].get_hatch() == "////"
    assert labels["skipped approval"].patches[0].get_facecolor() != labels["late"].patches[0].get_facecolor()
