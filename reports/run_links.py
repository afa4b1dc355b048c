"""How report.html links to the run pages, and the run pages started in a process of their own: what the parent
of a report needs of them, without what writing them imports (reports/run_page.py: the models' recording reader,
jsonschema, the story's drawing), which only the pages' own process imports.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserInputError
from harness.records.timeline import trace_path
from reports.workers import Workers

MAX_RUN_PAGES = 5_000  # past this, pages would outweigh the report; bench show opens any run instead
_CELL = re.compile(r"<td([^>]*)>(\s*)([^<]*?)(\s*)</td>")


@dataclass(frozen=True)
class RunLink:
    """Where one run's page is, relative to the report folder."""

    run_id: str
    href: str


@dataclass(frozen=True)
class RunPages:
    """The run pages written, and how report.html's run ids link to them."""

    written: list[Path]
    links: list[RunLink]
    limit: int = MAX_RUN_PAGES  # the most runs pages are written for (reports.run_page's, when it wrote them)

    def link(self, report: str, total: int) -> str:
        """report.html's text with every run id in its tables and runs table opening its run's page; past
        ``limit`` runs (``total``: the report's runs, complete or not), a note saying how to open a run instead."""
        from reports.runs_explorer import with_run_pages  # here: the process writing the pages never imports pandas

        pages: dict[str, str] = {}
        for link in self.links:  # a run id in two folders links its first page
            pages.setdefault(link.run_id, link.href)
        return with_run_pages(link_report(report, self.links, total, self.limit), pages)


@contextmanager
def pages_meanwhile(paths: Sequence[Path | str], out: Path) -> Iterator[Callable[[], RunPages]]:
    """The run pages of the run folders (or traces.jsonl files) ``paths`` written under ``out`` by a process of
    their own (reports.workers: forked; on one core, in the caller when the result is asked for) while the caller
    goes on: it reads the traces itself, so it can start before the report has imported or loaded anything. The
    call yielded waits for the pages; leaving the ``with`` ends the process. A path without a trace starts nothing
    (no pages: the report refuses that path itself)."""
    try:
        sources = trace_files(paths)
    except UserInputError:
        yield lambda: RunPages([], [])
        return
    with Workers.beside() as aside:
        yield aside.submit(_written, sources, out)


def trace_files(paths: Sequence[Path | str]) -> list[str]:
    """Each path's trace file, in order, a file named twice once: the files the report's loader reads."""
    found: dict[Path, str] = {}
    for path in paths:
        file = trace_path(Path(path))
        found.setdefault(file.resolve(), str(file))
    return list(found.values())


def _written(sources: Sequence[str], out: Path) -> RunPages:
    """The pages' job: reports.run_page imported in the process that writes them (the parent never needs it)."""
    from reports.run_page import write_run_pages

    return write_run_pages(sources, out)


def link_report(text: str, links: list[RunLink], total: int, limit: int = MAX_RUN_PAGES) -> str:
    """report.html with every run id in its tables linked to the run's page (the runs table is reports/html's)."""
    by_id = {html.escape(link.run_id): link.href for link in links}

    def linked(match: re.Match[str]) -> str:
        attributes, before, content, after = match.groups()
        first = content.split(" ", 1)[0]
        href = by_id.get(first)
        if href is None:
            return match.group(0)
        rest = content[len(first) :]
        return f'<td{attributes}>{before}<a href="{html.escape(href)}">{first}</a>{rest}{after}</td>'

    text = _CELL.sub(linked, text)
    if links or not total:
        return text
    note = _no_pages_note(total, limit)
    return text.replace("</body>", note + "\n</body>", 1) if "</body>" in text else text + note


def _no_pages_note(total: int, limit: int) -> str:
    """Past ``limit`` runs no page is written: the report says how to open a run instead (its runs table stays)."""
    return (
        f'<p class="note" id="no-run-pages">{total:,} runs: per-run pages are written for reports of up to '
        f"{limit:,} runs; open any run's timeline with <code>bench show DIR --run ID</code>.</p>"
    )
