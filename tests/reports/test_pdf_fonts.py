"""A figure's PDF embeds its fonts as TrueType subsets without the layout tables no reader uses, and still shows
the same text."""

from __future__ import annotations

import io
import re
import zlib

import matplotlib as mpl
from fontTools.ttLib import TTFont
from matplotlib.figure import Figure

from reports.pdf_fonts import LAYOUT_TABLES, lean_subsets

TEXT = "Stop verdicts per group: workflow_fallback_react 91.7% [74.2%, 100.0%]"


def _pdf() -> bytes:
    figure = Figure(figsize=(4, 1))
    figure.text(0.05, 0.5, TEXT)
    buffer = io.BytesIO()
    with mpl.rc_context({"pdf.fonttype": 42}):
        figure.savefig(buffer, format="pdf")
    return buffer.getvalue()


def _embedded_fonts(pdf: bytes) -> list[TTFont]:
    """Every FontFile2 (TrueType) stream of ``pdf``, read by fontTools."""
    fonts = []
    for match in re.finditer(rb"/FontFile2 (\d+) 0 R", pdf):
        body = re.search(rb"\n%s 0 obj\n(.*?)stream\n(.*?)\nendstream" % match.group(1), pdf, re.S)
        assert body, "the font's stream is in the file"
        data = body.group(2)
        fonts.append(TTFont(io.BytesIO(zlib.decompress(data) if b"FlateDecode" in body.group(1) else data)))
    return fonts


def test_lean_subsets_leave_the_layout_tables_out_of_every_embedded_truetype_font():
    lean_subsets()
    lean_subsets()  # idempotent: the tables are named once
    fonts = _embedded_fonts(_pdf())
    assert fonts, "the figure embeds its font as TrueType (Type 42)"
    for font in fonts:
        assert not set(LAYOUT_TABLES) & set(font.keys()), sorted(font.keys())
        assert {"glyf", "cmap", "hmtx"} <= set(font.keys())  # the glyphs and their widths are all there
    from fontTools import subset

    assert subset.Options._drop_tables_default.count("GPOS") == 1
