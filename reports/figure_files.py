"""Every report figure turned into its files' bytes, each figure in a worker process while the parent writes tables.

Drawing and saving the figures is most of a report's time (the PDFs' TrueType subsetting above all), and each
figure is independent of the others: a figure at one print size is one job (its PNG and PDF from one drawing, the
PNG's layout kept for the PDF), and the jobs run in forked workers, one per core the process may use, so they
start with everything imported. One core (or one job) draws in the calling process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

import numpy as np

from reports import figures as figs
from reports.decision_kinds import DecisionTally
from reports.metrics import Metrics
from reports.pdf_fonts import lean_subsets

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
    """Figures being drawn: started by ``start``, collected in their order by ``result``."""

    def __init__(self, inputs: FigureInputs, workers: int | None = None) -> None:
        jobs = [(name, column) for name in inputs.names() for column in (False, True)]
        count = min(workers if workers is not None else len(os.sched_getaffinity(0)), len(jobs))
        self._pool: Executor | None = None
        if count > 1:
            self._pool = ProcessPoolExecutor(count, mp_context=get_context("fork"))
            self._futures: list[Future[tuple[str, bytes, bytes]]] = [
                self._pool.submit(draw, inputs, name, column) for name, column in jobs
            ]
        self._inputs = inputs
        self._jobs = jobs

    def result(self) -> list[Drawn]:
        if self._pool is None:
            done = [draw(self._inputs, name, column) for name, column in self._jobs]
        else:
            with self._pool:
                done = [future.result() for future in self._futures]
        drawn = []
        for index in range(0, len(done), 2):
            (title, png, pdf), (_, _, column_pdf) = done[index], done[index + 1]
            drawn.append(Drawn(self._jobs[index][0], title, png, pdf, column_pdf))
        return drawn
