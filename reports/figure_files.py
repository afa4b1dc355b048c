"""Every report figure turned into its files' bytes, each figure in a worker process while the parent writes tables.

Drawing and saving the figures is most of a report's time, and each figure is independent of the others: a figure
at one print size is one job (its PNG and PDF from one drawing, the PNG's layout kept for the PDF), run by the
report's workers (reports.workers: forked, one per core; on one core, in the calling process).

Each figure's layout is worked out once, before its files are written, by its layout engine with the renderer the
first file is written with, then kept: ``savefig`` of a figure with a layout engine draws the whole figure once
without output to work the layout out, then draws it again for the file. The files are the same, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import FigureCanvasPdf
from matplotlib.figure import Figure

from reports import figures as figs
from reports.decision_kinds import DecisionTally
from reports.metrics import Metrics
from reports.pdf_fonts import lean_subsets
from reports.workers import Workers

DPI = 200  # PNG resolution: print quality


@dataclass(frozen=True)
class Drawn:
    """One figure's files: NAME.png and NAME.pdf at full width, NAME_column.pdf one column wide."""

    name: str
    title: str
    png: bytes
    pdf: bytes
    column_pdf: bytes


@dataclass(frozen=True)
class FigureInputs:
    """What every figure is drawn from (reports.figures.makers) and the venue whose widths it is drawn at."""

    metrics: Metrics
    samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]
    context: figs.Context
    cells: Metrics | None
    decisions: Mapping[tuple[str, ...], DecisionTally] | None
    venue: str = figs.VENUE

    def names(self) -> list[str]:
        return list(figs.makers(self.metrics, self.samples, self.context, self.cells, self.decisions))


def draw(inputs: FigureInputs, name: str, column: bool) -> tuple[str, bytes, bytes]:
    """One figure at one print size: its title, PNG (full width only, else empty) and PDF bytes."""
    lean_subsets()
    size = figs.sizes(inputs.venue)[1 if column else 0]
    with figs.style():
        plot = figs.makers(inputs.metrics, inputs.samples, inputs.context, inputs.cells, inputs.decisions, size)[name]()
        lay_out(plot.figure, None if column else DPI)  # the PNG's layout holds for the full-width PDF
    png = b"" if column else figs.to_bytes(plot.figure, "png", DPI)
    return plot.title, png, figs.to_bytes(plot.figure, "pdf")


def lay_out(figure: Figure, dpi: float | None) -> None:
    """The figure's layout worked out by its engine and kept (no engine left to run at each save): with the Agg
    renderer at ``dpi`` where the first file is a PNG, else with the PDF renderer (``dpi`` None), as ``savefig``
    would, without its drawing of the whole figure to do it. Call it under ``figures.style()``."""
    engine = figure.get_layout_engine()
    if engine is None:
        return
    shown = figure.dpi
    if dpi is None:
        FigureCanvasPdf(figure)  # the engine asks the figure's canvas for its renderer: the PDF one, at 72 dpi
    else:
        FigureCanvasAgg(figure)
        figure.dpi = dpi
    try:
        engine.execute(figure)
    finally:
        figure.dpi = shown
    # No engine at all: "none" leaves a placeholder engine, and savefig draws a figure with any engine once
    # without output before it draws the file. (matplotlib 3.11 has no public call that removes it.)
    figure._layout_engine = None  # type: ignore[attr-defined]


class Rendering:
    """Figures being drawn by ``workers`` (reports.workers), collected in their order by ``result``. The full-width
    jobs (a PNG and a PDF each) are handed out first, the one-column PDFs after: the short jobs last, so the
    workers finish together rather than one of them drawing a long figure alone at the end."""

    def __init__(self, inputs: FigureInputs, workers: Workers) -> None:
        self._names = inputs.names()
        self._jobs = {
            (name, column): workers.submit(draw, inputs, name, column)
            for column in (False, True)
            for name in self._names
        }

    def result(self) -> list[Drawn]:
        drawn = []
        for name in self._names:
            title, png, pdf = self._jobs[(name, False)]()
            column_pdf = self._jobs[(name, True)]()[2]
            drawn.append(Drawn(name, title, png, pdf, column_pdf))
        return drawn
