"""LaTeX tables a paper can ``\\input`` unedited: booktabs rules, never scaled, fitted to a 10 pt two-column article.

Each table is written twice: full width (a ``table*`` spanning both columns) and narrow (a ``table`` in one
column, keeping the key columns and those declared ``narrow``). A table longer than a page is a ``longtable``
instead (one-column pages: an appendix). Columns that do not fit the width are not shrunk: they go on in a
further part of the same table, the key columns repeated. The body is written here, row by row (booktabs rules);
docs/metrics.md (LaTeX tables) says how to include them and which packages the preamble needs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from itertools import repeat
from typing import Any

from harness.records.verdicts import GLOSSARY
from reports.latex_cells import Body, Shown, table_body
from reports.load import clean_text
from reports.tables import Column, Table, legend

PACKAGES = ("booktabs", "array", "tabularx", "longtable")  # what the preamble needs: \usepackage{...} each
LONG_ROWS = 40  # a table with more rows than this does not fit one page as a float: a longtable instead
PROSE_CHARS = 28  # a text column with a longer value is prose: set in a paragraph column that wraps
PROSE_MIN_PT = 72.0  # the least width a prose column is given when the others are fitted


@dataclass(frozen=True)
class Layout:
    """Where a variant of a table goes and how wide that is, in a 10 pt two-column article (TeX points)."""

    suffix: str  # appended to the table's name: its file stem and label
    environment: str  # the float for a table that fits one page
    width: float  # \textwidth (469 pt) for table*, \columnwidth (229.5 pt) for a column
    tabcolsep: float  # pt either side of a cell


WIDE = Layout("", "table*", 469.0, 3.0)
NARROW = Layout("_narrow", "table", 229.5, 3.0)
LAYOUTS = (WIDE, NARROW)

# ------------------------------------------------------------------ text


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": r"\textendash{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_BREAK_AFTER = {"_", "/", "-", "."}  # in prose, a long name may break after these
_POWER = re.compile(r"\^(\w+)")
_MINUS = re.compile(r"(?<![\w}$-])-(?=[\d.]|\s)")  # a minus sign (-4.2, [-20.0, B - A), not a hyphen: math


@cache  # a report escapes the same few thousand cell texts in every variant of every table
def latex_escape(text: str, breakable: bool = False) -> str:
    """Text for LaTeX: specials escaped, ``x^k`` written as math (``pass^5`` -> ``pass$^{5}$``).

    ``breakable``: a line may break after ``_ / - .`` too, so a long path or name wraps in a paragraph column.
    """
    parts = []
    for index, piece in enumerate(_POWER.split(clean_text(text, limit=1 << 30).replace(" · ", "; "))):
        if index % 2:
            parts.append(f"$^{{{latex_escape(piece)}}}$")
        else:
            escaped = "".join(_escape_char(ch, breakable) for ch in piece)
            escaped = re.sub(r"-(?=-)", "-{}", escaped)  # --approver: two hyphens, not an en dash
            parts.append(_MINUS.sub("$-$", escaped))
    return "".join(parts).encode("ascii", "replace").decode("ascii")  # pdflatex: no unicode surprises


def _escape_char(ch: str, breakable: bool) -> str:
    escaped = _LATEX_SPECIAL.get(ch, ch)
    return escaped + "\\allowbreak{}" if breakable and ch in _BREAK_AFTER else escaped


# A note's pointer into the docs means nothing on paper: replaced by what it points to where that is short, else
# dropped (the sentence around it says what it is).
_DOC_POINTER = re.compile(r"\s*\((README|docs/[^:()]*)(?::\s*([^()]*))?\)")
_INNER_POINTER = re.compile(r";\s*(?:README|docs/[^:()]*)(?::\s*[^()]*)?(?=\))")  # "(early, late; docs/x.md: y)"
_POINTED_TO = {"stop verdicts": f": {GLOSSARY}"}
_TIMES = re.compile(r"(?<=\S) x (?=\S)")  # "mode x policy", "10 modes x 12 stories"
_N_EQUALS = re.compile(r"\b([nk]) = (\d[\d,]*)")  # "n = 434"


_CLI_CLAUSE = re.compile(r"[;,]?\s*\brun with --[^.;]*")  # "; run with --approver ... to judge them": the CLI's


def paper_text(text: str) -> str:
    """Caption or note text for a paper: no pointers to the docs, no instructions to the CLI's user, math where it
    is math, escaped."""
    text = _DOC_POINTER.sub(lambda m: _POINTED_TO.get(m.group(2) or "", ""), _INNER_POINTER.sub("", text))
    text = _CLI_CLAUSE.sub("", text)
    escaped = latex_escape(text)
    escaped = _TIMES.sub(" $\\\\times$ ", escaped)
    return _N_EQUALS.sub(lambda m: f"${m.group(1)} = {m.group(2).replace(',', '{,}')}$", escaped)


# Widths in pt of \\footnotesize Computer Modern (cmr8, OT1) as pdflatex sets each character (\\settowidth).
_WIDTHS = {
    2.36: "il!',.:;[]`|", 2.6: "fj", 2.83: "- ", 3.06: "I_", 3.31: "rt()", 3.35: "s", 3.78: "cez", 4.01: "?",
    4.25: "0123456789ago\"$*/\\^{}~", 4.36: "J", 4.49: "kqvxy", 4.72: "bdhnpuS", 5.19: "Z", 5.31: "L", 5.54: "F",
    5.78: "EP", 6.02: "B", 6.14: "wCT", 6.25: "R", 6.37: "AHNUVXY", 6.49: "D", 6.6: "K", 6.61: "OQ&+<=>@",
    6.67: "G", 7.08: "m#%", 7.78: "M", 8.73: "W",
}  # fmt: skip
CHAR_WIDTH = {ch: width for width, chars in _WIDTHS.items() for ch in chars}
SLACK = 1.03  # kerning and rounding: an estimate a little over, never under


@cache  # the same cells and words are measured for every split a table tries
def text_width(text: str) -> float:
    """Width in pt of plain ``text`` set in \\footnotesize (an unknown character counts as an M)."""
    return SLACK * sum(map(CHAR_WIDTH.get, text, repeat(7.78)))


def _words(text: str, breakable: bool) -> list[str]:
    pieces = text.split()
    if breakable:
        pieces = [p for word in pieces for p in re.split(r"(?<=[_/.-])", word) if p]
    return pieces


# ------------------------------------------------------------------ columns


@dataclass(frozen=True)
class Cell:
    """A column as LaTeX sets it: what it shows (reports/latex_cells.py), whether it wraps, the widths it needs."""

    shown: Shown
    prose: bool

    @property
    def cells(self) -> tuple[str, ...]:
        return self.shown.texts

    @property
    def header(self) -> str:
        return self.shown.header

    @property
    def numeric(self) -> bool:
        return self.shown.numeric

    @cached_property  # read for every split and height a table tries: measured once
    def width(self) -> float:
        """What the column takes: its widest cell (a prose one: its longest word, at least PROSE_MIN_PT), or its
        header's longest word when that is wider."""
        if self.prose:
            body = max([PROSE_MIN_PT, *(text_width(w) for c in self.cells for w in _words(c, True))])
        else:
            body = max((text_width(c) for c in self.cells), default=0.0)
        return max(body, *(text_width(w) for w in _header_words(self.header)))

    @cached_property
    def wrapped_header(self) -> tuple[str, ...]:
        """The header wrapped to the column's width, so a long header does not widen a column of short numbers."""
        lines: list[str] = []
        for word in _header_words(self.header):
            joined = (
                f"{lines[-1]}{word}" if lines and lines[-1].endswith("-") else f"{lines[-1]} {word}" if lines else ""
            )
            if lines and text_width(joined) <= self.width:
                lines[-1] = joined
            else:
                lines.append(word)
        return tuple(lines or [""])


def _header_words(header: str) -> list[str]:
    """A header's words, a hyphenated one broken after its hyphens (stop-correct: stop- / correct); a minus between
    two words stays with them (B - A)."""
    text = header.replace(" - ", "\0-\0")
    words = [p for word in text.split() for p in re.split(r"(?<=-)(?=\w)", word) if p] or [""]
    return [word.replace("\0", " ") for word in words]


def _cells(body: Body) -> list[Cell]:
    return [
        Cell(shown, not shown.numeric and any(len(value) > PROSE_CHARS for value in shown.texts))
        for shown in body.shown
    ]


def _needed(cells: Sequence[Cell], layout: Layout) -> float:
    """The width a tabular of these columns takes: no padding at its outer edges (``@{}``)."""
    return sum(c.width for c in cells) + 2 * layout.tabcolsep * max(len(cells) - 1, 0)


def split_parts(cells: Sequence[Cell], layout: Layout) -> list[list[Cell]]:
    """The columns in parts that each fit the layout's width, every part led by the key columns.

    One part when everything fits; else as few as fit, of about equal width, in the columns' order.
    """
    keys = [c for c in cells if c.shown.key]
    rest = [c for c in cells if not c.shown.key]

    def fits(part: list[Cell]) -> bool:
        return _needed([*keys, *part], layout) <= layout.width

    if fits(rest) or not rest:
        return [list(cells)]
    greedy: list[list[Cell]] = [[]]
    for cell in rest:
        if greedy[-1] and not fits([*greedy[-1], cell]):
            greedy.append([])
        greedy[-1].append(cell)
    per_part = math.ceil(len(rest) / len(greedy))  # rebalance: the same count of parts, about as many columns each
    even = [rest[i : i + per_part] for i in range(0, len(rest), per_part)]
    chosen = even if len(even) == len(greedy) and all(fits(part) for part in even) else greedy
    return [[*keys, *part] for part in chosen]


def _prose_width(part: Sequence[Cell], layout: Layout) -> float:
    """What each prose column of a part gets: an equal share of what the others leave of the line."""
    prose = [c for c in part if c.prose]
    fixed = _needed([c for c in part if not c.prose], layout) + 2 * layout.tabcolsep * len(prose)
    return max((layout.width - fixed) / max(len(prose), 1), PROSE_MIN_PT)


# ------------------------------------------------------------------ heights: a float taller than a page is long

PAGE_PT = 550.0  # \textheight of the article
LINE_PT = 9.5  # \footnotesize's \baselineskip
CAPTION_LINE_PT = 12.0  # the caption's, in \normalsize


def _lines(text: str, width: float) -> int:
    return max(1, math.ceil(text_width(text) / width)) if text else 0


def float_height(
    parts: Sequence[Sequence[Cell]], caption: str, note: str, layout: Layout, groups: Sequence[str] = ()
) -> float:
    """An estimate of the float's height in pt: caption, each part (header, group and other rows, rules), the note
    under it."""
    height = _lines(caption, layout.width) * CAPTION_LINE_PT + 12
    for part in parts:
        prose = _prose_width(part, layout)
        header = max(_lines(c.header, prose) if c.prose else len(c.wrapped_header) for c in part)
        rows = sum(max(_lines(c.cells[i], prose) if c.prose else 1 for c in part) for i in range(len(part[0].cells)))
        height += (header + rows + len(_starts(groups))) * LINE_PT + 14
    return height + (_lines(note, layout.width) * LINE_PT + 4 if note else 0)


def _spec(part: Sequence[Cell], prose_width: str) -> str:
    specs = [f">{{\\raggedright\\arraybackslash}}{prose_width}" if c.prose else "r" if c.numeric else "l" for c in part]
    return "@{}" + "".join(specs) + "@{}"


def _header(cell: Cell) -> str:
    if cell.prose:
        return latex_escape(cell.header)
    lines = [latex_escape(line) for line in cell.wrapped_header]
    if len(lines) == 1:
        return lines[0]
    align = "r" if cell.numeric else "l"
    return f"\\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}" + "\\\\".join(lines) + "\\end{tabular}"


def _starts(groups: Sequence[str]) -> dict[int, str]:
    """The rows that begin a group, and its label: a group row goes before each."""
    return {i: g for i, g in enumerate(groups) if g and (i == 0 or groups[i - 1] != g)}


def _rows(part: Sequence[Cell], groups: Sequence[str] = ()) -> list[str]:
    """The header row, then one row per record (a group row spanning the table before each group's first), each
    ending in ``\\\\``."""
    starts = _starts(groups)
    rows = [" & ".join(_header(c) for c in part) + " \\\\"]
    for i in range(len(part[0].cells)):
        if i in starts:
            space = "\\addlinespace\n" if i else ""
            rows.append(f"{space}\\multicolumn{{{len(part)}}}{{@{{}}l}}{{\\itshape {latex_escape(starts[i])}}} \\\\")
        rows.append(" & ".join(latex_escape(c.cells[i], c.prose) for c in part) + " \\\\")
    return rows


def _tabular(part: Sequence[Cell], spec: str, groups: Sequence[str]) -> str:
    """A tabular, or a tabularx as wide as the line when a paragraph column shares what the others leave of it."""
    environment, width = ("tabularx", "{\\linewidth}") if any(c.prose for c in part) else ("tabular", "")
    header, *body = _rows(part, groups)
    lines = [f"\\begin{{{environment}}}{width}{{{spec}}}", "\\toprule", header, "\\midrule", *body, "\\bottomrule"]
    return "\n".join([*lines, f"\\end{{{environment}}}"]) + "\n"


def _longtable(part: Sequence[Cell], spec: str, caption: str, label: str | None, groups: Sequence[str]) -> str:
    """A longtable whose header repeats on every page, "Continued on next page" at the foot of all but the last."""
    header, *body = _rows(part, groups)
    first = f"\\caption{{{caption}}} \\label{{{label}}} \\\\" if label else f"\\caption*{{{caption}}} \\\\"
    lines = [
        f"\\begin{{longtable}}{{{spec}}}", first, "\\toprule", header, "\\midrule", "\\endfirsthead",
        f"\\caption[]{{{caption}}} \\\\", "\\toprule", header, "\\midrule", "\\endhead", "\\midrule",
        f"\\multicolumn{{{len(part)}}}{{r}}{{Continued on next page}} \\\\", "\\midrule", "\\endfoot",
        "\\bottomrule", "\\endlastfoot", *body, "\\end{longtable}",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ floats and long tables


def narrow_columns(table: Table) -> tuple[Column[Any], ...]:
    """The columns of a table's one-column variant: its key columns and those declared narrow; a table that declares
    none narrow keeps them all (its keys alone would be a table without numbers)."""
    if not any(c.narrow for c in table.columns):
        return table.columns
    return tuple(c for c in table.columns if c.key or c.narrow)


def to_latex(table: Table, context: str = "", layout: Layout = WIDE) -> str:
    """One variant of a table: a float (``table*`` full width, ``table`` one column), or a longtable when the
    float would be taller than a page (then set on one-column pages, as wide as the text)."""
    body = table_body(table, narrow_columns(table) if layout is not WIDE else table.columns)
    cells = _cells(body)
    said = "; ".join(part for part in (context, body.constant) if part)
    caption = paper_text(table.title + (f" ({said})" if said else ""))
    label = f"tab:{(table.name + layout.suffix).replace('_', '-')}"
    note = " ".join(part for part in (table.about, legend(body.shown)) if part)  # its columns only
    parts = split_parts(cells, layout)
    groups = body.groups
    # Taller than a page: each part a float of its own when each fits (the last with the note), else a longtable.
    alone = [float_height([p], caption, note if p is parts[-1] else "", layout, groups) for p in parts]
    too_wide = any(_needed(p, layout) > layout.width for p in parts)  # the keys and one column overflow a column
    long = len(table.records) > LONG_ROWS or max(alone) > PAGE_PT or (too_wide and layout is not WIDE)
    if long and layout is not WIDE:  # one-column pages: the text's width
        layout = Layout(layout.suffix, "longtable", WIDE.width, layout.tabcolsep)
        parts = split_parts(cells, layout)
    separate = not long and float_height(parts, caption, note, layout, groups) > PAGE_PT
    kind = f"{len(parts)} {layout.environment} floats, one per part" if separate else f"a {layout.environment} float"
    where = (
        "a longtable: one-column pages only (\\onecolumn, an appendix)"
        if long
        else f"{kind}, {'across both columns' if layout is WIDE else 'one column wide'}"
    )
    head = f"% {clean_text(table.title)}: {where}; needs " + ", ".join(f"\\usepackage{{{p}}}" for p in PACKAGES)
    under = f"\\par\\smallskip{{\\footnotesize\\raggedright {paper_text(note)}\\par}}\n" if note else ""
    if long:
        return f"{head}\n\\begingroup\\footnotesize\n{_long(parts, caption, label, layout, groups)}{under}\\endgroup\n"
    if not separate:
        return f"{head}\n{_float(parts, caption, label, layout, groups)}{under}\\end{{{layout.environment}}}\n"
    floats = [
        _float([part], caption if not index else f"{caption} (continued)", label if not index else "", layout, groups)
        + (under if part is parts[-1] else "")
        + f"\\end{{{layout.environment}}}\n"
        for index, part in enumerate(parts)
    ]
    return head + "\n" + "".join(floats)


def _float(parts: list[list[Cell]], caption: str, label: str, layout: Layout, groups: Sequence[str]) -> str:
    """A float of the parts, up to its note; without a label: a further part of a table, with its number."""
    lines = [
        f"\\begin{{{layout.environment}}}[tbp]",
        "\\centering",
        *([] if label else ["\\addtocounter{table}{-1}"]),
        f"\\caption{{{caption}}}",
        *([f"\\label{{{label}}}"] if label else []),
        "\\footnotesize",
        f"\\setlength{{\\tabcolsep}}{{{layout.tabcolsep:g}pt}}",
    ]
    for index, part in enumerate(parts):
        tabular = _tabular(part, _spec(part, "X"), groups)
        if index:
            lines.append("\\par\\medskip")
        lines.append(tabular.rstrip("\n"))
    return "\n".join(lines) + "\n"


def _long(parts: list[list[Cell]], caption: str, label: str, layout: Layout, groups: Sequence[str]) -> str:
    chunks = [f"\\setlength{{\\tabcolsep}}{{{layout.tabcolsep:g}pt}}"]
    for index, part in enumerate(parts):
        share = math.floor(_prose_width(part, layout) / layout.width * 1000) / 1000
        title = caption if not index else f"{caption} (continued)"
        if index:  # a further part of the same table: no new number, no second label
            chunks.append("\\addtocounter{table}{-1}")
        spec = _spec(part, f"p{{{share:g}\\linewidth}}")
        text = _longtable(part, spec, title, None if index else label, groups)
        chunks.append(text.rstrip("\n"))
    return "\n".join(chunks) + "\n"


def latex_files(table: Table, context: str = "") -> dict[str, str]:
    """Every variant of a table by file name: ``NAME.tex`` full width, ``NAME_narrow.tex`` one column."""
    return {f"{table.name}{layout.suffix}.tex": to_latex(table, context, layout) for layout in LAYOUTS}
