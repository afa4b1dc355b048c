"""Text for the terminal: safe to print (no escape sequences from data) and fitted to its width.

Model answers, labels and scenario strings are data. Printed raw, an ESC sequence could retitle the
window, move the cursor or hide lines; a carriage return could overwrite what was printed. Every
control character except a plain newline and tab is shown as a visible escape instead.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, cast

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, 8-bit CSI and OSC among them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode line and paragraph separators, bidirectional overrides and isolates: they reorder or break lines.
_FORMATTING = re.compile(r"[\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``; with ``one_line``, newlines too."""
    if text.isprintable():  # no control, format or separator character, no newline or tab: nothing to show
        return text
    cleaned = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    cleaned = _FORMATTING.sub(lambda m: f"\\u{ord(m.group()):04x}", cleaned)
    if one_line:
        cleaned = cleaned.replace("\n", "\\n").replace("\t", "\\t")
    return cleaned


def width() -> int | None:
    """The width to fit: ``COLUMNS`` when set, else the terminal's; None (no limit) when writing to a file or pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


_COLUMN_GAP = re.compile(r"\S {2,}(?=\S)")  # two or more spaces between words: the start of a column


def wrap(text: str, limit: int | None) -> str:
    """``text`` wrapped to ``limit`` columns, each line's continuations under its own column; unchanged without a
    limit.

    A line laid out in columns (two or more spaces apart: a timeline row, a ``label  value`` line) continues under
    its last column that starts in the line's first half; any other line continues two spaces in from its own indent.
    """
    if limit is None:
        return text
    return "\n".join(
        textwrap.fill(line, limit, subsequent_indent=" " * _continuation(line, limit), break_on_hyphens=False)
        if len(line) > limit
        else line
        for line in text.splitlines()
    )


def _continuation(line: str, limit: int) -> int:
    """Where a wrapped line's continuations start: under its last column in the first half of ``limit``, else two
    spaces in from the line's own indent."""
    indent = len(line) - len(line.lstrip(" "))
    columns = [m.end() for m in _COLUMN_GAP.finditer(line, indent, limit // 2 + 1) if m.end() <= limit // 2]
    return columns[-1] if columns else min(indent + 2, limit // 2)


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[bool],
    limit: int | None = None,
) -> str:
    """A table that fits ``limit`` columns, in the first of five layouts that does.

    1. One line per row (tabulate's ``simple``). 2. The same with each header stacked over lines, so a column is as
    wide as its widest value or header word. 3. That, with a column holding one value in every
    row said once under the table (``in every row: policy enforce, infra 0``), two spaces between columns, then
    one. 4. One line per row with prose
    columns and headers wrapped in their cells. 5. One block per row: the row's leading text columns as its title,
    then ``header value`` pairs packed into lines. Every header and value is still there, nothing is cut.
    """
    from tabulate import tabulate

    align = ["right" if n else "left" for n in numeric]

    def simple(heads: Sequence[str], body: Sequence[Sequence[str]], widths: list[int | None] | None = None) -> str:
        return tabulate(
            body,
            headers=list(heads),
            tablefmt="simple",
            disable_numparse=True,
            colalign=align,
            maxcolwidths=widths,
            maxheadercolwidths=cast(Any, widths),  # None in the list: that column is not wrapped (stubs say int)
        )

    text = simple(headers, rows)
    if limit is None or _widest(text) <= limit:
        return text
    for stacked in (
        _stacked(headers, rows, numeric),
        _stacked_without_constants(headers, rows, numeric),
        _stacked_without_constants(headers, rows, numeric, gap=" "),
    ):
        if stacked is not None and _widest(stacked) <= limit:
            return stacked
    wrapped = _wrapped_columns(headers, rows, numeric, limit)
    for _ in range(3):  # the estimate can miss by a header's padding: narrow the widest prose column by what is over
        if wrapped is None:
            break
        text = simple(headers, rows, wrapped)
        over = _widest(text) - limit
        if over <= 0:
            return text
        widest = max((i for i, w in enumerate(wrapped) if w is not None), key=lambda i: wrapped[i] or 0)
        wrapped[widest] = (wrapped[widest] or 0) - over
        if (wrapped[widest] or 0) < PROSE_MIN:
            break
    return _blocks(headers, rows, numeric, limit)


GAP = "  "  # between two columns, as tabulate's simple format
PROSE_MIN = 12  # a wrapped text column narrower than this reads worse than one block per row


def _header_words(header: str) -> list[str]:
    """A header's words, a hyphenated one broken after its hyphens (stop-correct: stop- / correct)."""
    return [part for word in header.split() for part in re.split(r"(?<=-)(?=\w)", word) if part] or [""]


def _header_lines(words: Sequence[str], width: int) -> list[str]:
    """A header's words packed into lines of at most ``width`` (a word after a hyphen joins it with no space)."""
    lines: list[str] = []
    for word in words:
        joined = f"{lines[-1]}{'' if lines[-1].endswith('-') else ' '}{word}" if lines else word
        if lines and len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(word)
    return lines


def _stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool], gap: str = GAP) -> str:
    """One line per row under headers stacked over lines, bottom-aligned over a rule of dashes: a column is as wide
    as its widest value or header word, and its header's words fill lines that wide."""
    words = [_header_words(h) for h in headers]
    widths = [max(len(w) for w in [*ws, *(row[i] for row in rows)]) for i, ws in enumerate(words)]
    stacks = [_header_lines(ws, w) for ws, w in zip(words, widths, strict=True)]
    height = max(len(stack) for stack in stacks)

    def line(cells: Sequence[str]) -> str:
        return gap.join(
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    lines = [line([([""] * (height - len(s)) + s)[level] for s in stacks]) for level in range(height)]
    lines.append(gap.join("-" * w for w in widths))  # the rule shows where each column starts, gap or not
    lines += [line(row) for row in rows]
    return "\n".join(lines)


def _stacked_without_constants(
    headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool], gap: str = GAP
) -> str | None:
    """The stacked layout without the columns that hold one value in every row, said once in a line under it (None
    when no column is constant, or the table has one row: then every column is); ``gap`` between columns."""
    if len(rows) < 2:
        return None
    constant = [i for i in range(1, len(headers)) if len({row[i] for row in rows}) == 1]  # the first names the row
    if not constant:
        return None
    kept = [i for i in range(len(headers)) if i not in constant]
    table = _stacked(
        [headers[i] for i in kept], [[row[i] for i in kept] for row in rows], [numeric[i] for i in kept], gap
    )
    said = ", ".join(f"{headers[i]} {rows[0][i]}" for i in constant)
    return table + "\n" + wrap(f"in every row: {said}", _widest(table))


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _wrapped_columns(
    headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool], limit: int
) -> list[int | None] | None:
    """Cell widths that make the table fit by wrapping its text columns (never the first, which names the row), or
    None when that would leave a text column narrower than PROSE_MIN characters (then blocks read better)."""
    gaps = 2 * (len(headers) - 1)  # between columns
    prose = [i for i, n in enumerate(numeric) if not n and i > 0]  # the first column names the row: never wrapped
    natural = [  # tabulate pads a header it does not wrap by two
        max([len(h) for h in headers[i].split()] if i in prose else [len(headers[i]) + 2], default=0)
        for i in range(len(headers))
    ]
    natural = [max([natural[i], *(len(r[i]) for r in rows)]) for i in range(len(headers))]
    fixed = sum(w for i, w in enumerate(natural) if i not in prose)
    room = limit - gaps - fixed
    if not prose or room < PROSE_MIN * len(prose):
        return None
    widths: list[int | None] = [None] * len(headers)
    share = dict.fromkeys(prose, 0)
    left = room
    for i in sorted(prose, key=lambda i: natural[i]):  # narrow columns keep their width, the rest share what is left
        cap = left // (len(prose) - sum(1 for j in share if share[j]))
        share[i] = min(natural[i], cap)
        left -= share[i]
    for i in prose:
        widths[i] = max(share[i], 1)
    return widths


def _blocks(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool], limit: int) -> str:
    lead = 1  # the title: the first column, or every text column before the first number (a row's key)
    if any(numeric):
        while lead < len(numeric) - 1 and not numeric[lead]:
            lead += 1
    blocks = []
    for row in rows:
        title = " / ".join(cell for cell in row[:lead] if cell)
        pairs = [f"{h}: {v}" for h, v in zip(headers[lead:], row[lead:], strict=True)]
        body = _packed(pairs, limit, indent="  ", separator="; ")
        blocks.append(wrap(title, limit) + "\n" + body)
    return "\n\n".join(blocks)


def _packed(items: Sequence[str], limit: int, indent: str, separator: str) -> str:
    """``items`` joined into lines of at most ``limit`` columns; an item is split only when it alone is too long."""
    lines: list[str] = []
    line = ""
    for item in items:
        candidate = f"{line}{separator}{item}" if line else f"{indent}{item}"
        if len(candidate) <= limit:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = f"{indent}{item}"
        if len(line) > limit:
            *full, line = textwrap.wrap(line, limit, subsequent_indent=indent + "  ", break_on_hyphens=False)
            lines.extend(full)
    if line:
        lines.append(line)
    return "\n".join(lines)
