"""Report tables, each declared once as column specs over typed records; rendered as Markdown, CSV, HTML here and as
LaTeX in reports/latex.py."""

from __future__ import annotations

import csv
import html
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import groupby
from typing import Any, Generic, Literal, Protocol, TypeVar

from tabulate import tabulate

from harness.errors import ERROR_KINDS, INFRASTRUCTURE_ERRORS
from harness.records.verdicts import GLOSSARY, RARE_VERDICTS, label
from harness.terminal import fit_table
from modes import MODES, Mode
from reports.clustered import DESCRIPTION as CLUSTER_DESCRIPTION
from reports.clustered import RESAMPLES, SEED
from reports.load import clean_text
from reports.metrics import (
    DECISION_MAKERS,
    JUDGED_VERDICTS,
    KEY_HEADERS,
    STATUSES,
    GroupMetrics,
    Metrics,
    ViolationCount,
)
from reports.stats import Interval
from reports.trace_columns import BLOCK_REASONS

Format = Literal["text", "int", "pct", "num", "ms", "usd", "ci", "p"]  # ci: a rate's interval, shown as made
MISSING = "–"  # shown for an undefined value (no runs, one sample for a std, k above the trials)
SUBJECT_WIDTH = 60  # a violation's subject is cut to this many characters in the tables


class Unpriced:
    """A cost that cannot be given: the model is not in the price table (never shown as 0)."""

    def __repr__(self) -> str:
        return "unpriced"


UNPRICED = Unpriced()


class NotApplicable:
    """A rate no run could earn: every run of the row stands at its mode's own plan review, which nobody answers
    without an approver (``reports.metrics.unanswered_review``). Shown as n/a, never as 0%."""

    def __repr__(self) -> str:
        return "n/a"


NOT_APPLICABLE = NotApplicable()


class Seconds(float):
    """A duration in a column that otherwise holds rates (the paired table's run latency rows): shown in seconds,
    written to CSV as the plain number."""


R = TypeVar("R")  # the record one row of a table is read from


@dataclass(frozen=True)
class Column(Generic[R]):
    """One column, said once: its header, how a row's record gives its value, how that value is shown (CSV always
    gets the full-precision value) and what it means; every format and the table's legend read it from here."""

    header: str
    fmt: Format
    get: Callable[[R], Any]
    # One clause ending in its own punctuation, shown in the legend as "header: description"; a ';' runs it on
    # into the next column's (unauthorized; premature). Blank: the column is not in the legend.
    description: str = ""
    # A key column (mode, policy, ...) leads every part of a table split for width; a narrow one is essential
    # enough for the one-column LaTeX variant (reports/latex.py), which keeps the key and narrow columns.
    narrow: bool = False
    key: bool = False
    # The header of the rate this column is the interval of (a "ci" column, or a low / high bound): LaTeX sets
    # the rate and its interval in one cell, so a split for width never parts them.
    interval_of: str = ""

    @property
    def numeric(self) -> bool:
        return self.fmt != "text"

    def named(self, header: str) -> Column[R]:
        return replace(self, header=header)


class Described(Protocol):
    """Anything a legend names: a table's column, or a column as one format shows it (LaTeX's rate and interval)."""

    @property
    def header(self) -> str: ...

    @property
    def description(self) -> str | None: ...


def legend(columns: Sequence[Described]) -> str:
    """The described columns' meanings in their order; neighbours sharing one are named "first ... last"."""
    entries = []
    for description, same in groupby(columns, key=lambda c: c.description):
        if description:
            headers = [c.header for c in same]
            named = headers[0] if len(headers) == 1 else f"{headers[0]} ... {headers[-1]}"
            entries.append(f"{named}: {description}")
    return " ".join(entries)


@dataclass(frozen=True)
class Table(Generic[R]):
    """One table of the report: ``name`` is its file stem, its LaTeX label and its id in the HTML page.

    One record per row; each cell is its column's ``get`` of the row's record, so headers and values cannot part.
    """

    name: str
    title: str
    columns: tuple[Column[R], ...]
    records: tuple[R, ...]
    about: str = ""  # what the table as a whole shows; the note adds the columns' legend after it

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    @property
    def note(self) -> str:
        """The text under the table: what it shows, then what its described columns mean."""
        return " ".join(part for part in (self.about, legend(self.columns)) if part)

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """Every record's values at full precision, in column order."""
        return [tuple(c.get(record) for c in self.columns) for record in self.records]

    def display_rows(self) -> list[list[str]]:
        columns = [self.texts(c) for c in self.columns]
        return [[texts[i] for texts in columns] for i in range(len(self.records))]

    def texts(self, column: Column[R]) -> tuple[str, ...]:
        """Each row's value of ``column`` as shown: made once per table, read by every format that shows it."""
        if column not in self._shown:
            self._shown[column] = tuple(show(column.get(record), column.fmt) for record in self.records)
        return self._shown[column]

    @cached_property
    def _shown(self) -> dict[Column[R], tuple[str, ...]]:
        return {}


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


P_FLOOR = 0.001  # a p-value below this is shown as "< 0.001" (4.77e-07 and 0.000128 read as one class)


def show(value: Any, fmt: Format) -> str:
    """A value as a writer wants to read it."""
    if isinstance(value, Unpriced):
        return "unpriced"
    if isinstance(value, NotApplicable):
        return "n/a"
    if _undefined(value):
        return MISSING
    if isinstance(value, Seconds):
        return f"{value:,.2f} s"
    if fmt == "pct":
        # a rate under 0.05% is not shown as 0.0% unless it is zero (seed 003's 0.01% error rate)
        return f"{100 * value:.2f}%" if 0 < abs(value) < 0.0005 else f"{100 * value:.1f}%"
    if fmt == "int":
        return f"{int(value)}"
    if fmt == "ms":
        return f"{value:,.1f}"
    if fmt == "num":
        return f"{value:,.2f}"
    if fmt == "p":  # a p-value in one format: three significant digits (1.00, 0.0470), "< 0.001" below, never 0
        return "< 0.001" if value < P_FLOOR else f"{value:#.3g}"
    if fmt == "usd":
        return f"{value:,.4f}" if abs(value) < 100 else f"{value:,.2f}"
    return clean_text(str(value))


# ------------------------------------------------------------------ renderers


def to_markdown(table: Table) -> str:
    rows = [[cell.replace("|", "\\|") for cell in row] for row in table.display_rows()]
    right = [c.numeric for c in table.columns]
    if _plain([*table.headers, *(cell for row in rows for cell in row)]):
        body = github_table(table.headers, rows, right)
    else:  # a line break, a control or a wide character in a cell: tabulate knows how to set those
        align = ["right" if numeric else "left" for numeric in right]
        body = tabulate(rows, headers=table.headers, tablefmt="github", disable_numparse=True, colalign=align)
    text = f"### {table.title}\n\n" + body
    return text + (f"\n\n{table.note}\n" if table.note else "\n")


# One line of characters one column wide each: ASCII, Latin, dashes, quotes, bullets, arrows and math signs; no
# controls, no zero-width or combining marks, no wide (CJK) characters.
_PLAIN = re.compile(r"[ -~\u00a0-\u024f\u2010-\u2027\u2030-\u205e\u2190-\u22ff]*")


def _plain(cells: Sequence[str]) -> bool:
    return all(_PLAIN.fullmatch(cell) for cell in cells)


def github_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """A GitHub pipe table of one-line cells, character for character what tabulate's ``github`` format writes with
    ``disable_numparse`` (cells stripped, each column at least its header plus two wide), without tabulate's type
    inference over every cell (most of a report's Markdown time)."""
    columns = [[cell.strip() for cell in column] for column in zip(*rows, strict=True)] or [[] for _ in headers]
    right = right if rows else [False] * len(headers)  # no rows: tabulate sets every header flush left
    widths = [max([len(h) + 2, *map(len, column)]) for h, column in zip(headers, columns, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = (c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True))
        return "|" + "|".join(f" {cell} " for cell in padded) + "|"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in zip(*columns, strict=True))])


def to_terminal(table: Table, limit: int | None = None) -> str:
    """The table for a terminal ``limit`` columns wide (None: one line per row however wide; harness.terminal)."""
    return fit_table(table.headers, table.display_rows(), [c.numeric for c in table.columns], limit)


def to_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.headers)
    for row in table.rows:
        writer.writerow(["n/a" if isinstance(v, NotApplicable) else _csv_value(v) for v in row])
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    return "" if _undefined(value) or isinstance(value, Unpriced) else value


_POWER = re.compile(r"\^(\w+)")


def _html_header(text: str) -> str:
    """A header as HTML: ``pass^5`` written pass<sup>5</sup>."""
    return _POWER.sub(r"<sup>\1</sup>", html.escape(text))


def to_html(table: Table) -> str:
    """A plain HTML table; numeric cells carry class ``num`` (right-aligned, never wrapped); a key cell (a story
    name, a run folder) may break after ``_`` or ``/``, so it wraps instead of widening the table past the window."""
    head = "".join(f'<th class="{"num" if c.numeric else "text"}">{_html_header(c.header)}</th>' for c in table.columns)
    body = []
    columns = [(f'<td class="{"num" if c.numeric else "text"}">', table.texts(c), c.key) for c in table.columns]
    for i in range(len(table.records)):
        cells = "".join(f"{cell}{_html_text(texts[i], key)}</td>" for cell, texts, key in columns)
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table id="table-{table.name}" class="metrics" data-table="{table.name}">\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
    )


def _html_text(text: str, breakable: bool) -> str:
    escaped = html.escape(text)
    return re.sub(r"([_/])(?=.)", r"\1<wbr>", escaped) if breakable else escaped


# ------------------------------------------------------------------ builders
#
# Each table is declared once, as a tuple of columns after the grouping's key columns; a family of columns that
# depends on what happened (pass^1..k, the error kinds seen, the deciders) is made by a function next to it.


def _mode_class(name: str) -> type[Mode] | None:
    return MODES.get(name)


def _describe(name: str, attribute: str) -> str:
    """A mode's description from its class; blank for a mode that is not registered (an old trace)."""
    cls = _mode_class(name)
    return getattr(cls, attribute, "") if cls is not None else ""


def key_columns(keys: Sequence[str]) -> tuple[Column[Any], ...]:
    """The grouping's key columns (mode, policy, ...), read from the ``key`` every grouped record carries."""
    return tuple(
        Column(KEY_HEADERS.get(name, name), "text", _key_part(index), key=True) for index, name in enumerate(keys)
    )


def _key_part(index: int) -> Callable[[Any], str]:
    return lambda record: record.key[index]


def happened(g: GroupMetrics) -> str:
    """Seed 000's last column: what the runs really did, in numbers."""
    parts = [f"stop-correct {g.stop.successes}/{g.stop.n}"]
    if g.verdicts:
        parts.append(", ".join(f"{v} {g.verdicts[v]}" for v in JUDGED_VERDICTS if g.verdicts.get(v) and v != "correct"))
    parts.append(", ".join(f"{s} {g.statuses[s]}" for s in STATUSES if g.statuses.get(s)))
    if g.unauthorized_side_effects is not None:
        parts.append(f"unauthorized side effects {g.unauthorized_side_effects}")
    parts.append(f"premature side effects {g.premature_side_effects}")
    parts.append(f"blocked {g.side_effects_blocked}")
    if g.unanswered_reviews:
        parts.append(f"stopped at its own plan review, unanswered {g.unanswered_reviews} (not judged)")
    if g.wait_without_suspend:
        parts.append(f"waited on paper and went on {g.wait_without_suspend}")
    if g.loops:
        parts.append(f"loops {g.loops}")
    if g.infrastructure:
        parts.append(f"infrastructure {g.infrastructure} (not judged)")
    return "; ".join(p for p in parts if p)


def _mode_says(attribute: str) -> Callable[[GroupMetrics], str]:
    return lambda g: _describe(g.mode, attribute)


SEED000_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("who decides each step", "text", _mode_says("decides")),
    Column("actions the model can see", "text", _mode_says("visible")),
    Column("who can really stop a run", "text", _mode_says("stopper"), narrow=True),
    Column("what happened", "text", happened),
)


def seed000_table(metrics: Metrics) -> Table[GroupMetrics]:
    """Seed 000's comparison: who decides, what the model sees, who can stop a run, and what happened."""
    return Table(
        "modes",
        "Control modes: who decides, who can stop, what happened",
        (*key_columns(metrics.keys), *SEED000_COLUMNS),
        tuple(metrics.groups),
    )


@dataclass(frozen=True)
class Headline:
    """One row of the headline table: what ``bench run`` prints as it ends and ``bench report`` leads with."""

    key: tuple[str, ...]
    judged: int
    verdicts: dict[str, int] | None  # None: the traces predate stop verdicts (schema 1)
    infrastructure: int
    stop: Interval
    stop_ci: Interval  # the interval shown: clustered by story (reports/clustered.py)
    oracle: Interval  # stop-correct with every oracle check met: the work was right too, not only the stop
    pass_k: float | None
    unauthorized: int | None
    premature: int
    blocked: int
    unanswered: int = 0  # runs standing at the mode's own plan review, unanswered: not judged, counted apart
    right_place_wrong_work: int = 0  # judged runs stopped at the right place that broke a value or argument rule

    @property
    def not_applicable(self) -> bool:
        return self.judged == 0 and self.unanswered > 0


def unless_not_applicable(get: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A rate's getter that gives n/a for a row whose every run stands at an unanswered review of its own mode."""
    return lambda record: NOT_APPLICABLE if record.not_applicable else get(record)


def _headline_verdict(verdict: str) -> Callable[[Headline], int | None]:
    return lambda h: h.verdicts.get(verdict, 0) if h.verdicts is not None else None


PASS_K = "pass^k"  # the headline's pass^k column, named for the k it was computed at when there is one
RIGHT_PLACE_WRONG_WORK = "right place, wrong work"  # runs stopped right that broke a value or argument rule
UNANSWERED = "unanswered review"  # the headline's column of them, shown only when some row has one
APPROVER_HINT = "--approver scripted:plan_reader"  # the approver that answers plan reviews by reading the plan

HEADLINE_COLUMNS: tuple[Column[Headline], ...] = (
    Column("n", "int", lambda h: h.judged, "judged runs (complete, not ended by infrastructure).", narrow=True),
    *(
        Column(
            label(v),
            "int",
            _headline_verdict(v),
            "the runtime's stop verdicts (docs/metrics.md: stop verdicts).",
        )
        for v in JUDGED_VERDICTS
    ),
    Column("infra", "int", lambda h: h.infrastructure, "runs not judged."),
    Column(
        UNANSWERED,
        "int",
        lambda h: h.unanswered,
        "runs stopped at their mode's own plan review, which no one answers without an approver: not judged "
        "(wrong place by construction), counted apart.",
    ),
    Column("stop-correct", "pct", unless_not_applicable(lambda h: h.stop.rate), narrow=True),
    Column(
        "95% CI",
        "ci",
        unless_not_applicable(lambda h: interval(h.stop_ci.low, h.stop_ci.high)),
        f"cluster bootstrap over stories ({RESAMPLES} resamples, seed {SEED}), never narrower than Wilson's "
        "(docs/metrics.md: intervals).",
        interval_of="stop-correct",
    ),
    Column(
        "oracle passed",
        "pct",
        unless_not_applicable(lambda h: h.oracle.rate),
        "stop-correct and every oracle check met (required work, order, content): a right stop is not right work.",
        narrow=True,
    ),
    Column(
        RIGHT_PLACE_WRONG_WORK,
        "int",
        lambda h: h.right_place_wrong_work,
        "runs that stopped at the right place but broke a value or argument rule on the way (early, late, or "
        "correct with the oracle failed; docs/metrics.md: stop verdicts).",
    ),
    Column(
        PASS_K,
        "pct",
        unless_not_applicable(lambda h: h.pass_k),
        "the chance that k judged trials of a cell all stop correctly, averaged over cells (tau-bench); undefined "
        "where a cell of the row has fewer than k.",
    ),
    Column(
        "unauthorized",
        "int",
        lambda h: h.unauthorized,
        "side effects committed that an enforcing gateway refuses or the story's oracle forbids;",
    ),
    Column("premature", "int", lambda h: h.premature, "the gated ones among them."),
    Column("blocked", "int", lambda h: h.blocked, "attempts the gateway refused."),
)


def main_table(metrics: Metrics) -> Table[Headline]:
    """The headline table the terminal shows: the verdict breakdown first, then rates and side effects."""
    k = metrics.max_k
    rows = [
        Headline(
            g.key,
            g.judged,
            None if g.unverdicted == g.judged and g.judged else g.verdicts,
            g.infrastructure,
            g.stop,
            g.stop_clustered,
            g.oracle,
            g.pass_k[-1] if k else None,
            g.unauthorized_side_effects,
            g.premature_side_effects,
            g.side_effects_blocked,
            g.unanswered_reviews,
            g.right_place_wrong_work,
        )
        for g in metrics.groups
    ]
    return headline_table(metrics.grouping, metrics.keys, rows, k, per(metrics))


def headline_table(
    grouping: str, keys: tuple[str, ...], rows: list[Headline], k: int, title_per: str
) -> Table[Headline]:
    """The headline table from its rows, wherever they were counted (a report, or a run as it goes)."""
    pass_k = f"pass^{k}" if k else PASS_K
    unanswered = any(r.unanswered for r in rows)
    absent = {label(v) for v in RARE_VERDICTS if not any(r.verdicts and r.verdicts.get(v) for r in rows)}
    shown = (c for c in HEADLINE_COLUMNS if (c.header != UNANSWERED or unanswered) and c.header not in absent)
    columns = (*key_columns(keys), *(c.named(pass_k) if c.header == PASS_K else c for c in shown))
    return Table(f"main_by_{grouping}", f"Summary per {title_per}", columns, tuple(rows), unanswered_note(rows))


def unanswered_note(rows: Sequence[Headline]) -> str:
    """Why a row's rates leave runs out, or are n/a: its runs stopped at a review nobody answers without an approver."""
    notes = []
    for row in rows:
        if not row.unanswered:
            continue
        label = " / ".join(row.key)
        if row.not_applicable:
            notes.append(
                f"{label}: every run stopped at its own plan review, which no one answers without an approver, so "
                f"its rates are n/a, not 0%; run with {APPROVER_HINT} to judge them."
            )
        else:
            notes.append(
                f"{label}: {row.unanswered} of {row.unanswered + row.judged} runs stopped at its own plan review, "
                f"which no one answers without an approver; its rates are over the other {row.judged}; run with "
                f"{APPROVER_HINT} to judge them all."
            )
    return " ".join(notes)


def per(metrics: Metrics) -> str:
    return " x ".join(KEY_HEADERS.get(k, k) for k in metrics.keys)


def interval(low: float, high: float) -> str:
    return MISSING if math.isnan(low) else f"[{100 * low:.1f}%, {100 * high:.1f}%]"


def _verdict_count(verdict: str) -> Callable[[GroupMetrics], int | None]:
    return lambda g: None if g.unverdicted == g.judged and g.judged else g.verdicts.get(verdict, 0)


def _verdict_share(verdict: str) -> Callable[[GroupMetrics], float]:
    return lambda g: g.verdict_share(verdict)


VERDICTS_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("judged (n)", "int", lambda g: g.judged, narrow=True),
    # every count in the one-column variant too, so a row's counts add up to its n
    *(Column(label(v), "int", _verdict_count(v), narrow=True) for v in JUDGED_VERDICTS),
    *(Column(f"{label(v)} %", "pct", _verdict_share(v)) for v in JUDGED_VERDICTS),
    Column("infrastructure", "int", lambda g: g.infrastructure, "not judged."),
    Column("no verdict", "int", lambda g: g.unverdicted, "traces older than verdicts."),
)


def verdicts_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = f"Where each judged run stopped, judged by the runtime against the oracle: {GLOSSARY}."
    absent = [label(v) for v in RARE_VERDICTS if not any(g.verdicts.get(v) for g in metrics.groups)]
    hidden = {*absent, *(f"{name} %" for name in absent)}
    return Table(
        f"verdicts_by_{metrics.grouping}",
        "Stop verdicts",
        (*key_columns(metrics.keys), *(c for c in VERDICTS_COLUMNS if c.header not in hidden)),
        tuple(metrics.groups),
        about,
    )


@dataclass(frozen=True)
class ViolationRow:
    """One row of the violations table: a group's ``rank``-th most frequent violation."""

    group: GroupMetrics
    rank: int
    violation: ViolationCount
    with_source: bool  # several folders are reported: the example run names its folder

    @property
    def key(self) -> tuple[str, ...]:
        return self.group.key


VIOLATIONS_COLUMNS: tuple[Column[ViolationRow], ...] = (
    Column("#", "int", lambda r: r.rank),
    Column("violation", "text", lambda r: r.violation.kind, narrow=True),
    Column("subject", "text", lambda r: clean_text(r.violation.subject, SUBJECT_WIDTH), narrow=True),
    Column("runs", "int", lambda r: r.violation.runs, "judged runs with at least one.", narrow=True),
    Column("of judged", "pct", lambda r: r.violation.runs / r.group.judged if r.group.judged else math.nan),
    Column("occurrences", "int", lambda r: r.violation.occurrences),
    Column("example run", "text", lambda r: _example(r.violation, r.with_source)),
)


def violations_table(metrics: Metrics) -> Table[ViolationRow]:
    """The most frequent oracle violations per group, each with a run to open."""
    several = len({v.example_source for g in metrics.groups for v in g.violations}) > 1
    rows = tuple(
        ViolationRow(g, rank, v, several) for g in metrics.groups for rank, v in enumerate(g.violations, start=1)
    )
    about = (
        "Oracle violations of judged runs, grouped by kind and subject (values after '=' left out), the "
        "most frequent first;"
    )
    return Table(
        f"violations_by_{metrics.grouping}",
        "Top oracle violations",
        (*key_columns(metrics.keys), *VIOLATIONS_COLUMNS),
        rows,
        about,
    )


def _example(v: ViolationCount, with_source: bool) -> str:
    return f"{v.example_run} ({v.example_source})" if with_source else v.example_run


WILSON = "Wilson's 95% interval, as if runs were independent."
CLUSTERED = f"{CLUSTER_DESCRIPTION}."
CORRECTNESS_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("runs", "int", lambda g: g.runs),
    Column("incomplete", "int", lambda g: g.incomplete),
    Column("infra runs", "int", lambda g: g.infrastructure),
    Column("unanswered reviews", "int", lambda g: g.unanswered_reviews),
    Column("judged (n)", "int", lambda g: g.judged, narrow=True),
    Column("stop-correct", "int", lambda g: g.stop.successes),
    Column("rate", "pct", unless_not_applicable(lambda g: g.stop.rate), narrow=True),
    Column("95% low", "pct", lambda g: g.stop.low, WILSON, interval_of="rate"),
    Column("95% high", "pct", lambda g: g.stop.high, WILSON, interval_of="rate"),
    Column("oracle passed", "pct", unless_not_applicable(lambda g: g.oracle.rate), narrow=True),
    Column("oracle 95% low", "pct", lambda g: g.oracle.low, interval_of="oracle passed"),
    Column("oracle 95% high", "pct", lambda g: g.oracle.high, interval_of="oracle passed"),
    Column("stories", "int", lambda g: g.stop_clustered.clusters),
    Column("cluster 95% low", "pct", lambda g: g.stop_clustered.low, CLUSTERED, True, interval_of="rate"),
    Column("cluster 95% high", "pct", lambda g: g.stop_clustered.high, CLUSTERED, True, interval_of="rate"),
    Column("oracle cluster 95% low", "pct", lambda g: g.oracle_clustered.low, interval_of="oracle passed"),
    Column("oracle cluster 95% high", "pct", lambda g: g.oracle_clustered.high, interval_of="oracle passed"),
    Column("interval", "text", lambda g: g.stop_clustered.method, "how the stop-correct one was found."),
)


def correctness_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = (
        "Over judged runs: runs with a summary, minus those not judged (infrastructure; unanswered reviews: runs "
        "stopped at their mode's own plan review, which no one answers without an approver, so rate n/a when "
        "every run did)."
    )
    return Table(
        f"correctness_by_{metrics.grouping}",
        "Stop-correctness",
        (*key_columns(metrics.keys), *CORRECTNESS_COLUMNS),
        tuple(metrics.groups),
        about,
    )


def _pass_at(k: int) -> Callable[[GroupMetrics], float]:
    return lambda g: g.pass_k[k - 1]


def pass_k_columns(max_k: int) -> tuple[Column[GroupMetrics], ...]:
    """pass^1 .. pass^max_k: as many as the trials allow."""
    return tuple(Column(f"pass^{k}", "pct", _pass_at(k), narrow=True) for k in range(1, max_k + 1))


def pass_k_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = (
        "pass^k (tau-bench): per cell (scenario, model, gateway policy), C(c,k)/C(n,k) with c stop-correct "
        "of n judged trials, averaged over cells; undefined where a cell of the row has fewer than k judged trials "
        "(an unanswered plan review leaves a cell fewer)."
    )
    return Table(
        f"pass_k_by_{metrics.grouping}",
        "pass^k over trials",
        (*key_columns(metrics.keys), *pass_k_columns(metrics.max_k)),
        tuple(metrics.groups),
        about,
    )


SIDE_EFFECTS_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("judged", "int", lambda g: g.judged),
    Column("committed", "int", lambda g: g.side_effects_committed),
    Column(
        "unauthorized",
        "int",
        lambda g: g.unauthorized_side_effects,
        "committed side effects an enforcing gateway refuses (closed gate, role, allowlist, precondition) or the "
        "story's oracle forbids;",
        narrow=True,
    ),
    Column("runs with unauthorized", "int", lambda g: g.runs_with_unauthorized),
    Column(
        "premature",
        "int",
        lambda g: g.premature_side_effects,
        "the gated ones, committed before approval.",
        narrow=True,
    ),
    Column("runs with premature", "int", lambda g: g.runs_with_premature),
    Column("premature / run", "num", lambda g: g.premature_per_run),
    Column("blocked", "int", lambda g: g.side_effects_blocked, narrow=True),
    Column(
        "wait marker, went on",
        "int",
        lambda g: g.wait_without_suspend,
        "runs that recorded a wait for a closed gate and did not suspend there.",
    ),
    Column("loops", "int", lambda g: g.loops, "runs where one next action was proposed 3+ times in a row."),
    Column("resumed runs", "int", lambda g: g.resumed_runs),
    Column(
        "repeated after resume",
        "int",
        lambda g: g.repeated_side_effects,
        "side effects committed again after a person resumed the run (must be 0).",
    ),
    Column("premature in infra runs", "int", lambda g: g.infrastructure_premature),
    Column(
        "cache hits",
        "int",
        lambda g: g.cache_hits,
        "calls of a cached read-only action answered from the run's tool cache (the tool did not run);",
    ),
    Column("cached calls", "int", lambda g: g.cache_calls, "calls of actions with a tool cache, hits and misses."),
)


def side_effects_table(metrics: Metrics) -> Table[GroupMetrics]:
    return Table(
        f"side_effects_by_{metrics.grouping}",
        "Side effects and loops",
        (*key_columns(metrics.keys), *SIDE_EFFECTS_COLUMNS),
        tuple(metrics.groups),
    )


def _blocked_for(reason: str) -> Callable[[GroupMetrics], int | None]:
    return lambda g: g.blocked_by.get(reason) if g.blocked_by is not None else None


NARROW_BLOCKS = ("gate", "precondition", "role")  # the reasons the one-column variant keeps
BLOCK_MEANINGS = {  # what each reason's column counts, said under the tables that show it
    "gate_closed": "approval not given;",
    "precondition": "required artifacts missing;",
    "not_permitted": "the agent's role may not call it;",
    "not_allowed": "not offered at that point;",
    "sensitive_input": "the input scanner found card data, an id or a key;",
}
BLOCKED_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("blocked", "int", lambda g: g.side_effects_blocked, narrow=True),
    *(
        Column(label, "int", _blocked_for(reason), BLOCK_MEANINGS.get(reason, ""), narrow=reason in NARROW_BLOCKS)
        for reason, label in BLOCK_REASONS.items()
    ),
    Column("other", "int", lambda g: g.blocked_other),
)


def blocked_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = "Attempts the gateway refused, by its reason; judged runs only."
    return Table(
        f"blocked_by_{metrics.grouping}",
        "Blocked attempts by reason",
        (*key_columns(metrics.keys), *BLOCKED_COLUMNS),
        tuple(metrics.groups),
        about,
    )


def _spread_of(attribute: str, statistic: str) -> Callable[[GroupMetrics], Any]:
    return lambda g: getattr(getattr(g, attribute), statistic)


NARROW_COST = ("steps", "model calls", "total tokens")  # their means in the one-column variant
COST_COLUMNS: tuple[Column[GroupMetrics], ...] = tuple(
    Column(
        f"{name} {statistic}",
        "num",
        _spread_of(attribute, statistic),
        meaning,
        narrow=statistic == "mean" and name in NARROW_COST,
    )
    for name, attribute, meaning in (
        ("steps", "steps", ""),
        ("model calls", "llm_calls", ""),
        ("prompt tokens", "prompt_tokens", ""),
        ("completion tokens", "completion_tokens", ""),
        ("reasoning tokens", "reasoning_tokens", "part of the completion tokens."),
        ("cached tokens", "cached_tokens", "part of the prompt tokens."),
        ("total tokens", "total_tokens", ""),
    )
    for statistic in ("mean", "p50")
)


def _usd_per_run(g: GroupMetrics) -> float | Unpriced | None:
    if g.cost is None:
        return None
    nothing_priced = g.cost.priced_runs == 0 and g.cost.unpriced_runs > 0
    return UNPRICED if nothing_priced else g.cost.per_run.mean


def _usd_total(g: GroupMetrics) -> float | Unpriced | None:
    if g.cost is None:
        return None
    return UNPRICED if g.cost.unpriced_runs else g.cost.total


PRICE_COLUMNS: tuple[Column[GroupMetrics], ...] = (  # with --prices only
    Column("USD / run", "usd", _usd_per_run, narrow=True),
    Column("USD total", "usd", _usd_total),
    Column("priced runs", "int", lambda g: g.cost.priced_runs if g.cost is not None else None),
    Column("unpriced runs", "int", lambda g: g.cost.unpriced_runs if g.cost is not None else None),
)


def cost_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = "Per complete run."
    if metrics.priced:
        unpriced = sorted({m for g in metrics.groups if g.cost for m in g.cost.unpriced_models})
        about += (
            " USD from the price table given (per 1M tokens: input, output, cached input); USD / run over priced runs; "
            "a total with an unpriced run is unpriced."
        )
        if unpriced:
            about += f" Unpriced models: {', '.join(clean_text(m, 60) for m in unpriced)}."
    return Table(
        f"cost_by_{metrics.grouping}",
        "Steps, model calls, tokens and cost per run",
        (*key_columns(metrics.keys), *COST_COLUMNS, *(PRICE_COLUMNS if metrics.priced else ())),
        tuple(metrics.groups),
        about,
    )


LATENCY_COLUMNS: tuple[Column[GroupMetrics], ...] = tuple(
    column
    for scope, attribute in (("run", "run_latency"), ("call", "call_latency"))
    for column in (
        Column(f"{scope} n", "int", _spread_of(attribute, "n")),
        *(
            Column(f"{scope} {s} ms", "ms", _spread_of(attribute, s), narrow=s in ("p50", "p95"))
            for s in ("p50", "p95", "p99", "mean", "std")
        ),
    )
)


def latency_table(metrics: Metrics) -> Table[GroupMetrics]:
    about = (
        "run: wall time of each complete run; call: latency of each model call. Percentiles by linear "
        "interpolation; std is the sample standard deviation."
    )
    return Table(
        f"latency_by_{metrics.grouping}",
        "Latency per run and per model call",
        (*key_columns(metrics.keys), *LATENCY_COLUMNS),
        tuple(metrics.groups),
        about,
    )


ERRORS_COLUMNS: tuple[Column[GroupMetrics], ...] = (
    Column("runs", "int", lambda g: g.runs),
    Column("error runs", "int", lambda g: g.error_runs),
    Column("error rate", "pct", lambda g: g.error_rate, narrow=True),
    Column("infra runs", "int", lambda g: g.infrastructure),
    Column("infra rate", "pct", lambda g: g.infrastructure_rate, narrow=True),
    Column(
        "mode error rate",
        "pct",
        lambda g: g.mode_error_rate,
        "judged runs ended by an error (parse, schema, workflow).",
        narrow=True,
    ),
)


def _ended_by(kind: str) -> Callable[[GroupMetrics], float]:
    return lambda g: g.ended_by.get(kind, 0) / g.runs if g.runs else math.nan


def _seen(kind: str) -> Callable[[GroupMetrics], int]:
    return lambda g: g.errors_seen.get(kind, 0)


def error_kind_columns(kinds: Sequence[str]) -> tuple[Column[GroupMetrics], ...]:
    """Per error kind: the share of runs it ended, then how often it was seen."""
    return (
        *(Column(f"ended by {k}", "pct", _ended_by(k), "share of runs ended by that kind.") for k in kinds),
        *(Column(f"{k} seen", "int", _seen(k), "error events of that kind, retried attempts included.") for k in kinds),
    )


def errors_table(metrics: Metrics, every_kind: bool = False) -> Table[GroupMetrics]:
    """Errors per group; the kinds that occurred (``every_kind``: all of harness.errors, for the wide CSV)."""
    infra = ", ".join(k for k in ERROR_KINDS if k in INFRASTRUCTURE_ERRORS)
    about = (
        f"Infrastructure kinds ({infra}) never count against a mode: those runs are out of every correctness "
        "denominator."
    )
    return Table(
        f"errors_by_{metrics.grouping}",
        "Errors by kind",
        (*key_columns(metrics.keys), *ERRORS_COLUMNS, *error_kind_columns(error_kinds(metrics, every_kind))),
        tuple(metrics.groups),
        about,
    )


def error_kinds(metrics: Metrics, every_kind: bool = False) -> list[str]:
    """The kinds harness.errors defines (those that occurred, or all), in its order; then any other kind seen."""
    seen = {k for g in metrics.groups for k in (*g.ended_by, *g.errors_seen)}
    known = [k for k in ERROR_KINDS if every_kind or k in seen]
    return [*known, *sorted(seen - set(ERROR_KINDS))]


def _decided_by(maker: str) -> Callable[[GroupMetrics], float]:
    return lambda g: g.decision_share.get(maker, 0.0)


NARROW_DECIDERS = ("llm", "workflow", "gateway", "human")  # the deciders the one-column variant keeps


def decisions_table(metrics: Metrics) -> Table[GroupMetrics]:
    makers = [d for d in DECISION_MAKERS if any(g.decision_share.get(d) for g in metrics.groups)]
    about = (
        "Share of the events that record a choice (model_call, plan_validation, decision, action, transition, "
        "suspend, human) by their decision_maker."
    )
    return Table(
        f"decisions_by_{metrics.grouping}",
        "Who decided",
        (
            *key_columns(metrics.keys),
            Column("deciding events", "int", lambda g: g.decisions, narrow=True),
            *(Column(d, "pct", _decided_by(d), narrow=d in NARROW_DECIDERS) for d in makers),
        ),
        tuple(metrics.groups),
        about,
    )


def full_tables(metrics: Metrics, every_kind: bool = False) -> list[Table[GroupMetrics]]:
    """Every metric of a grouping, as thematic tables (one row a group)."""
    return [
        verdicts_table(metrics),
        correctness_table(metrics),
        pass_k_table(metrics),
        side_effects_table(metrics),
        blocked_table(metrics),
        cost_table(metrics),
        latency_table(metrics),
        errors_table(metrics, every_kind),
        decisions_table(metrics),
    ]


def _verdict_bound(verdict: str, bound: str) -> Callable[[GroupMetrics], float]:
    return lambda g: getattr(g.verdicts_clustered[verdict], bound)


def verdict_interval_columns() -> tuple[Column[GroupMetrics], ...]:
    """Each verdict's share with its interval clustered by story: for the wide CSV (the tables show the counts)."""
    return tuple(
        Column(f"verdicts: {label(v)} % cluster 95% {bound}", "pct", _verdict_bound(v, bound))
        for v in JUDGED_VERDICTS
        for bound in ("low", "high")
    )


def metrics_table(metrics: Metrics) -> Table[GroupMetrics]:
    """One wide row per group with every metric at full precision: the machine-readable full table.

    Its columns do not depend on what happened (every error kind is there), so files of two runs line up.
    """
    parts = full_tables(metrics, every_kind=True)
    width = len(metrics.keys)
    columns = [
        *parts[0].columns,
        *(c.named(f"{part.name.split('_by_')[0]}: {c.header}") for part in parts[1:] for c in part.columns[width:]),
        *verdict_interval_columns(),
    ]
    return Table(f"metrics_by_{metrics.grouping}", f"All metrics per {per(metrics)}", tuple(columns), parts[0].records)
