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


def test_a_lean_subset_is_byte_for_byte_the_one_the_subsetter_makes_dropping_the_layout_tables_itself():
    from fontTools import subset
    from fontTools.ttLib import TTFont as Font
    from matplotlib import font_manager

    lean_subsets()
    path = font_manager.findfont("DejaVu Sans")

    def made(font: Font, options: subset.Options) -> bytes:
        subsetter = subset.Subsetter(options=options)
        subsetter.populate(text=TEXT)
        subsetter.subset(font)
        out = io.BytesIO()
        font.save(out)
        return out.getvalue()

    options = subset.Options(glyph_names=True)
    lean = subset.load_font(path, options)  # the loader matplotlib calls, as lean_subsets leaves it
    assert not set(LAYOUT_TABLES) & set(lean.keys()), "removed before anything parses them"
    # Loaded as subset.load_font loads it, every table there: the subsetter drops the layout tables (and kern) itself
    whole = Font(path, lazy=True, recalcBBoxes=options.recalc_bounds, recalcTimestamp=options.recalc_timestamp)
    assert set(LAYOUT_TABLES) <= set(whole.keys())
    assert made(lean, options) == made(whole, subset.Options(glyph_names=True))


def test_a_subset_of_the_same_glyphs_made_again_is_handed_out_from_memory_byte_for_byte():
    from matplotlib import font_manager
    from matplotlib.backends import _backend_pdf_ps
    from matplotlib.ft2font import FT2Font

    lean_subsets()
    path = font_manager.findfont("DejaVu Sans")
    fontfile = font_manager.FontPath(path, 0) if hasattr(font_manager, "FontPath") else path
    glyphs = {FT2Font(path).get_char_index(ord(ch)) for ch in TEXT}
    remembered = _backend_pdf_ps.get_glyphs_subset
    with remembered.fresh(fontfile, set(glyphs)) as fresh:  # type: ignore[attr-defined]
        expected = (_backend_pdf_ps.font_as_file(fresh.font).getvalue(), dict(fresh.glyph_index_map))
    for _ in range(2):  # made (or found) once, then handed out from memory
        with remembered(fontfile, iter(glyphs)) as made:
            assert (_backend_pdf_ps.font_as_file(made.font).getvalue(), made.glyph_index_map) == expected
