"""Report figures with matplotlib's Agg canvas: verdicts, stop-correctness, latency, tokens, who decided.

Paper-ready by construction: each figure is made at its print size, a venue's full text width or one column
(``VENUES``: IEEE's by default, ``DOUBLE`` and ``COLUMN``), with its fonts set in points (never below ``SMALL``,
7 pt), so nothing shrinks when it is placed at 100%. Each is titled with what it shows and the facts that qualify it
(model, gateway policy, trials, n), states n on every panel, keeps its legend outside the data, takes its
colours from ``reports.palette`` (one colour, one meaning, across every figure) and writes PDFs with TrueType
(Type 42) fonts, which publishers' checkers accept where they reject Type 3. ``--by scenario`` gets a
mode x scenario heatmap instead of a column of bars; groups of several models get a panel per model in the
verdicts and stop-correctness figures (``facets``), on one shared axis.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from harness.records.verdicts import RARE_VERDICTS
from harness.records.verdicts import label as verdict_label
from reports import palette
from reports.decision_kinds import DECISION_KINDS, KIND_TITLES, DecisionTally
from reports.load import clean_text
from reports.metrics import DECISION_MAKERS, JUDGED_VERDICTS, GroupMetrics, Metrics

NOT_APPLICABLE = "n/a: plan review unanswered"  # a group whose every run stopped at its mode's own review, unanswered
FONT = 8.0  # points at print size: labels, ticks, legends
SMALL = 7.0  # points: counts beside the bars, notes; the smallest text in any figure
TITLE = 9.0  # points: the figure's title
BOX_PERCENTILES = (25, 50, 75)  # a latency box's edges and median
# Set while a figure is made and while it is written, never globally: Type 42 (TrueType) fonts in PDF and PS,
# sizes in points for whatever a figure does not size itself.
STYLE: dict[str, Any] = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "font.size": FONT,
    "axes.titlesize": FONT,
    "axes.labelsize": FONT,
    "xtick.labelsize": SMALL,
    "ytick.labelsize": FONT,
    "legend.fontsize": FONT,
    "figure.titlesize": TITLE,
}


@dataclass(frozen=True)
class Size:
    """A print size: the figure's width in inches and the suffix its files carry (``verdicts_column.pdf``)."""

    width: float
    suffix: str
    page: float = 99.0  # the tallest the figure may be: the venue's text height less room for a caption

    @property
    def column(self) -> bool:
        return self.width < 5

    @property
    def row(self) -> float:
        """Inches per group's row: a bar, and one column wide the group's name above it."""
        return 0.27 if self.column else 0.2

    @property
    def bar(self) -> float:
        """A bar's height, in rows."""
        return 0.5 if self.column else 0.7

    @property
    def shift(self) -> float:
        """How far a bar sits below its row's centre: one column wide, the group's name takes the row's top."""
        return 0.15 if self.column else 0.0

    def chars(self, points: float = FONT) -> int:
        """About how many characters of DejaVu Sans at ``points`` fit across the figure."""
        return int(self.width * 72 / (points * 0.56))


# A venue's text width and column width in inches, from its class's \textwidth and \columnwidth in TeX points
# (72.27 to the inch), rounded down so a figure at natural size never overflows: IEEEtran 516 pt and 252 pt,
# ACM's acmart sigconf 506.295 pt and 241.14 pt, a 10 pt two-column article 469.75 pt and 229.87 pt.
VENUES: dict[str, tuple[float, float]] = {"ieee": (7.13, 3.48), "acm": (7.0, 3.33), "article": (6.49, 3.18)}
VENUE = "ieee"  # the default (docs/metrics.md: figures at print size)
# A venue's text height in inches, rounded down: the article's \textheight as pdflatex sets it on letter paper
# (550 pt); IEEE's and ACM's from their letter-paper margins (IEEE conference: 0.75 in top, 1 in bottom; acmart
# sigconf: 57 pt top, 73 pt bottom with the running head and foot inside, less those).
PAGE_HEIGHTS: dict[str, float] = {"ieee": 9.25, "acm": 8.6, "article": 7.6}
CAPTION_ROOM = 0.75  # inches of a page a figure leaves for its caption and the space around it
MIN_ROW = 0.16  # inches: a group's row is never squeezed below this to fit a page (its name and bar stay legible)


def sizes(venue: str = VENUE) -> tuple[Size, Size]:
    """The full-width and one-column print sizes of ``venue`` (a key of VENUES)."""
    text, column = VENUES[venue]
    page = PAGE_HEIGHTS[venue] - CAPTION_ROOM
    return Size(text, "", page), Size(column, "_column", page)


DOUBLE, COLUMN = sizes()  # the default venue's: a two-column paper's text width (and the HTML page's), one column
SIZES = (DOUBLE, COLUMN)
MIN_N = 10  # a group of fewer judged runs is drawn lighter, its rate too uncertain to read like the others
LIGHT = 0.4  # the alpha of such a group's bars
X_ROOM = 1.04  # a share axis runs a little past 100% so a whisker's cap at 100% stands clear of the spine


@dataclass(frozen=True)
class Plot:
    """A finished figure, its name (the file stem and its id in the HTML page) and the print size it was made at."""

    name: str
    title: str
    figure: Figure
    size: Size = DOUBLE

    @property
    def stem(self) -> str:
        return self.name + self.size.suffix


@dataclass(frozen=True)
class Context:
    """What every figure's title states: which model(s), gateway policy(ies), trials and n."""

    models: tuple[str, ...]
    policies: tuple[str, ...]
    trials: str  # "5 trials", or "3-5 trials" when cells differ
    runs: int  # judged runs in the figure
    titled: bool = True  # False: no title drawn, the paper's caption says it (--no-figure-titles)

    def line(self) -> str:
        models = ", ".join(clean_text(m, 40) for m in self.models[:3]) + (" ..." if len(self.models) > 3 else "")
        return (
            f"model {models or '?'} · gateway {', '.join(self.policies) or '?'} · {self.trials} · "
            f"n = {self.runs} judged runs"
        )


@contextmanager
def style() -> Iterator[None]:
    """The figures' rcParams for the duration of a ``with``: while figures are made and while they are written."""
    with mpl.rc_context(STYLE):  # type: ignore[arg-type]  # matplotlib types its keys as one Literal
        yield


def to_bytes(figure: Figure, fmt: str, dpi: float | None = None) -> bytes:
    """The figure as PNG or PDF bytes, written under ``STYLE`` (Type 42 fonts); a PDF carries no date."""
    buffer = io.BytesIO()
    with style():
        if fmt == "pdf":
            figure.savefig(buffer, format="pdf", metadata={"CreationDate": None})  # same traces, same file
        else:
            figure.savefig(buffer, format=fmt, dpi=dpi)
    return buffer.getvalue()


def _height(groups: int, size: Size, base: float = 1.5) -> float:
    """Inches for ``groups`` rows plus the title, axis and legend; one column wide those wrap onto more lines, so a
    figure of a few groups must still leave its axes room (else the layout collapses). Rows taller than the page
    allows (two models' panels one column wide) are squeezed to fit it, never below MIN_ROW."""
    fixed = _fixed(size, base)
    rows = max(groups, 1)
    return fixed + max(min(size.row * rows, size.page - fixed), MIN_ROW * rows)


def _fixed(size: Size, base: float) -> float:
    return base + (1.4 if size.column else 0.0)


def _squeezed(groups: int, size: Size, base: float = 1.5) -> bool:
    """Whether ``_height`` squeezes these rows below their natural height to fit the page."""
    return size.row * max(groups, 1) > size.page - _fixed(size, base)


def _wrap(text: str, size: Size, points: float = FONT) -> str:
    """Each line of ``text`` wrapped to the figure's width at ``points``: a title or label never runs off."""
    return "\n".join(textwrap.fill(line, size.chars(points)) for line in text.split("\n"))


def labels(metrics: Metrics) -> list[str]:
    """Each group's label: the key parts that vary between groups (the constant ones are in the title)."""
    varying = [i for i, name in enumerate(metrics.keys) if metrics.constant(name) is None]
    if not varying:
        varying = [metrics.keys.index("mode")] if "mode" in metrics.keys else [0]
    folders = short_folders([g.get("source") for g in metrics.groups])
    return [
        clean_text(" / ".join(folders[g.key[i]] if metrics.keys[i] == "source" else g.key[i] for i in varying), 48)
        for g in metrics.groups
    ]


def facets(metrics: Metrics) -> list[tuple[str | None, Metrics]]:
    """A panel per model when the groups span several (each panel's groups are that model's), else one panel."""
    if "model" not in metrics.keys or metrics.constant("model") is not None:
        return [(None, metrics)]
    at = metrics.keys.index("model")
    panels: dict[str, list[GroupMetrics]] = {}
    for g in metrics.groups:
        panels.setdefault(g.key[at], []).append(g)
    return [(model, replace(metrics, groups=groups)) for model, groups in panels.items()]


def _panels(
    metrics: Metrics, context: Context, size: Size, base: float = 1.5
) -> tuple[Figure, list[tuple[Axes, Metrics]]]:
    """A figure with a row of bars per group, in a panel per model (titled with it and its n) when there are
    several; one panel is titled with its n alone, and only where the figure has no title (which states n)."""
    parts = facets(metrics)
    sizes = [max(len(part.groups), 1) for _, part in parts]
    base += 0.3 * (len(parts) - 1)
    fig = _new(_height(sum(sizes), size, base=base), size)
    axes = fig.subplots(len(parts), 1, sharex=True, height_ratios=sizes, squeeze=False)[:, 0]
    squeezed = _squeezed(sum(sizes), size, base)
    for ax, (model, part) in zip(axes, parts, strict=True):
        n = f"n = {sum(g.judged for g in part.groups)} judged runs"
        if model is not None:
            _panel_title(ax, f"model {clean_text(model, 60)}\n{n}", size, squeezed=squeezed)
        elif not context.titled:
            _panel_title(ax, n, size, squeezed=squeezed)
    return fig, [(ax, part) for ax, (_, part) in zip(axes, parts, strict=True)]


SQUEEZED_TITLE_PAD = 10.0  # points: a panel title's distance from its axes when the rows are squeezed (default 6)


def _panel_title(ax: Axes, text: str, size: Size, columns: int = 1, squeezed: bool = False) -> None:
    """The panel's title, left; one column wide with squeezed rows it stands further up: the first group's name,
    above its bar, reaches out of the axes there and would run into it."""
    width = max(size.chars(FONT) // columns - 4, 10)
    ax.set_title(
        "\n".join(textwrap.fill(line, width, break_long_words=False) for line in text.split("\n")),
        fontsize=FONT,
        loc="left",
        pad=SQUEEZED_TITLE_PAD if squeezed and size.column else None,
    )


def short_folders(paths: list[str]) -> dict[str, str]:
    """Each run folder by its shortest distinctive tail: results/a/run and results/b/run -> a/run, b/run."""
    parts = {p: Path(p).parts or (p,) for p in set(paths)}
    for depth in range(1, max((len(v) for v in parts.values()), default=1) + 1):
        tails = {p: "/".join(v[-depth:]) for p, v in parts.items()}
        if len(set(tails.values())) == len(tails):
            return tails
    return {p: p for p in parts}


def _title(fig: Figure, title: str, context: Context, size: Size) -> None:
    if not context.titled:
        return
    fig.suptitle(_wrap(f"{title}\n{context.line()}", size, TITLE), fontsize=TITLE)


def _new(height: float, size: Size) -> Figure:
    fig = Figure(figsize=(size.width, height), layout="constrained")
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(w_pad=0.04, h_pad=0.04)
    return fig


def _rows_axis(ax: Axes, y: np.ndarray, names: list[str], size: Size, counts: list[str] | None = None) -> None:
    """Groups top to bottom, the first on top: named on the y axis with their counts in the right margin, or, one
    column wide (no room for a margin of names), named above their bars with the count after the name, the name
    running across the figure's width (over the other panels of the row: their rows are the same groups)."""
    if len(y):
        ax.set_ylim(float(y.max()) + 0.5, float(y.min()) - 0.5)
    ax.tick_params(axis="x", labelsize=SMALL)
    if not size.column:
        ax.set_yticks(y, names, fontsize=FONT)
        for yi, count in zip(y, counts or [], strict=False):
            _count(ax, float(yi), count)
        return
    ax.set_yticks([])
    figure = ax.get_figure()
    assert isinstance(figure, Figure)
    for panel in figure.axes:  # no frame for the names running across the panels to cross
        panel.spines[["left", "top", "right"]].set_visible(False)
    where = blended_transform_factory(ax.transAxes, ax.transData)
    for i, (yi, name) in enumerate(zip(y, names, strict=True)):
        text = f"{name} · {counts[i]}" if counts else name
        label = figure.text(
            0.005, float(yi) + size.shift - size.bar / 2 - 0.03, text, transform=where, va="bottom", ha="left",
            fontsize=SMALL, zorder=5, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3},
        )  # fmt: skip
        label.set_in_layout(False)


def _share_axis(ax: Axes, y: np.ndarray, names: list[str], size: Size, counts: list[str] | None = None) -> None:
    """Groups top to bottom on y, shares from 0% to 100% on x."""
    _rows_axis(ax, y, names, size, counts)
    ax.set_xlim(0, X_ROOM)
    ticks = [0, 0.5, 1.0] if size.column else [0, 0.25, 0.5, 0.75, 1.0]
    ax.set_xticks(ticks, [f"{t:.0%}" for t in ticks])


def small_groups(metrics: Metrics) -> list[bool]:
    """Which groups hold fewer than MIN_N judged runs (drawn lighter; the axis label says so)."""
    return [0 < g.judged - g.unverdicted < MIN_N for g in metrics.groups]


def _lighten(bars: Any, small: list[bool]) -> None:
    """Each bar of a small group drawn at LIGHT alpha."""
    for patch, light in zip(bars, small, strict=True):
        if light:
            patch.set_alpha(LIGHT)


def _small_note(metrics: Metrics) -> str:
    return f"; lighter: n < {MIN_N}" if any(small_groups(metrics)) else ""


def _count(ax: Axes, y: float, text: str) -> None:
    """A count in the margin right of the axis, on a bar's row: outside the data, and the layout leaves room."""
    ax.annotate(
        text, (1, y), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
        va="center", fontsize=SMALL, annotation_clip=False,
    )  # fmt: skip


def _empty_note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=FONT, color=palette.NO_DATA_TEXT)


def _mark_not_applicable(ax: Axes, y: np.ndarray, metrics: Metrics, size: Size) -> bool:
    """A hatched grey bar labelled n/a for each group whose every run stopped at its mode's own plan review, which no
    one answers without an approver: its rates are not 0, there are none (reports.metrics.unanswered_review).

    One column wide the label goes in the group's name line instead (``_na_counts``): a row squeezed to fit a page
    is too low for a line of text on its bar, which would run into the next group's name."""
    marked = False
    for yi, g in zip(y, metrics.groups, strict=True):
        if g.not_applicable:
            na: dict[str, Any] = {"facecolor": palette.NOT_APPLICABLE, "hatch": "xx", "edgecolor": "#bbbbbb"}
            ax.barh(float(yi) + size.shift, 1.0, height=size.bar, linewidth=0, **na)
            if not size.column:
                text = _na_text(g)
                ax.text(0.5, float(yi) + size.shift, text, ha="center", va="center", fontsize=SMALL, color="#333333")
            marked = True
    return marked


def _na_text(g: GroupMetrics) -> str:
    return f"{NOT_APPLICABLE} ({g.unanswered_reviews} runs)"


def _na_counts(metrics: Metrics, counts: list[str], size: Size) -> list[str]:
    """The counts beside each group; one column wide, an n/a group's says n/a (its bar has no room for it)."""
    if not size.column:
        return counts
    return [_na_text(g) if g.not_applicable else count for g, count in zip(metrics.groups, counts, strict=True)]


def _unanswered(g: GroupMetrics) -> str:
    """What the counts at the right add for runs left out as unanswered plan reviews."""
    return f" (+{g.unanswered_reviews} unanswered)" if g.unanswered_reviews else ""


def _legend(fig: Figure, ax: Axes, size: Size, entries: int) -> None:
    """The legend under the figure, outside the data, in as many columns as the width holds."""
    handles, texts = ax.get_legend_handles_labels()
    longest = max((len(t) for t in texts), default=1) + 4
    ncol = max(1, min(entries, size.chars(FONT) // longest))
    fig.legend(handles, texts, loc="outside lower center", ncol=ncol, fontsize=FONT, frameon=False)


def verdicts(metrics: Metrics, context: Context, size: Size = DOUBLE) -> Plot:
    """Stacked bars: the share of each stop verdict among a group's judged runs, n at the right.

    The correct share is split by content: solid where the oracle passed too (the work was right), hatched where
    the run stopped in the right place with work the oracle faults, so a right stop is never read as right work.
    """
    fig, panels = _panels(metrics, context, size)
    marked = False
    for ax, part in panels:
        names = labels(part)
        y = np.arange(len(names))
        left = np.zeros(len(names))
        small = small_groups(part)
        for share, drawn in _verdict_segments(part):
            bars = ax.barh(y + size.shift, share, left=left, edgecolor="white", linewidth=0.5, height=size.bar, **drawn)
            _lighten(bars, small)
            left += share
        counts = []
        for g in part.groups:
            known = g.judged - g.unverdicted
            text = f"n={known}" + (f" (+{g.infrastructure} infra)" if g.infrastructure else "") + _unanswered(g)
            counts.append(text if known or not g.judged else "no verdicts")
        marked = _mark_not_applicable(ax, y, part, size) or marked
        _share_axis(ax, y, names, size, _na_counts(part, counts, size))
    ax = panels[-1][0]  # the x label under the last panel, the legend from the first
    some = any(g.unanswered_reviews for g in metrics.groups)
    ax.set_xlabel(
        _wrap(
            "share of judged runs (infrastructure runs"
            + (" and unanswered plan reviews" if some else "")
            + " are not judged; counted beside each group)"
            + ("; hatched: n/a, every run stopped at one" if marked else "")
            + _small_note(metrics),
            size,
            FONT / 0.7,  # the axis is about 70% of the figure's width
        ),
        fontsize=FONT,
    )
    _legend(fig, panels[0][0], size, len(JUDGED_VERDICTS) + 1)
    if not any(g.verdicts for g in metrics.groups):
        _empty_note(ax, "these traces predate stop verdicts (schema 1)")
    _title(fig, "Stop verdicts, the correct stops split by the oracle's content checks", context, size)
    return Plot("verdicts", "Stop verdicts per group (share of judged runs), correct split by oracle passed", fig, size)


def _verdict_segments(metrics: Metrics) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """Each bar segment in order: its share per group and how it is drawn (colour, hatch, label)."""
    segments: list[tuple[np.ndarray, dict[str, Any]]] = []
    for verdict in JUDGED_VERDICTS:
        share = np.nan_to_num([g.verdict_share(verdict) for g in metrics.groups])
        if verdict in RARE_VERDICTS and not share.any():
            continue  # a verdict only some runs can have (an own agent's error) is drawn and named only where it is
        colour, label = palette.VERDICTS[verdict], verdict_label(verdict)
        if verdict != "correct":
            segments.append((share, {"color": colour, "label": label}))
            continue
        # oracle_passed implies correct: the passed share is part of the correct one, over the same runs
        passed = np.nan_to_num([_share(g.oracle.successes, g.judged - g.unverdicted) for g in metrics.groups])
        passed = np.minimum(passed, share)
        segments.append((passed, {"color": colour, "label": f"{label}, oracle passed"}))
        segments.append(
            (
                share - passed,
                {
                    "facecolor": palette.CORRECT_ORACLE_FAILED,
                    "hatch": "////",
                    "hatchcolor": colour,
                    "label": f"{label}, oracle failed",
                },
            )
        )
    return segments


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def stop_correctness(metrics: Metrics, context: Context, size: Size = DOUBLE) -> Plot:
    fig, panels = _panels(metrics, context, size)
    marked = False
    for ax, part in panels:
        names = labels(part)
        rates = np.array([g.stop.rate for g in part.groups], dtype=float)
        low = np.array([g.stop_clustered.low for g in part.groups], dtype=float)  # the headline's interval
        high = np.array([g.stop_clustered.high for g in part.groups], dtype=float)
        y = np.arange(len(names))
        shown = np.nan_to_num(rates)
        _lighten(ax.barh(y + size.shift, shown, color=palette.STOP_CORRECT, height=size.bar), small_groups(part))
        error = np.vstack([np.nan_to_num(rates - low), np.nan_to_num(high - rates)])
        ax.errorbar(shown, y + size.shift, xerr=error, fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        counts = [f"{g.stop.successes}/{g.stop.n}{_unanswered(g)}" for g in part.groups]
        marked = _mark_not_applicable(ax, y, part, size) or marked
        _share_axis(ax, y, names, size, _na_counts(part, counts, size))
    ax.set_xlabel(
        _wrap(
            "stop-correct rate (bar), 95% interval: cluster bootstrap over stories (whiskers), "
            "correct / judged beside each group"
            + _small_note(metrics)
            + ("\nhatched: n/a, every run stopped at its own plan review, unanswered" if marked else ""),
            size,
            FONT / 0.7,
        ),
        fontsize=FONT,
    )
    _title(fig, "Stop-correctness", context, size)
    return Plot("stop_correctness", "Stop-correctness with 95% intervals (cluster bootstrap over stories)", fig, size)


STORIES_ACROSS = 13  # more stories than this: the heatmap turns (stories down the side)


def heatmap(metrics: Metrics, context: Context, size: Size = DOUBLE) -> Plot:
    """Mode x scenario: the stop-correct rate in colour, correct/judged written in each cell; a panel per policy.

    Up to thirteen stories they run across (a paper's text width holds about thirteen columns of a "5/5" each) and
    the policies stack; a longer library turns the grid: stories down the side, modes across, the policies side by
    side, so the figure keeps the text width and grows down the page instead of off its edge."""
    policies = list(dict.fromkeys(g.get("gateway_policy") for g in metrics.groups))
    modes = list(dict.fromkeys(g.mode for g in metrics.groups))
    scenarios = sorted({g.get("scenario") for g in metrics.groups})
    cells = {(g.get("gateway_policy"), g.mode, g.get("scenario")): g for g in metrics.groups}
    turned = len(scenarios) > STORIES_ACROSS
    rows, columns = (scenarios, modes) if turned else (modes, scenarios)
    if turned:
        label_room = 0.06 * min(max(len(m) for m in modes), 28)
        fig = _new(1.2 + label_room + 0.2 * len(scenarios), size)
        axes = fig.subplots(1, len(policies), sharey=True, squeeze=False)[0, :]
    else:
        label_room = 0.06 * min(max(len(s) for s in scenarios), 28)
        fig = _new(1.3 + len(policies) * (0.55 + 0.3 * len(modes)) + label_room, size)
        axes = fig.subplots(len(policies), 1, sharex=True, squeeze=False)[:, 0]
    image = None
    for ax, policy in zip(axes, policies, strict=True):

        def cell(i: int, j: int, policy: str = policy) -> GroupMetrics | None:
            mode, scenario = (columns[j], rows[i]) if turned else (rows[i], columns[j])
            return cells.get((policy, mode, scenario))

        grid = np.full((len(rows), len(columns)), np.nan)
        for i, j in np.ndindex(grid.shape):
            g = cell(i, j)
            if g is not None and g.stop.n:
                grid[i, j] = g.stop.rate
        image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.set_facecolor("#dddddd")  # cells without judged runs
        for i, j in np.ndindex(grid.shape):
            g = cell(i, j)
            text = f"{g.stop.successes}/{g.stop.n}" if g is not None and g.stop.n else "–"
            text = "n/a" if g is not None and g.not_applicable else text  # its own plan review, unanswered
            dark = math.isnan(grid[i, j]) or grid[i, j] > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=SMALL, color="black" if dark else "white")
        across = 60 if turned else 35
        ax.set_xticks(
            np.arange(len(columns)), [clean_text(c, 28) for c in columns], rotation=across, ha="right", fontsize=SMALL
        )
        if turned:
            ax.xaxis.tick_top()
            ax.set_xticklabels([clean_text(c, 28) for c in columns], rotation=across, ha="left", fontsize=SMALL)
        else:
            ax.tick_params(axis="x", labelbottom=ax is axes[-1])
        ax.set_yticks(np.arange(len(rows)), [clean_text(r, 28) for r in rows], fontsize=SMALL if turned else FONT)
        judged = sum(g.stop.n for g in metrics.groups if g.get("gateway_policy") == policy)
        ax.set_title(f"gateway {policy} · n = {judged} judged runs", fontsize=FONT, y=-0.04 if turned else 1.0,
                     va="top" if turned else "baseline")  # fmt: skip
        ax.tick_params(length=0)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), shrink=0.9, pad=0.02)
        bar.set_label("stop-correct rate", fontsize=FONT)
        bar.ax.tick_params(labelsize=SMALL)
    _title(fig, "Stop-correctness per mode and scenario (cells: correct / judged)", context, size)
    return Plot("stop_correctness", "Stop-correctness per mode and scenario", fig, size)


def _seconds_axis(ax: Axes, size: Size) -> None:
    """Seconds on x, few enough ticks that their labels never touch."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins=3 if size.column else 5, steps=[1, 2, 2.5, 5, 10], min_n_ticks=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.tick_params(axis="x", labelsize=SMALL)


def latency(
    metrics: Metrics,
    samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]],
    context: Context,
    size: Size = DOUBLE,
) -> Plot:
    names = labels(metrics)
    fig = _new(_height(len(names), size, base=1.9), size)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, index, what, counted in (
        (axes[0], 0, "per run (wall time)", "runs"),
        (axes[1], 1, "per model call", "calls"),
    ):
        # recorded in milliseconds, shown in seconds: five-digit millisecond ticks crowd
        data = [_finite(samples.get(g.key, (np.array([]), np.array([])))[index]) / 1000 for g in metrics.groups]
        boxes = [box_stats(d) for d in data]
        ax.bxp(
            boxes,
            orientation="horizontal",
            showfliers=False,
            positions=np.arange(len(data)) + size.shift,
            widths=size.bar,
            medianprops={"color": palette.MEDIAN, "linewidth": 1.5},
            boxprops={"linewidth": 0.8},
            whiskerprops={"linewidth": 0.8},
            capprops={"linewidth": 0.8},
        )
        p99 = [b["p99"] for b in boxes]
        ax.plot(p99, np.arange(len(data)) + size.shift, "k|", markersize=6)
        _panel_title(
            ax, f"{what}\nn = {sum(d.size for d in data)} {counted}", size, 2, _squeezed(len(names), size, 1.9)
        )
        ax.set_xlabel("seconds", fontsize=FONT)
        highest = max((b["p99"] for b in boxes if b["n"]), default=0.0)
        ax.set_xlim(0, highest * 1.05 if highest > 0 else 1)  # a latency is never negative
        _seconds_axis(ax, size)
        if highest <= 0:
            _empty_note(ax, "no latency recorded\n(scripted models\nanswer at once)")
    _rows_axis(axes[0], np.arange(len(names)), names, size)
    fig.supxlabel(_wrap("box: p25-p75; line: median; whiskers: p5-p95; tick: p99", size, SMALL), fontsize=SMALL)
    _title(fig, "Latency", context, size)
    return Plot("latency", "Latency per run and per model call", fig, size)


def box_stats(values: np.ndarray) -> dict[str, Any]:
    """A box's statistics for ``Axes.bxp``, computed as the latency table computes them (reports.stats: numpy's
    linear percentiles): box p25-p75, median, whiskers at p5 and p95 themselves (``boxplot(whis=(5, 95))`` would end
    them at the furthest sample inside that range, short of the table's p95), and p99 for the tick."""
    if not values.size:
        return {"n": 0, "q1": np.nan, "med": np.nan, "q3": np.nan, "whislo": np.nan, "whishi": np.nan, "p99": np.nan}
    p5, q1, med, q3, p95, p99 = (float(v) for v in np.percentile(values, [5, *BOX_PERCENTILES, 95, 99]))
    return {"n": int(values.size), "q1": q1, "med": med, "q3": q3, "whislo": p5, "whishi": p95, "p99": p99}


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def tokens(metrics: Metrics, context: Context, size: Size = DOUBLE) -> Plot:
    """Mean prompt and completion tokens per complete run, stacked; where no group reported any (scripted models),
    the note alone in a short figure: rows of empty bars would only list the groups, and the note would cross them."""
    names = labels(metrics)
    prompt = np.nan_to_num([g.prompt_tokens.mean for g in metrics.groups])
    completion = np.nan_to_num([g.completion_tokens.mean for g in metrics.groups])
    reported = bool((prompt + completion).any())
    fig = _new(_height(len(names) if reported else 1, size), size)
    ax = fig.add_subplot()
    runs = f"n = {sum(g.runs for g in metrics.groups)} complete runs"
    if not reported:
        ax.set_axis_off()
        note = f"{runs} in {len(names)} groups: no tokens reported (scripted models report none)"
        _empty_note(ax, _wrap(note, size))
        _title(fig, "Tokens per run", context, size)
        return Plot("tokens", "Mean prompt and completion tokens per run", fig, size)
    y = np.arange(len(names)) + size.shift
    ax.barh(y, prompt, color=palette.TOKENS["prompt"], label="prompt", height=size.bar)
    ax.barh(y, completion, left=prompt, color=palette.TOKENS["completion"], label="completion", height=size.bar)
    _rows_axis(ax, y - size.shift, names, size)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4 if size.column else 6))
    _panel_title(ax, runs, size, squeezed=_squeezed(len(names), size))
    ax.set_xlabel("mean tokens per complete run", fontsize=FONT)
    _legend(fig, ax, size, 2)
    _title(fig, "Tokens per run", context, size)
    return Plot("tokens", "Mean prompt and completion tokens per run", fig, size)


def decision_share(
    metrics: Metrics, decisions: Mapping[tuple[str, ...], DecisionTally], context: Context, size: Size = DOUBLE
) -> Plot:
    """Who decided, kind by kind (reports.decision_kinds): a panel per kind of decision, the mean events of that
    kind per complete run, stacked by decision maker, refusals hatched. Kinds are never pooled: a proposal, a
    transition and a gateway verdict are different acts, and one share over all of them read as "who controls
    the run", which the trace does not say. The file keeps its name, decision_share, for links made before."""
    names = labels(metrics)
    tallies = [decisions.get(g.key, DecisionTally(0, {})) for g in metrics.groups]
    kinds = [k for k in dict.fromkeys(DECISION_KINDS.values()) if any(t.of_kind(k) for t in tallies)]
    fig = _new(_height(len(names), size, base=1.9), size)
    axes = fig.subplots(1, max(len(kinds), 1), sharey=True, squeeze=False)[0]
    runs = sum(t.runs for t in tallies)
    y = np.arange(len(names))
    makers: dict[str, None] = {}  # the makers drawn, in order
    refused_shown = False
    for ax, kind in zip(axes, kinds, strict=False):
        left = np.zeros(len(names))
        for maker in DECISION_MAKERS:
            colour = palette.DECISION_MAKERS[maker]
            for refused in (False, True):
                width = np.array([t.of(kind, maker, refused) for t in tallies])
                if not width.any():
                    continue
                drawn = {"facecolor": "white", "edgecolor": colour, "hatch": "/////", "linewidth": 0} if refused else {}
                ax.barh(y + size.shift, width, left=left, height=size.bar, color=colour, **drawn)
                left += width
                makers[maker] = None
                refused_shown = refused_shown or refused
        ax.xaxis.set_major_locator(MaxNLocator(nbins=2 if size.column else 4, integer=True, min_n_ticks=2))
        ax.set_xlim(0, max(float(left.max()) * 1.05, 1.0))
        ax.set_xlabel("per run", fontsize=SMALL)
        _panel_title(ax, f"{KIND_TITLES[kind]}\nn = {runs} runs", size, len(kinds), _squeezed(len(names), size, 1.9))
    _rows_axis(axes[0], y, names, size)
    if not kinds:
        _empty_note(axes[0], "no decisions recorded")
    handles = [Patch(color=palette.DECISION_MAKERS[m], label=m) for m in makers]
    if refused_shown:
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="/////", label="refused (any maker)"))
    if handles:
        longest = max(len(str(h.get_label())) for h in handles) + 4
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncol=max(1, min(len(handles), size.chars(FONT) // longest)),
            fontsize=FONT,
            frameon=False,
            title="decision maker" + ("; hatched: refused, rejected or blocked" if refused_shown else ""),
            title_fontsize=FONT,
        )
    _title(fig, "Who decided, kind by kind: mean decision events per complete run", context, size)
    return Plot("decision_share", "Decision events per run by kind and decision maker", fig, size)


def makers(
    metrics: Metrics,
    samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]],
    context: Context,
    cells: Metrics | None = None,
    decisions: Mapping[tuple[str, ...], DecisionTally] | None = None,
    size: Size = DOUBLE,
) -> dict[str, Callable[[], Plot]]:
    """Each figure's name and the call that draws it at one print size: apart, so each can be drawn in a process of
    its own. ``cells`` (the mode x scenario metrics) turns stop-correctness into a heatmap at full width (one column
    keeps the bars: a heatmap of every scenario does not fit it), and ``decisions`` (reports.decision_kinds, same
    grouping) adds the who-decided figure."""
    heat = cells is not None and not size.column
    made: dict[str, Callable[[], Plot]] = {
        "verdicts": lambda: verdicts(metrics, context, size),
        "stop_correctness": lambda: (
            heatmap(cells, context, size) if heat and cells else stop_correctness(metrics, context, size)
        ),
        "latency": lambda: latency(metrics, samples, context, size),
        "tokens": lambda: tokens(metrics, context, size),
    }
    if decisions is not None:
        made["decision_share"] = lambda: decision_share(metrics, decisions, context, size)
    return made


def all_plots(
    metrics: Metrics,
    samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]],
    context: Context,
    cells: Metrics | None = None,
    decisions: Mapping[tuple[str, ...], DecisionTally] | None = None,
    size: Size = DOUBLE,
) -> list[Plot]:
    """Every figure for one grouping at one print size (``makers``), drawn here, one after another."""
    with style():
        return [make() for make in makers(metrics, samples, context, cells, decisions, size).values()]
