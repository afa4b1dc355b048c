"""Report tables: built from metrics as typed records, rendered as Markdown, CSV, LaTeX (booktabs) and HTML."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any, Literal

from tabulate import tabulate

from harness.errors import ERROR_KINDS, INFRASTRUCTURE_ERRORS
from modes import MODES, Mode
from reports.metrics import DECISION_MAKERS, STATUSES, GroupMetrics, Metrics
from reports.stats import Spread

Format = Literal["text", "int", "pct", "num", "ms"]
MISSING = "–"  # shown for an undefined value (no runs, one sample for a std, k above the trials)


@dataclass(frozen=True)
class Column:
    """A column's header and how its values are shown (CSV always gets the full-precision value)."""

    header: str
    fmt: Format = "num"


@dataclass(frozen=True)
class Table:
    """One table of the report: ``name`` is its file stem and its id in the HTML page."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def display_rows(self) -> list[list[str]]:
        return [[show(v, c.fmt) for v, c in zip(row, self.columns)] for row in self.rows]


def show(value: Any, fmt: Format) -> str:
    """A value as a writer wants to read it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if fmt == "pct":
        return f"{100 * value:.1f}%"
    if fmt == "int":
        return f"{int(value)}"
    if fmt == "ms":
        return f"{value:,.1f}"
    if fmt == "num":
        return f"{value:,.2f}"
    return str(value)


# ------------------------------------------------------------------ renderers


def to_markdown(table: Table) -> str:
    rows = [[cell.replace("|", "\\|") for cell in row] for row in table.display_rows()]
    text = f"### {table.title}\n\n" + tabulate(rows, headers=table.headers, tablefmt="github", disable_numparse=True)
    return text + (f"\n\n{table.note}\n" if table.note else "\n")


def to_terminal(table: Table) -> str:
    return tabulate(table.display_rows(), headers=table.headers, tablefmt="simple", disable_numparse=True)


def to_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.headers)
    for row in table.rows:
        writer.writerow(["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row])
    return buffer.getvalue()


def to_latex(table: Table) -> str:
    body = tabulate(table.display_rows(), headers=table.headers, tablefmt="latex_booktabs", disable_numparse=True)
    return f"% {table.title} (needs \\usepackage{{booktabs}})\n{body}\n"


def to_html(table: Table) -> str:
    body = tabulate(table.display_rows(), headers=table.headers, tablefmt="html", disable_numparse=True)
    return body.replace("<table>", f'<table id="table-{table.name}" class="metrics" data-table="{table.name}">', 1)


# ------------------------------------------------------------------ builders


def _mode_class(name: str) -> type[Mode] | None:
    return MODES.get(name)


def _describe(name: str, attribute: str) -> str:
    """A mode's description from its class; blank for a mode that is not registered (an old trace)."""
    cls = _mode_class(name)
    return getattr(cls, attribute, "") if cls is not None else ""


def _key_columns(metrics: Metrics) -> tuple[Column, ...]:
    return tuple(Column(k, "text") for k in metrics.keys)


def happened(g: GroupMetrics) -> str:
    """Seed 000's last column: what the runs really did, in numbers."""
    parts = [f"stop-correct {g.stop.successes}/{g.stop.n}"]
    parts.append(", ".join(f"{s} {g.statuses[s]}" for s in STATUSES if g.statuses.get(s)))
    parts.append(f"premature side effects {g.premature_side_effects}")
    parts.append(f"blocked {g.side_effects_blocked}")
    if g.wait_without_suspend:
        parts.append(f"waited on paper and went on {g.wait_without_suspend}")
    if g.loops:
        parts.append(f"loops {g.loops}")
    if g.infrastructure:
        parts.append(f"infrastructure errors {g.infrastructure} (not judged)")
    return "; ".join(p for p in parts if p)


def seed000_table(metrics: Metrics) -> Table:
    """Seed 000's comparison: who decides, what the model sees, who can stop a run, and what happened."""
    columns = (Column("mode", "text"), Column("who decides each step", "text"),
               Column("actions the model can see", "text"), Column("who can really stop a run", "text"),
               Column("what happened", "text"))
    rows = tuple((g.key[-1], _describe(g.key[-1], "decides"), _describe(g.key[-1], "visible"),
                  _describe(g.key[-1], "stopper"), happened(g)) for g in metrics.groups)
    return Table("modes", "Control modes: who decides, who can stop, what happened", columns, rows)


def spectrum_table(metrics: Metrics) -> Table:
    """Seed 003's control spectrum, with this run's measured P95 latency and error rate."""
    columns = (Column("spectrum", "int"), Column("mode", "text"), Column("human intervention point", "text"),
               Column("model autonomy", "text"), Column("P95 latency per run (ms)", "ms"),
               Column("error rate", "pct"), Column("runs", "int"))
    rows = []
    for g in metrics.groups:
        cls = _mode_class(g.key[-1])
        rows.append((cls.spectrum if cls is not None else None, g.key[-1], _describe(g.key[-1], "intervention"),
                     _describe(g.key[-1], "autonomy"), g.run_latency.p95, g.error_rate, g.runs))
    note = ("spectrum: 1 = code decides everything. Error rate: complete runs that ended with status error, "
            "any kind (infrastructure included; see the errors table for the split).")
    return Table("spectrum", "The control spectrum", columns, tuple(rows), note)


def main_table(metrics: Metrics) -> Table:
    """The headline table the terminal shows."""
    k = metrics.max_k
    columns = (*_key_columns(metrics), Column("judged", "int"), Column("stop-correct", "pct"),
               Column("95% CI", "text"), Column(f"pass^{k}" if k else "pass^k", "pct"), Column("premature", "int"),
               Column("blocked", "int"), Column("wait w/o suspend", "int"), Column("loops", "int"),
               Column("infra runs", "int"), Column("p95 run ms", "ms"), Column("tokens/run", "num"))
    rows = tuple((*g.key, g.judged, g.stop.rate, _interval(g.stop.low, g.stop.high), g.pass_k[-1] if k else None,
                  g.premature_side_effects, g.side_effects_blocked, g.wait_without_suspend, g.loops,
                  g.infrastructure, g.run_latency.p95, g.total_tokens.mean) for g in metrics.groups)
    return Table(f"main_by_{metrics.grouping}", f"Summary per {' x '.join(metrics.keys)}", columns, rows)


def _interval(low: float, high: float) -> str:
    return MISSING if math.isnan(low) else f"[{100 * low:.1f}%, {100 * high:.1f}%]"


def correctness_table(metrics: Metrics) -> Table:
    columns = (*_key_columns(metrics), Column("runs", "int"), Column("incomplete", "int"),
               Column("infra runs", "int"), Column("judged (n)", "int"), Column("stop-correct", "int"),
               Column("rate", "pct"), Column("95% low", "pct"), Column("95% high", "pct"),
               Column("oracle passed", "pct"), Column("oracle 95% low", "pct"), Column("oracle 95% high", "pct"))
    rows = tuple((*g.key, g.runs, g.incomplete, g.infrastructure, g.judged, g.stop.successes, g.stop.rate,
                  g.stop.low, g.stop.high, g.oracle.rate, g.oracle.low, g.oracle.high) for g in metrics.groups)
    note = "Wilson 95% intervals over judged runs: runs with a summary, minus those ended by infrastructure errors."
    return Table(f"correctness_by_{metrics.grouping}", "Stop-correctness", columns, rows, note)


def pass_k_table(metrics: Metrics) -> Table:
    ks = range(1, metrics.max_k + 1)
    columns = (*_key_columns(metrics), *(Column(f"pass^{k}", "pct") for k in ks))
    rows = tuple((*g.key, *g.pass_k) for g in metrics.groups)
    note = ("pass^k (tau-bench): per cell (scenario, model, gateway policy), C(c,k)/C(n,k) with c stop-correct "
            "of n judged trials, averaged over cells.")
    return Table(f"pass_k_by_{metrics.grouping}", "pass^k over trials", columns, rows, note)


def side_effects_table(metrics: Metrics) -> Table:
    columns = (*_key_columns(metrics), Column("judged", "int"), Column("committed", "int"),
               Column("blocked by gateway", "int"), Column("premature", "int"), Column("runs with premature", "int"),
               Column("premature / run", "num"), Column("wait marker, went on", "int"), Column("loops", "int"),
               Column("premature in infra runs", "int"))
    rows = tuple((*g.key, g.judged, g.side_effects_committed, g.side_effects_blocked, g.premature_side_effects,
                  g.runs_with_premature, g.premature_per_run, g.wait_without_suspend, g.loops,
                  g.infrastructure_premature) for g in metrics.groups)
    note = ("premature: gated side effects committed without approval. loops: runs where one next action was "
            "proposed 3+ times in a row.")
    return Table(f"side_effects_by_{metrics.grouping}", "Side effects and loops", columns, rows, note)


def cost_table(metrics: Metrics) -> Table:
    columns = [*_key_columns(metrics)]
    for name in ("steps", "model calls", "prompt tokens", "completion tokens", "total tokens"):
        columns += [Column(f"{name} mean", "num"), Column(f"{name} p50", "num")]
    rows = tuple((*g.key, *_mean_p50(g.steps), *_mean_p50(g.llm_calls), *_mean_p50(g.prompt_tokens),
                  *_mean_p50(g.completion_tokens), *_mean_p50(g.total_tokens)) for g in metrics.groups)
    return Table(f"cost_by_{metrics.grouping}", "Steps, model calls and tokens per run", tuple(columns), rows)


def _mean_p50(s: Spread) -> tuple[float, float]:
    return s.mean, s.p50


def latency_table(metrics: Metrics) -> Table:
    columns = [*_key_columns(metrics)]
    for scope in ("run", "call"):
        columns += [Column(f"{scope} n", "int"), *(Column(f"{scope} {s} ms", "ms") for s in
                                                  ("p50", "p95", "p99", "mean", "std"))]
    rows = tuple((*g.key, *_spread(g.run_latency), *_spread(g.call_latency)) for g in metrics.groups)
    note = ("run: wall time of each complete run; call: latency of each model call. Percentiles by linear "
            "interpolation; std is the sample standard deviation.")
    return Table(f"latency_by_{metrics.grouping}", "Latency per run and per model call", tuple(columns), rows, note)


def _spread(s: Spread) -> tuple[Any, ...]:
    return s.n, s.p50, s.p95, s.p99, s.mean, s.std


def errors_table(metrics: Metrics) -> Table:
    kinds = _error_kinds(metrics)
    columns = (*_key_columns(metrics), Column("runs", "int"), Column("error runs", "int"),
               Column("error rate", "pct"), Column("infra runs", "int"), Column("infra rate", "pct"),
               Column("mode error rate", "pct"),
               *(Column(f"ended by {k}", "pct") for k in kinds), *(Column(f"{k} seen", "int") for k in kinds))
    rows = tuple((*g.key, g.runs, g.error_runs, g.error_rate, g.infrastructure, g.infrastructure_rate,
                  g.mode_error_rate, *(g.ended_by.get(k, 0) / g.runs if g.runs else math.nan for k in kinds),
                  *(g.errors_seen.get(k, 0) for k in kinds)) for g in metrics.groups)
    infra = ", ".join(k for k in ERROR_KINDS if k in INFRASTRUCTURE_ERRORS)
    note = (f"Infrastructure kinds ({infra}) never count against a mode: those runs are out of every correctness "
            "denominator. mode error rate: judged runs ended by a parse, schema or workflow error. "
            "ended by K: share of runs ended by K. K seen: error events of kind K, retried attempts included.")
    return Table(f"errors_by_{metrics.grouping}", "Errors by kind", columns, rows, note)


def _error_kinds(metrics: Metrics) -> list[str]:
    """The issue's six kinds always, any other kind that occurred after them."""
    always = ["network", "timeout", "http_4xx", "http_5xx", "parse", "schema", "replay_miss"]
    seen = {k for g in metrics.groups for k in (*g.ended_by, *g.errors_seen)}
    return always + sorted(seen - set(always))


def decisions_table(metrics: Metrics) -> Table:
    makers = [d for d in DECISION_MAKERS if any(g.decision_share.get(d) for g in metrics.groups)]
    columns = (*_key_columns(metrics), Column("deciding events", "int"), *(Column(d, "pct") for d in makers))
    rows = tuple((*g.key, g.decisions, *(g.decision_share.get(d, 0.0) for d in makers)) for g in metrics.groups)
    note = ("Share of the events that record a choice (model_call, plan_validation, decision, action, transition, "
            "suspend) by their decision_maker.")
    return Table(f"decisions_by_{metrics.grouping}", "Who decided", columns, rows, note)


def full_tables(metrics: Metrics) -> list[Table]:
    """Every metric of a grouping, as thematic tables."""
    return [correctness_table(metrics), pass_k_table(metrics), side_effects_table(metrics), cost_table(metrics),
            latency_table(metrics), errors_table(metrics), decisions_table(metrics)]


def metrics_table(metrics: Metrics) -> Table:
    """One wide row per group with every metric at full precision: the machine-readable full table."""
    parts = full_tables(metrics)
    width = len(metrics.keys)
    columns = list(parts[0].columns)
    rows = [list(r) for r in parts[0].rows]
    for part in parts[1:]:
        columns += [Column(f"{part.name.split('_by_')[0]}: {c.header}", c.fmt) for c in part.columns[width:]]
        for row, extra in zip(rows, part.rows):
            row.extend(extra[width:])
    return Table(f"metrics_by_{metrics.grouping}", f"All metrics per {' x '.join(metrics.keys)}", tuple(columns),
                 tuple(tuple(r) for r in rows))
