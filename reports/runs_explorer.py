"""The report page's runs table: one row per run, filtered and sorted in the browser, offline.

The rows travel as one JSON blob (one array per run, in column order) that a small inline script
(reports/html_assets.py: SCRIPT) draws, at most RENDER_STEP rows at a time: a page of many thousand runs stays
usable, and a filter reads every embedded row, not only the drawn ones. Past MAX_EMBEDDED_RUNS the first runs in
table order are embedded and the page says how many are left out; the grouped tables above still count every run.
Run ids link to the run pages (reports/run_page.py) once those are written: ``with_run_pages`` fills their
addresses in afterwards, read from the pages themselves.
"""

from __future__ import annotations

import html
import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import pandas as pd

from reports.html_assets import SCRIPT

MAX_EMBEDDED_RUNS = 20_000  # about 3 MB of JSON; a larger folder's runs are opened with bench show
RENDER_STEP = 500  # rows drawn at a time; "show more" draws the next ones
PAGES_PLACEHOLDER = '<script type="application/json" id="run-pages">{}</script>'


@dataclass(frozen=True)
class RunColumn:
    """One column of the runs table: its name in the URL fragment, its header, the runs frame's column it shows."""

    key: str
    header: str
    source: str
    numeric: bool = False
    filtered: bool = False  # a select box of its values above the table
    decimals: int = 0
    scale: float = 1.0


COLUMNS = (
    RunColumn("run", "run", "run_id"),
    RunColumn("mode", "mode", "mode", filtered=True),
    RunColumn("story", "story", "scenario", filtered=True),
    RunColumn("trial", "trial", "trial", numeric=True),
    RunColumn("model", "model", "model", filtered=True),
    RunColumn("policy", "policy", "gateway_policy", filtered=True),
    RunColumn("verdict", "stop verdict", "stop_verdict", filtered=True),
    RunColumn("status", "status", "status", filtered=True),
    RunColumn("stopped_at", "stopped at", "suspended_at"),
    RunColumn("side_effects", "side effects", "side_effects_committed", numeric=True),
    RunColumn("blocked", "blocked", "side_effects_blocked", numeric=True),
    RunColumn("latency", "latency (s)", "wall_ms", numeric=True, decimals=3, scale=0.001),
    RunColumn("tokens", "tokens", "total_tokens", numeric=True),
)
NOTES = RunColumn("notes", "notes", "")  # what the verdict alone does not say: loops, unjudged runs, violations
NOTE_SOURCES = (
    "infrastructure", "unanswered_review", "ending_error", "unauthorized_side_effects", "premature_side_effects",
    "oracle_passed", "loop",
)  # fmt: skip
ORDER = ("mode", "story", "model", "policy", "trial", "run")  # the embedded order


@dataclass(frozen=True)
class RunsTable:
    """The runs as the page embeds them: ``rows`` in table order, ``total`` runs in the report."""

    rows: list[list[object]]
    total: int


def runs_table(runs: pd.DataFrame) -> RunsTable:
    """The runs frame (reports.metrics.classify_runs) as the table's rows, capped at MAX_EMBEDDED_RUNS; modes and
    stories keep the traces' order (the report's), a cell's trials stay together."""
    total = len(runs)
    by_key = {c.key: c.source for c in COLUMNS}
    runs = runs.sort_values([by_key[key] for key in ORDER], kind="stable").head(MAX_EMBEDDED_RUNS)
    frame = pd.DataFrame(index=runs.index)
    for column in COLUMNS:
        values = runs[column.source]
        if column.numeric:
            frame[column.key] = pd.to_numeric(values, errors="coerce") * column.scale
        else:
            frame[column.key] = values.astype(object).where(values.notna(), "").astype(str)
    notes = [_notes(run) for run in runs[[c for c in NOTE_SOURCES if c in runs.columns]].to_dict("records")]
    lists = [_json_values(frame[c.key], c) for c in COLUMNS]
    return RunsTable([[*row, note] for row, note in zip(zip(*lists, strict=True), notes, strict=True)], total)


def _json_values(values: pd.Series, column: RunColumn) -> list[object]:
    if not column.numeric:
        return [value or None for value in values.tolist()]
    rounded = values.round(column.decimals)
    return [None if pd.isna(v) else (float(v) if column.decimals else int(v)) for v in rounded.tolist()]


def _notes(run: Mapping[Hashable, object]) -> str | None:
    parts = []
    if run.get("infrastructure"):
        parts.append("infrastructure (not judged)")
    if run.get("unanswered_review"):
        parts.append("unanswered plan review (not judged)")
    if isinstance(run.get("ending_error"), str):
        parts.append(f"error: {run['ending_error']}")
    for column, label in (("unauthorized_side_effects", "unauthorized"), ("premature_side_effects", "premature")):
        count = run.get(column)
        if isinstance(count, int | float) and count > 0:
            parts.append(f"{label} {int(count)}")
    if not run.get("oracle_passed", True):
        parts.append("oracle failed")
    if run.get("loop"):
        parts.append("loop")
    return "; ".join(parts) or None


def _script_json(value: object) -> str:
    """JSON safe inside <script>: no '<' that could close the element, whatever a run id or story name holds."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def runs_section(table: RunsTable, section_id: str, title: str) -> str:
    """The section: its heading, the filters, the (empty) table the script fills, the data and the script."""
    columns = [*COLUMNS, NOTES]
    data = {
        "columns": [{"key": c.key, "header": c.header, "numeric": c.numeric, "decimals": c.decimals} for c in columns],
        "rows": table.rows,
        "total": table.total,
        "limit": RENDER_STEP,
        "capped": f"only the first {MAX_EMBEDDED_RUNS:,} in table order are here; open any run with bench show",
    }
    filters = "".join(
        f'<label>{html.escape(c.header)}<select name="{c.key}"><option value="*">all</option></select></label>'
        for c in columns
        if c.filtered
    )
    head = "".join(
        f'<th class="{"num" if c.numeric else "text"}"><button type="button">{html.escape(c.header)}</button></th>'
        for c in columns
    )
    return "\n".join(
        [
            f'<section id="{section_id}">',
            f"<h2>{html.escape(title)}</h2>",
            '<p class="note">One row per run; a run id opens the run\'s page when the report wrote run pages. Filter '
            "with the boxes, sort by clicking a header (again: reversed). The filters and the order are kept in the "
            "address (report.html#runs?verdict=late&amp;mode=react), so a link opens the table filtered. "
            f"At most {RENDER_STEP:,} rows are drawn at a time (the buttons below draw more; printing draws every "
            f"matching row); at most {MAX_EMBEDDED_RUNS:,} runs are embedded. Latency: the run's wall time; tokens: "
            "prompt and completion, all calls.</p>",
            '<noscript><p class="note warning">Filtering and sorting this table needs JavaScript, which is off: '
            "every run is counted in the tables above and opens with <code>bench show DIR --run ID</code>.</p>"
            "</noscript>",
            f'<div class="runs-controls">{filters}<label>contains<input name="q" type="search" '
            'placeholder="run id, story, note"></label><button type="button" name="clear">clear</button></div>',
            '<p class="runs-status" aria-live="polite"></p>',
            f'<div class="table-wrap"><table class="metrics runs"><thead><tr>{head}</tr></thead><tbody></tbody>'
            "</table></div>",
            f'<p class="runs-more" hidden><button type="button" name="more">show {RENDER_STEP:,} more</button>'
            '<button type="button" name="all">show all</button></p>',
            f'<script type="application/json" id="runs-data">{_script_json(data)}</script>',
            PAGES_PLACEHOLDER,
            f"<script>{SCRIPT}</script>",
            "</section>",
        ]
    )


def with_run_pages(text: str, links: Mapping[str, str]) -> str:
    """report.html's text with its run page addresses filled in (run id -> path relative to the report); the
    run pages (reports/run_page.py) call it as they link the page, so report.html is rewritten once."""
    if not links or PAGES_PLACEHOLDER not in text:
        return text
    filled = f'<script type="application/json" id="run-pages">{_script_json(dict(links))}</script>'
    return text.replace(PAGES_PLACEHOLDER, filled, 1)
