"""Text that came from a model (or any file) made safe to print: no escape sequences reach the terminal.

Model answers, labels and scenario strings are data. Printed raw, an ESC sequence could retitle the
window, move the cursor or hide lines; a carriage return could overwrite what was printed. Every
control character except a plain newline and tab is shown as a visible escape instead.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, 8-bit CSI and OSC among them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode line and paragraph separators, bidirectional overrides and isolates: they reorder or break lines.
_FORMATTING = re.compile(r"[\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``; with ``one_line``, newlines too."""
    cleaned = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    cleaned = _FORMATTING.sub(lambda m: f"\\u{ord(m.group()):04x}", cleaned)
    if one_line:
        cleaned = cleaned.replace("\n", "\\n").replace("\t", "\\t")
    return cleaned
