"""The self-contained HTML page: a table of contents, every table and figure inline (PNG as data URIs), the runs
table; no network. One inline script (reports/html_assets.py) filters and sorts the runs; the rest needs none.

Layout (docs/metrics.md: the HTML page): nothing sits in a fixed-height box, the page uses the window's width, and
only a table wider than the window scrolls, sideways; a print stylesheet prints every row without the controls.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, replace

from reports.html_assets import STYLE
from reports.runs_explorer import RunsTable, runs_section
from reports.tables import Table, to_html

RUNS_SECTION_ID = "runs-table"
RUNS_TITLE = "Runs: filter and sort"


@dataclass(frozen=True)
class EmbeddedFigure:
    """A rendered figure: PNG bytes shown inline, the vector PDF offered as a download link."""

    name: str
    title: str
    png: bytes
    pdf: bytes


@dataclass(frozen=True)
class Section:
    """A titled part of the page: tables and figures in order."""

    title: str
    tables: list[Table]
    figures: list[EmbeddedFigure]
    intro: str = ""


def section_id(section: Section) -> str:
    return "section-" + re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-")


HEADLINE_PREFIX = "main_by_"  # reports.tables.headline_table names each grouping's headline so


def reader_first(table: Table) -> Table:
    """A headline with what a reader looks for first right after its keys: the narrow columns (n, stop-correct,
    oracle passed), an interval beside its rate; the rest after them in order, so a window of 800 px shows those
    without scrolling. Any other table as it is."""
    if not table.name.startswith(HEADLINE_PREFIX):
        return table
    columns = table.columns
    lead: list[int] = []
    for i, column in enumerate(columns):
        if column.key or column.narrow:
            lead.append(i)
            if i + 1 < len(columns) and columns[i + 1].fmt == "ci":  # a rate's interval stays beside it
                lead.append(i + 1)
    return replace(
        table, columns=tuple(columns[i] for i in [*lead, *(i for i in range(len(columns)) if i not in lead)])
    )


def table_block(table: Table) -> str:
    table = reader_first(table)
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return (
        f'<h3 id="h-{table.name}">{html.escape(table.title)}</h3>\n'
        f'<div class="table-wrap">{to_html(table)}</div>\n{note}'
    )


def figure_block(figure: EmbeddedFigure) -> str:
    png = base64.b64encode(figure.png).decode("ascii")
    pdf = base64.b64encode(figure.pdf).decode("ascii")
    title = html.escape(figure.title)
    return (
        f'<figure id="figure-{figure.name}" data-figure="{figure.name}">\n'
        f'<img alt="{title}" src="data:image/png;base64,{png}">\n'
        f'<figcaption>{title} (<a download="{figure.name}.pdf" href="data:application/pdf;base64,{pdf}">PDF</a>)'
        f"</figcaption>\n</figure>"
    )


def contents(sections: list[Section], runs: RunsTable | None) -> str:
    """The table of contents: each section, and under it each figure and table, linked to its anchor."""
    items = []
    for section in sections:
        entries = [f'<li><a href="#figure-{f.name}">Figure: {html.escape(f.title)}</a></li>' for f in section.figures]
        entries += [f'<li><a href="#h-{t.name}">{html.escape(t.title)}</a></li>' for t in section.tables]
        inner = f"<ol>{''.join(entries)}</ol>" if entries else ""
        items.append(f'<li><a href="#{section_id(section)}">{html.escape(section.title)}</a>{inner}</li>')
    if runs is not None:
        items.append(f'<li><a href="#{RUNS_SECTION_ID}">{html.escape(RUNS_TITLE)}</a> ({runs.total:,} runs)</li>')
    return f'<nav class="toc" aria-label="Contents"><h2 id="contents">Contents</h2><ol>{"".join(items)}</ol></nav>'


def page(
    title: str, meta: list[str], warnings: list[str], sections: list[Section], runs: RunsTable | None = None
) -> str:
    """The whole document; ``meta`` and ``warnings`` are plain text lines shown under the title."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    parts += [f'<p class="meta">{html.escape(line)}</p>' for line in meta]
    parts += [f'<p class="meta warning">{html.escape(line)}</p>' for line in warnings]
    parts.append(contents(sections, runs))
    for section in sections:
        parts.append(f'<h2 id="{section_id(section)}">{html.escape(section.title)}</h2>')
        if section.intro:
            parts.append(f'<p class="note">{html.escape(section.intro)}</p>')
        parts += [figure_block(f) for f in section.figures]
        parts += [table_block(t) for t in section.tables]
    if runs is not None:
        parts.append(runs_section(runs, RUNS_SECTION_ID, RUNS_TITLE))
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
