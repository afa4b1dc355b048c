"""What a LaTeX table's cells hold, decided before it is laid out: a rate and its interval in one cell (a split for
width never parts them), latency in seconds, a column with one value in every row said once in the caption, and a
per-model table's models as group rows instead of a column."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from reports.tables import MISSING, Column, NotApplicable, Table, show

GROUP_KEY = "model"  # a table keyed by this first, with other keys after it, sets its values as group rows


@dataclass(frozen=True)
class Shown:
    """One column as LaTeX shows it: the table's columns it is made of (one, or a rate and its interval), its header
    and its text in each row."""

    columns: tuple[Column[Any], ...]
    header: str
    texts: tuple[str, ...]

    @property
    def key(self) -> bool:
        return self.columns[0].key

    @property
    def numeric(self) -> bool:
        return self.columns[0].numeric

    @property
    def description(self) -> str:
        """What its columns mean, each said once, in their order."""
        return " ".join(dict.fromkeys(c.description for c in self.columns if c.description))


@dataclass(frozen=True)
class Body:
    """A table's shown columns, each row's group ("" for none) and what every row has in common, for the caption."""

    shown: list[Shown]
    groups: tuple[str, ...]
    constant: str


def table_body(table: Table, columns: Sequence[Column[Any]]) -> Body:
    """The columns as LaTeX shows them: intervals joined to their rates, the group column taken out, constant
    columns dropped (a table of one row keeps them: its values are the table)."""
    shown = _joined(table, columns)
    groups: tuple[str, ...] = ()
    first = shown[0] if shown else None
    if first is not None and first.header == GROUP_KEY and first.key and sum(s.key for s in shown) > 1:
        runs = [value for value, _ in groupby(first.texts)]
        if len(runs) > 1 and len(runs) == len(set(runs)):  # each group's rows together: one group row each
            shown, groups = shown[1:], tuple(f"{first.header}: {text}" for text in first.texts)
    if len(table.records) < 2:
        return Body(shown, groups, "")
    same = [s for s in shown if len(set(s.texts)) == 1]
    for kept in (lambda s: not s.key, lambda s: not s.key and s.numeric):  # no column, or no number, left to read
        if any(map(kept, shown)) and all(s in same for s in shown if kept(s)):
            same = [s for s in same if not kept(s)]
    keys = ", ".join(f"{s.header} {s.texts[0]}" for s in same if s.key)
    rest = ", ".join(f"{s.header} {s.texts[0]}" for s in same if not s.key)
    constant = "; ".join(
        part for part in (f"all runs: {keys}" if keys else "", f"every row: {rest}" if rest else "") if part
    )
    return Body([s for s in shown if s not in same], groups, constant)


def _joined(table: Table, columns: Sequence[Column[Any]]) -> list[Shown]:
    """The columns in order, each interval (a "ci" column, or a low and a high bound) in one cell with its rate: the
    rate's first interval takes the rate's place, a further one repeats the rate beside it."""
    items: list[list[Column[Any]]] = []
    for column in columns:
        last = items[-1] if items else []
        bound = column.interval_of and column.fmt != "ci"
        if bound and len(last) == 1 and last[0].interval_of == column.interval_of and last[0].fmt != "ci":
            last.append(column)  # the high bound after its low one
            continue
        items.append([column])
    rates = {c.header: c for c in table.columns}
    absorbed: set[str] = set()
    placed: list[list[Column[Any]]] = []
    for item in items:
        head = item[0]
        if not head.interval_of:
            placed.append(item)
            continue
        rate = rates[head.interval_of]
        if head.interval_of in absorbed or rate not in [i[0] for i in placed if len(i) == 1]:
            placed.append([rate, *item])
        else:  # the rate's first interval: set where the rate is
            placed[[i[0] for i in placed].index(rate)] = [rate, *item]
        absorbed.add(head.interval_of)
    return [_shown(table, item) for item in placed]


def _shown(table: Table, columns: list[Column[Any]]) -> Shown:
    rate, *bounds = columns
    if not bounds:
        if rate.fmt == "ms":
            return Shown((rate,), _in_seconds(rate.header), _seconds([rate.get(r) for r in table.records]))
        return Shown((rate,), rate.header, table.texts(rate))
    unit = ", %" if rate.fmt == "pct" else ""
    header = f"{rate.header}{unit} ({_interval_name(rate.header, bounds[0].header)})"
    texts = tuple(_with_interval(rate, bounds, record) for record in table.records)
    return Shown(tuple(columns), header, texts)


def _interval_name(rate: str, bound: str) -> str:
    """ "cluster 95% low" of "rate" -> "cluster 95% CI"; "oracle 95% low" of "oracle passed" -> "95% CI"."""
    words = bound.split()
    if words[-1] in ("low", "high"):
        words = words[:-1]
    while len(words) > 1 and words[0] in rate.split():
        words = words[1:]
    return " ".join(words) if words[-1] == "CI" else " ".join([*words, "CI"])


def _with_interval(rate: Column[Any], bounds: list[Column[Any]], record: Any) -> str:
    """``91.7 [74.2, 100.0]``: the rate in percent (a duration in seconds, marked s), its interval in the same unit."""
    value = rate.get(record)
    point = show(value, rate.fmt).removesuffix("%")
    if isinstance(value, NotApplicable) or point == MISSING:
        return point
    if len(bounds) == 1:  # an interval already shown as text: its units said once, by the rate
        text = show(bounds[0].get(record), bounds[0].fmt).replace("%", "").replace(" s", "")
    else:
        low, high = (bound.get(record) for bound in bounds)
        text = MISSING if low is None or math.isnan(low) else f"[{100 * low:.1f}, {100 * high:.1f}]"
    return point if text == MISSING else f"{point} {text}"


def _in_seconds(header: str) -> str:
    return " ".join("(s)" if word in ("ms", "(ms)") else word for word in header.split())


def _seconds(values: Sequence[Any]) -> tuple[str, ...]:
    """Milliseconds as seconds, one precision for the column: about three significant digits at its largest."""
    known = [abs(float(v)) / 1000 for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    largest = max(known, default=0.0)
    decimals = 3 if largest < 1 else 2 if largest < 10 else 1 if largest < 100 else 0
    return tuple(
        f"{float(v) / 1000:,.{decimals}f}" if isinstance(v, (int, float)) and not math.isnan(v) else show(v, "ms")
        for v in values
    )
