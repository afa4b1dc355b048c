"""Trace text shown safely: every control, format and separator character escaped, printable text untouched."""

from __future__ import annotations

import sys

from harness.terminal import printable


def test_text_of_printable_characters_is_returned_as_it_is():
    for text in ("plain ASCII text", "naïve café – 東京 🚀", ""):
        assert printable(text, one_line=True) == text


def test_every_character_that_is_not_printable_is_escaped_also_inside_printable_text():
    shown = {chr(c) for c in range(sys.maxunicode + 1) if not chr(c).isprintable()}
    escaped = {"\x00": "\\x00", "\x1b": "\\x1b", "\x9b": "\\x9b", "\u2028": "\\u2028", "\u202e": "\\u202e"}
    for char, escape in escaped.items():
        assert char in shown
        assert printable(f"before {char} after") == f"before {escape} after"
    assert printable("a\tb\nc", one_line=True) == "a\\tb\\nc"
    assert printable("a\tb\nc") == "a\tb\nc"  # kept where more than one line may be shown
