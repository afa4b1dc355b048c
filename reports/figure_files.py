"""Every report figure turned into its files' bytes, each figure in a worker process while the parent writes tables.

Drawing and saving the figures is most of a report's time, and each figure is independent of the others: a figure
at one print size is one job (its PNG and PDF from one drawing, the PNG's layout kept for the PDF), run by the
report's workers (reports.workers: forked, one per core; on one core, in the calling process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

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
    png = b"" if column else figs.to_bytes(plot.figure, "png", DPI)
    if not column:
        plot.figure.set_layout_engine("none")  # the layout the PNG computed holds for the PDF: not worked out twice
    return plot.title, png, figs.to_bytes(plot.figure, "pdf")


class Rendering:
    """Figures being drawn by ``workers`` (reports.workers), collected in their order by ``result``."""

    def __init__(self, inputs: FigureInputs, workers: Workers) -> None:
        self._names = inputs.names()
        self._jobs = [workers.submit(draw, inputs, name, column) for name in self._names for column in (False, True)]

    def result(self) -> list[Drawn]:
        done = [job() for job in self._jobs]
        drawn = []
        for index, name in enumerate(self._names):
            (title, png, pdf), (_, _, column_pdf) = done[2 * index], done[2 * index + 1]
            drawn.append(Drawn(name, title, png, pdf, column_pdf))
        return drawn
