"""Each figure's layout worked out once before its files are written: the same files, byte for byte, as ``savefig``
working it out itself (drawing the whole figure once more without output)."""

from __future__ import annotations

import pytest

from harness.models import RECORDED_MODEL
from reports import figures as figs
from reports.figure_files import DPI, lay_out
from reports.load import load_traces
from reports.metrics import compute, prepare
from reports.report import figure_context


def plots(size: figs.Size) -> list[figs.Plot]:
    traces = load_traces([RECORDED_MODEL])
    prepared = prepare(traces)
    metrics = compute(traces, "mode", prepared=prepared)
    return figs.all_plots(metrics, {}, figure_context(prepared.runs, metrics), size=size)


@pytest.mark.slow
@pytest.mark.parametrize("size", figs.SIZES, ids=["double", "column"])
def test_a_figure_laid_out_beforehand_writes_the_files_savefig_would_lay_out_itself(size):
    """Full width the layout is worked out with the PNG's renderer and kept for its PDF; one column wide, with the
    PDF's renderer. Two drawings of each figure, one saved by savefig with its layout engine, one laid out first."""
    for by_savefig, laid_out in zip(plots(size), plots(size), strict=True):
        assert by_savefig.figure.get_layout_engine() is not None  # savefig works the layout out itself
        with figs.style():
            lay_out(laid_out.figure, None if size.column else DPI)
        assert laid_out.figure.get_layout_engine() is None  # kept: no save lays it out again
        formats = ["pdf"] if size.column else ["png", "pdf"]
        for fmt in formats:
            dpi = DPI if fmt == "png" else None
            expected = figs.to_bytes(by_savefig.figure, fmt, dpi)
            if fmt == "png":
                by_savefig.figure.set_layout_engine("none")  # as the report keeps the PNG's layout for the PDF
            assert figs.to_bytes(laid_out.figure, fmt, dpi) == expected, (laid_out.stem, fmt)
