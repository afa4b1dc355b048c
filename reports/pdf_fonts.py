"""PDF figures' embedded fonts without the layout tables no PDF reader uses: most of a figure's PDF time went there.

matplotlib embeds each font as a Type 42 subset made by fontTools, which parses the whole font first, DejaVu Sans'
large glyph-positioning tables (GSUB, GPOS, GDEF) among them (fontTools 4.68 reads them before it drops them). A PDF
places every glyph itself (matplotlib computed the positions and kerning when it drew the text) and a reader never
shapes text with those tables, so the subsets leave them out and the font loaded for subsetting loses them before
anything reads them: the pages render pixel for pixel the same, in about a third less time per PDF.

A subset of the same glyphs is made once per process: every figure's PDF embeds one of the few glyphs the text
shaper substitutes (the "fl" of "workflow") as a subset of its own, and parsing the font is most of a subset's time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from io import BytesIO
from typing import Any

from fontTools import subset
from matplotlib.backends import _backend_pdf_ps

LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF")


def lean_subsets() -> None:
    """Every font subset made in this process from now on leaves out LAYOUT_TABLES, unread (idempotent)."""
    defaults = subset.Options._drop_tables_default  # the list each Options copies as its drop_tables
    missing = [table for table in LAYOUT_TABLES if table not in defaults]
    if missing:
        subset.Options._drop_tables_default = [*defaults, *missing]
    if not getattr(subset.load_font, "lean", False):
        subset.load_font = _lean_loader(subset.load_font)
    if not getattr(_backend_pdf_ps.get_glyphs_subset, "remembered", False):
        _backend_pdf_ps.get_glyphs_subset = _remembered(_backend_pdf_ps.get_glyphs_subset)


def _lean_loader(load: Any) -> Any:
    """``subset.load_font`` whose font has the dropped layout tables removed while still unparsed (lazy)."""

    def load_font(*args: Any, **kwargs: Any) -> Any:
        font = load(*args, **kwargs)
        options = args[1] if len(args) > 1 else kwargs["options"]
        if "GPOS" in font and not options.legacy_kern and "kern" in font:
            del font["kern"]  # as the subsetter drops it when GPOS is there: the same subset, byte for byte
        for tag in LAYOUT_TABLES:
            if tag in options.drop_tables and tag in font:
                del font[tag]
        return font

    load_font.lean = True  # type: ignore[attr-defined]
    return load_font


class _Saved:
    """A subset font already written: what the PDF backend does with a subset's font is save it (font_as_file)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def save(self, file: BytesIO, reorderTables: bool = True) -> None:  # fontTools' name for it
        file.write(self.data)


def _remembered(make: Any) -> Any:
    """``get_glyphs_subset`` that makes each (font, glyphs) subset once and hands out its saved bytes after."""
    made: dict[tuple[str, frozenset[int]], tuple[bytes, dict[int, int]]] = {}

    @contextmanager
    def get_glyphs_subset(fontfile: Any, glyphs: Iterable[int]) -> Iterator[Any]:
        wanted = frozenset(glyphs)
        key = (repr(fontfile), wanted)
        if key not in made:
            with make(fontfile, set(wanted)) as fresh:
                made[key] = (_backend_pdf_ps.font_as_file(fresh.font).getvalue(), dict(fresh.glyph_index_map))
        data, index_map = made[key]
        yield _backend_pdf_ps.SubsetResults(_Saved(data), dict(index_map))

    get_glyphs_subset.remembered = True  # type: ignore[attr-defined]
    get_glyphs_subset.fresh = make  # type: ignore[attr-defined]  # the maker it remembers (a test compares)
    return get_glyphs_subset
