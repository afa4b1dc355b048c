"""Figures that go into a paper unedited: TrueType fonts, two print sizes, fonts of 7 pt or more at print size,
latency in seconds, the who-decided figure kind by kind, one colour per meaning, n on every panel."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.text import Text

from harness.models import RECORDED_MODEL
from harness.records.trace import DecisionMaker
from reports import figures as figs
from reports import palette
from reports.decision_kinds import decision_tallies
from reports.load import load_traces
from reports.metrics import GROUP_KEYS, compute, latency_samples, prepare
from reports.report import build_report, figure_context
from reports.tables import latency_table
from tests.helpers.report_fixtures import Call, Run, write_runs

AUDIT = RECORDED_MODEL.with_name("smollm2-135m-audit")


@pytest.fixture(scope="module")
def recorded_figures(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("print") / "report"
    build_report([RECORDED_MODEL, AUDIT], out, formats=["md"])
    return out / "figures"


def poppler(tool: str) -> str:
    """pdffonts or pdfinfo; without them the test fails and says what to install (docs/development.md: no skips)."""
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"{tool} is needed for this test: apt-get install -y --no-install-recommends poppler-utils")
    return found


def fonts_of(pdf: Path) -> list[tuple[str, str]]:
    """(name, type) of each font pdffonts lists in ``pdf``."""
    listing = subprocess.run([poppler("pdffonts"), str(pdf)], capture_output=True, text=True, check=True).stdout
    lines = listing.splitlines()[2:]  # a header and a rule of dashes
    return [(line.split()[0], " ".join(line[37:54].split())) for line in lines if line.strip()]


@pytest.mark.slow
def test_every_pdf_figure_embeds_truetype_fonts_never_type_3(recorded_figures):
    pdfs = sorted(recorded_figures.glob("*.pdf"))
    assert len(pdfs) == 10  # five figures, each full width and one column wide
    for pdf in pdfs:
        fonts = fonts_of(pdf)
        assert fonts, pdf.name
        assert all("TrueType" in kind for _, kind in fonts), (pdf.name, fonts)
        assert not any("Type 3" in kind for _, kind in fonts), (pdf.name, fonts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["verdicts", "stop_correctness", "latency", "tokens", "decision_share"])
def test_each_figure_is_written_full_width_and_one_column_wide(recorded_figures, name):
    for stem, width in ((name, figs.DOUBLE.width), (f"{name}_column", figs.COLUMN.width)):
        info = subprocess.run(
            [poppler("pdfinfo"), str(recorded_figures / f"{stem}.pdf")], capture_output=True, text=True, check=True
        ).stdout
        points = float(next(line for line in info.splitlines() if line.startswith("Page size")).split()[2])
        assert points == pytest.approx(width * 72, abs=0.5), stem  # made at its print size: placed at 100%
    assert (recorded_figures / f"{name}.png").is_file()


def recorded_plots(size: figs.Size) -> list[figs.Plot]:
    traces = load_traces([RECORDED_MODEL, AUDIT])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    decisions = decision_tallies(traces.events, GROUP_KEYS["mode"])
    context = figure_context(prepared.runs, metrics)
    return figs.all_plots(metrics, latency_samples(prepared, "mode"), context, None, decisions, size)


@pytest.fixture(scope="module", params=figs.SIZES, ids=["double", "column"])
def drawn(request) -> list[figs.Plot]:
    plots = recorded_plots(request.param)
    for plot in plots:
        FigureCanvasAgg(plot.figure).draw()
    return plots


def visible_texts(plot: figs.Plot) -> list[Text]:
    """The texts drawn: a tick's label outside its axis's limits is kept by matplotlib but never drawn."""
    undrawn = set()
    for ax in plot.figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            undrawn |= {id(t.label1) for t in axis.get_major_ticks() if not low - 1e-9 <= t.get_loc() <= high + 1e-9}
    return [t for t in plot.figure.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in undrawn]


@pytest.mark.slow
def test_no_text_is_smaller_than_7_points_at_print_size(drawn):
    for plot in drawn:
        small = {t.get_text(): t.get_fontsize() for t in visible_texts(plot) if t.get_fontsize() < 7}
        assert not small, (plot.stem, small)


@pytest.mark.slow
def test_no_text_runs_off_the_figure(drawn):
    for plot in drawn:
        renderer = plot.figure.canvas.get_renderer()  # type: ignore[attr-defined]
        page = plot.figure.bbox
        for text in visible_texts(plot):
            box = text.get_window_extent(renderer)
            assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1, (plot.stem, text.get_text())


@pytest.mark.slow
def test_every_panel_states_its_n_once(drawn):
    """Each panel's n is stated, in its title or, for a figure of one panel, in the figure's title; never the same
    statement twice (a panel counting other runs than the figure, the tokens' complete runs, says its own)."""
    for plot in drawn:
        panels = [ax for ax in plot.figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        figure_ns = {n.strip() for n in N_STATED.findall(" ".join(plot.figure.get_suptitle().split()))}
        for ax in panels:
            words = " ".join((ax.get_title(loc="left") + " " + ax.get_title()).split())  # wrapped lines joined
            panel_ns = {n.strip() for n in N_STATED.findall(words)}
            assert panel_ns or (len(panels) == 1 and figure_ns), (plot.stem, ax.get_title(loc="left"))
            assert not panel_ns & figure_ns, (plot.stem, panel_ns)


N_STATED = re.compile(r"n = [\d,]+ [a-z ]+")  # "n = 814 judged runs", "n = 2073 calls"


@pytest.mark.slow
def test_latency_is_in_seconds_with_few_ticks(drawn):
    plot = next(p for p in drawn if p.name == "latency")
    for ax in plot.figure.axes:
        assert ax.get_xlabel() == "seconds"
        ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert 2 <= len(ticks) <= 7 and all(len(t) <= 3 for t in ticks), ticks  # 0-90 s: never 5-digit ms


def test_the_decision_figure_counts_each_kind_apart_per_run(tmp_path):
    runs = [
        Run(f"{m}-{i}", m, trial=i, calls=[Call(100.0, 300, 40, "x")], deciders=deciders)
        for m, deciders in (("react", ["runtime"]), ("workflow", ["workflow", "workflow"]))
        for i in range(1, 4)
    ]
    traces = load_traces([write_runs(tmp_path / "run", runs)])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    decisions = decision_tallies(traces.events, GROUP_KEYS["mode"])
    plot = figs.decision_share(metrics, decisions, figure_context(prepared.runs, metrics))
    titles = [ax.get_title(loc="left") for ax in plot.figure.axes]
    assert titles and all("n = 6 runs" in t for t in titles), titles
    assert any(t.startswith("proposals") for t in titles)
    for g in metrics.groups:  # the bars are events per run of each kind, not shares of one pool
        tally = decisions[g.key]
        assert tally.runs == 3
        assert tally.of_kind("proposal") == pytest.approx(1.0)  # one model call per run
    assert "per complete run" in plot.figure.get_suptitle()
    legend = plot.figure.legends[0]
    assert legend.get_title().get_text().startswith("decision maker")


def lab(colour: str) -> np.ndarray:
    """CIE L*a*b* (D65) of an sRGB colour."""
    rgb = np.array(to_rgb(colour))
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_no_two_meanings_share_a_colour_in_one_report():
    close = [
        (a, b, round(float(np.linalg.norm(lab(ca) - lab(cb))), 1))
        for (a, ca), (b, cb) in itertools.combinations(palette.MEANINGS.items(), 2)
        if np.linalg.norm(lab(ca) - lab(cb)) < palette.DISTINCT
    ]
    assert not close, close
    assert set(palette.DECISION_MAKERS) == set(get_args(DecisionMaker))  # every decision maker has its colour


@pytest.mark.slow
def test_the_figures_draw_only_palette_colours_for_meanings(drawn):
    """Every filled bar is a palette colour (or white under a hatch): no figure picks a colour of its own."""
    allowed = {palette_rgb(c) for c in palette.MEANINGS.values()} | {palette_rgb("white")}
    for plot in drawn:
        for ax in plot.figure.axes:
            for patch in ax.patches:
                if patch.get_width() > 0 and patch.get_fill():
                    assert palette_rgb(patch.get_facecolor()) in allowed, (plot.stem, patch.get_facecolor())


def palette_rgb(colour) -> tuple[float, ...]:
    return tuple(round(v, 3) for v in to_rgb(colour))


def whisker_ends(ax, row: float) -> tuple[float, float]:
    """The lowest and highest x of the whisker lines drawn on ``row`` (each whisker a horizontal two-point line)."""
    xs = [x for line in ax.lines if list(line.get_ydata()) == [row, row] for x in line.get_xdata()]
    return min(xs), max(xs)


def test_latency_whiskers_end_at_the_latency_tables_p95_not_at_a_sample_inside_it():
    traces = load_traces([RECORDED_MODEL])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    plot = figs.latency(metrics, latency_samples(prepared, "mode"), figure_context(prepared.runs, metrics))
    table = latency_table(metrics)
    for ax, scope in zip(plot.figure.axes[:2], ("run", "call"), strict=True):
        p95 = next(c for c in table.columns if c.header == f"{scope} p95 ms")
        for row, group in enumerate(metrics.groups):
            assert whisker_ends(ax, row)[1] == pytest.approx(p95.get(group) / 1000), (scope, group.mode)
    # boxplot's whis=(5, 95) would end at the furthest sample inside the percentile: some group's p95 lies beyond
    # every run at or under it, so the equality above is not what boxplot would have drawn anyway
    samples = latency_samples(prepared, "mode")
    p95s = next(c for c in table.columns if c.header == "run p95 ms")
    assert any(
        p95s.get(group) > max(s for s in samples[group.key][0] if s <= p95s.get(group)) for group in metrics.groups
    )


@pytest.mark.slow
@pytest.mark.parametrize("venue", sorted(figs.VENUES))
def test_each_venue_draws_at_its_text_and_column_width(venue, tmp_path):
    # a figure's page size is its venue's, whatever the runs: a few hand-made runs draw it as the recording would
    runs = [Run(f"{mode}-{i}", mode, trial=i, stop_correct=i > 1) for mode in ("react", "workflow") for i in (1, 2)]
    out = tmp_path / "r"
    build_report([write_runs(tmp_path / "run", runs)], out, formats=["md"], venue=venue)
    text, column = figs.VENUES[venue]
    for stem, width in (("verdicts", text), ("verdicts_column", column)):
        info = subprocess.run(
            [poppler("pdfinfo"), str(out / "figures" / f"{stem}.pdf")], capture_output=True, text=True
        )
        points = float(next(line for line in info.stdout.splitlines() if line.startswith("Page size")).split()[2])
        assert points == pytest.approx(width * 72, abs=0.5), stem


def test_venue_widths_never_exceed_the_classes_widths_in_tex_points():
    classes = {"ieee": (516.0, 252.0), "acm": (506.295, 241.14), "article": (469.75, 229.87)}
    for venue, (text, column) in figs.VENUES.items():
        assert text * 72.27 <= classes[venue][0] and column * 72.27 <= classes[venue][1], venue


def test_figures_drawn_untitled_have_no_title():
    traces = load_traces([RECORDED_MODEL])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    untitled = figure_context(prepared.runs, metrics, titled=False)
    for plot in figs.all_plots(metrics, latency_samples(prepared, "mode"), untitled):
        title = plot.figure.get_suptitle()
        assert title == "", (plot.name, title)
    titled = figs.all_plots(metrics, latency_samples(prepared, "mode"), figure_context(prepared.runs, metrics))
    assert all(plot.figure.get_suptitle() for plot in titled)


def test_share_axes_run_past_100_percent_and_small_groups_are_drawn_lighter():
    traces = load_traces([RECORDED_MODEL])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    plot = figs.stop_correctness(metrics, figure_context(prepared.runs, metrics))
    ax = plot.figure.axes[0]
    assert ax.get_xlim()[1] > 1.0  # a cap at 100% stands clear of the spine
    small = figs.small_groups(metrics)
    assert any(small) and not all(small)  # hybrid_planner: 1 judged run of 24 (23 unanswered reviews)
    alphas = [patch.get_alpha() for patch in ax.patches[: len(small)]]
    assert [a == figs.LIGHT for a in alphas] == small
    assert f"lighter: n < {figs.MIN_N}" in ax.get_xlabel().replace("\n", " ")


@pytest.mark.slow
@pytest.mark.parametrize("venue", sorted(figs.VENUES))
def test_two_models_one_column_wide_fit_the_venues_page(venue):
    traces = load_traces([RECORDED_MODEL])
    prepared = prepare(traces)
    one = compute(traces, "model", prepared=prepared)
    other = [replace(g, key=("another-model", *g.key[1:])) for g in one.groups]  # the same groups, a second model
    two = replace(one, groups=[*one.groups, *other])
    context = figure_context(prepared.runs, two)
    column = figs.sizes(venue)[1]
    for make in (figs.verdicts, figs.stop_correctness):
        plot = make(two, context, column)
        height = plot.figure.get_size_inches()[1]
        assert len(plot.figure.axes) == 2  # a panel per model
        assert height <= figs.PAGE_HEIGHTS[venue] - figs.CAPTION_ROOM, (plot.name, height)
        assert height >= figs.MIN_ROW * len(two.groups)  # squeezed, never below a legible row


@pytest.fixture(scope="module")
def two_model_folder(tmp_path_factory) -> Path:
    """Two scripted models, every mode, four stories, two trials: hybrid_planner's reviews go unanswered (n/a)."""
    from tests.helpers.bench import bench_in_process

    folder = tmp_path_factory.mktemp("two-models") / "run"
    stories = "blog_brief_approval,bank_transfer_compliance,data_migration,gdpr_erasure"
    args = ["--model", "scripted:reference", "--model", "scripted:eager", "--trials", "2", "-s", stories]
    done = bench_in_process("run", *args, "--out", str(folder))
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("venue", sorted(figs.VENUES))
def test_two_models_one_column_wide_no_text_overlaps_another_and_an_na_group_is_labelled(two_model_folder, venue):
    traces = load_traces([two_model_folder])
    prepared = prepare(traces)
    metrics = compute(traces, "model", prepared=prepared)
    assert any(g.not_applicable for g in metrics.groups)
    decisions = decision_tallies(traces.events, GROUP_KEYS["model"])
    context = figure_context(prepared.runs, metrics)
    samples = latency_samples(prepared, "model")
    for plot in figs.all_plots(metrics, samples, context, None, decisions, figs.sizes(venue)[1]):
        FigureCanvasAgg(plot.figure).draw()
        renderer = plot.figure.canvas.get_renderer()  # type: ignore[attr-defined]
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in visible_texts(plot)]
        if plot.name == "tokens":  # scripted models report no tokens: the note alone, no rows of empty bars
            assert any("no tokens reported" in " ".join(text.split()) for text, _ in boxes), venue
            assert not {text for text, _ in boxes} & set(figs.labels(metrics)), venue
        if plot.name in ("verdicts", "stop_correctness"):  # one n/a group per model's panel, said once each
            assert sum(figs.NOT_APPLICABLE in text for text, _ in boxes) == 2, plot.stem
        for (text, box), (other, other_box) in itertools.combinations(boxes, 2):
            overlap = min(box.y1, other_box.y1) - max(box.y0, other_box.y0)
            across = min(box.x1, other_box.x1) - max(box.x0, other_box.x0)
            assert overlap <= 0.5 or across <= 0.5, (plot.stem, venue, text, other)
