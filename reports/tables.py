"""Report tables: built from metrics as typed records, rendered as Markdown, CSV, LaTeX (booktabs), HTML and text."""

from __future__ import annotations

import csv
import html
import io
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from tabulate import tabulate

from harness.errors import ERROR_KINDS, INFRASTRUCTURE_ERRORS
from modes import MODES, Mode
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
from reports.stats import Interval, Spread
from reports.trace_columns import BLOCK_REASONS

Format = Literal["text", "int", "pct", "num", "ms", "usd", "ci"]  # ci: a rate's interval, shown as made
MISSING = "–"  # shown for an undefined value (no runs, one sample for a std, k above the trials)
SUBJECT_WIDTH = 60  # a violation's subject is cut to this many characters in the tables


class Unpriced:
    """A cost that cannot be given: the model is not in the price table (never shown as 0)."""

    def __repr__(self) -> str:
        return "unpriced"


UNPRICED = Unpriced()


@dataclass(frozen=True)
class Column:
    """A column's header and how its values are shown (CSV always gets the full-precision value)."""

    header: str
    fmt: Format = "num"

    @property
    def numeric(self) -> bool:
        return self.fmt != "text"


@dataclass(frozen=True)
class Table:
    """One table of the report: ``name`` is its file stem, its LaTeX label and its id in the HTML page."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def display_rows(self) -> list[list[str]]:
        return [[show(v, c.fmt) for v, c in zip(row, self.columns, strict=False)] for row in self.rows]


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def show(value: Any, fmt: Format) -> str:
    """A value as a writer wants to read it."""
    if isinstance(value, Unpriced):
        return "unpriced"
    if _undefined(value):
        return MISSING
    if fmt == "pct":
        # a rate under 0.05% is not shown as 0.0% unless it is zero (seed 003's 0.01% error rate)
        return f"{100 * value:.2f}%" if 0 < abs(value) < 0.0005 else f"{100 * value:.1f}%"
    if fmt == "int":
        return f"{int(value)}"
    if fmt == "ms":
        return f"{value:,.1f}"
    if fmt == "num":
        return f"{value:,.2f}"
    if fmt == "usd":
        return f"{value:,.4f}" if abs(value) < 100 else f"{value:,.2f}"
    return clean_text(str(value))


# ------------------------------------------------------------------ renderers


def to_markdown(table: Table) -> str:
    rows = [[cell.replace("|", "\\|") for cell in row] for row in table.display_rows()]
    align = ["right" if c.numeric else "left" for c in table.columns]
    body = tabulate(rows, headers=table.headers, tablefmt="github", disable_numparse=True, colalign=align)
    text = f"### {table.title}\n\n" + body
    return text + (f"\n\n{table.note}\n" if table.note else "\n")


def to_terminal(table: Table) -> str:
    align = ["right" if c.numeric else "left" for c in table.columns]
    return tabulate(
        table.display_rows(), headers=table.headers, tablefmt="simple", disable_numparse=True, colalign=align
    )


def to_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.headers)
    for row in table.rows:
        writer.writerow(["" if _undefined(v) or isinstance(v, Unpriced) else v for v in row])
    return buffer.getvalue()


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
    "–": "--",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_POWER = re.compile(r"\^(\w+)")


def latex_escape(text: str) -> str:
    """Text for LaTeX: specials escaped, ``x^k`` written as math (``pass^5`` -> ``pass$^{5}$``)."""
    parts = []
    for index, piece in enumerate(_POWER.split(clean_text(text, limit=1 << 30).replace(" · ", "; "))):
        if index % 2:
            parts.append(f"$^{{{latex_escape(piece)}}}$")
        else:
            parts.append("".join(_LATEX_SPECIAL.get(ch, ch) for ch in piece))
    return "".join(parts).encode("ascii", "replace").decode("ascii")  # pdflatex: no unicode surprises


def to_latex(table: Table, context: str = "") -> str:
    """A booktabs table float with caption and label; numbers right-aligned; scaled down only if wider than the line."""
    spec = "".join("r" if c.numeric else "l" for c in table.columns)
    lines = [
        f"% {table.title}: needs \\usepackage{{booktabs}} and \\usepackage{{graphicx}}",
        "\\begin{table}[htbp]",
        "\\centering",
        "\\small",
        "\\setlength{\\tabcolsep}{4pt}",
        f"\\caption{{{latex_escape(table.title + (f' ({context})' if context else ''))}}}",
        f"\\label{{tab:{table.name.replace('_', '-')}}}",
        "\\setbox0=\\hbox{%",
    ]
    lines += [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in table.headers) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(latex_escape(cell) for cell in row) + " \\\\" for row in table.display_rows()]
    lines += [
        "\\bottomrule",
        "\\end{tabular}}",
        # The natural width when it fits, scaled to the line when it does not.
        "\\leavevmode\\ifdim\\wd0>\\linewidth\\resizebox{\\linewidth}{!}{\\box0}\\else\\box0\\fi\\par",
    ]
    if table.note:
        lines.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(table.note)}\\par}}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def _html_header(text: str) -> str:
    """A header as HTML: ``pass^5`` written pass<sup>5</sup>."""
    return _POWER.sub(r"<sup>\1</sup>", html.escape(text))


def to_html(table: Table) -> str:
    """A plain HTML table; numeric cells carry class ``num`` (right-aligned, never wrapped)."""
    head = "".join(f'<th class="{"num" if c.numeric else "text"}">{_html_header(c.header)}</th>' for c in table.columns)
    body = []
    for row in table.display_rows():
        cells = "".join(
            f'<td class="{"num" if c.numeric else "text"}">{html.escape(v)}</td>'
            for v, c in zip(row, table.columns, strict=False)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table id="table-{table.name}" class="metrics" data-table="{table.name}">\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
    )


# ------------------------------------------------------------------ builders


def _mode_class(name: str) -> type[Mode] | None:
    return MODES.get(name)


def _describe(name: str, attribute: str) -> str:
    """A mode's description from its class; blank for a mode that is not registered (an old trace)."""
    cls = _mode_class(name)
    return getattr(cls, attribute, "") if cls is not None else ""


def key_columns(metrics: Metrics) -> tuple[Column, ...]:
    return tuple(Column(KEY_HEADERS.get(k, k), "text") for k in metrics.keys)


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
    if g.wait_without_suspend:
        parts.append(f"waited on paper and went on {g.wait_without_suspend}")
    if g.loops:
        parts.append(f"loops {g.loops}")
    if g.infrastructure:
        parts.append(f"infrastructure {g.infrastructure} (not judged)")
    return "; ".join(p for p in parts if p)


def seed000_table(metrics: Metrics) -> Table:
    """Seed 000's comparison: who decides, what the model sees, who can stop a run, and what happened."""
    columns = (
        *key_columns(metrics),
        Column("who decides each step", "text"),
        Column("actions the model can see", "text"),
        Column("who can really stop a run", "text"),
        Column("what happened", "text"),
    )
    rows = tuple(
        (*g.key, _describe(g.mode, "decides"), _describe(g.mode, "visible"), _describe(g.mode, "stopper"), happened(g))
        for g in metrics.groups
    )
    return Table("modes", "Control modes: who decides, who can stop, what happened", columns, rows)


def spectrum_table(metrics: Metrics) -> Table:
    """Seed 003's control spectrum in the seed's order: its intervention point, model autonomy and published
    P95 latency and error rate, next to this run's measured ones (the modes outside the seven follow)."""
    columns = (
        Column("spectrum", "int"),
        *key_columns(metrics),
        Column("human intervention point", "text"),
        Column("model autonomy", "text"),
        Column("seed 003: P95 (ms)", "ms"),
        Column("seed 003: error rate", "pct"),
        Column("bench: P95 per run (ms)", "ms"),
        Column("bench: error rate", "pct"),
        Column("runs", "int"),
    )
    rows = []
    for g in sorted(metrics.groups, key=lambda g: getattr(_mode_class(g.mode), "spectrum", 99)):
        cls = _mode_class(g.mode)
        rows.append(
            (
                cls.spectrum if cls is not None else None,
                *g.key,
                _describe(g.mode, "intervention"),
                _describe(g.mode, "autonomy"),
                getattr(cls, "published_p95_ms", None),
                getattr(cls, "published_error_rate", None),
                g.run_latency.p95,
                g.error_rate,
                g.runs,
            )
        )
    note = (
        "spectrum: 1 = code decides everything, 7 = the model does (seed 003's seven modes); 8-10 are the plan "
        "modes outside the seed's table. seed 003: the figures the article published for its production systems "
        "(A100 servers, its own stories); bench: measured in these traces, with this run's model and scenarios, so "
        "compare the orders, not the values. Error rate: complete runs that ended with status error, any kind "
        "(infrastructure included; see the errors table for the split)."
    )
    return Table("spectrum", "The control spectrum", columns, tuple(rows), note)


def _verdict(g: GroupMetrics, verdict: str) -> int | None:
    return None if g.unverdicted == g.judged and g.judged else g.verdicts.get(verdict, 0)


VERDICT_HEADERS = {
    "correct": "correct",
    "early": "early",
    "late": "late",
    "wrong_place": "wrong place",
    "no_stop": "no stop",
    "failed_closed": "failed closed",
}


@dataclass(frozen=True)
class Headline:
    """One row of the headline table: what ``bench run`` prints as it ends and ``bench report`` leads with."""

    key: tuple[str, ...]
    judged: int
    verdicts: dict[str, int] | None  # None: the traces predate stop verdicts (schema 1)
    infrastructure: int
    stop: Interval
    pass_k: float | None
    unauthorized: int | None
    premature: int
    blocked: int


def main_table(metrics: Metrics) -> Table:
    """The headline table the terminal shows: the verdict breakdown first, then rates and side effects."""
    k = metrics.max_k
    rows = [
        Headline(
            g.key,
            g.judged,
            None if g.unverdicted == g.judged and g.judged else g.verdicts,
            g.infrastructure,
            g.stop,
            g.pass_k[-1] if k else None,
            g.unauthorized_side_effects,
            g.premature_side_effects,
            g.side_effects_blocked,
        )
        for g in metrics.groups
    ]
    return headline_table(metrics.grouping, metrics.keys, rows, k, per(metrics))


def headline_table(grouping: str, keys: tuple[str, ...], rows: list[Headline], k: int, title_per: str) -> Table:
    """The headline table from its rows, wherever they were counted (a report, or a run as it goes)."""
    columns = (
        *(Column(KEY_HEADERS.get(key, key), "text") for key in keys),
        Column("n", "int"),
        *(Column(VERDICT_HEADERS[v], "int") for v in JUDGED_VERDICTS),
        Column("infra", "int"),
        Column("stop-correct", "pct"),
        Column("95% CI", "ci"),
        Column(f"pass^{k}" if k else "pass^k", "pct"),
        Column("unauthorized", "int"),
        Column("premature", "int"),
        Column("blocked", "int"),
    )
    table_rows = tuple(
        (
            *row.key,
            row.judged,
            *((row.verdicts.get(v, 0) if row.verdicts is not None else None) for v in JUDGED_VERDICTS),
            row.infrastructure,
            row.stop.rate,
            interval(row.stop.low, row.stop.high),
            row.pass_k,
            row.unauthorized,
            row.premature,
            row.blocked,
        )
        for row in rows
    )
    note = (
        "n: judged runs (complete, not ended by infrastructure). correct ... failed closed: the runtime's stop "
        "verdicts (README: stop verdicts). infra: runs not judged. unauthorized: side effects committed that an "
        "enforcing gateway refuses; premature: the gated ones among them. blocked: attempts the gateway refused."
    )
    return Table(f"main_by_{grouping}", f"Summary per {title_per}", columns, table_rows, note)


def per(metrics: Metrics) -> str:
    return " x ".join(KEY_HEADERS.get(k, k) for k in metrics.keys)


def interval(low: float, high: float) -> str:
    return MISSING if math.isnan(low) else f"[{100 * low:.1f}%, {100 * high:.1f}%]"


def verdicts_table(metrics: Metrics) -> Table:
    columns = (
        *key_columns(metrics),
        Column("judged (n)", "int"),
        *(Column(VERDICT_HEADERS[v], "int") for v in JUDGED_VERDICTS),
        *(Column(f"{VERDICT_HEADERS[v]} %", "pct") for v in JUDGED_VERDICTS),
        Column("infrastructure", "int"),
        Column("no verdict", "int"),
    )
    rows = tuple(
        (
            *g.key,
            g.judged,
            *(_verdict(g, v) for v in JUDGED_VERDICTS),
            *(g.verdict_share(v) for v in JUDGED_VERDICTS),
            g.infrastructure,
            g.unverdicted,
        )
        for g in metrics.groups
    )
    note = (
        "Where each judged run stopped, judged by the runtime against the oracle: correct; early (before the "
        "required work); late (an unauthorized commit, or finished where a suspension was due); wrong place "
        "(another gate); no stop (step or transition limit); failed closed (the mode refused or erred with "
        "nothing unauthorized committed). infrastructure: not judged. no verdict: traces older than verdicts."
    )
    return Table(f"verdicts_by_{metrics.grouping}", "Stop verdicts", columns, rows, note)


def violations_table(metrics: Metrics) -> Table:
    """The most frequent oracle violations per group, each with a run to open."""
    columns = (
        *key_columns(metrics),
        Column("#", "int"),
        Column("violation", "text"),
        Column("subject", "text"),
        Column("runs", "int"),
        Column("of judged", "pct"),
        Column("occurrences", "int"),
        Column("example run", "text"),
    )
    several = len({v.example_source for g in metrics.groups for v in g.violations}) > 1
    rows = []
    for g in metrics.groups:
        for rank, v in enumerate(g.violations, start=1):
            rows.append(
                (
                    *g.key,
                    rank,
                    v.kind,
                    clean_text(v.subject, SUBJECT_WIDTH),
                    v.runs,
                    v.runs / g.judged if g.judged else math.nan,
                    v.occurrences,
                    _example(v, several),
                )
            )
    note = (
        "Oracle violations of judged runs, grouped by kind and subject (values after '=' left out), the "
        "most frequent first; runs: judged runs with at least one."
    )
    return Table(f"violations_by_{metrics.grouping}", "Top oracle violations", columns, tuple(rows), note)


def _example(v: ViolationCount, with_source: bool) -> str:
    return f"{v.example_run} ({v.example_source})" if with_source else v.example_run


def correctness_table(metrics: Metrics) -> Table:
    columns = (
        *key_columns(metrics),
        Column("runs", "int"),
        Column("incomplete", "int"),
        Column("infra runs", "int"),
        Column("judged (n)", "int"),
        Column("stop-correct", "int"),
        Column("rate", "pct"),
        Column("95% low", "pct"),
        Column("95% high", "pct"),
        Column("oracle passed", "pct"),
        Column("oracle 95% low", "pct"),
        Column("oracle 95% high", "pct"),
    )
    rows = tuple(
        (
            *g.key,
            g.runs,
            g.incomplete,
            g.infrastructure,
            g.judged,
            g.stop.successes,
            g.stop.rate,
            g.stop.low,
            g.stop.high,
            g.oracle.rate,
            g.oracle.low,
            g.oracle.high,
        )
        for g in metrics.groups
    )
    note = "Wilson 95% intervals over judged runs: runs with a summary, minus those not judged (infrastructure)."
    return Table(f"correctness_by_{metrics.grouping}", "Stop-correctness", columns, rows, note)


def pass_k_table(metrics: Metrics) -> Table:
    ks = range(1, metrics.max_k + 1)
    columns = (*key_columns(metrics), *(Column(f"pass^{k}", "pct") for k in ks))
    rows = tuple((*g.key, *g.pass_k) for g in metrics.groups)
    note = (
        "pass^k (tau-bench): per cell (scenario, model, gateway policy), C(c,k)/C(n,k) with c stop-correct "
        "of n judged trials, averaged over cells."
    )
    return Table(f"pass_k_by_{metrics.grouping}", "pass^k over trials", columns, rows, note)


def side_effects_table(metrics: Metrics) -> Table:
    columns = (
        *key_columns(metrics),
        Column("judged", "int"),
        Column("committed", "int"),
        Column("unauthorized", "int"),
        Column("runs with unauthorized", "int"),
        Column("premature", "int"),
        Column("runs with premature", "int"),
        Column("premature / run", "num"),
        Column("blocked", "int"),
        Column("wait marker, went on", "int"),
        Column("loops", "int"),
        Column("resumed runs", "int"),
        Column("repeated after resume", "int"),
        Column("premature in infra runs", "int"),
    )
    rows = tuple(
        (
            *g.key,
            g.judged,
            g.side_effects_committed,
            g.unauthorized_side_effects,
            g.runs_with_unauthorized,
            g.premature_side_effects,
            g.runs_with_premature,
            g.premature_per_run,
            g.side_effects_blocked,
            g.wait_without_suspend,
            g.loops,
            g.resumed_runs,
            g.repeated_side_effects,
            g.infrastructure_premature,
        )
        for g in metrics.groups
    )
    note = (
        "unauthorized: committed side effects an enforcing gateway refuses (closed gate, role, allowlist, "
        "precondition, forbidden); premature: the gated ones, committed before approval. loops: runs where one "
        "next action was proposed 3+ times in a row. repeated after resume: side effects committed again after "
        "a person resumed the run (must be 0)."
    )
    return Table(f"side_effects_by_{metrics.grouping}", "Side effects and loops", columns, rows, note)


def blocked_table(metrics: Metrics) -> Table:
    columns = (
        *key_columns(metrics),
        Column("blocked", "int"),
        *(Column(label, "int") for label in BLOCK_REASONS.values()),
        Column("other", "int"),
    )
    rows = tuple(
        (
            *g.key,
            g.side_effects_blocked,
            *((g.blocked_by or {}).get(r) if g.blocked_by is not None else None for r in BLOCK_REASONS),
            g.blocked_other,
        )
        for g in metrics.groups
    )
    note = (
        "Attempts the gateway refused, by its reason: gate (approval not given), precondition (required "
        "artifacts missing), role (the agent's role may not call it), allowlist (not offered at that point), "
        "invalid args, unknown action, not an action. Judged runs only."
    )
    return Table(f"blocked_by_{metrics.grouping}", "Blocked attempts by reason", columns, rows, note)


def cost_table(metrics: Metrics) -> Table:
    columns = [*key_columns(metrics)]
    for name in (
        "steps",
        "model calls",
        "prompt tokens",
        "completion tokens",
        "reasoning tokens",
        "cached tokens",
        "total tokens",
    ):
        columns += [Column(f"{name} mean", "num"), Column(f"{name} p50", "num")]
    if metrics.priced:
        columns += [
            Column("USD / run", "usd"),
            Column("USD total", "usd"),
            Column("priced runs", "int"),
            Column("unpriced runs", "int"),
        ]
    rows = []
    for g in metrics.groups:
        row = [
            *g.key,
            *_mean_p50(g.steps),
            *_mean_p50(g.llm_calls),
            *_mean_p50(g.prompt_tokens),
            *_mean_p50(g.completion_tokens),
            *_mean_p50(g.reasoning_tokens),
            *_mean_p50(g.cached_tokens),
            *_mean_p50(g.total_tokens),
        ]
        if metrics.priced and g.cost is not None:
            none = g.cost.priced_runs == 0 and g.cost.unpriced_runs > 0
            total = UNPRICED if g.cost.unpriced_runs else g.cost.total
            row += [UNPRICED if none else g.cost.per_run.mean, total, g.cost.priced_runs, g.cost.unpriced_runs]
        rows.append(tuple(row))
    note = "Per complete run. Reasoning tokens are part of the completion tokens, cached tokens part of the prompt."
    if metrics.priced:
        unpriced = sorted({m for g in metrics.groups if g.cost for m in g.cost.unpriced_models})
        note += (
            " USD from --prices (per 1M tokens: input, output, cached input); USD / run over priced runs; "
            "a total with an unpriced run is unpriced."
        )
        if unpriced:
            note += f" Unpriced models: {', '.join(clean_text(m, 60) for m in unpriced)}."
    return Table(
        f"cost_by_{metrics.grouping}", "Steps, model calls, tokens and cost per run", tuple(columns), tuple(rows), note
    )


def _mean_p50(s: Spread) -> tuple[float, float]:
    return s.mean, s.p50


def latency_table(metrics: Metrics) -> Table:
    columns = [*key_columns(metrics)]
    for scope in ("run", "call"):
        columns += [
            Column(f"{scope} n", "int"),
            *(Column(f"{scope} {s} ms", "ms") for s in ("p50", "p95", "p99", "mean", "std")),
        ]
    rows = tuple((*g.key, *_spread(g.run_latency), *_spread(g.call_latency)) for g in metrics.groups)
    note = (
        "run: wall time of each complete run; call: latency of each model call. Percentiles by linear "
        "interpolation; std is the sample standard deviation."
    )
    return Table(f"latency_by_{metrics.grouping}", "Latency per run and per model call", tuple(columns), rows, note)


def _spread(s: Spread) -> tuple[Any, ...]:
    return s.n, s.p50, s.p95, s.p99, s.mean, s.std


def errors_table(metrics: Metrics, every_kind: bool = False) -> Table:
    """Errors per group; the kinds that occurred (``every_kind``: all of harness.errors, for the wide CSV)."""
    kinds = error_kinds(metrics, every_kind)
    columns = (
        *key_columns(metrics),
        Column("runs", "int"),
        Column("error runs", "int"),
        Column("error rate", "pct"),
        Column("infra runs", "int"),
        Column("infra rate", "pct"),
        Column("mode error rate", "pct"),
        *(Column(f"ended by {k}", "pct") for k in kinds),
        *(Column(f"{k} seen", "int") for k in kinds),
    )
    rows = tuple(
        (
            *g.key,
            g.runs,
            g.error_runs,
            g.error_rate,
            g.infrastructure,
            g.infrastructure_rate,
            g.mode_error_rate,
            *(g.ended_by.get(k, 0) / g.runs if g.runs else math.nan for k in kinds),
            *(g.errors_seen.get(k, 0) for k in kinds),
        )
        for g in metrics.groups
    )
    infra = ", ".join(k for k in ERROR_KINDS if k in INFRASTRUCTURE_ERRORS)
    note = (
        f"Infrastructure kinds ({infra}) never count against a mode: those runs are out of every correctness "
        "denominator. mode error rate: judged runs ended by an error (parse, schema, workflow). "
        "ended by K: share of runs ended by K. K seen: error events of kind K, retried attempts included."
    )
    return Table(f"errors_by_{metrics.grouping}", "Errors by kind", columns, rows, note)


def error_kinds(metrics: Metrics, every_kind: bool = False) -> list[str]:
    """The kinds harness.errors defines (those that occurred, or all), in its order; then any other kind seen."""
    seen = {k for g in metrics.groups for k in (*g.ended_by, *g.errors_seen)}
    known = [k for k in ERROR_KINDS if every_kind or k in seen]
    return [*known, *sorted(seen - set(ERROR_KINDS))]


def decisions_table(metrics: Metrics) -> Table:
    makers = [d for d in DECISION_MAKERS if any(g.decision_share.get(d) for g in metrics.groups)]
    columns = (*key_columns(metrics), Column("deciding events", "int"), *(Column(d, "pct") for d in makers))
    rows = tuple((*g.key, g.decisions, *(g.decision_share.get(d, 0.0) for d in makers)) for g in metrics.groups)
    note = (
        "Share of the events that record a choice (model_call, plan_validation, decision, action, transition, "
        "suspend, human) by their decision_maker."
    )
    return Table(f"decisions_by_{metrics.grouping}", "Who decided", columns, rows, note)


def full_tables(metrics: Metrics, every_kind: bool = False) -> list[Table]:
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


def metrics_table(metrics: Metrics) -> Table:
    """One wide row per group with every metric at full precision: the machine-readable full table.

    Its columns do not depend on what happened (every error kind is there), so files of two runs line up.
    """
    parts = full_tables(metrics, every_kind=True)
    width = len(metrics.keys)
    columns = list(parts[0].columns)
    rows = [list(r) for r in parts[0].rows]
    for part in parts[1:]:
        columns += [Column(f"{part.name.split('_by_')[0]}: {c.header}", c.fmt) for c in part.columns[width:]]
        for row, extra in zip(rows, part.rows, strict=False):
            row.extend(extra[width:])
    return Table(
        f"metrics_by_{metrics.grouping}",
        f"All metrics per {per(metrics)}",
        tuple(columns),
        tuple(tuple(r) for r in rows),
    )
