"""The self-contained HTML page: every table and figure inline (PNG as data URIs), no network, no scripts."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass

from reports.tables import Table, to_html

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 78rem;
       padding: 0 1rem; color: #1d1d1f; background: #ffffff; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
table.metrics { border-collapse: collapse; font-size: 0.82rem; margin: 0.4rem 0 0.3rem; }
table.metrics th, table.metrics td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; vertical-align: top; }
table.metrics th { background: #f0f3f7; text-align: left; position: sticky; top: 0; }
table.metrics tr:nth-child(even) td { background: #fafafa; }
table.metrics .num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.metrics th.num { text-align: right; white-space: normal; min-width: 3rem; }
table.metrics td.text { min-width: 6rem; max-width: 28rem; }
.scroll { overflow: auto; max-width: 100%; max-height: 40rem; border: 1px solid #eee; }
p.note, p.meta { font-size: 0.82rem; color: #444; }
figure { margin: 1rem 0 2rem; } figure img { max-width: min(100%, 56rem); border: 1px solid #eee; }
figcaption { font-size: 0.85rem; color: #444; }
.warning { color: #8a4b00; }
"""


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


def table_block(table: Table) -> str:
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return (
        f'<h3 id="h-{table.name}">{html.escape(table.title)}</h3>\n<div class="scroll">{to_html(table)}</div>\n{note}'
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


def page(title: str, meta: list[str], warnings: list[str], sections: list[Section]) -> str:
    """The whole document; ``meta`` and ``warnings`` are plain text lines shown under the title."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    parts += [f'<p class="meta">{html.escape(line)}</p>' for line in meta]
    parts += [f'<p class="meta warning">{html.escape(line)}</p>' for line in warnings]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.intro:
            parts.append(f'<p class="note">{html.escape(section.intro)}</p>')
        parts += [figure_block(f) for f in section.figures]
        parts += [table_block(t) for t in section.tables]
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
