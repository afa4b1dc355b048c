"""Two runs side by side: the same metrics for A and B, their differences, and the regressions that fail CI.

A regression is a group whose stop-correct rate dropped (B < A) or whose premature side effects per
judged run rose (B > A). By default any such change is flagged (replays and scripted runs are
deterministic, so any change is real). With ``alpha``, sampled runs are judged by a one-sided Fisher
exact test instead: stop-correct runs for the first, runs free of premature side effects for the
second, flagged only when p < alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.metrics import GroupMetrics, Grouping, Metrics
from reports.report import metrics_for
from reports.stats import fisher_less
from reports.tables import Column, Format, Table, show

# (label, value, format): the metrics shown side by side, in this order.
ROWS: tuple[tuple[str, Callable[[GroupMetrics], float], Format], ...] = (
    ("judged runs", lambda g: g.judged, "int"),
    ("stop-correct", lambda g: g.stop.rate, "pct"),
    ("stop-correct 95% low", lambda g: g.stop.low, "pct"),
    ("stop-correct 95% high", lambda g: g.stop.high, "pct"),
    ("oracle passed", lambda g: g.oracle.rate, "pct"),
    ("pass^1", lambda g: g.pass_k[0] if g.pass_k else math.nan, "pct"),
    ("premature side effects / run", lambda g: g.premature_per_run, "num"),
    ("blocked by gateway / run", lambda g: g.side_effects_blocked / g.judged if g.judged else math.nan, "num"),
    ("wait marker, went on (runs)", lambda g: g.wait_without_suspend / g.judged if g.judged else math.nan, "pct"),
    ("loops (runs)", lambda g: g.loops / g.judged if g.judged else math.nan, "pct"),
    ("steps / run", lambda g: g.steps.mean, "num"),
    ("model calls / run", lambda g: g.llm_calls.mean, "num"),
    ("tokens / run", lambda g: g.total_tokens.mean, "num"),
    ("run latency p50 ms", lambda g: g.run_latency.p50, "ms"),
    ("run latency p95 ms", lambda g: g.run_latency.p95, "ms"),
    ("run latency p99 ms", lambda g: g.run_latency.p99, "ms"),
    ("call latency p95 ms", lambda g: g.call_latency.p95, "ms"),
    ("error rate", lambda g: g.error_rate, "pct"),
    ("infrastructure runs", lambda g: g.infrastructure_rate, "pct"),
    ("mode error rate", lambda g: g.mode_error_rate, "pct"),
)


@dataclass(frozen=True)
class GroupChange:
    """One group in A and B (either may be missing) and why it regressed, if it did."""

    key: tuple[str, ...]
    a: GroupMetrics | None
    b: GroupMetrics | None
    alpha: float | None = None

    @property
    def regressions(self) -> list[str]:
        a, b = self.a, self.b
        if a is None or b is None or not a.judged or not b.judged:
            return []
        found = []
        if b.stop.rate < a.stop.rate:
            p = fisher_less(a.stop.successes, a.judged, b.stop.successes, b.judged)
            if self._flags(p):
                found.append(f"stop-correct dropped {100 * a.stop.rate:.1f}% -> {100 * b.stop.rate:.1f}%{self._p(p)}")
        if b.premature_per_run > a.premature_per_run:
            p = fisher_less(a.judged - a.runs_with_premature, a.judged, b.judged - b.runs_with_premature, b.judged)
            if self._flags(p):
                found.append(f"premature side effects rose {a.premature_per_run:.3f} -> "
                             f"{b.premature_per_run:.3f} per run{self._p(p)}")
        return found

    def _flags(self, p: float) -> bool:
        return self.alpha is None or p < self.alpha

    def _p(self, p: float) -> str:
        return "" if self.alpha is None else f" (one-sided Fisher p = {p:.3g})"

    @property
    def note(self) -> str:
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A (not compared)"
        if not self.a.judged or not self.b.judged:
            return "no judged runs on one side (not compared)"
        return "; ".join(self.regressions) or "ok"


@dataclass(frozen=True)
class Comparison:
    """Every group of A and B, in A's order then B's new groups."""

    keys: tuple[str, ...]
    changes: list[GroupChange]
    skipped_a: int
    skipped_b: int

    @property
    def regressed(self) -> list[GroupChange]:
        return [c for c in self.changes if c.regressions]

    def table(self) -> Table:
        columns = (*(Column(k, "text") for k in self.keys), Column("metric", "text"), Column("A", "text"),
                   Column("B", "text"), Column("B - A", "text"))
        rows = []
        for change in self.changes:
            for label, value, fmt in ROWS:
                a = value(change.a) if change.a is not None else math.nan
                b = value(change.b) if change.b is not None else math.nan
                rows.append((*change.key, label, show(a, fmt), show(b, fmt), _diff(a, b, fmt)))
        return Table("compare", "A vs B", columns, tuple(rows))

    def verdicts(self) -> Table:
        columns = (*(Column(k, "text") for k in self.keys), Column("verdict", "text"))
        rows = tuple((*c.key, ("REGRESSION: " if c.regressions else "") + c.note) for c in self.changes)
        return Table("verdicts", "Regressions", columns, rows)


def _diff(a: float, b: float, fmt: Format) -> str:
    if math.isnan(a) or math.isnan(b):
        return "–"
    delta = b - a
    if fmt == "pct":
        return f"{100 * delta:+.1f} pts"
    if fmt == "ms":
        return f"{delta:+,.1f}"
    if fmt == "int":
        return f"{int(delta):+d}"
    return f"{delta:+,.3f}"


def compare(a: Sequence[Path | str], b: Sequence[Path | str], grouping: Grouping = "mode",
            alpha: float | None = None) -> Comparison:
    """Loads both sides and pairs their groups; ``alpha`` turns on the significance test."""
    traces_a, metrics_a = metrics_for(a, grouping)
    traces_b, metrics_b = metrics_for(b, grouping)
    return Comparison(metrics_a.keys, pair(metrics_a, metrics_b, alpha), traces_a.skipped_count, traces_b.skipped_count)


def pair(a: Metrics, b: Metrics, alpha: float | None = None) -> list[GroupChange]:
    found_a, found_b = a.by_key(), b.by_key()
    order = [g.key for g in a.groups] + [g.key for g in b.groups if g.key not in found_a]
    return [GroupChange(key, found_a.get(key), found_b.get(key), alpha) for key in order]
